package boincpolicy

import "math"

// sliceFree reports whether the holds for the pass just listed (setKeepHold's,
// setEDFHold's and rehold's after them) may last past the running jobs' time slices'
// ends: on a host of relistable's (one project, every runnable job a CPU job of one
// CPU) whose listing's first n entries for a miss (n the CPUs; all of them when fewer)
// are running jobs (w.edfOut false), which of the jobs run is the same whichever of
// the running jobs are within their slice (issue 30, twenty-eighth round). Why: with
// jobs of one CPU the pass runs the run list's first n entries (state.CPUsFit: a CPU
// job starts while some CPU is free), and the run list (sortRunList) is the misses'
// entries, those within their slice first and then the others in the listing's
// order, then the running jobs within their slice not listed for a miss, then the
// entries listed by priority in their order. With e entries for a miss:
//
//   - e ≥ n: the first n run. The listing's first n are the running jobs (they fill
//     the n CPUs), and any of them within their slice only moves forward among them:
//     the first n are those n whichever are within their slice;
//   - e < n: all e run, and the listing by priority takes the project's jobs by rank
//     (cpuRank: the running first) until it has listed 2n CPUs, so every running job
//     not listed for a miss (at most n − e) is listed by priority, before every job
//     not running, or for its slice: either way before every job not running.
//
// While a hold lasts the tasks, the misses and their listing's order are those of
// the pass that set it (the hold's conditions: a change of the tasks, the misses'
// slack, edfListingSure), so the listing's first n stay the running jobs, and only
// which running jobs are within their slice changes: no pass runs other jobs. (c150,
// c124 and c065 under BOINC's emulator refused a hold at 659, 372 and 221 listings a
// 10-day run for a slice ending at that very moment, and their EDF holds ended at a
// slice's end.)
//
// It starts the hold's record of the slices' ends it passes (w.sliceEnd, sliceBound).
func (w *Workspace) sliceFree() bool {
	w.sliceEnd = math.Inf(1)
	return !noSliceFree && !w.edfOut && w.relistable()
}

// sliceBound is what a running job's slice's end bounds a hold by: nothing where the
// slices are free (sliceFree; the end is kept for the tests' count, sliceChecks),
// else the end.
func (w *Workspace) sliceBound(free bool, end float64) float64 {
	if free {
		w.sliceEnd = min(w.sliceEnd, end)
		return math.Inf(1)
	}
	return end
}

// noSliceFree: the holds end at the running jobs' slices' ends everywhere (a test's,
// to check sliceFree's condition against).
var noSliceFree bool
