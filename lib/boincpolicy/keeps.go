package boincpolicy

import (
	"math"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// A quiet pass cut short: when the deadline misses and the jobs listed by priority
// after them can only run the jobs running, the pass's start and stop decisions are
// known before the rest of its list is made (edfKeeps, keepsMore).

// What edfKeeps and keepsMore know of a pass: it keeps the jobs running (keepYes),
// it may not (keepNo: the pass is made whole), or not yet (keepOpen: the entries
// listed by priority next decide it).
const (
	keepNo = iota
	keepYes
	keepOpen
)

// edfKeeps tells whether a pass (schedule) whose run list so far is list, the
// coprocessors' entries and the CPU jobs listed for their deadline misses, runs
// exactly the jobs running, whatever it lists by priority after them; it leaves in
// w.edfList the run list's entries that run, are deadline misses or are coprocessor
// jobs', in its order, each run or skipped (what a quiet pass's caller reads of it:
// setEDFHold), and in w.keepFree, keepRuns and keepAt what keepsMore goes on from.
// The run list's order (sortRunList: more_important) puts the deadline misses before
// every other entry and the coprocessor jobs' before the CPU jobs' that are not
// misses, in an order among themselves that the entries after them do not change (a
// stable sort by keys of their own): every coprocessor job's entry is in list already
// (the coprocessors are listed before the CPUs) but for the running ones within their
// time slice not listed, which enforce_run_list adds (and which are added here), so
// which of these entries run is decided by them alone, by enforce_run_list's rules (a
// coprocessor job while its instances are free and state.CPUsFit's rule for it: the
// CPUs may be overcommitted by less than one). Then come the CPU jobs: first the
// running ones within their time slice, each in the list whether listed by priority
// or for its slice, and then the others. When the entries before them leave some CPU
// free (state.CPUsFit: a CPU job starts only while some CPU is free), the running CPU
// jobs within their slice not listed for a miss must each find a CPU free in any order
// (the others leave some: passKeeps' argument), and then run. When they leave no CPU
// free either, nothing after them runs: when the jobs that run are then the jobs
// running, the pass starts and stops nothing, and its entries by priority change
// nothing but the list. When they leave a CPU free, the entries listed by priority
// decide (keepOpen). (down-2cpu and noisy made a whole pass after almost every
// simulation, for misses that filled the CPUs with the jobs running; the corpus's
// hosts with coprocessor jobs about 950,000 whole passes a convention over 10-day
// runs, none cut short before issue 30's twenty-first round.)
func (w *Workspace) edfKeeps(doc *state.Document, list []RunEntry, coJobs bool) int {
	period := doc.Preferences.CPUSchedulingPeriod
	w.edfList = append(w.edfList[:0], list...)
	if coJobs {
		// enforce_run_list's entries for the running coprocessor jobs within their
		// slice not listed (none while the GPUs are suspended: schedule marks them
		// chosen), in the jobs' order, after the list's, as schedule appends them.
		for i := range w.jobs {
			j := &w.jobs[i]
			if j.res != w.cpuRes && j.running && !w.chosen[i] && sliceRun(doc, &doc.Tasks[j.task]) <= period {
				w.edfList = append(w.edfList, RunEntry{Task: i, Why: WhyTimeSlice, Priority: w.prio[j.proj]})
			}
		}
		w.keepCo = scratch.Grow(w.keepCo, w.nRes)
	}
	w.sortRunList(doc, w.edfList, period)
	const slack = 1e-9 // state.CPUsFit's
	free := float64(doc.Host.CPU().Instances)
	runs := 0
	for k := range w.edfList {
		e := &w.edfList[k]
		j := &w.jobs[e.Task]
		co := j.res != w.cpuRes
		e.Runs, e.Skipped = false, ""
		if co && w.keepCo[j.res]+j.inst > float64(doc.Host.Resources[j.res].Instances)+1e-9 {
			e.Skipped = "its coprocessor is taken"
			continue
		}
		if !state.CPUsFit(free, j.cpus, co) {
			e.Skipped = "the CPUs are committed"
			continue
		}
		if doc.Tasks[j.task].State != state.TaskRunning {
			return keepNo // it would start
		}
		e.Runs = true
		free -= j.cpus
		if co {
			w.keepCo[j.res] += j.inst
		}
		runs++
	}
	// The running CPU jobs within their time slice not listed for a miss (the pass's
	// time-slice entries' and sortRunList's test).
	used, least := 0.0, math.Inf(1)
	for i := range w.jobs {
		j := &w.jobs[i]
		if !j.running || w.chosen[i] || j.res != w.cpuRes {
			continue
		}
		if t := &doc.Tasks[j.task]; sliceRun(doc, t) <= period {
			used += j.cpus
			least = min(least, j.cpus)
			w.edfList = append(w.edfList, RunEntry{Task: i, Why: WhyTimeSlice, Priority: w.prio[j.proj], Runs: true})
			runs++
		}
	}
	if used > 0 && !(free-(used-least) > slack) {
		return keepNo // one of them may not run
	}
	w.keepFree, w.keepRuns, w.keepAt = free-used, runs, len(list)
	if free-used > slack {
		return keepOpen
	}
	return w.keepsRunning(doc)
}

// keepsMore is edfKeeps' decision after the pass listed more jobs by priority (list:
// its run list so far), where the misses and the running jobs within their slice
// left some CPU free, on a host whose CPU jobs all take the same CPUs. The entries
// listed by priority that are not running jobs within their slice (those edfKeeps counted)
// then come after those in the run list in the order they are listed (sortRunList:
// the CPUs they take, the same, and then the list's order), before every entry
// listed after them: each runs while some CPU is free (one that is not running
// would start: keepNo), and once none is, nothing after them runs.
func (w *Workspace) keepsMore(doc *state.Document, list []RunEntry) int {
	period := doc.Preferences.CPUSchedulingPeriod
	const slack = 1e-9 // state.CPUsFit's
	for k := w.keepAt; k < len(list); k++ {
		e := list[k]
		j := &w.jobs[e.Task]
		t := &doc.Tasks[j.task]
		if j.running && sliceRun(doc, t) <= period {
			continue // edfKeeps counted it
		}
		if !(w.keepFree > slack) {
			break
		}
		if t.State != state.TaskRunning {
			return keepNo // it would start
		}
		e.Runs, e.Skipped = true, ""
		w.edfList = append(w.edfList, e)
		w.keepFree -= j.cpus
		w.keepRuns++
	}
	w.keepAt = len(list)
	if w.keepFree > slack {
		return keepOpen
	}
	return w.keepsRunning(doc)
}

// keepsRunning is edfKeeps' and keepsMore's last test, once nothing more runs: the
// jobs that run (w.keepRuns, each running) are every job running.
func (w *Workspace) keepsRunning(doc *state.Document) int {
	runs := w.keepRuns
	for i := range w.jobs {
		if doc.Tasks[w.jobs[i].task].State == state.TaskRunning {
			runs--
		}
	}
	if runs == 0 {
		return keepYes
	}
	return keepNo // a job running stops
}

// keptPass ends a pass at now that edfKeeps or keepsMore found keeps the jobs
// running: its record, and its list cut short (w.edfList).
func (w *Workspace) keptPass(doc *state.Document, now float64, list []RunEntry) []RunEntry {
	w.kept = true
	list = append(list[:0], w.edfList...)
	for k := range list {
		list[k].Task = w.jobs[list[k].Task].task
	}
	w.recordPass(doc, now)
	return list
}

// recordPass records a pass at now in doc.CPUSched.
func (w *Workspace) recordPass(doc *state.Document, now float64) {
	if doc.CPUSched == nil {
		doc.CPUSched = new(state.CPUSched)
	}
	*doc.CPUSched = state.CPUSched{LastPass: now, NextPass: now + SchedPeriod, NextPassReason: "BOINC reschedules every minute"}
}
