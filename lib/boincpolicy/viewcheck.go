package boincpolicy

import "github.com/bkit/bkit/lib/state"

// viewCheck: each view refresh brings up to date is checked against one built afresh
// (checkView), the differences counted in viewDiffs (a test's). The views kept after
// Schedule's second pass of a moment jobs arrived at (Arrived), not only quietView's
// own, are refreshed so.
var (
	viewCheck bool
	viewDiffs int
)

// checkView counts in viewDiffs a refreshed view (w.jobs, w.rec) that differs from
// view's of doc in what view sets.
func (w *Workspace) checkView(doc *state.Document) {
	fresh := checkSpace(0)
	defer checkDone(fresh)
	fresh.view(doc)
	same := len(fresh.jobs) == len(w.jobs)
	for i := 0; same && i < len(w.jobs); i++ {
		same = viewPart(w.jobs[i]) == viewPart(fresh.jobs[i])
	}
	for p := 0; same && p < len(doc.Projects); p++ {
		same = w.rec[p] == fresh.rec[p]
	}
	if !same {
		viewDiffs++
	}
}

// viewPart is what view sets of job j: the rest (the simulation's, prepare's bump)
// zeroed.
func viewPart(j job) job {
	j.bump = 0
	j.simLeft, j.simRate, j.simT = 0, 0, 0
	j.simDone, j.misses = false, false
	return j
}
