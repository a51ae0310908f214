package boincpolicy

import (
	"cmp"
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
// the elapsed time when it last started, below the period), orders the list by
// importance (more_important: deadline misses, then coprocessor jobs, then unfinished
// time slices, then CPU jobs that take more CPUs, then the list's order) and runs the
// jobs in that order while they fit: a coprocessor job when its instances are free
// and the CPUs committed stay within one more than the host has, a CPU job while the
// CPUs are not all committed (state.CPUsFit).
func (w *Workspace) Schedule(doc *state.Document, now float64) []RunEntry {
	if w.Quiet && w.quietSchedule(doc, now) {
		return w.list
	}
	w.Simulate(doc, now)
	w.list = w.schedule(doc, now, w.list[:0])
	return w.list
}

func (w *Workspace) schedule(doc *state.Document, now float64, list []RunEntry) []RunEntry {
	h := &doc.Host
	nR := w.nRes
	nJ := len(w.jobs)
	w.chosen = scratch.Grow(w.chosen, nJ)
	// project_priority_init(false): recs and priorities afresh, over the projects with
	// runnable jobs (the work fetch's setup, which may have run at this moment, takes
	// every project).
	clear(w.eligible)
	for i := range w.jobs {
		w.eligible[w.jobs[i].proj] = true
	}
	copy(w.recTemp, w.rec)
	recSum := Priorities(doc, w.recTemp, w.eligible, w.prio, w.shareFrac)
	copy(w.missedCopy, w.missed)
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
		for !full(rr) {
			i := w.bestByPriority(rr)
			if i < 0 {
				break
			}
			if !fits(&w.jobs[i]) {
				w.chosen[i] = true
				continue
			}
			add(i, WhyPriority)
		}
	}
	// enforce_run_list.
	period := doc.Preferences.CPUSchedulingPeriod
	for i := range w.jobs {
		j := &w.jobs[i]
		if !j.running || w.chosen[i] {
			continue
		}
		t := &doc.Tasks[j.task]
		if t.ElapsedTime-t.ElapsedTimeAtLastSched < period {
			list = append(list, RunEntry{Task: i, Why: WhyTimeSlice, Priority: w.prio[j.proj]})
		}
	}
	inSlice := func(e *RunEntry) bool {
		j := &w.jobs[e.Task]
		t := &doc.Tasks[j.task]
		return j.running && t.ElapsedTime-t.ElapsedTimeAtLastSched < period
	}
	for k := range list {
		list[k].Runs = false
	}
	// A stable sort keeps the list's order (seqno) among equals.
	slices.SortStableFunc(list, func(a, b RunEntry) int {
		ja, jb := &w.jobs[a.Task], &w.jobs[b.Task]
		if c := -cmpBool(a.Why == WhyEDF, b.Why == WhyEDF); c != 0 {
			return c
		}
		ca, cb := ja.res != w.cpuRes, jb.res != w.cpuRes
		if c := -cmpBool(ca, cb); c != 0 {
			return c
		}
		if c := -cmpBool(inSlice(&a), inSlice(&b)); c != 0 {
			return c
		}
		if !ca {
			if c := -cmp.Compare(ja.cpus, jb.cpus); c != 0 {
				return c
			}
		}
		return 0
	})
	free := float64(h.CPU().Instances)
	clear(w.coprocUsed)
	for k := range list {
		e := &list[k]
		j := &w.jobs[e.Task]
		co := j.res != w.cpuRes
		switch {
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
	for i := range w.jobs {
		j := &w.jobs[i]
		t := &doc.Tasks[j.task]
		switch {
		case runs[i] && t.State != state.TaskRunning:
			t.State = state.TaskRunning
			t.CPUTimeAtLastSched, t.ElapsedTimeAtLastSched = t.CPUTime, t.ElapsedTime
			w.fetchHold = false // its remaining work may change as it starts (workBound)
		case !runs[i] && t.State == state.TaskRunning:
			t.State = state.TaskPreempted
			w.fetchHold = false
		}
	}
	for k := range list {
		list[k].Task = w.jobs[list[k].Task].task
	}
	if doc.CPUSched == nil {
		doc.CPUSched = new(state.CPUSched)
	}
	*doc.CPUSched = state.CPUSched{LastPass: now, NextPass: now + SchedPeriod, NextPassReason: "BOINC reschedules every minute"}
	return list
}

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

// earliestMiss is earliest_deadline_result for resource r: the unchosen job with the
// earliest deadline among the projects with misses left on r.
func (w *Workspace) earliestMiss(doc *state.Document, r int) int {
	best := -1
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != r || w.chosen[i] {
			continue
		}
		if doc.Projects[j.proj].DCF() <= EDFDCF && w.missedCopy[j.proj*w.nRes+r] <= 0 {
			continue
		}
		if best < 0 || j.deadline < w.jobs[best].deadline {
			best = i
			continue
		}
		b := &w.jobs[best]
		if j.deadline > b.deadline || b.started && !j.started {
			continue
		}
		if j.left/j.speed < b.left/b.speed || !b.started && j.started {
			best = i
		}
	}
	return best
}

// bestByPriority is the next job of resource r by project priority: for a
// coprocessor, first_coproc_result (the highest-priority project, a started job, the
// earliest arrived); for the CPUs, the highest-priority project's best job (running,
// preempted, the earliest arrived).
func (w *Workspace) bestByPriority(r int) int {
	best := -1
	rank := func(j *job) int {
		switch {
		case j.running:
			return 0
		case j.started:
			return 1
		}
		return 2
	}
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
		case r == w.cpuRes && rank(j) < rank(b):
			best = i
		case r != w.cpuRes && j.started && !b.started:
			best = i
		}
	}
	return best
}

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
