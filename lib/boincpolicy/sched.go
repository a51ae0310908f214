package boincpolicy

import (
	"cmp"
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// Why a job is in the run list (RunEntry.Why).
const (
	WhyEDF       = "deadline miss (earliest deadline first)"
	WhyPriority  = "project priority"
	WhyTimeSlice = "running, time slice not over"
)

// RunEntry is one job of the run list, in the order the scheduler tries them.
type RunEntry struct {
	Task     int     // index in doc.Tasks
	Why      string  // WhyEDF, WhyPriority or WhyTimeSlice
	Priority float64 // its project's priority when it was chosen
	Runs     bool    // it got its processors
	Skipped  string  // why it did not, when it did not
}

// Schedule is BOINC's CPU scheduling pass at now (cpu_sched.cpp make_run_list,
// enforce_run_list): it sets the runnable tasks running or preempted and returns the
// run list with the reasons (the workspace's: good until its next call). The scheduling period (preferences cpu_scheduling_period)
// is each running job's time slice.
//
// make_run_list, after the round-robin simulation (Simulate) and the priorities from
// REC over the projects with runnable jobs:
//
//   - per coprocessor type, then for the CPUs: first the jobs projected to miss their
//     deadline, earliest deadline first (ties: the least remaining time, a started
//     job before an unstarted one), as many per project as it has misses
//     (earliest_deadline_result; every job of a project whose correction factor is
//     above EDFDCF), then
//   - coprocessors: the highest-priority project's job, a started one first, then the
//     earliest arrived (first_coproc_result); CPUs: the highest-priority project's
//     best job: running, then preempted, then the earliest arrived
//     (assign_results_to_projects, highest_prio_project_best_result);
//   - each job taken lowers its project's priority (SchedBump);
//   - coprocessor jobs until every instance is reserved; CPU jobs until twice the CPUs
//     are listed (stop_scan_cpu).
//
// enforce_run_list adds the running jobs whose time slice is not over (a job runs at
// least a scheduling period once started: elapsed_time − elapsed_time_at_last_sched,
// the elapsed time when it last started, not above the period: BOINC's slice is over
// only once the clock has passed its end, client/cpu_sched.cpp finished_time_slice's
// now > run_interval_start + period), orders the list by
// importance (more_important: deadline misses, then coprocessor jobs, then unfinished
// time slices, then CPU jobs that take more CPUs, then the list's order) and runs the
// jobs in that order while they fit: a coprocessor job when its instances are free
// and the CPUs committed stay within one more than the host has, a CPU job while the
// CPUs are not all committed (state.CPUsFit).
func (w *Workspace) Schedule(doc *state.Document, now float64) []RunEntry {
	w.changed = false
	lost := w.arrLost && w.arrRecv // (a settle frees a CPU: no hold to carry)
	w.arrLost, w.arrRecv = false, false
	if w.keep && w.passAt == now {
		// The moment's second pass after jobs arrived (Arrived): the jobs afresh,
		// the moment's deadline-miss counts kept.
		w.keep = false
		w.arrCarry = false
		if lost && w.Quiet && w.arrivedKeeps(doc, now) {
			// The jobs arrived change nothing the hold ended by their arrival
			// ran: the pass's record only, its counts the moment's.
			w.recordPass(doc, now)
			w.list = w.list[:0]
			w.passAt = now
			return w.list
		}
		if w.Quiet && w.viewKept {
			// The moment's view brought up to date, the jobs received built
			// (Arrived keeps it): a whole view was four refreshes' cost, at every
			// moment jobs arrived (issue 30, fortieth round).
			w.refresh(doc)
			if viewCheck {
				w.checkView(doc)
			}
		} else {
			w.view(doc)
		}
		// The view kept, as quietView keeps its own: the next moment's brings it up
		// to date (refresh) rather than build it again (a second whole view at each
		// moment jobs arrived: issue 30, twenty-first round).
		w.viewKept, w.received, w.viewTasks = true, false, len(doc.Tasks)
		w.prepareJobs(doc)
		clear(w.missed) // (none when the moment had no pass: Idle)
		copy(w.missed, w.passMissed)
		w.list = w.schedule(doc, now, w.list[:0])
		return w.list
	}
	w.keep = false
	if w.Quiet {
		// Before the view is brought up to date: whether the tasks are the old jobs
		// and new ones after them (arrivedHold's condition).
		carry := (lost || w.arrCarry) && !w.hold && now < w.arrUntil && w.inBox(doc) && !noArrived
		if carry {
			w.arrK, carry = w.arrivedOld(doc)
		}
		w.arrCarry = carry
		done := w.quietSchedule(doc, now)
		w.arrCarry = false
		if done {
			return w.list
		}
	}
	w.arrCarry = false
	w.Simulate(doc, now)
	w.list = w.schedule(doc, now, w.list[:0])
	return w.list
}

// sliceRun is how long running task t has run of its time slice, which is over once
// this passes the scheduling period (client/cpu_sched.cpp finished_time_slice). Under
// BOINC's emulator it is the wall time from the slice's start to the end of the last
// step the task computed in (checkpoint_wall_time − run_interval_start_wall_time:
// state.Task.EmulatorRunStart), which a coprocessor task scheduled while the GPUs are
// not active passes without computing; elsewhere the elapsed time since it started.
// The two agree for a task that computes at every step.
func sliceRun(doc *state.Document, t *state.Task) float64 {
	if doc.BOINCEmulator && t.EmulatorRunStart > 0 {
		return t.EmulatorCheckpoint - t.EmulatorRunStart
	}
	return t.ElapsedTime - t.ElapsedTimeAtLastSched
}

// Idle records a moment at which the caller made no pass because the client held no
// task: BOINC's schedule_cpus returns at once without results (client/cpu_sched.cpp
// CLIENT_STATE::schedule_cpus), so the moment's round-robin simulation is the work
// fetch's, over no job, and a pass after an RPC brought jobs at that moment (Arrived)
// finds no deadline miss, as BOINC's does (rr_simulation runs once a moment).
func (w *Workspace) Idle(now float64) {
	w.passMissed = w.passMissed[:0]
	w.passAt = now
}

func (w *Workspace) schedule(doc *state.Document, now float64, list []RunEntry) []RunEntry {
	w.kept, w.listEps, w.khCarry, w.edfCPUs, w.edfOut = false, math.Inf(1), false, 0, false
	w.edfRes = -1 // earliestMiss's order, made afresh at each pass
	h := &doc.Host
	nR := w.nRes
	nJ := len(w.jobs)
	w.chosen = scratch.Grow(w.chosen, nJ)
	// project_priority_init(false): recs and priorities afresh, over the projects with
	// runnable jobs (the work fetch's setup, which may have run at this moment, takes
	// every project).
	clear(w.eligible)
	coJobs := false  // some job a coprocessor job (edfKeeps, coPickMargin)
	sameCPUs := true // every CPU job of the first's CPUs (keepsMore)
	first := false   // a CPU job met, of firstCPUs
	var firstCPUs float64
	// (The slices in locals: the loop read them through w at every job, the stores
	// to eligible possibly w's own fields.)
	jobs, eligible, cpuRes := w.jobs, w.eligible, w.cpuRes
	for i := range jobs {
		j := &jobs[i]
		eligible[j.proj] = true
		switch {
		case j.res != cpuRes:
			coJobs = true
		case !first:
			first, firstCPUs = true, j.cpus
		default:
			sameCPUs = sameCPUs && j.cpus == firstCPUs
		}
	}
	copy(w.recTemp, w.rec)
	recSum := Priorities(doc, w.recTemp, w.eligible, w.prio, w.shareFrac)
	copy(w.missedCopy, w.missed)
	w.passMissed = append(w.passMissed[:0], w.missed...) // Arrived's
	w.passAt = now
	w.coprocUsed = scratch.Grow(w.coprocUsed, nR)
	var cpusListed float64
	add := func(i int, why string) {
		j := &w.jobs[i]
		w.chosen[i] = true
		list = append(list, RunEntry{Task: i, Why: why, Priority: w.prio[j.proj]})
		if j.res != w.cpuRes {
			w.coprocUsed[j.res] += j.inst
		} else {
			cpusListed += j.cpus
			if why == WhyEDF {
				if !j.running && float64(w.edfCPUs) < float64(h.CPU().Instances) {
					w.edfOut = true
				}
				w.edfCPUs++
			}
		}
		w.recTemp[j.proj] += SchedBump(j.peak, w.totalPeak, recSum)
		w.prio[j.proj] = Priority(w.recTemp[j.proj], recSum, doc.Projects[j.proj].ResourceShare, w.shareFrac[j.proj])
	}
	full := func(r int) bool {
		if r == w.cpuRes {
			return cpusListed >= 2*float64(h.Resources[r].Instances)
		}
		return w.coprocUsed[r] >= float64(h.Resources[r].Instances)-1e-9
	}
	fits := func(j *job) bool { // sufficient_coprocs
		return j.res == w.cpuRes || w.coprocUsed[j.res]+j.inst <= float64(h.Resources[j.res].Instances)+1e-9
	}
	if doc.GPUsSuspended {
		// GPU computing is suspended: no coprocessor job may be scheduled
		// (cpu_sched.cpp can_schedule: "it's GPU, and GPUs are suspended"), nor is a
		// running one kept for its time slice (append_unfinished_time_slice), so the
		// running ones are preempted and their CPUs go to CPU jobs. Marked as chosen,
		// they are neither offered nor added below.
		for i := range w.jobs {
			if w.jobs[i].res != w.cpuRes {
				w.chosen[i] = true
			}
		}
	}
	for r := 0; r <= nR; r++ {
		// Coprocessors first in document order, then the CPUs.
		rr := r
		if r == nR {
			rr = w.cpuRes
		} else if r == w.cpuRes {
			continue
		}
		for !full(rr) {
			i := w.earliestMiss(doc, rr)
			if i < 0 {
				break
			}
			j := &w.jobs[i]
			if !fits(j) {
				w.chosen[i] = true // already_selected: not offered again
				continue
			}
			add(i, WhyEDF)
			w.missedCopy[j.proj*nR+rr]--
		}
		// Whether the pass keeps the jobs running, known from the entries listed
		// so far (edfKeeps, keepsMore): then its list is cut short.
		keeps := keepNo
		if rr == w.cpuRes && w.Quiet && !noEDFKeeps {
			if keeps = w.edfKeeps(doc, list, coJobs); keeps == keepOpen && !sameCPUs {
				keeps = keepNo
			}
		}
		if keeps == keepYes {
			return w.keptPass(doc, now, list)
		}
		if rr == w.cpuRes && !full(rr) {
			// Only when the loop below takes a job: when the deadline misses
			// filled the list (most passes that have misses do), ranking the jobs
			// was a fifth of the pass.
			w.rankCPUJobs(len(doc.Projects))
			if doc.BOINCEmulator {
				w.activeOrder(doc)
			}
		}
		for !full(rr) {
			var i int
			if rr == w.cpuRes {
				if i = w.bestCPUByPriority(); i >= 0 && keeps == keepOpen {
					// How far the RECs may move with this pick the same (setKeepHold).
					w.listEps = min(w.listEps, w.pickMargin(doc, w.jobs[i].proj))
				}
			} else if i = w.bestByPriority(rr); i >= 0 && w.Quiet {
				// How far the RECs may move with this pick the same (setKeepHold):
				// every coprocessor job's entry is in the run list edfKeeps reads.
				w.listEps = min(w.listEps, w.coPickMargin(doc, rr, w.jobs[i].proj))
			}
			if i < 0 {
				break
			}
			if !fits(&w.jobs[i]) {
				w.chosen[i] = true
				continue
			}
			add(i, WhyPriority)
			if keeps == keepOpen {
				if keeps = w.keepsMore(doc, list); keeps == keepYes {
					return w.keptPass(doc, now, list)
				}
			}
		}
		if keeps == keepOpen {
			// The listing is over with some CPU free: the run list holds nothing
			// more than edfKeeps and keepsMore saw (enforce_run_list adds only the
			// running jobs within their slice, which edfKeeps counted), and they
			// ran every entry they saw that fits. (The corpus's hosts whose CPUs
			// are idle beside their GPUs listed every pass whole: c138, c075 about
			// 14,000 a 10-day run; issue 30, twenty-first round.)
			if w.keepsRunning(doc) == keepYes {
				return w.keptPass(doc, now, list)
			}
		}
	}
	// enforce_run_list.
	period := doc.Preferences.CPUSchedulingPeriod
	chosen, tasks := w.chosen, doc.Tasks
	for i := range jobs {
		j := &jobs[i]
		if !j.running || chosen[i] {
			continue
		}
		t := &tasks[j.task]
		if sliceRun(doc, t) <= period {
			list = append(list, RunEntry{Task: i, Why: WhyTimeSlice, Priority: w.prio[j.proj]})
		}
	}
	for k := range list {
		list[k].Runs = false
	}
	w.sortRunList(doc, list, period)
	free := float64(h.CPU().Instances)
	clear(w.coprocUsed)
	shared := w.assignShared(doc, list)
	for k := range list {
		e := &list[k]
		j := &w.jobs[e.Task]
		co := j.res != w.cpuRes
		switch {
		case shared && co && h.Resources[j.res].Instances == 1:
			// assignShared decided the device (assign_coprocs); the CPUs are
			// checked after, and a job they skip keeps its share of the device.
			if w.pruned[k] {
				e.Skipped = "its coprocessor is taken"
			} else if !state.CPUsFit(free, j.cpus, co) {
				e.Skipped = "the CPUs are committed"
			} else {
				e.Runs = true
				free -= j.cpus
			}
		case co && w.coprocUsed[j.res]+j.inst > float64(h.Resources[j.res].Instances)+1e-9:
			e.Skipped = "its coprocessor is taken"
		case !state.CPUsFit(free, j.cpus, co):
			e.Skipped = "the CPUs are committed"
		default:
			e.Runs = true
			free -= j.cpus
			if co {
				w.coprocUsed[j.res] += j.inst
			}
		}
	}
	// Apply: the chosen run, the others that ran are preempted; a task that starts
	// (again) begins a time slice.
	runs := w.chosen
	clear(runs)
	for k := range list {
		if list[k].Runs {
			runs[list[k].Task] = true
		}
	}
	for i := range jobs {
		t := &tasks[jobs[i].task]
		switch {
		case runs[i] && t.State != state.TaskRunning:
			t.State = state.TaskRunning
			t.CPUTimeAtLastSched, t.ElapsedTimeAtLastSched = t.CPUTime, t.ElapsedTime
			if doc.BOINCEmulator {
				t.EmulatorRunStart = now // run_interval_start_wall_time (enforce_run_list)
			}
			w.fetchHold = false // its remaining work may change as it starts (workBound)
			w.changed, w.mkKept = true, false
		case !runs[i] && t.State == state.TaskRunning:
			t.State = state.TaskPreempted
			w.fetchHold = false
			w.changed, w.mkKept = true, false
		}
	}
	for k := range list {
		list[k].Task = w.jobs[list[k].Task].task
	}
	w.recordPass(doc, now)
	return list
}

// noEDFKeeps: every pass is made whole (a test's, to check edfKeeps against).
var noEDFKeeps bool

// Changed reports whether the last Schedule started or stopped a task (a pass that
// changed no task's state leaves the loop's list of running tasks good).
func (w *Workspace) Changed() bool { return w.changed }

// SchedPeriod is how often BOINC's client schedules at the latest (CPU_SCHED_PERIOD).
const SchedPeriod = 60

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// bestByPriority is the next job of resource r by project priority: for a
// coprocessor, first_coproc_result (the highest-priority project, a started job, the
// earliest arrived); for the CPUs, the highest-priority project's best job (running,
// preempted, the earliest arrived).
func (w *Workspace) bestByPriority(r int) int {
	best := -1
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != r || w.chosen[i] {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := &w.jobs[best]
		pj, pb := w.prio[j.proj], w.prio[b.proj]
		switch {
		case pj > pb:
			best = i
		case pj < pb:
		case j.proj != b.proj && r == w.cpuRes:
			// Equal priorities: the project first in the document (BOINC's loop keeps
			// the first it met).
			if j.proj < b.proj {
				best = i
			}
		case r == w.cpuRes && cpuRank(j) < cpuRank(b):
			best = i
		case r != w.cpuRes && j.started && !b.started:
			best = i
		}
	}
	return best
}

// rankCPUJobs readies bestCPUByPriority: the CPU jobs not chosen yet, per project and
// rank (running, preempted, the others), each list in the jobs' order.
func (w *Workspace) rankCPUJobs(nP int) {
	n := 3 * nP
	// (The slices in locals: the loops read them through w at every job, the stores
	// to the counts possibly w's own fields.)
	jobs, cpuRes := w.jobs, w.cpuRes
	chosen := w.chosen[:len(jobs)]
	at := scratch.Grow(w.rankAt, n+1)
	w.rankAt = at
	for i := range jobs {
		if j := &jobs[i]; j.res == cpuRes && !chosen[i] {
			at[3*j.proj+cpuRank(j)+1]++
		}
	}
	for k := range n {
		at[k+1] += at[k]
	}
	next := append(w.rankNext[:0], at[:n]...)
	w.rankNext = next
	ranked := scratch.Grow(w.ranked, at[n])
	w.ranked = ranked
	for i := range jobs {
		if j := &jobs[i]; j.res == cpuRes && !chosen[i] {
			k := 3*j.proj + cpuRank(j)
			ranked[next[k]] = i
			next[k]++
		}
	}
	copy(next, at[:n]) // now each list's next job
	w.rankHead = scratch.Grow(w.rankHead, nP)
	w.rankLast = -2 // every project's first job found at the first call (activeOrder may reorder them)
}

// activeOrder puts each project's running and preempted CPU jobs (rankCPUJobs' first
// two ranks) in the order they first started (state.Task.EmulatorActiveSeq): BOINC's
// client takes a project's best CPU job from its list of active tasks in that order,
// the first one running, else the first preempted (client/cpu_sched.cpp
// CLIENT_STATE::assign_results_to_projects), the tasks without an active task in the
// order they arrived. Under BOINC's emulator the loop numbers them (Sim.noteStarts).
func (w *Workspace) activeOrder(doc *state.Document) {
	for k := 0; k+1 < len(w.rankAt); k++ {
		if k%3 == 2 {
			continue // not started: the jobs' (arrival) order
		}
		seg := w.ranked[w.rankAt[k]:w.rankAt[k+1]]
		for a := 1; a < len(seg); a++ { // insertion sort, stable; few jobs
			x := seg[a]
			sx := doc.Tasks[w.jobs[x].task].EmulatorActiveSeq
			b := a
			for b > 0 && doc.Tasks[w.jobs[seg[b-1]].task].EmulatorActiveSeq > sx {
				seg[b] = seg[b-1]
				b--
			}
			seg[b] = x
		}
	}
}

// cpuRank is a CPU job's rank among its project's (highest_prio_project_best_result):
// running, then preempted, then the others.
func cpuRank(j *job) int {
	switch {
	case j.running:
		return 0
	case j.started:
		return 1
	}
	return 2
}

// bestCPUByPriority is bestByPriority for the CPUs (rankCPUJobs done): of the jobs not
// chosen, the highest-priority project's (the first in the document among equals),
// its best rank, the first in the jobs' order: bestByPriority's order, whose
// comparisons are these in turn, without going through every job at every call.
// Each project's first job not chosen (rankedHead) is kept from call to call: the
// listing chooses the job returned (lists it, or passes it over where it does not
// fit) and no other before it calls again, so only that job's project's moves. (With
// every project's lists walked at each call, it was a thirtieth of corpus c105's run,
// 16 CPUs listed twice over by priority at most passes; issue 30, forty-third round.)
func (w *Workspace) bestCPUByPriority() int {
	if p := w.rankLast; p >= 0 {
		w.rankHead[p] = w.rankedHead(p)
	} else if p == -2 {
		for p := range w.rankHead {
			w.rankHead[p] = w.rankedHead(p)
		}
	}
	best, bestP := -1, -1
	head, prio := w.rankHead, w.prio
	for p, i := range head {
		if i >= 0 && (bestP < 0 || prio[p] > prio[bestP]) {
			best, bestP = i, p
		}
	}
	w.rankLast = bestP
	if rankCheck {
		w.checkRank(best)
	}
	return best
}

// rankedHead is project p's first job not chosen, in its ranks' order (rankCPUJobs
// done), -1 if none: each rank's list walked on from where the last walk left it (the
// jobs chosen only grow).
func (w *Workspace) rankedHead(p int) int {
	at, next, ranked, chosen := w.rankAt, w.rankNext, w.ranked, w.chosen
	for k := 3 * p; k < 3*p+3; k++ {
		x := next[k]
		for x < at[k+1] && chosen[ranked[x]] {
			x++
		}
		next[k] = x
		if x < at[k+1] {
			return ranked[x]
		}
	}
	return -1
}

// rankCheck, rankDiffs, rankChecks: with the check on (tests only), every
// bestCPUByPriority is held to the walk of every project's lists (bestCPUWhole).
var (
	rankCheck             bool
	rankDiffs, rankChecks int
)

func (w *Workspace) checkRank(best int) {
	rankChecks++
	if w.bestCPUWhole() != best {
		rankDiffs++
	}
}

// bestCPUWhole is bestCPUByPriority walking every project's lists (the walks move
// each list's place past jobs chosen only, as rankedHead's).
func (w *Workspace) bestCPUWhole() int {
	best, bestP := -1, -1
	at, next, ranked, chosen, prio := w.rankAt, w.rankNext, w.ranked, w.chosen, w.prio
	for p := 0; 3*p < len(next); p++ {
		i := -1
		for k := 3 * p; k < 3*p+3 && i < 0; k++ {
			x := next[k]
			for x < at[k+1] && chosen[ranked[x]] {
				x++
			}
			next[k] = x
			if x < at[k+1] {
				i = ranked[x]
			}
		}
		if i >= 0 && (bestP < 0 || prio[p] > prio[bestP]) {
			best, bestP = i, p
		}
	}
	return best
}

// MissOrder returns the tasks (indices in doc.Tasks) the last whole simulation
// (Simulate) projected to miss their deadline, in the order it finished them, as
// RR_SIM::simulate adds them to the busy-time estimator (client/rr_sim.cpp). The slice
// is the workspace's, good until its next simulation.
func (w *Workspace) MissOrder() []int { return w.missOrder }

// MissStarted returns, beside MissOrder, whether each task had started when the
// simulation saw it: BOINC's client estimates a started task's remaining run time from
// its progress (in its emulator, its true remaining work), an unstarted one's from
// its estimate × the correction factor (client/result.cpp
// RESULT::estimated_runtime_remaining), and a task started but not yet computing has
// no progress to show. The slice is the workspace's, good until its next simulation.
func (w *Workspace) MissStarted() []bool { return w.missStarted }

// Misses returns the tasks (indices in doc.Tasks) the last simulation projected to miss
// their deadline.
func (w *Workspace) Misses() []int {
	var out []int
	for i := range w.jobs {
		if w.jobs[i].misses {
			out = append(out, w.jobs[i].task)
		}
	}
	return out
}

// SchedPriorities returns each project's scheduling priority from its REC, over the
// projects with runnable tasks (before a pass's bumps), as a new slice.
func (w *Workspace) SchedPriorities(doc *state.Document) []float64 {
	prio, frac := make([]float64, len(doc.Projects)), make([]float64, len(doc.Projects))
	recs := make([]float64, len(doc.Projects))
	elig := make([]bool, len(doc.Projects))
	for i := range doc.Projects {
		recs[i] = doc.Projects[i].REC
	}
	for i := range doc.Tasks {
		if doc.Tasks[i].State.Runnable() {
			if p := slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == doc.Tasks[i].Project }); p >= 0 {
				elig[p] = true
			}
		}
	}
	Priorities(doc, recs, elig, prio, frac)
	return prio
}

// runKey is what more_important compares of a run list entry, worked out once.
type runKey struct {
	edf, co, inSlice bool
	cpus             float64
}

// sortRunList orders the run list by importance (cpu_sched.cpp more_important):
// deadline misses, then coprocessor jobs, then running jobs within their time slice,
// then CPU jobs that take more CPUs; equals keep the list's order (seqno). A stable
// insertion sort on keys worked out once per entry: the lists are short, and the
// order is the one a stable sort by the same comparison gives.
func (w *Workspace) sortRunList(doc *state.Document, list []RunEntry, period float64) {
	w.keys = w.keys[:0]
	for k := range list {
		j := &w.jobs[list[k].Task]
		t := &doc.Tasks[j.task]
		w.keys = append(w.keys, runKey{edf: list[k].Why == WhyEDF, co: j.res != w.cpuRes,
			inSlice: j.running && sliceRun(doc, t) <= period, cpus: j.cpus})
	}
	more := func(a, b *runKey) bool { // a strictly before b
		if c := -cmpBool(a.edf, b.edf); c != 0 {
			return c < 0
		}
		if c := -cmpBool(a.co, b.co); c != 0 {
			return c < 0
		}
		if c := -cmpBool(a.inSlice, b.inSlice); c != 0 {
			return c < 0
		}
		return !a.co && -cmp.Compare(a.cpus, b.cpus) < 0
	}
	keys := w.keys
	for i := 1; i < len(list); i++ {
		e, k := list[i], keys[i]
		x := i
		for x > 0 && more(&k, &keys[x-1]) {
			list[x], keys[x] = list[x-1], keys[x-1]
			x--
		}
		list[x], keys[x] = e, k
	}
}

// assignShared is BOINC's assignment of a one-instance coprocessor to the sorted run
// list's jobs (client/coproc_sched.cpp assign_coprocs), for a list that has a job of a
// fractional count on such a device: the running jobs in the list first reserve their
// share (pending_usage); then in the list's order a running job keeps its share if
// what the jobs before it took leaves room (current_assignment_ok), and a job not
// running takes a share (get_fractional_assignment) of a device that is partly taken
// or reserved only when taken + reserved + its count fit, else of a device none of
// the jobs before it took, reserved or not (its running owner, later in the list, then
// loses it); a job of whole instances needs the device untaken (get_integer_assignment).
// The jobs that get no share are pruned (w.pruned, by list entry) before the CPUs are
// counted, and a job the CPUs then skip keeps its share: the device's other jobs do
// not run in its place. So a job not running that comes first, an earliest deadline
// say, does not take the share of a running job of its own size that the list keeps
// for its time slice: corpus c024 with half-GPU jobs ran B's new job beside A's first
// and kept A's second off, where the count of instances had run A's two (issue of the
// sweep's *-gpuhalf variants, docs/decisions.md).
//
// It reports whether it decided: false when no job of the list is a fractional one
// on a one-instance coprocessor, where the count of instances (enforce's test) gives
// the same answer for whole jobs of running or waiting tasks alike but for a job the
// CPUs skip, which the corpus never met (its 1,242 figures unchanged either way; kept
// so that they stay the very same computation). Coprocessors of several instances
// keep the count: BOINC's rule there needs the instances each running job holds
// (RESULT::coproc_indices), which the document does not keep.
func (w *Workspace) assignShared(doc *state.Document, list []RunEntry) bool {
	h := &doc.Host
	frac := false
	for k := range list {
		j := &w.jobs[list[k].Task]
		if j.res != w.cpuRes && j.inst < 1 && h.Resources[j.res].Instances == 1 {
			frac = true
			break
		}
	}
	if !frac {
		return false
	}
	nR := w.nRes
	w.coUse = scratch.Grow(w.coUse, nR)
	w.coPend = scratch.Grow(w.coPend, nR)
	clear(w.coUse)
	clear(w.coPend)
	w.pruned = scratch.Grow(w.pruned, len(list))
	clear(w.pruned)
	use, pend := w.coUse, w.coPend
	for k := range list {
		// increment_pending_usage: the running ones (is_gpu_task_running).
		if j := &w.jobs[list[k].Task]; j.res != w.cpuRes && j.running {
			pend[j.res] += min(j.inst, 1)
		}
	}
	for k := range list {
		j := &w.jobs[list[k].Task]
		r := j.res
		if r == w.cpuRes || h.Resources[r].Instances != 1 {
			continue
		}
		x := min(j.inst, 1)
		switch {
		case j.running: // current_assignment_ok, confirm_current_assignment
			if use[r]+x > 1 {
				w.pruned[k] = true
			} else {
				use[r] += x
				pend[r] -= x
			}
		case j.inst < 1: // get_fractional_assignment
			if (use[r] != 0 || pend[r] != 0) && use[r]+pend[r]+x <= 1 || use[r] == 0 {
				use[r] += x
			} else {
				w.pruned[k] = true
			}
		default: // get_integer_assignment
			if use[r] == 0 {
				use[r] = 1
			} else {
				w.pruned[k] = true
			}
		}
	}
	return true
}
