package boincpolicy

import "github.com/bkit/bkit/lib/state"

// fetchCheck, fetchDiffs: the tests' check of the work fetch's hold (fetchHold: set by
// workBound, or by lowHold after saturatedLow; TestFetchHoldKept). Wherever
// quietNoFetch answers from the hold that no project is to be asked, a workspace of
// its own with no skips (every bound and the whole simulation found afresh) must
// choose none; fetchDiffs counts where it chose one.
var (
	fetchCheck bool
	fetchDiffs int
)

// checkFetchHold is fetchCheck's test at now.
func (w *Workspace) checkFetchHold(doc *state.Document, now float64) {
	full := Workspace{Overestimate: w.Overestimate}
	if c := full.ChooseProject(doc, now); c.Project >= 0 {
		fetchDiffs++
	}
}
