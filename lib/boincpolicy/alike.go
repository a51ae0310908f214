package boincpolicy

import (
	"slices"

	"github.com/bkit/bkit/lib/state"
)

// missesAlike is rehold's test of the misses just found (w.missed) against the
// carried listing's (khMissed): it reports whether a listing at now with them lists
// for their misses the jobs the carried listing did, in the same order, as a listing
// with its own misses would (issue 30, thirty-fourth round). Equal counts do; so do
// counts that differ where both are above the jobs the carried listing took for them
// (khPicks, per project and resource: its counts less what schedule left of them).
//
// Why: earliest_deadline_result (earliestMiss) reads a project's misses on a resource
// only as whether some are left (missedCopy > 0, one fewer for each job of it taken),
// never which jobs the simulation marked, and the listing stops when the resource is
// full (stop_scan_cpu) or no job of a project with misses left remains. A listing
// with the carried misses m, made at any moment the carried hold covers, takes the
// carried listing's jobs (rehold's argument), c of them for a project on a resource;
// before each of its picks the project has taken at most c, so where m and the new
// count m' are both above c the project has misses left under either at every pick
// and at the stop, and where they are equal alike: each pick, and the stop, is then
// the same under m' (by induction over the picks). The hold's ties (edfListingSure,
// coEDFSure) read the misses only as whether a project has some, which the rule keeps
// (a count of 0 equals, as c ≥ 0 allows no other), and listed == misses (every job
// that misses listed) only where every project took all its misses (m = c), which
// then leaves m' = m. The rest of the pass (the listing by priority after the
// misses' entries, the time slices, the run) reads the misses only through those
// entries. The pass's record of misses (passMissed, for Arrived) is the new counts,
// as a whole pass's. (arrivedHold's test, min(m', 2n) = min(m, 2n) on a host of
// one project, rests on the same reading of the counts.) (Corpus c143, 35 jobs of one deadline
// a reply on 7 CPUs: the listing stops at 14 entries, twice the CPUs, with more
// misses than that, and a job coming to miss behind them ended the carry at about
// 1,100 passes of a 10-day run under BOINC's emulator, each then a whole listing
// that listed what the carried one did.)
func (w *Workspace) missesAlike() bool {
	if slices.Equal(w.missed, w.khMissed) {
		return true
	}
	if len(w.khMissed) != len(w.missed) || len(w.khPicks) != len(w.missed) {
		return false
	}
	for k, m := range w.missed {
		if o := w.khMissed[k]; m != o && !(min(m, o) > w.khPicks[k]) {
			return false
		}
	}
	return true
}

// alikeCheck, alikeDiffs, alikeChecks: with the check on (tests only), wherever rehold
// carried a listing with misses other than its own (missesAlike), a whole pass on a
// copy of the document, by a workspace of its own, must start or stop no task, count
// the misses the quiet pass found and list for their misses the carried listing's
// jobs (alikeKh, kept by carryHold); alikeDiffs counts where it did not, alikeChecks
// the passes checked.
var (
	alikeCheck              bool
	alikeDiffs, alikeChecks int
	alikeKh, alikeWhole     []int
)

// edfTasks appends to tasks those of list's entries listed for their misses, sorted.
func edfTasks(tasks []int, list []RunEntry) []int {
	for _, e := range list {
		if e.Why == WhyEDF {
			tasks = append(tasks, e.Task)
		}
	}
	slices.Sort(tasks)
	return tasks
}

// checkAlike is alikeCheck's test of rehold's pass at now.
func (w *Workspace) checkAlike(doc *state.Document, now float64) {
	alikeChecks++
	whole := checkSpace(w.Overestimate)
	defer checkDone(whole)
	full := whole.checkCopy(doc)
	full.CPUSched = nil
	alikeWhole = edfTasks(alikeWhole[:0], whole.Schedule(full, now))
	if whole.Changed() || !slices.Equal(whole.passMissed, w.missed) || !slices.Equal(alikeWhole, alikeKh) {
		alikeDiffs++
	}
}
