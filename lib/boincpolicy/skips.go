package boincpolicy

import (
	"math"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// The skips of an emulated run (Workspace.Quiet): each leaves out work that provably
// changes no decision (lib/sim's TestSkipsChangeNothing runs every public scenario with
// and without them), so that a run of policy boinc costs about what the seeds' does
// (issue 30; docs/decisions.md says which bound holds why).

// quietSchedule is Schedule's skips: it reports whether it made the pass (w.list)
// without the whole simulation, which it otherwise runs (once a moment).
func (w *Workspace) quietSchedule(doc *state.Document, now float64) bool {
	if w.hold && now < w.holdUntil && w.inBox(doc) {
		// The last pass showed that passes would change nothing until holdUntil
		// (setHold): the pass's record only.
		doc.CPUSched.LastPass, doc.CPUSched.NextPass = now, now+SchedPeriod
		w.list = w.list[:0]
		// No job misses its deadline while setHold's hold lasts: the moment's
		// counts, for Arrived, are none; under setEDFHold's they are the pass's that
		// set it (the same misses throughout).
		if !w.holdMiss {
			clear(w.passMissed)
		}
		w.passAt = now
		if passCheck {
			w.checkPass(doc, now)
		}
		return true
	}
	if w.simDone && w.simAt == now {
		return false
	}
	// The whole simulation only when which jobs miss their deadline is not known
	// without it: the pass reads nothing else of it.
	w.quietView(doc, now)
	w.prepareJobs(doc)
	if fallCheck {
		w.checkFall(doc, now)
	}
	first := w.pickFirst(doc)
	if w.missesKept(doc, now) || (w.missesListed(doc, now) || w.missesListedCo(doc, now) || first && w.missesListedPick(doc, now) ||
		w.missesKnown(doc, now) || !first && w.missesListedPick(doc, now)) && w.keepMisses(doc, now) {
		if w.setHold(doc, now, true); w.hold {
			// The pass would run exactly the jobs running: it changes nothing
			// but its record. A hold needs no miss (none for Arrived).
			w.heldPass(doc, now, false)
			w.holdFetch(doc, now)
			return true
		}
		if !w.anyMiss && w.passKeeps(doc) {
			// The pass would run exactly the jobs running (passKeeps, as after a
			// simulation that found no miss): its record only, and the hold a
			// pass that changed nothing leaves.
			w.heldPass(doc, now, false)
			w.setHold(doc, now, false)
			w.holdFetch(doc, now)
			return true
		}
		if w.rehold(doc, now) {
			// The last keep hold's listing again (rehold): it keeps the jobs
			// running, its record and misses (for Arrived) those of a whole pass.
			w.heldPass(doc, now, true)
			w.holdFetch(doc, now)
			if passCheck {
				w.checkPass(doc, now)
			}
			return true
		}
		if w.arrCarry && w.arrivedHold(doc, now) {
			// The hold the new jobs' arrival ended, set again (arrivedHold): the
			// pass runs the jobs running, its counts these misses.
			w.heldPass(doc, now, true)
			w.holdFetch(doc, now)
			if passCheck {
				arrivedHolds++
				w.checkPass(doc, now)
			}
			return true
		}
		if w.runHold(doc, now) {
			// The running jobs among the first the listing takes for the misses,
			// each within its slice (runHold): the pass runs them, its counts these.
			w.heldPass(doc, now, true)
			w.holdFetch(doc, now)
			if passCheck {
				runHolds++
				w.checkPass(doc, now)
			}
			return true
		}
		w.list = w.schedule(doc, now, w.list[:0])
		if passCheck && w.kept {
			w.checkPass(doc, now)
		}
		w.setHold(doc, now, false)
		if w.anyMiss {
			w.setEDFHold(doc, now)
		}
		if !w.hold {
			w.setKeepHold(doc, now)
		}
		w.holdFetch(doc, now)
		return true
	}
	w.mkKept, w.khCarry = false, false
	w.simulateAfterJobs(doc, now)
	w.simDone, w.simAt = true, now
	if w.passKeeps(doc) {
		// The pass would run exactly the jobs running: its record only, and the
		// moment's counts (none) for Arrived.
		w.recordPass(doc, now)
		w.list = w.list[:0]
		clear(w.passMissed)
		w.passAt = now
		return true
	}
	return false
}

// pickFirst reports whether missesListedPick comes before missesKnown at this pass
// (then not after it: its answer is known), and counts the pass: at the perJobRest
// passes after missesKnown needed its bounds per job, which cost more than one list
// schedule of the jobs (down-2cpu under BOINC's emulator, 11.8 K instructions a
// call), and not where the bounds per resource decide, which cost less
// (example-2cpu-2to1 and share-75-25 under the emulator, 6-8 % more instructions a
// run with the list schedule always first). Under BOINC's emulator only: under
// bsim's conventions missesListedPick's answer is at now alone where missesKnown's
// may last (c159 at seed 2, 340 M instructions → 344 M first). The order changes no
// answer, only its cost and how long it is kept.
func (w *Workspace) pickFirst(doc *state.Document) bool {
	if w.listFirst == 0 || !doc.BOINCEmulator {
		return false
	}
	w.listFirst--
	return true
}

// passKeeps reports whether the pass at the moment of a simulation that found no
// job missing its deadline (done: w.Sim's counts) would run exactly the jobs
// running: setHold's conditions at that one moment, with no slack needed. On a host
// whose runnable jobs are all CPU jobs, none of a project whose correction factor
// puts its jobs in EDF, no job is listed for a miss; the running jobs, each within
// its time slice, come first in the run list (sortRunList: unfinished time slices
// before the jobs listed by priority), and when they fill the CPUs in any order
// (free ≤ 0 after them, and each fits after the others), they run and nothing else
// does (state.CPUsFit). (down-2cpu and noisy ran the simulation, then a full pass,
// at almost every step.)
func (w *Workspace) passKeeps(doc *state.Document) bool {
	for r := range w.Sim {
		if w.Sim[r].Misses > 0 {
			return false
		}
	}
	n := float64(doc.Host.CPU().Instances)
	period := doc.Preferences.CPUSchedulingPeriod
	used, least := 0.0, math.Inf(1)
	jobs, tasks, projects, cpuRes := w.jobs, doc.Tasks, doc.Projects, w.cpuRes
	edf := anyEDFDCF(projects)
	for i := range jobs {
		j := &jobs[i]
		if j.res != cpuRes || edf && projects[j.proj].DCF() > EDFDCF {
			return false
		}
		if !j.running {
			continue
		}
		if t := &tasks[j.task]; !(t.ElapsedTime-t.ElapsedTimeAtLastSched <= period) {
			return false
		}
		used += j.cpus
		least = min(least, j.cpus)
	}
	const slack = 1e-9 // state.CPUsFit's
	return !(n-used > slack) && n-(used-least) > slack
}

// anyEDFDCF reports whether some project's correction factor puts its jobs in earliest
// deadline first (EDFDCF: earliest_deadline_result): where none does, the walks that
// refuse a hold for such a job (passKeeps, setHold, setEDFHold) need not look up each
// job's project (issue 30, forty-first round).
func anyEDFDCF(projects []state.Project) bool {
	for i := range projects {
		if projects[i].DCF() > EDFDCF {
			return true
		}
	}
	return false
}

// quietNoFetch is ChooseProject's skips: it reports whether the choice is provably
// none without the whole simulation, which it otherwise runs (once a moment).
func (w *Workspace) quietNoFetch(doc *state.Document, now float64) bool {
	if w.askHold && now < w.askHoldUntil {
		return true // no project may be asked before askHoldUntil (noneAskable)
	}
	if w.fetchHeld(doc, now) {
		// The work bound showed no resource short of work until fetchHoldUntil
		// (workBound, or lowHold), the tasks unchanged since.
		if fetchCheck {
			w.checkFetchHold(doc, now)
		}
		return true
	}
	if w.simDone && w.simAt == now {
		return false
	}
	if w.noneAskable(doc, now) {
		return true
	}
	// No request when the work queued or the first pick shows every resource full
	// past work_buf_min.
	w.quietView(doc, now)
	w.boundAt = now
	w.prepareJobs(doc)
	recSum, none, replayed := w.noFetchPossible(doc, now)
	if none {
		return true
	}
	if !replayed {
		w.simulateFrom(doc, now, recSum)
		w.simDone, w.simAt = true, now
	}
	return false
}

// holdFetch sets the work fetch's hold (workBound) after a quiet pass at now, from the
// jobs prepare readied for missesKnown, when it is not on: the work fetch that follows
// (at the next moment, or at this one under BOINC's emulator) then need not look
// again. A job's state does not enter its remaining work, so the jobs the pass started
// or stopped leave the bound good, but for a job that has not run yet under BOINC's
// emulator (setHold): then it is not set.
func (w *Workspace) holdFetch(doc *state.Document, now float64) {
	if w.fetchHeld(doc, now) {
		return
	}
	if doc.BOINCEmulator {
		jobs, tasks := w.jobs, doc.Tasks
		for i := range jobs {
			if t := &tasks[jobs[i].task]; t.State == state.TaskRunning && !(t.EmulatorFlopsLeft > 0) {
				return
			}
		}
	}
	w.boundAt = now
	w.resAsked(doc, now)
	if !w.workBound(&doc.Host, WorkBufMin(&doc.Preferences)) {
		w.fetchHold = false
	}
}

// resAsked sets w.noAsk[r] for each resource r no project may be asked for at now by
// the reasons of setup that need neither the view nor the simulation (noneAskable's,
// resource by resource): the project waits out its RPC backoff (min_rpc_time), has
// no app version for r (bsim's convention), or r is backed off for it; and
// w.noAskUntil, the first moment one of them may end (they change otherwise only in
// an RPC's reply, which ends the holds: Reset). chooseProject asks for a resource
// short of work only a project without a reason for it, so whether a resource none
// may be asked for is short changes nothing: noFetchPossible and workBound pass over
// it. (The corpus's hosts whose apps are all GPU apps, their CPUs idle, ran the work
// fetch's simulation at every step, each asking nobody: issue 30, twelfth round.)
func (w *Workspace) resAsked(doc *state.Document, now float64) {
	versions, nR := w.versionTable(doc), len(doc.Host.Resources)
	w.noAsk, w.noAskUntil = scratch.Grow(w.noAsk, nR), math.Inf(1)
	for r, res := range doc.Host.Resources {
		until := math.Inf(1) // when some project may be asked for r, at the earliest
		for p := range doc.Projects {
			pr := &doc.Projects[p]
			end := math.Inf(1) // until when p has a reason not to be asked for r
			if doc.BOINCEmulator || versions[p*nR+r] {
				end = max(math.Inf(-1), pr.MinRPCTime, backoffUntil(pr, res.Type))
			}
			until = min(until, end)
		}
		w.noAsk[r] = until > now
		if w.noAsk[r] {
			w.noAskUntil = min(w.noAskUntil, until)
		}
	}
}

// noneAskable reports whether ChooseProject would find no project to ask at now from
// the reasons that need neither the view nor the simulation: every project is in RPC
// backoff (min_rpc_time), or for every resource has no app version (bsim's convention,
// not BOINC's emulator's: setup's ReasonNoApps) or is backed off. (A backed-off
// resource has a reason whatever its share: a zero share's reason needs the
// simulation only when it is not backed off. "Too many runnable tasks" needs the
// view, and is not looked at.) These change only in an RPC's reply, which ends the
// hold (Reset): it sets askHold until the first moment one of them ends for some
// project.
func (w *Workspace) noneAskable(doc *state.Document, now float64) bool {
	until, versions, nR := math.Inf(1), w.versionTable(doc), len(doc.Host.Resources)
	for p := range doc.Projects {
		pr := &doc.Projects[p]
		end := math.Inf(-1) // when p may be asked again, at the earliest
		if pr.MinRPCTime > now {
			end = pr.MinRPCTime
		}
		rscEnd := math.Inf(1) // when one of p's resources may be asked again
		for r, res := range doc.Host.Resources {
			if !doc.BOINCEmulator && !versions[p*nR+r] {
				continue // never
			}
			if b := backoffUntil(pr, res.Type); b > now {
				rscEnd = min(rscEnd, b)
				continue
			}
			rscEnd = math.Inf(-1) // askable for res now
			break
		}
		end = max(end, rscEnd)
		if !(end > now) {
			return false
		}
		until = min(until, end)
	}
	w.askHold, w.askHoldUntil = true, until
	return true
}

// noFetchPossible reports whether ChooseProject would find no resource to ask for
// (prepareJobs done), and, where it is not known so, the REC sum of prepare's rest, made
// for the simulation that then decides. Its bounds first: workBound's below, then
// saturatedLow's (listsched.go), which read only prepareJobs' work; then, prepare made
// whole, the simulation's first pick alone. (Until issue 30's twenty-fourth round the
// pick came before saturatedLow, prepare made whole for it at every look; in 10-day
// runs of c008, c060, c063 and c159, both conventions, it answered none of the looks
// the two bounds left.) The first pick: a resource whose instances
// are all busy at the start stays so until the first active job finishes (the pick
// does not change before), so its saturated time is at least that job's finish. When
// every resource is saturated at the start and no active job finishes before
// work_buf_min, no resource's saturated time is below work_buf_min.
//
// Failing that, a bound from the work queued: while a resource of n instances is
// saturated, its jobs do at most n + u instance-seconds a second (u the largest
// usage of one of its jobs: the last job picked may overcommit it), and once it is
// not, its unfinished jobs use less than n instances, each with at most t (the
// longest time ÷ rate any of its jobs has left), so at most n × t instance-seconds
// are left. Its saturated time is thus at least (W − n × t) ÷ (n + u), W being its
// jobs' instance-seconds. (The CPUs' count of a coprocessor job's CPUs only makes
// them saturated longer; the bound leaves them out.) When that is at least
// work_buf_min for every resource, no resource's saturated time is below it either.
//
// On pickListed's hosts the first pick is read from the list order (listedShort), and
// where it leaves the choice open the simulation is replayed (simulateReplayed, as
// Piggyback's): replayed true, the moment's simulation done, none false. The request
// that follows (chooseProject: setup, then the shortfall, saturated time and idle
// instances) reads of the simulation only what the replay leaves to the bit, and
// prepare's rest and the pick are not made. (corpus c143 under BOINC's emulator at
// seed 1: 981 whole simulations here in a 10-day run, a host of one project whose
// every RPC asks for work: issue 30, forty-third round.) Under bsim's conventions, on a
// host of several projects whose jobs pick takes in blocks, one project's after
// another's (pickBlocks, from prepare's rest, made there), the same: listedShort in
// that order, then the replay in it.
func (w *Workspace) noFetchPossible(doc *state.Document, now float64) (recSum float64, none, replayed bool) {
	h := &doc.Host
	bufMin := WorkBufMin(&doc.Preferences)
	w.resAsked(doc, now)
	if w.workBound(h, bufMin) {
		return 0, true, false
	}
	w.fetchHold = false
	if w.saturatedLow(doc, now, bufMin) {
		return 0, true, false
	}
	if n := h.CPU().Instances; n <= maxTop && len(w.jobs) > 0 && !noSimReplay {
		if order, ok := w.pickListed(doc, w.relistable()); ok && w.listedShort(h, order, n, bufMin) && w.simulateReplayed(doc, now) {
			return 0, false, true
		}
	}
	recSum = w.prepareRest(doc)
	if n := h.CPU().Instances; n <= maxTop && !noSimReplay && !doc.BOINCEmulator {
		if order, ok := w.pickBlocks(doc, recSum); ok && w.listedShort(h, order, n, bufMin) {
			w.replayFetch(doc, now, n, order)
			return recSum, false, true
		}
	}
	w.pick(doc, recSum)
	return recSum, !w.pickShort(h, bufMin), false
}

// pickShort is noFetchPossible's answer from the simulation's first pick (made):
// whether a resource some project may be asked for has an instance idle, or a job
// picked finishes before bufMin.
func (w *Workspace) pickShort(h *state.Host, bufMin float64) bool {
	for r := range h.Resources {
		if float64(h.Resources[r].Instances)-w.simUsed[r] > 1e-6 && !w.noAsk[r] {
			return true
		}
	}
	for _, a := range w.active {
		j := &w.jobs[a]
		if j.simT < bufMin {
			return true
		}
	}
	return false
}

// listedShort is pickShort's answer without the pick on a host of pickListed's (order
// its order, n the CPUs): the first pick runs the first min(n, jobs) jobs of the order,
// each a CPU job of one CPU, so the CPUs in use are that count, exactly, and the
// coprocessors' none.
func (w *Workspace) listedShort(h *state.Host, order []int, n int, bufMin float64) bool {
	run := min(n, len(w.jobs))
	for r := range h.Resources {
		used := 0.0
		if r == w.cpuRes {
			used = float64(run)
		}
		if float64(h.Resources[r].Instances)-used > 1e-6 && !w.noAsk[r] {
			return true
		}
	}
	for k := range run {
		i := k
		if len(order) > 0 {
			i = order[k]
		}
		if w.jobs[i].simT < bufMin {
			return true
		}
	}
	return false
}

// workBound reports whether the work bound of noFetchPossible puts every resource's
// saturated time at or past bufMin (prepareJobs done: its sums).
func (w *Workspace) workBound(h *state.Host, bufMin float64) bool {
	// How much faster than the work done a running job's remaining work may fall:
	// estimate × correction factor ÷ real work (state.Task.RemainingWork's (1 −
	// fraction done) × estimate), at most Overestimate × the largest correction
	// factor, and at least 1 (a true remaining work falls as fast as the work done).
	fall := w.fall
	hold := math.Inf(1)
	for r := range h.Resources {
		if r < len(w.noAsk) && w.noAsk[r] {
			continue // no project may be asked for it (resAsked)
		}
		over, ok := w.resourceOver(h, r, bufMin)
		if !ok {
			return false
		}
		// How long the bound stays past bufMin: while the tasks stay as they are,
		// W falls only by the work the running jobs do, which use at most n + u
		// instances (CPUsFit), each at most fall simulated seconds ÷ the
		// availability the simulation runs it at (availFrac) a second, and t only
		// falls.
		hold = min(hold, over*availFrac(&h.TimeStats, r != w.cpuRes)/fall)
	}
	if len(w.noAsk) == len(h.Resources) {
		hold = min(hold, w.noAskUntil-w.boundAt)
	}
	w.fetchHold, w.fetchHoldUntil, w.fetchBoxed = hold > 0, w.boundAt+hold, false
	return true
}

// resourceOver is workBound's bound for resource r: how far past bufMin its saturated
// time is by the work queued, in what the running jobs' work falls by, and whether it
// is (prepareJobs done: its sums).
func (w *Workspace) resourceOver(h *state.Host, r int, bufMin float64) (float64, bool) {
	n := float64(h.Resources[r].Instances)
	s := w.sums[sumsPer*r : sumsPer*r+sumsPer]
	b := [3]float64{s[sumW], s[sumMaxT], s[sumMaxU]} // W, t, u
	// A margin for rounding: the simulation sums the same times in another order.
	over := (b[0]-n*b[1])/(n+b[2]) - (bufMin*(1+1e-9) + 1e-6)
	if over >= 0 {
		return over, true
	}
	// saturatedBound's, where they hold: its sum falls at most n + 1 ÷ n times as
	// fast, its n-th longest time as fast. Failing them, saturatedList's, n + 1
	// times as fast. (Neither is walked where the sums put both below bufMin:
	// saturatedBelow.)
	if satBelow && w.saturatedBelow(h, r, bufMin*(1+1e-9)+1e-6) {
		return 0, false
	}
	sat, kth, ok := w.saturatedBound(h, r)
	if !ok {
		return 0, false
	}
	x := bufMin*(1+1e-9) + 1e-6
	if over = max((sat-x)*n/(n+1), kth-x); over >= 0 {
		return over, true
	}
	if sat, ok = w.saturatedList(h, r); !ok {
		return 0, false
	}
	over = (sat - x) / (n + 1)
	return over, over >= 0
}

// fetchHeld reports whether the work fetch's hold (fetchHold) holds at now: before
// its end and, for lowHold's resting on served CPUs that read the RECs, while the
// REC fractions stay in its box (fetchBoxed).
func (w *Workspace) fetchHeld(doc *state.Document, now float64) bool {
	return w.fetchHold && now < w.fetchHoldUntil && (!w.fetchBoxed || recDrift(doc, w.fetchF) <= w.fetchEps)
}

// setHold finds, after a pass at now that missesKnown let through without a
// simulation (before: instead of that pass, which is then not made), until when the
// passes that follow would change nothing while the tasks stay as they are (Reset
// ends it: an RPC, a task finishing or settled), and sets w.hold and w.holdUntil. It
// holds only on a host whose runnable jobs are all CPU jobs, none of a project whose
// correction factor puts its jobs in EDF, when the running jobs fill the CPUs (free ≤
// 0 after them, so no other job starts) and each of them would start in any order
// (the others leave some CPU free), and:
//
//   - no job can miss its deadline before now + missesKnown's slack (w.slack): a
//     job's remaining work only falls while the tasks stay as they are, so the
//     bound on when the last job ends does too, and time eats the slack at most a
//     second a second; so no deadline miss, no EDF;
//   - every running job's time slice goes on past it: elapsed time grows at most a
//     second a second.
//
// Then every pass until then (the one at now too, when before) lists the running
// jobs as unfinished time slices first (no EDF, no coprocessor job) and runs exactly
// them, whatever the priorities.
//
// A job's state does not enter its remaining work, so a pass that started or stopped
// jobs leaves the slack good, but for one thing: under BOINC's emulator a job's
// remaining work is its true one once it has run (state.Task.EmulatorFlopsLeft),
// which may be more than its estimate said before. When the pass is not made
// (before) or started or stopped a job, every running job must therefore have run
// already there. (A pass that changed nothing holds as it did before these skips'
// third round, docs/decisions.md.)
func (w *Workspace) setHold(doc *state.Document, now float64, before bool) {
	w.hold, w.holdMiss, w.sliceEnd = false, false, math.Inf(1)
	if w.anyMiss {
		return // earliest deadline first: the order is the deadlines', not the slices'
	}
	n := float64(doc.Host.CPU().Instances)
	period := doc.Preferences.CPUSchedulingPeriod
	until := now + w.slack
	used, least := 0.0, math.Inf(1)
	changed, unsure := before, false
	// (The slices in locals: the walk read them through w and doc at every job.)
	jobs, tasks, projects, cpuRes := w.jobs, doc.Tasks, doc.Projects, w.cpuRes
	edf := anyEDFDCF(projects)
	for i := range jobs {
		j := &jobs[i]
		if j.res != cpuRes || edf && projects[j.proj].DCF() > EDFDCF {
			return
		}
		t := &tasks[j.task]
		running := t.State == state.TaskRunning
		if j.running != running {
			changed = true // this pass started or stopped it
			if running {
				// It runs from now: its rise ends the hold too (noRiseUntil
				// reads the jobs running before the pass). Found by
				// TestReholdAgainstPass's queues: a preempted job started at t0
				// rose 493 s in, inside a hold of 3,479 s (docs/decisions.md,
				// forty-first round).
				until = min(until, riseFrom(doc, j, t, now))
			}
		}
		if !running {
			continue
		}
		if doc.BOINCEmulator && !(t.EmulatorFlopsLeft > 0) {
			unsure = true
		}
		used += j.cpus
		// The job of fewest CPUs, coming last, is the one the others may leave no
		// CPU for.
		least = min(least, j.cpus)
		until = min(until, now+period-(t.ElapsedTime-t.ElapsedTimeAtLastSched))
	}
	until = min(until, w.noRiseUntil(doc, now))
	const slack = 1e-9 // state.CPUsFit's
	if changed && unsure || n-used > slack || !(n-(used-least) > slack) || !(until > now) {
		return
	}
	w.hold, w.holdUntil = true, until
	w.setBox(doc, w.recEps)
}

// setEDFHold is setHold for a pass at now, made after missesKnown (no simulation),
// in which some job misses its deadline (w.anyMiss): earliest deadline first then
// decides the run, not the time slices. It holds only on a host whose runnable jobs
// are all CPU jobs, none of a project whose correction factor puts its jobs in EDF,
// when the pass started or stopped no job (under BOINC's emulator every running job
// has run: its remaining work is its true one) and the running jobs fill the CPUs
// (free ≤ 0 after them, so no CPU job after them in the list runs: state.CPUsFit).
// Then, while the
// tasks stay as they are, until now + missesKnown's slack and the first running
// job's time slice ends, every pass lists the same jobs for their misses in the same
// order and runs exactly them:
//
//   - the misses are the same: a job that misses (its computation deadline past,
//     or by missBounds' bound for the slack) goes on missing, and no other comes
//     to miss before the slack runs out (setHold); so the same counts per project;
//   - earliest_deadline_result lists a project's jobs earliest deadline first, as
//     many as it has misses, and the jobs that miss are a project's earliest (their
//     deadlines are before now + work_buf_min + the cushion, the others' after): so
//     every job that misses is listed, whatever the ties' order (by started, then
//     the estimated remaining time, which falls for a running job), unless the
//     listing stops at twice the CPUs (stop_scan_cpu) first; then there is no hold
//     when two jobs of a project with misses share a deadline, both started and
//     one running (the order of the ties may then list another job), unless both
//     are listed, or only the running one is, and every job takes the same CPUs
//     (tieListed), or, until its lead is eaten, a running job not listed comes
//     behind a listed one (edfListingSure). A job may also
//     miss by missBounds' bound (w.boundMiss), for the slack too (missesKnown);
//     the jobs that miss are then not a project's earliest, and the ties are
//     looked at whatever the count;
//   - the run list's order (sortRunList) puts the deadline misses first, among them
//     the unfinished time slices first: the running jobs' (until the first ends; a
//     job not running has none), whose order among themselves (by CPUs, then the
//     list's) leaves them all running (they all ran in this pass, and the CPUs are
//     summed in an order the ties do not change where they differ); then the
//     running jobs not listed for a miss, each within its slice, whether listed by
//     priority or for its slice: the same jobs in every pass, the other jobs
//     listed by priority (the REC moves) after them (not running, no slice), and
//     again all of them run (they all ran, the same argument), leaving the CPUs
//     full for the rest. (Until issue 30's eighth round every job that ran had to
//     be listed for its miss: down-2cpu, noisy and deadlines-4cpu refused 199, 371
//     and 600 holds in a 10-day run where one ran for its slice.)
//
// (deadlines-4cpu made a full pass at almost every step for its misses.)
func (w *Workspace) setEDFHold(doc *state.Document, now float64) {
	w.hold, w.holdMiss = false, false
	if w.changed {
		return
	}
	n := float64(doc.Host.CPU().Instances)
	period := doc.Preferences.CPUSchedulingPeriod
	ends := math.Inf(1) // the first time slice's end
	used := 0.0
	free := w.sliceFree() // the slices' ends bound nothing
	jobs, tasks, projects, cpuRes := w.jobs, doc.Tasks, doc.Projects, w.cpuRes
	edf := anyEDFDCF(projects)
	for i := range jobs {
		j := &jobs[i]
		if j.res != cpuRes || edf && projects[j.proj].DCF() > EDFDCF {
			return
		}
		if !j.running {
			continue
		}
		t := &tasks[j.task]
		if doc.BOINCEmulator && !(t.EmulatorFlopsLeft > 0) {
			return
		}
		used += j.cpus
		ends = min(ends, w.sliceBound(free, now+period-(t.ElapsedTime-t.ElapsedTimeAtLastSched)))
	}
	rise := w.noRiseUntil(doc, now)
	until := min(now+w.slack, ends, rise)
	const slack = 1e-9 // state.CPUsFit's
	if n-used > slack || !(until > now) {
		return
	}
	sure, ok := w.edfListingSure(doc, now)
	if until = min(until, sure); !ok || !(until > now) {
		return
	}
	w.hold, w.holdUntil, w.holdMiss = true, until, true
	w.setBox(doc, w.recEps)
	w.carryHold(doc, min(ends, sure, rise), math.Inf(1)) // no listing by priority
}

// heldPass is the record of a pass that runs exactly the jobs running, without a
// listing: its record, an empty run list, and the misses Arrived reads (the pass's
// own when missed, else none).
func (w *Workspace) heldPass(doc *state.Document, now float64, missed bool) {
	w.recordPass(doc, now)
	w.list = w.list[:0]
	if missed {
		w.passMissed = append(w.passMissed[:0], w.missed...)
	} else {
		clear(w.passMissed)
	}
	w.passAt = now
}
