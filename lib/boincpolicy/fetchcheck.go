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
	full := checkSpace(w.Overestimate)
	defer checkDone(full)
	if c := full.ChooseProject(doc, now); c.Project >= 0 {
		fetchDiffs++
	}
}

// satCoCheck, satCoDiffs, satCoChecks: the tests' check of saturatedLow on hosts with
// coprocessors (TestSaturatedLowCoprocs): wherever it answers that no resource is
// below work_buf_min there, a workspace of its own with no skips must choose no
// project to ask; satCoDiffs counts where it chose one, satCoChecks the answers.
var (
	satCoCheck  bool
	satCoDiffs  int
	satCoChecks int
	noSatCo     bool // saturatedLow on CPU-only hosts only, as before (the check's whole work fetch)
)

// checkSatCo is satCoCheck's test at now.
func (w *Workspace) checkSatCo(doc *state.Document, now float64) {
	satCoChecks++
	full := checkSpace(w.Overestimate)
	defer checkDone(full)
	satCoCheck, noSatCo = false, true // the whole work fetch, not this bound again
	if c := full.ChooseProject(full.checkCopy(doc), now); c.Project >= 0 {
		satCoDiffs++
	}
	satCoCheck, noSatCo = true, false
}
