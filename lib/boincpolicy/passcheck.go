package boincpolicy

import (
	"slices"

	"github.com/bkit/bkit/lib/state"
)

// passCheck, passDiffs, passChecks: the tests' check of the passes cut short
// (edfKeeps, keepsMore, the listing's end) and held (every hold, setKeepHold's and
// rehold's among them) (TestCoprocPassesKept; issue 30, twenty-first round, which
// carried them to hosts with coprocessor jobs). Wherever a quiet pass is cut short or
// held, a whole pass on a copy of the document, by a workspace of its own with no
// skips (the whole simulation, the whole listing), must start and stop no task and
// count the same deadline misses (for Arrived); passDiffs counts where it did not,
// passChecks the passes checked.
var (
	passCheck             bool
	passDiffs, passChecks int
	sliceChecks           int // of passChecks, the held passes past a slice's end (sliceFree)
)

// checkPass is passCheck's test of the quiet pass just made at now.
func (w *Workspace) checkPass(doc *state.Document, now float64) {
	passChecks++
	if w.hold && now >= w.sliceEnd {
		sliceChecks++
	}
	full := checkCopy(doc)
	full.CPUSched = nil
	whole := Workspace{Overestimate: w.Overestimate}
	whole.Schedule(full, now)
	if whole.Changed() || !slices.Equal(whole.passMissed, w.passMissed) {
		passDiffs++
	}
}

// checkCopy is a copy of doc a check's whole computation may change (its tasks and
// projects), leaving the run's document as it is.
func checkCopy(doc *state.Document) *state.Document {
	full := *doc
	full.Tasks = slices.Clone(doc.Tasks)
	full.Projects = slices.Clone(doc.Projects)
	return &full
}
