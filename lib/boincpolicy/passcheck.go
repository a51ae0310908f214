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
	whole := checkSpace(w.Overestimate)
	defer checkDone(whole)
	full := whole.checkCopy(doc)
	full.CPUSched = nil
	whole.Schedule(full, now)
	if whole.Changed() || !slices.Equal(whole.passMissed, w.passMissed) {
		passDiffs++
	}
}

// checkSpace gives a check's whole computation its workspace, as a new one
// (Workspace{Overestimate: overestimate}), and checkDone takes it back once the check
// has read it. The tests reuse the workspaces' memory (renew_test.go: a new
// workspace's buffers grown again at each check, and collected, were about half of
// their CPU).
var (
	checkSpace = func(overestimate float64) *Workspace { return &Workspace{Overestimate: overestimate} }
	checkDone  = func(*Workspace) {}
)

// checkCopy is a copy of doc a check's whole computation (in w, a workspace of
// checkSpace's) may change (its tasks and projects), leaving the run's document as it
// is; it lasts while w does (its memory w's, for the tests to reuse).
func (w *Workspace) checkCopy(doc *state.Document) *state.Document {
	w.copyTasks = append(w.copyTasks[:0], doc.Tasks...)
	w.copyProjects = append(w.copyProjects[:0], doc.Projects...)
	w.copyDoc = *doc
	w.copyDoc.Tasks, w.copyDoc.Projects = w.copyTasks, w.copyProjects
	return &w.copyDoc
}
