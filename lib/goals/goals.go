// Package goals owns the "goals" client policy: the goals seed 001 states (use the
// processors, enforce resource shares over a day or two, meet deadlines) pursued where
// the seeds' own algorithms fall short of them on an ordinary volunteer's host — a
// project whose server is down half the time, a host that is off at night, a project
// with deadlines of hours (issue 15; docs/decisions.md, "The goals policy", gives each
// rule and the figure it moves).
//
// Like lib/cpusched, lib/workfetch and lib/prsc it is pure: functions of the state
// document and the time, no clock, no randomness, no I/O. bsim's policy "goals" calls
// them, and bsched, bfetch and bdevices request call them with --policy goals, so a
// shell loop of the programs runs the same policy.
//
// The rules, in short:
//
//   - Debt: seed 002's long-term debts (prsc.AccumulateDebt), which keep accruing to a
//     project that may have jobs (D(P,R)) while it has none, clamped to a day of the
//     resource either way (Account). A project whose server is down is owed the time it
//     missed and gets it back when its work arrives; seed 001 resets the debt of a
//     project without runnable work to 0, so that time is lost for good.
//   - Scheduling (Schedule): per resource, first the tasks the round-robin simulation
//     sees missing their computation deadline (the report deadline less the work
//     buffer's low-water mark), earliest deadline first and whatever their project's
//     share (BOINC's deadline mode, which seed 001 lacks), with them any started task
//     that one of them of later deadline would push past its own; then by overall
//     debt as seed 001 does, its anticipated debt falling by the scheduling period per
//     instance given. A task, started or not, that can no longer meet its deadline even if run
//     from now on without a break (by its estimate, corrected only downwards) is
//     abandoned (done, as a BOINC client aborts a late unstarted job): running it
//     would only waste the host.
//   - Work fetch (Request): each project keeps a buffer of its own, in wall-clock time:
//     enough of its work to last the work buffer at the rate its share gives it, with
//     the host's on fraction counted (seed 001 counts only the active fraction;
//     availability says why not both), but never more than it can finish in half its jobs' latency; it asks
//     when below the low-water mark or when an instance is idle. So a project with
//     2-hour deadlines holds an hour of work, a reliable project with long deadlines a
//     day, and an unreliable server's project keeps enough to ride out its outages. A
//     project ahead of its share by more than a scheduling period waits for a resource
//     while it holds enough or a project owed more may be asked for it, and is asked
//     for it then only when an instance is idle.
//   - Reporting (Next): a result overdue for reporting (seed 000's rule) is reported at
//     the first RPC the host can make, whether or not any project needs work; seed
//     000's Poll lets it wait while the host is low on work, and a host that is off
//     much of the time may not get another chance before the deadline.
package goals

import (
	"cmp"
	"math"
	"slices"

	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// Name is the policy's name for --policy.
const Name = "goals"

// LatencyFraction is the part of a job's latency its project's buffer may hold: the
// work a project holds must be done in half its jobs' latency at its share's rate, the
// other half being the margin for estimates that are low and time the host is off.
const LatencyFraction = 0.3

// DebtLimit is how far a debt may go either way, in days of the whole resource: the
// shares are enforced "in a typical period of a day or two" (seed 001).
const DebtLimit = 1.0

const fitSlack = 1e-9

// Workspace keeps what the policy's passes and requests need from one call to the
// next: the document's name index, what each app version's tasks take, and the
// buffers of a pass, a request and the debts' accounting. It is for a caller that
// schedules, asks and accounts at every step (the emulator, about 1,500 times a
// simulated day: making them anew at each call was 80,000 objects, 15 MB, a simulated
// day, and half a run's time went to allocating and collecting them). The zero value
// is ready. Its answers are Schedule's, Needs', Request's, Next's and Account's, to the
// last bit; the slices it returns (the abandoned tasks, the needs, a request's
// Coprocs) are w's, good until its next call. As for those functions, doc must be valid
// (state.Validate: unique names, known references).
type Workspace struct {
	// Quiet leaves the words out: a request's Reason and a plan's Why stay empty; every
	// choice and number is the same. The emulator asks at every step and shows none,
	// and a report's reason was a new string at each report.
	Quiet bool

	projects, appVersions state.Names
	avRes                 []int     // per app version: its host resource
	avInst, avCPUs        []float64 // per app version: a task's instances, its CPUs beside a coprocessor
	avSpeed               []float64 // per app version: its Speed on the host
	tasks                 []taskInfo

	// A pass's buffers (Schedule).
	finish               prsc.CompletionsWork
	abandoned            []int
	overall, anticipated []float64 // per project
	chosen               []bool    // per task
	seen                 []bool    // per project
	order                []int     // the host's resources, coprocessors first
	mine, late           []taskInfo
	byRank               [3][]taskInfo // a resource's tasks by rank

	// A request's buffers (Needs, Request, Next).
	needs             []Need
	idle              []float64 // per host resource
	queued            []float64 // [p*nr+r]
	latency           []float64 // per project
	skip              []int
	coprocs           []state.CoprocRequest
	resLow, resQueued []float64 // per host resource
	resTop            []float64 // per host resource

	// Each project's share of a resource and whether it has an app version for it
	// (shares).
	share []float64
	has   []bool

	debts prsc.DebtWork
}

// taskInfo is a runnable task as the policy sees it.
type taskInfo struct {
	i       int     // index in doc.Tasks
	p       int     // project index
	r       int     // resource index
	inst    float64 // instances of its resource
	cpus    float64 // CPUs a coprocessor task takes beside
	runtime float64 // remaining estimated run time, seconds (at the version's speed)
	rank    int     // 0 running, 1 preempted, 2 ready
	dl      float64 // report deadline
}

// rankOf is a runnable task's rank in a pass: running, preempted, then ready.
func rankOf(s state.TaskState) int {
	switch s {
	case state.TaskRunning:
		return 0
	case state.TaskPreempted:
		return 1
	}
	return 2
}

// byDeadline orders tasks by report deadline (cmp.Compare's order: NaN first).
func byDeadline(a, b taskInfo) int { return cmp.Compare(a.dl, b.dl) }

// sortStableByDeadline is slices.SortStableFunc(ts, byDeadline), without the sort
// when ts is in that order already (no task's deadline before the one ahead of it's):
// a stable sort leaves such a list as it is. The emulator's tasks arrive by deadline.
func sortStableByDeadline(ts []taskInfo) {
	for i := 1; i < len(ts); i++ {
		if byDeadline(ts[i], ts[i-1]) < 0 {
			slices.SortStableFunc(ts, byDeadline)
			return
		}
	}
}

// runnable is doc's runnable tasks, in w's storage. A task's project, app version and
// resource are looked up as maps built in document order would answer (state.Names):
// a name that is not there is the first one's.
func (w *Workspace) runnable(doc *state.Document) []taskInfo {
	h := &doc.Host
	w.projects.SetProjects(doc.Projects)
	w.appVersions.SetAppVersions(doc.AppVersions)
	w.avRes, w.avInst, w.avCPUs, w.avSpeed = w.avRes[:0], w.avInst[:0], w.avCPUs[:0], w.avSpeed[:0]
	for v := range doc.AppVersions {
		av := &doc.AppVersions[v]
		r, t := 0, av.ResourceType()
		for k := range h.Resources {
			if h.Resources[k].Type == t {
				r = k // the last of two alike, as the map did
			}
		}
		cpus := 0.0
		if av.Coproc != nil {
			cpus = av.AvgNCPUs
		}
		w.avRes = append(w.avRes, r)
		w.avInst, w.avCPUs, w.avSpeed = append(w.avInst, av.Instances()), append(w.avCPUs, cpus), append(w.avSpeed, av.Speed(h))
	}
	ts := w.tasks[:0]
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !t.State.Runnable() {
			continue
		}
		v := w.appVersions.Index(t.AppVersion)
		ti := taskInfo{i: i, p: w.projects.Index(t.Project), r: w.avRes[v], inst: w.avInst[v], cpus: w.avCPUs[v], rank: rankOf(t.State), dl: t.ReportDeadline}
		if sp := w.avSpeed[v]; sp > 0 {
			ti.runtime = t.RemainingWork(doc.Projects[ti.p].DCF()) / sp
		}
		ts = append(ts, ti)
	}
	w.tasks = ts
	return ts
}

// availability is the fraction of wall-clock time resource r computes, as a project's
// buffer counts it: the host's on fraction (× the GPU-active fraction for a
// coprocessor), not its active fraction. A task started goes on through the spells in
// which the host is on but not active under BOINC's emulator's conventions (client/sim.cpp,
// the must-hold's), and every corpus scenario's preferences say run_if_user_active, so
// the work held drains at the on fraction's rate; counted, the active fraction shrank
// the buffer and the host idled before the next request (seed 1, all three within
// +0.01 of BOINC: 95 -> 96 of 199; seeds 1-5 90 -> 93). Under bsim's own conventions
// part-time-4cpu (active 0.9) moves by under 0.001 (docs/decisions.md).
func availability(h *state.Host, r int) float64 {
	ts := h.TimeStats
	a := ts.OnFrac
	if h.Resources[r].Type != state.ResourceCPU {
		a *= ts.GPUActiveFrac
	}
	return a
}

// Account brings the debts up to date over dt seconds during which each project used
// used[p][r] instances of each resource (prsc.Usage's rule): seed 002's accounting,
// then every debt clamped to ±DebtLimit days of its resource (instance-seconds). now
// is the interval's end (prsc.AccumulateDebt).
func Account(doc *state.Document, used [][]float64, dt, now float64) {
	var w Workspace
	w.Account(doc, used, dt, now)
}

// Account is Account with w's buffers.
func (w *Workspace) Account(doc *state.Document, used [][]float64, dt, now float64) {
	w.debts.AccumulateDebt(doc, used, dt, now)
	for p := range doc.Projects {
		for k := range doc.Projects[p].Resources {
			pr := &doc.Projects[p].Resources[k]
			if res, ok := doc.Host.Resource(pr.Type); ok {
				lim := DebtLimit * 86400 * float64(res.Instances)
				pr.LongTermDebt = math.Max(-lim, math.Min(lim, pr.LongTermDebt))
			}
		}
	}
}

// Schedule runs one scheduling pass at now (see the package comment) and reports the
// tasks it abandoned. It sets doc.CPUSched as bsched does.
func Schedule(doc *state.Document, now float64) (abandoned []int) {
	var w Workspace
	return w.Schedule(doc, now)
}

// exhaustive, set by tests, makes a pass sort and search as it did before its
// shortcuts (the ranks apart, least, present): every task sorted and looked at.
var exhaustive bool

// Schedule is Schedule with w's index and buffers.
func (w *Workspace) Schedule(doc *state.Document, now float64) (abandoned []int) {
	h := &doc.Host
	ts := w.runnable(doc)
	// Abandon tasks that cannot meet their deadline even if run from now on without a
	// break (BOINC's client gives up only on a job it never started; one the host's
	// availability makes doubtful may still make it: hosts are not off on average but
	// in spells).
	abandoned = w.abandoned[:0]
	keep := ts[:0]
	for _, t := range ts {
		task := &doc.Tasks[t.i]
		unstarted := task.State == state.TaskReady && task.FlopsDone == 0
		// The run time without a correction factor above 1: the factor jumps to the
		// ratio of one job whose estimate was far too low (BOINC's rule), and tested
		// with it every new job would be abandoned, none would finish, and the factor
		// would never come down (c197: A's factor 41, the host a quarter idle).
		rt := t.runtime
		if dcf := doc.Projects[t.p].DCF(); dcf > 1 {
			rt /= dcf
		}
		// A started task too: one that cannot be done by its deadline even run
		// without a break from now on holds an instance another task could use, and
		// the time it ran is wasted either way (c017: A's 1.6-hour GPU jobs with
		// 2.4-hour deadlines, run to their end hours late while other tasks waited;
		// wf 0.28 -> 0.22). BOINC's client runs such a job to its end.
		started := task.FlopsDone > 0
		if (unstarted || started) && now+rt > task.ReportDeadline {
			task.State = state.TaskDone
			abandoned = append(abandoned, t.i)
			continue
		}
		keep = append(keep, t)
	}
	w.abandoned = abandoned
	ts = keep
	// A task is late when the simulation ends it after its computation deadline, its
	// report deadline less the work buffer's low-water mark (BOINC's
	// RESULT::computation_deadline: the host may wait that long before it reports).
	margin := doc.Preferences.WorkBufMinDays * 86400
	isLate := w.finish.Late(doc, now, margin)
	overall := scratch.Grow(w.overall, len(doc.Projects))
	w.overall = overall
	for p := range doc.Projects {
		overall[p] = prsc.OverallDebt(h, &doc.Projects[p])
	}
	chosen := scratch.Grow(w.chosen, len(doc.Tasks))
	w.chosen = chosen
	cpu := -1
	for r, res := range h.Resources {
		if res.Type == state.ResourceCPU {
			cpu = r
		}
	}
	cpuFree := float64(h.Resources[cpu].Instances)
	order := w.order[:0]
	for r := range h.Resources {
		if r != cpu {
			order = append(order, r)
		}
	}
	order = append(order, cpu)
	w.order = order
	for _, r := range order {
		free := float64(h.Resources[r].Instances)
		if r == cpu {
			free = cpuFree
		}
		// BOINC's overcommit (state.CPUsFit): a CPU task starts while a CPU is
		// uncommitted, a coprocessor task may overcommit the CPUs by up to one.
		fits := func(t taskInfo) bool {
			if chosen[t.i] {
				return false
			}
			if r == cpu {
				return state.CPUsFit(cpuFree, t.inst, false)
			}
			return t.inst <= free+fitSlack && state.CPUsFit(cpuFree, t.cpus, true)
		}
		take := func(t taskInfo) {
			chosen[t.i] = true
			free -= t.inst
			if r == cpu {
				cpuFree -= t.inst
			} else {
				cpuFree -= t.cpus
			}
		}
		// This resource's tasks by rank (running, preempted, ready), each rank in
		// document order, and the late ones (below) in document order too. least is
		// the fewest instances one takes: with fewer free, none fits (fits) and the
		// search below would find none (a NaN need may fit: -Inf). present counts the
		// projects with tasks here (seen); ready says whether the ready ones are by
		// deadline already.
		byRank := &w.byRank
		for k := range byRank {
			byRank[k] = byRank[k][:0]
		}
		mine := w.mine[:0] // all of them, in document order, for the exhaustive sort
		late := w.late[:0]
		least := math.Inf(1)
		seen := scratch.Grow(w.seen, len(doc.Projects))
		w.seen = seen
		present := 0
		ready := true
		for _, t := range ts {
			if t.r != r {
				continue
			}
			if !seen[t.p] {
				seen[t.p] = true
				present++
			}
			if t.inst < least {
				least = t.inst
			} else if t.inst != t.inst {
				least = math.Inf(-1)
			}
			if isLate[t.i] {
				late = append(late, t)
			}
			if exhaustive {
				mine = append(mine, t)
				continue
			}
			list := byRank[t.rank]
			if t.rank == 2 && len(list) > 0 && byDeadline(t, list[len(list)-1]) < 0 {
				ready = false
			}
			byRank[t.rank] = append(list, t)
		}
		// A started task that a late one of later deadline would push past its own
		// computation deadline, were the late one run first, runs with the late ones
		// in deadline order: run later it is wasted with all the time it has had (c101:
		// B's 16-hour job, 10 minutes from its end, waited behind B's later-deadline
		// short jobs, late in the simulation, and missed its deadline by 80 s).
		if n := len(late); n > 0 {
			for _, t := range ts {
				if t.r == r && !isLate[t.i] && doc.Tasks[t.i].FlopsDone > 0 && squeezed(late[:n], t, now, margin) {
					late = append(late, t)
				}
			}
		}
		w.mine, w.late = mine, late
		// Deadline mode: the tasks the round-robin simulation sees late, earliest
		// deadline first.
		sortStableByDeadline(late)
		// Without a per-project cap, as BOINC's (cpu_sched.cpp, earliest_deadline_result):
		// a late task runs whatever its project's share; the debts it runs up are paid
		// back after, and work fetch asks the projects owed (Request, by overall debt).
		for _, t := range late {
			if fits(t) {
				take(t)
			}
		}
		// Then by anticipated overall debt; within a project running, preempted, then
		// ready by earliest deadline: the tasks stably sorted by rank, then deadline.
		// That is each rank's tasks in document order stably sorted by deadline, one
		// rank after the other (lists): the few running and preempted ones sorted, the
		// thousands of ready ones only when out of order.
		lists := [3][]taskInfo{mine}
		if exhaustive {
			slices.SortStableFunc(mine, func(a, b taskInfo) int {
				if c := cmp.Compare(a.rank, b.rank); c != 0 {
					return c
				}
				return byDeadline(a, b)
			})
		} else {
			sortStableByDeadline(byRank[0])
			sortStableByDeadline(byRank[1])
			if !ready {
				slices.SortStableFunc(byRank[2], byDeadline)
			}
			lists = *byRank
		}
		anticipated := append(w.anticipated[:0], overall...)
		w.anticipated = anticipated
		payoff := doc.Preferences.CPUSchedulingPeriod * prsc.RelativeSpeed(h, h.Resources[r])
		for _, t := range late {
			if chosen[t.i] {
				anticipated[t.p] -= payoff * t.inst
			}
		}
		// The search may stop once it has met a fitting task of every project with
		// tasks here (present): no later task can be best. A project's first fitting
		// task became best when met, or the best then had at least its anticipated
		// debt, and best changes only to a strictly greater one.
		for {
			if (r == cpu && !state.CPUsFit(cpuFree, 0, false) || r != cpu && free+fitSlack < least) && !exhaustive {
				break // nothing fits (see least)
			}
			var best taskInfo
			found := false
			clear(seen)
			met := 0
		search:
			for _, list := range lists {
				for _, t := range list {
					if !fits(t) {
						continue
					}
					if !found || anticipated[t.p] > anticipated[best.p] {
						best, found = t, true
					}
					if !seen[t.p] {
						seen[t.p] = true
						if met++; met == present && !exhaustive {
							break search
						}
					}
				}
			}
			if !found {
				break
			}
			take(best)
			anticipated[best.p] -= payoff * best.inst
		}
	}
	next := now + doc.Preferences.CPUSchedulingPeriod
	for _, t := range ts {
		task := &doc.Tasks[t.i]
		switch {
		case chosen[t.i]:
			task.State = state.TaskRunning
			if t.runtime > 0 {
				next = math.Min(next, now+t.runtime)
			}
		case task.State == state.TaskRunning:
			task.State = state.TaskPreempted
		}
		task.CPUTimeAtLastSched, task.ElapsedTimeAtLastSched = task.CPUTime, task.ElapsedTime
	}
	// In place when there is one, as cpusched records its passes: the emulator passes
	// every few steps.
	if doc.CPUSched == nil {
		doc.CPUSched = new(state.CPUSched)
	}
	*doc.CPUSched = state.CPUSched{LastPass: now, NextPass: next, NextPassReason: "goals: scheduling period or a task's expected end"}
	return abandoned
}

// squeezed reports whether task t, not late, would miss its computation deadline (its
// report deadline less margin) were one of the late tasks of later deadline run before
// it on its instance.
func squeezed(late []taskInfo, t taskInfo, now, margin float64) bool {
	for _, l := range late {
		if l.dl > t.dl && now+l.runtime+t.runtime+margin > t.dl {
			return true
		}
	}
	return false
}

// Need is one project's work-fetch position on one resource.
type Need struct {
	Project  int
	Resource int
	Queued   float64 // instance-seconds of estimated run time it holds
	Low      float64 // ask when Queued is below this
	Want     float64 // ask for up to this
	Latency  float64 // its jobs' latency as the client saw it (0: no job seen)
}

// Needs returns every (project, resource) position: projects with an app version for
// the resource.
func Needs(doc *state.Document) []Need {
	var w Workspace
	return w.Needs(doc)
}

// Needs is Needs with w's index and buffers.
func (w *Workspace) Needs(doc *state.Document) []Need {
	return w.needsOf(doc, w.runnable(doc))
}

// needsOf is Needs with doc's runnable tasks ts.
func (w *Workspace) needsOf(doc *state.Document, ts []taskInfo) []Need {
	h := &doc.Host
	np, nr := len(doc.Projects), len(h.Resources)
	low, high := rpc.WaterMarks(&doc.Preferences)
	// Each project's work held per resource, each sum in task order.
	queued := scratch.Grow(w.queued, np*nr)
	w.queued = queued
	for _, t := range ts {
		queued[t.p*nr+t.r] += t.runtime * t.inst
	}
	// Each project's latency: the longest from a job's receipt to its deadline.
	latency := scratch.Grow(w.latency, np)
	w.latency = latency
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.ReceivedTime > 0 {
			p := w.projects.Index(t.Project)
			latency[p] = max(latency[p], t.ReportDeadline-t.ReceivedTime)
		}
	}
	out := w.needs[:0]
	for r, res := range h.Resources {
		share, has := w.shares(doc, res.Type)
		a := availability(h, r)
		for p := range doc.Projects {
			if !has[p] {
				continue
			}
			nd := Need{Project: p, Resource: r, Queued: queued[p*nr+r], Latency: latency[p]}
			rate := float64(res.Instances) * share[p] * a // instances of the resource per wall second
			lo, hi := low*86400, high*86400
			if nd.Latency > 0 {
				hi = math.Min(hi, LatencyFraction*nd.Latency)
				lo = math.Min(lo, hi/2)
			}
			nd.Low, nd.Want = rate*lo, rate*hi
			out = append(out, nd)
		}
	}
	w.needs = out
	return out
}

// Request is the policy's next work request at now, not to the projects in asked
// (indices in doc.Projects): among the projects that may be contacted (seed 000's RPC
// backoff) and are not backed off for the resource, first one with an app version for
// a resource that has an idle instance (the largest overall debt), else the one below
// its low-water mark on some resource with the largest overall debt. The request asks
// that project, on every resource where it holds less than it wants, for the
// difference (req_secs) and the idle instances (req_instances). ok is false when no
// project needs asking.
func Request(doc *state.Document, now float64, asked []int) (req state.WorkRequest, ok bool) {
	var w Workspace
	return w.Request(doc, now, asked)
}

// Request is Request with w's index and buffers; the request's Coprocs are w's.
func (w *Workspace) Request(doc *state.Document, now float64, asked []int) (req state.WorkRequest, ok bool) {
	req, _, ok = w.request(doc, now, asked)
	return req, ok
}

// request is Request and the index of the project it asks.
func (w *Workspace) request(doc *state.Document, now float64, asked []int) (req state.WorkRequest, project int, ok bool) {
	h := &doc.Host
	ts := w.runnable(doc)
	needs := w.needsOf(doc, ts)
	idle := w.idleInstances(doc, ts)
	eligible := func(nd Need) bool { return eligible(doc, nd, now, asked) }
	best, bestRes, bestIdle := -1, 0, false
	debt := func(p int) float64 { return prsc.OverallDebt(h, &doc.Projects[p]) }
	// overserved is how far a project's overall debt may fall below 0 before it is
	// ahead of its share on resource r: a scheduling period of the whole resource.
	overserved := func(r int) float64 {
		res := h.Resources[r]
		return doc.Preferences.CPUSchedulingPeriod * float64(res.Instances) * prsc.RelativeSpeed(h, res)
	}
	// Each resource's work held and low-water mark over all its projects, and the
	// largest debt of a project that may be asked for it.
	nr := len(h.Resources)
	resLow, resQueued := scratch.Grow(w.resLow, nr), scratch.Grow(w.resQueued, nr)
	w.resLow, w.resQueued = resLow, resQueued
	resTop := scratch.Grow(w.resTop, nr)
	w.resTop = resTop
	for r := range resTop {
		resTop[r] = math.Inf(-1)
	}
	for _, nd := range needs {
		resLow[nd.Resource] += nd.Low
		resQueued[nd.Resource] += nd.Queued
		if eligible(nd) {
			resTop[nd.Resource] = max(resTop[nd.Resource], debt(nd.Project))
		}
	}
	// waits reports whether position nd's project waits for its resource: ahead of its
	// share (overserved), while the resource holds enough or a project owed more may
	// be asked for it.
	waits := func(nd Need) bool {
		return debt(nd.Project) < -overserved(nd.Resource) && (resQueued[nd.Resource] >= resLow[nd.Resource] || debt(nd.Project) < resTop[nd.Resource])
	}
	for _, idleStep := range [...]bool{true, false} {
		for _, nd := range needs {
			if !eligible(nd) {
				continue
			}
			if idleStep && idle[nd.Resource] <= fitSlack {
				continue
			}
			if !idleStep && nd.Queued >= nd.Low {
				continue
			}
			// A project ahead of its share by more than a scheduling period of the
			// resource refills its own buffer only when the resource as a whole runs
			// low and no project that may be asked for it is owed more (BOINC asks the
			// project of highest priority for a resource's shortfall, work_fetch.cpp
			// choose_project). Its buffer drains as fast as it runs, and a project
			// whose tasks run in deadline mode runs far beyond its share: asked again
			// whenever it is empty, it kept the resource (c167: a project of share 1
			// had half of a GPU, its tasks late in the simulation at its share's
			// rate; c171: one of share 28 had three quarters of a GPU whenever the
			// CPUs ran low). Within a period is a time slice's swing (down-2cpu: a
			// project whose server is down half the time keeps its buffer).
			if !idleStep && waits(nd) {
				continue
			}
			if best < 0 || debt(nd.Project) > debt(best) {
				best, bestRes, bestIdle = nd.Project, nd.Resource, idleStep
			}
		}
		if best >= 0 {
			break
		}
	}
	if best < 0 {
		return state.WorkRequest{}, -1, false
	}
	req = state.WorkRequest{Time: now, Project: doc.Projects[best].Name, Coprocs: w.coprocs[:0]}
	if !w.Quiet {
		req.Reason = "goals: " + h.Resources[bestRes].Type
		if bestIdle {
			req.Reason += " instance idle"
		} else {
			req.Reason += " below the project's low-water mark"
		}
	}
	for _, nd := range needs {
		secs := math.Max(0, nd.Want-nd.Queued)
		inst := math.Max(0, idle[nd.Resource])
		if nd.Project != best || !eligible(nd) || (secs <= 0 && inst <= fitSlack) {
			continue
		}
		// A project asked because an instance of one resource is idle is not asked
		// for the others where it waits (c130: C, far ahead of its share, was asked
		// for a CPU another project could not take and for a day of GPU work with it).
		if inst <= fitSlack && waits(nd) {
			continue
		}
		if h.Resources[nd.Resource].Type == state.ResourceCPU {
			req.CPUReqSecs, req.CPUReqInstances = secs, inst
		} else {
			req.Coprocs = append(req.Coprocs, state.CoprocRequest{Type: h.Resources[nd.Resource].Type, ReqSecs: secs, ReqInstances: inst})
		}
		req.WorkReqSeconds = math.Max(req.WorkReqSeconds, secs)
	}
	w.coprocs = req.Coprocs
	if len(prsc.Requested(&req)) == 0 {
		return state.WorkRequest{}, -1, false
	}
	return req, best, true
}

// idleInstances is, per host resource, the instances no runnable task (ts) takes.
func (w *Workspace) idleInstances(doc *state.Document, ts []taskInfo) []float64 {
	idle := scratch.Grow(w.idle, len(doc.Host.Resources))
	w.idle = idle
	for r, res := range doc.Host.Resources {
		idle[r] = float64(res.Instances)
	}
	for _, t := range ts {
		idle[t.r] -= t.inst
	}
	return idle
}

// eligible reports whether the project of position nd may be asked for work of its
// resource at now: not in asked, not in seed 000's RPC backoff, not backed off for the
// resource (seed 002).
func eligible(doc *state.Document, nd Need, now float64, asked []int) bool {
	p := &doc.Projects[nd.Project]
	return !slices.Contains(asked, nd.Project) && rpc.CanContact(p, now) && !prsc.BackedOff(p, doc.Host.Resources[nd.Resource].Type, now)
}

// shares returns each project's fraction of the resource shares among the projects
// with an app version for resource type t (0 for the others), and whether it has one;
// both are w's, good until its next call.
func (w *Workspace) shares(doc *state.Document, t string) (share []float64, has []bool) {
	share, has = scratch.Grow(w.share, len(doc.Projects)), scratch.Grow(w.has, len(doc.Projects))
	w.share, w.has = share, has
	var total float64
	n := 0
	for p := range doc.Projects {
		has[p] = hasVersionFor(doc, doc.Projects[p].Name, t)
		if has[p] {
			total += doc.Projects[p].ResourceShare
			n++
		}
	}
	for p := range doc.Projects {
		if has[p] {
			share[p] = 1 / float64(n)
			if total > 0 {
				share[p] = doc.Projects[p].ResourceShare / total
			}
		}
	}
	return share, has
}

// hasVersionFor reports whether project has an app version for resource type t.
func hasVersionFor(doc *state.Document, project, t string) bool {
	return slices.ContainsFunc(doc.AppVersions, func(av state.AppVersion) bool {
		return av.Project == project && av.ResourceType() == t
	})
}
