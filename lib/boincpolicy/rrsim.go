package boincpolicy

import (
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// Simulate is BOINC's round-robin simulation (rr_sim.cpp RR_SIM::simulate) of the
// runnable jobs of doc from now: it marks the jobs projected to miss their deadline
// (counted per project and resource), and finds each resource's shortfall, saturated
// time and idle instances (w.Sim). Like BOINC's rr_simulation it runs once a moment:
// a second call at the same now keeps the first's answer (the caller calls Reset
// when the document changed in a way that must be seen at once).
//
//   - Each job runs at its speed × the host's availability (set_rrsim_flops: on ×
//     active, or on × GPU active, within [0.01, 1]) until its estimated remaining work
//     (state.Task.RemainingWork, with the project's correction factor) is done.
//   - Which jobs run (pick_jobs_to_run): coprocessors first, then CPUs; per resource
//     the projects with jobs for it in order of priority from their REC, each job
//     taken lowering its project's priority by SchedBump, a project's jobs in
//     arrival order, until the resource's instances are used (the last job may
//     overcommit them). A coprocessor job's CPUs count against the CPUs.
//   - Time moves to the next job's finish; when that is more than an hour away, by an
//     hour, or by a tenth of the way when it is more than ten hours away.
//   - A job misses its deadline when its simulated finish passes its report deadline
//     − work_buf_min − DeadlineCushion (RESULT::computation_deadline).
//   - Shortfall (RSC_WORK_FETCH::update_stats): the idle instances × time, up to
//     now + work_buf_total, the tail after the last job included; saturated time: the
//     end of the last interval in which no instance was idle.
//
// BOINC orders its project heap in pick_jobs_to_run with std::make_heap over PROJECT
// pointers and no comparator (by address, not priority); bkit follows the comment's
// intent, the highest priority first (docs/decisions.md).
func (w *Workspace) Simulate(doc *state.Document, now float64) {
	if w.simDone && w.simAt == now {
		return
	}
	if w.Quiet {
		w.quietView(doc, now)
	} else {
		w.view(doc)
	}
	w.simulate(doc, now)
	w.simDone, w.simAt = true, now
}

// Reset makes the next Simulate run afresh at the same moment, the view built again:
// the caller changed the document. The skips' holds end.
func (w *Workspace) Reset() {
	w.TasksChanged()
	w.viewKept = false
}

// TaskFinished is TasksChanged for a caller whose task finished its work and still
// runs (the loop settles it later, with TasksChanged): the holds go on. The task's
// remaining work has fallen to nothing, as fast as the work bound allows (workBound:
// Overestimate), and it keeps its processors until it is settled, so a pass would
// still run exactly the jobs running (setHold).
func (w *Workspace) TaskFinished() {
	w.simDone, w.viewDone = false, false
	w.riseKept = false
}

// TasksChanged is Reset for a caller that changed only the tasks, as the emulator's
// loop does (task states, tasks done or reported dropped, tasks received added at
// the end): the quiet paths' view is brought up to date (refresh) instead of built
// again.
func (w *Workspace) TasksChanged() {
	if w.hold {
		// The hold may go on across new jobs (arrivedKeeps, arrivedHold).
		w.arrLost, w.arrUntil, w.arrViewN = true, w.holdUntil, w.viewN
		w.arrMissed = append(w.arrMissed[:0], w.passMissed...)
	}
	w.simDone, w.viewDone, w.hold, w.fetchHold, w.askHold, w.reportHold = false, false, false, false, false, false
	w.keep, w.mkKept, w.khCarry, w.riseKept = false, false, false, false
	if fallCheck {
		clear(fallSeen)
	}
}

// RPCMade is TasksReceived for a caller whose RPC reported and received no task (it
// failed, or its reply was empty): it changed the project's backoffs and RPC times,
// which the work fetch reads, so the work fetch's holds end (fetchHold, askHold,
// reportHold) and the moment's simulation, which its choice reads, runs again; but not
// what the passes read (the tasks, the RECs, the correction factors), so their holds
// go on, and the view stays good. (down-2cpu's server is down at 217 RPCs of a 10-day
// run under --emulate boinc, each of which ended the holds; corpus c143 made 526 RPCs
// that changed no task: issue 30, nineteenth round.)
func (w *Workspace) RPCMade() {
	w.simDone, w.fetchHold, w.askHold, w.reportHold = false, false, false, false
}

// TasksReceived is TasksChanged for a caller that also dropped tasks (reported) or
// received some (added at the end): refresh then finds each job's task again by its
// key.
func (w *Workspace) TasksReceived() {
	w.TasksChanged()
	w.received, w.arrRecv = true, true
}

// TasksReported is TasksReceived for a caller whose RPC reported tasks (done, dropped
// from the document) and received none: the jobs are the runnable tasks, none gone or
// added, and the passes read no other task, so the pass's hold (setHold's,
// setKeepHold's, setEDFHold's, rehold's: passes change nothing until its end, the
// tasks as they are) goes on; the rest as TasksReceived (the jobs' tasks found again
// by their keys, the work fetch's holds ended: the RPC changed its backoffs). (An RPC
// that only reported ended the holds 47 times in part-time-4cpu's 10-day run under
// BOINC's emulator, 144 in down-2cpu's: issue 30, twenty-fifth round.)
func (w *Workspace) TasksReported() {
	hold := w.hold
	w.TasksReceived()
	w.hold = hold
}

// Arrived is TasksChanged after an RPC's reply brought jobs at the moment of the last pass,
// for a caller that follows BOINC's client there (its emulator's second pass of a
// moment): the next pass at that moment sees the new jobs but keeps the deadline
// misses the moment's simulation counted, which the new jobs are not in
// (client/rr_sim.cpp rr_simulation: one simulation per moment; the new results'
// rr_sim_misses_deadline is false and the projects' counts are the simulation's).
// The quiet paths' view is kept, as TasksReceived keeps it: that pass brings it up
// to date (refresh), the jobs received built at the end.
func (w *Workspace) Arrived() {
	w.TasksChanged()
	w.received, w.keep = true, true
}

// prepare is the simulation's start (init_pending_lists, project_priority_init): the
// pending lists, the projects with runnable jobs and their priorities, the counts; no
// job misses yet. It returns the REC sum.
func (w *Workspace) prepare(doc *state.Document) float64 {
	w.prepareJobs(doc)
	return w.prepareRest(doc)
}

// prepareRest is prepare after prepareJobs.
func (w *Workspace) prepareRest(doc *state.Document) float64 {
	nR := w.nRes
	clear(w.nusedTotal)
	clear(w.nRunnable)
	for len(w.pendBase) < len(w.pending) {
		w.pendBase = append(w.pendBase, nil)
	}
	for k := range w.pending {
		w.pending[k] = w.pendBase[k][:0]
	}
	// project_priority_init(false): the projects with a runnable job.
	clear(w.eligible)
	for i := range w.jobs {
		j := &w.jobs[i]
		w.eligible[j.proj] = true
		k := j.proj*nR + j.res
		w.pending[k] = append(w.pending[k], i)
		w.nRunnable[k]++
		w.nusedTotal[j.proj*nR+w.cpuRes] += j.cpus
		if j.res != w.cpuRes {
			w.nusedTotal[k] += j.inst
		}
	}
	for k := range w.pending {
		w.pendBase[k] = w.pending[k] // its array, grown or not, from its start
	}
	recSum := Priorities(doc, w.rec, w.eligible, w.prio, w.shareFrac)
	// What pick starts every project from and adds for every job, the same at every
	// pick of the simulation.
	w.prioBase = scratch.Grow(w.prioBase, len(doc.Projects))
	for p := range doc.Projects {
		w.prioBase[p] = Priority(w.rec[p], recSum, doc.Projects[p].ResourceShare, w.shareFrac[p])
	}
	// pickAgain's condition: each project's CPU jobs of the same CPUs and bump as
	// its first (the first in its pending list).
	w.pickSame = true
	for i := range w.jobs {
		j := &w.jobs[i]
		j.bump = SchedBump(j.peak, w.totalPeak, recSum)
		if j.res != w.cpuRes {
			continue
		}
		if f := &w.jobs[w.pending[j.proj*nR+j.res][0]]; f.cpus != j.cpus || f.bump != j.bump {
			w.pickSame = false
		}
	}
	return recSum
}

// The bounds' sums per resource (prepareJobs): of its jobs' simulated times (remaining
// work ÷ rate), the sum, the sum × instances (W), the longest; the most instances a
// job takes.
const (
	sumSerial = iota
	sumW
	sumMaxT
	sumMaxU
	sumsPer
)

func (w *Workspace) simulate(doc *state.Document, now float64) {
	w.simulateFrom(doc, now, w.prepare(doc))
}

// simulateAfterJobs is simulate after prepareJobs at now and missesKnown, with
// nothing changed since: missesKnown leaves of prepareJobs' work only the jobs it
// found certain to miss marked (it counts them only when it returns true), so the
// marks are cleared instead of the jobs prepared again.
func (w *Workspace) simulateAfterJobs(doc *state.Document, now float64) {
	for i := range w.jobs {
		w.jobs[i].misses = false
	}
	w.simulateFrom(doc, now, w.prepareRest(doc))
}

// simulateFrom is simulate after prepare at now (its REC sum), with nothing changed
// since but by noFetchPossible, which reads prepare's work and picks (which the
// simulation's first pick does afresh).
func (w *Workspace) simulateFrom(doc *state.Document, now, recSum float64) {
	w.simGen++ // its steps change the jobs' simulated times
	h := &doc.Host
	nR := w.nRes
	w.missOrder = w.missOrder[:0]
	w.missStarted = w.missStarted[:0]

	bufEnd := now + WorkBufTotal(&doc.Preferences)
	compDeadline := WorkBufMin(&doc.Preferences) + DeadlineCushion
	simNow := now
	first, picked := true, false
	ended, endedRes, endedJob := -1, -1, -1 // the project, resource and job that finished in the last step
	jobs := w.jobs                          // the loop never moves the jobs
	// nextBest, nextDT: the active job that finishes first after the last step and
	// its time, found as the step set the times (the same jobs in the same order, the
	// same comparisons); read when the step took no job out (the pick stands).
	nextBest, nextDT := -1, 0.0
	for {
		// A step in which no job finished leaves the pending lists, and so the pick,
		// as they were.
		best, dt := -1, 0.0
		if !picked {
			w.pickShift = false
			if first || noPickAgain || !w.pickAgain(doc, ended, endedRes, endedJob) {
				w.pick(doc, recSum)
			}
			picked = true
			if pickHook != nil {
				pickHook(w)
			}
			if coOnceCheck {
				w.checkCoOnce(doc)
			}
			if first {
				for r := range w.Sim {
					w.Sim[r].IdleNow = max(0, float64(h.Resources[r].Instances)-w.simUsed[r])
				}
				first = false
			}
			if len(w.active) == 0 {
				break
			}
			if w.pickShift {
				// The active jobs are those of the last step but the one that
				// ended, in their order, then one new (pickShift): the scan's
				// fold over them is the last step's over the others (nextBest,
				// the one that ended left out), then the new job.
				best, dt = nextBest, nextDT
				if a := w.active[len(w.active)-1]; best < 0 || jobs[a].simT < dt {
					best, dt = a, jobs[a].simT
				}
				if nextBestCheck {
					w.checkNextBest(best, dt)
				}
			} else {
				// The active job that finishes first (the first among equals): the
				// fold starts from the first (peeled: one test a job, not two).
				best, dt = w.active[0], jobs[w.active[0]].simT
				for _, a := range w.active[1:] {
					if t := jobs[a].simT; t < dt {
						best, dt = a, t
					}
				}
			}
		} else {
			best, dt = nextBest, nextDT
			if nextBestCheck {
				w.checkNextBest(best, dt)
			}
		}
		if dt > 3600 {
			best = -1
			if dt > 36000 {
				dt /= 10
			} else {
				dt = 3600
			}
		} else {
			picked = false
			j := &jobs[best]
			j.simDone = true
			ended, endedRes, endedJob = j.proj, j.res, best
			// Out of its pending list at once (pick reads only the jobs left), the
			// list's order kept (nothing reads a list past its length).
			k := j.proj*nR + j.res
			q := w.pending[k]
			if x := slices.Index(q, best); x == 0 && !noFrontCut {
				w.pending[k] = q[1:] // (prepareRest starts it again from pendBase)
			} else if x >= 0 {
				copy(q[x:], q[x+1:])
				w.pending[k] = q[:len(q)-1]
			}
			if simNow+dt > j.deadline-compDeadline {
				j.misses = true
				w.missOrder = append(w.missOrder, j.task)
				w.missStarted = append(w.missStarted, j.started)
				w.missed[j.proj*nR+j.res]++
				w.Sim[j.res].Misses++
			}
		}
		// nextBest over the active jobs but the one that ended (best; none: -1),
		// which the next pick leaves out: read as it is where no job ended, and
		// where the pick shifts the others (pickShift).
		// The fold starts from the first of them (peeled: the loop after it tests
		// t < nextDT first, which fails at most jobs, with no test of nextBest);
		// every active job's time is stepped, each on its own, as before.
		nextBest, nextDT = -1, 0.0
		rest := w.active
		for x, a := range rest {
			t := stepJob(&jobs[a], dt)
			if a != best {
				nextBest, nextDT = a, t
				rest = rest[x+1:]
				break
			}
		}
		if nextBest < 0 {
			rest = nil // (every active job was best: stepped above)
		}
		for _, a := range rest {
			if t := stepJob(&jobs[a], dt); t < nextDT && a != best {
				nextBest, nextDT = a, t
			}
		}
		for r := range w.Sim {
			w.updateStats(r, float64(h.Resources[r].Instances)-w.simUsed[r], simNow, dt, now, bufEnd)
		}
		simNow += dt
	}
	if simNow < bufEnd {
		for r := range w.Sim {
			w.updateStats(r, float64(h.Resources[r].Instances), simNow, bufEnd-simNow, now, bufEnd)
		}
	}
}

// stepJob steps job j's simulated time by dt (its remaining work less what it does at
// its rate, at least 0) and returns its time left (simT).
func stepJob(j *job, dt float64) float64 {
	left := j.simLeft - j.simRate*dt
	if left <= 0 { // max(0, left): −0 to +0, a NaN kept
		left = 0
	}
	j.simLeft = left
	t := left / j.simRate
	j.simT = t
	return t
}

// resUsed is the instances of resource r the active jobs use (sim_nused).
func (w *Workspace) resUsed(r int) float64 {
	var n float64
	nused, nR := w.simNused, w.nRes // (in locals: the loop read them through w at each project)
	for p := 0; p*nR < len(nused); p++ {
		n += nused[p*nR+r]
	}
	return n
}

// usedNear reports whether run, the instances in use summed as pick added them (at
// most picks terms ≥ 0, one a pick so far, the same as resUsed sums in another
// order), may be at or past thr where resUsed's sum is: two sums of the same m terms
// ≥ 0 are each within (m − 1) × 2⁻⁵³ × their true sum of it, so for m up to maxPicks
// they differ by less than 1e-9 × (run + 1). Elsewhere pick's stop is known from run,
// without the sum over every project at every pick (a tenth of policy boinc's run on
// the corpus's hosts of several projects: issue 30, twelfth round).
func usedNear(run, thr float64, picks int) bool {
	return exactUsed || picks > maxPicks || run+1e-9*(run+1) >= thr
}

// maxPicks: usedNear's bound holds for sums of up to this many terms and more.
const maxPicks = 100000

// exactUsed: pick sums the instances in use at every pick (a test's, to check
// usedNear against).
var exactUsed bool

// updateStats is RSC_WORK_FETCH::update_stats for resource r over [simNow, simNow+dt].
func (w *Workspace) updateStats(r int, idle, simNow, dt, now, bufEnd float64) {
	s := &w.Sim[r]
	if idle > 1e-6 && simNow < bufEnd {
		s.Shortfall += idle * min(dt, bufEnd-simNow)
	}
	if idle < 1e-6 {
		s.Saturated = simNow + dt - now
	}
}

// pick is pick_jobs_to_run: the jobs that run in the simulation now (w.active), and
// the instances of each resource they use (w.simUsed).
func (w *Workspace) pick(doc *state.Document, recSum float64) {
	nR := w.nRes
	w.pickRecSum = recSum
	w.active = w.active[:0]
	clear(w.simNused)
	copy(w.recTemp, w.rec)
	cpus := float64(doc.Host.CPU().Instances)
	w.pickSeq, w.pickBroke = w.pickSeq[:0], false
	w.segAt = scratch.Grow(w.segAt, nR)
	w.segBroke = scratch.Grow(w.segBroke, nR)
	clear(w.segBroke)
	for _, r := range w.resOrder {
		w.segAt[r] = len(w.pickSeq)
		limit := float64(doc.Host.Resources[r].Instances)
		thr := limit // pick stops once the instances in use reach it
		// The instances in use as pick adds them (run), the exact sum (resUsed, in
		// the projects' order) taken only where run is near thr: pick's stop reads
		// the exact one (usedNear).
		run := 0.0
		if r == w.cpuRes {
			w.cpuSeqAt, w.cpuActAt = len(w.pickSeq), len(w.active)
			thr, run = cpus, w.resUsed(r) // the coprocessor jobs' CPUs
		}
		// The projects with jobs left for r (the simulation takes a job out of its
		// list when it finishes).
		w.heap = w.heap[:0]
		for p := range doc.Projects {
			k := p*nR + r
			q := w.pending[k]
			w.pendingAt[k] = 0
			if len(q) > 0 {
				w.recTemp[p] = w.rec[p]
				w.prio[p] = w.prioBase[p]
				w.heap = append(w.heap, p)
			}
		}
		for len(w.heap) > 0 {
			// The highest-priority project (the first among equals). In BOINC's
			// emulator the last in the document: pick_jobs_to_run's make_heap over
			// PROJECT* has no comparator, so it orders by address, the project
			// allocated last first (docs/decisions.md, issue 30).
			bi := len(w.heap) - 1
			if !doc.BOINCEmulator {
				bi = 0
				for x := 1; x < len(w.heap); x++ {
					if w.prio[w.heap[x]] > w.prio[w.heap[bi]] {
						bi = x
					}
				}
			}
			p := w.heap[bi]
			k := p*nR + r
			j := &w.jobs[w.pending[k][w.pendingAt[k]]]
			w.active = append(w.active, w.pending[k][w.pendingAt[k]])
			w.pickSeq = append(w.pickSeq, p)
			if r == w.cpuRes || !doc.GPUsSuspended {
				// While GPU computing is suspended a coprocessor job's CPUs are not
				// counted, so that CPU work is fetched for them (rr_sim.cpp
				// RR_SIM::activate).
				w.simNused[p*nR+w.cpuRes] += j.cpus
			}
			if r != w.cpuRes {
				w.simNused[k] += j.inst
				run += j.inst
			} else {
				run += j.cpus
			}
			w.recTemp[p] += j.bump
			if usedNear(run, thr, len(w.pickSeq)) && w.resUsed(r) >= thr {
				w.pickBroke = r == w.cpuRes
				w.segBroke[r] = true
				break
			}
			w.pendingAt[k]++
			if w.pendingAt[k] == len(w.pending[k]) {
				w.heap = slices.Delete(w.heap, bi, bi+1)
			} else if !doc.BOINCEmulator && len(w.heap) > 1 {
				// The priority is read only to compare projects, and only here: after
				// the pick that ends the resource's loop, for a project left alone in
				// it (the heap only shrinks) or in the emulator's order (by address)
				// it is never read, and every reader after the simulation works the
				// priorities out afresh (Priorities).
				w.prio[p] = Priority(w.recTemp[p], recSum, doc.Projects[p].ResourceShare, w.shareFrac[p])
			}
		}
	}
	w.simUsed = scratch.Grow(w.simUsed, nR)
	for r := range nR {
		w.simUsed[r] = w.resUsed(r)
	}
	// Whether the CPUs' picks are all one project's (pickAgain: one project's host).
	w.cpuOne = -1
	if seq := w.pickSeq[w.cpuSeqAt:]; len(seq) > 0 {
		w.cpuOne = seq[0]
		for _, q := range seq[1:] {
			if q != seq[0] {
				w.cpuOne = -1
				break
			}
		}
	}
}

// noPickAgain: the simulation picks afresh after every job's end (a test's, to
// check pickAgain against).
var noPickAgain bool

// pickAgain is pick after the simulation took a finished job of project p and
// resource r out of its pending list, where it is known without comparing
// priorities: it reports whether it was (else pick must run). When the job is a CPU
// job and each project's CPU jobs take the same CPUs and bump (prepare: pickSame),
// the coprocessors' picks are as they were (their pending lists, RECs and priorities
// are; each resource's loop starts its projects' temporary RECs and priorities
// afresh and counts only its own instances), and so are the CPUs they leave the CPU
// jobs (w.simNused's CPUs, summed in the same order). The CPUs' picks then depended
// only on how many jobs the last pick had taken from each project (its temporary REC
// is its REC plus that many bumps, summed in the same order; the CPUs in use are the
// same sums) and on which projects were left in its heap, which loses a project when
// pick has taken its last job. The other projects' lists are as they were, and when p
// still has more jobs than the last pick took of it before its stop (pickBroke: the
// jobs in use reached the CPUs; else the heap emptied), p's list does not run out
// sooner either: pick takes the projects in the same order (pickSeq), each project's
// jobs in its list's order, and stops at the same pick. So the jobs are the projects'
// first in their lists now, in that order, and every buffer pick leaves (the
// instances in use, the temporary RECs, the priorities) holds what it held. (Hosts
// with coprocessor jobs ran a whole pick at almost every job's end: issue 30, twelfth
// round.) Elsewhere (a coprocessor job's end, p's list run out sooner), pickDrop may
// know the pick all the same (i: the job that ended).
func (w *Workspace) pickAgain(doc *state.Document, p, r, i int) bool {
	if !w.pickSame || r != w.cpuRes {
		return !noPickDrop && w.pickDrop(doc, i)
	}
	nR := w.nRes
	seq := w.pickSeq[w.cpuSeqAt:] // the CPUs' picks
	// Every pick (pick, pickAgain, pickDrop) leaves each project's place in its CPU
	// list at the count of its picks that went on (pendingAt), and its CPU jobs in the
	// pick the first of its list, in order; the simulation since took one job out of
	// p's list only. So the other projects' jobs in the pick and every place stand,
	// and p's t-th pick takes its t-th job still listed.
	k := p*nR + r
	list := w.pending[k]
	if took := w.pendingAt[k]; took >= len(list) {
		// p's list would run out sooner: pickDrop's case, where the last pick
		// took every job.
		return !noPickDrop && w.pickDrop(doc, i)
	}
	// Where every CPU pick is p's, they were p's first jobs listed, the one that
	// ended among them, and are now the others in their order, then p's next job,
	// last in w.active (the CPUs' picks come last): pickShift, for simulateFrom.
	act := w.active[w.cpuActAt : w.cpuActAt+len(seq)]
	if w.cpuOne == p {
		// Every CPU pick is p's (pick: cpuOne): the x-th takes p's x-th job, the
		// loop's stores in one copy.
		copy(act, list[:len(seq)])
		w.pickShift = true
	} else {
		t := 0
		for x, q := range seq {
			if q == p {
				act[x] = list[t]
				t++
			}
		}
		w.pickShift = t == len(seq)
	}
	if pickAgainAfter != nil && w.cpuActAt > 0 {
		*pickAgainAfter++
	}
	return true
}

// pickAgainAfter, when set, counts the picks pickAgain made after coprocessor jobs'
// (a test's).
var pickAgainAfter *int

// resourceOrder sets w.resOrder: the host resources coprocessors first (in reverse
// document order, as BOINC loops from the last type down), then the CPU.
func (w *Workspace) resourceOrder() {
	w.resOrder = w.resOrder[:0]
	for r := w.nRes - 1; r >= 0; r-- {
		if r != w.cpuRes {
			w.resOrder = append(w.resOrder, r)
		}
	}
	w.resOrder = append(w.resOrder, w.cpuRes)
}
