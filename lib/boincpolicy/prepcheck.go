package boincpolicy

import (
	"slices"

	"github.com/bkit/bkit/lib/state"
)

// prepCheck, prepDiffs, prepChecks: the tests' check of prepSame (TestPrepSame). At
// every call of prepareJobs whose last work stands, that work is held to the whole work
// done again (prepareWhole): each job, the bounds' sums, fall, the coprocessor jobs'
// CPUs and dcfOf must come out bit for bit the same. prepDiffs counts the calls where
// they did not, prepChecks the calls checked. prepBreak (the tests') makes
// prepSame leave simGen out, to show the check fails so.
var (
	prepCheck, prepBreak  bool
	prepDiffs, prepChecks int
)

// checkPrep is prepCheck's test at a call of prepareJobs whose work stood, at
// availabilities cpuF and gpuF.
func (w *Workspace) checkPrep(doc *state.Document, cpuF, gpuF float64) {
	prepChecks++
	jobs := slices.Clone(w.jobs)
	sums := slices.Clone(w.sums)
	dcfOf := slices.Clone(w.dcfOf)
	fall, coCPUs := w.fall, w.coprocCPUs
	w.prepareWhole(doc, cpuF, gpuF)
	same := fall == w.fall && coCPUs == w.coprocCPUs && slices.Equal(sums, w.sums) && slices.Equal(dcfOf, w.dcfOf) && len(jobs) == len(w.jobs)
	for i := 0; same && i < len(jobs); i++ {
		same = jobs[i] == w.jobs[i]
	}
	if !same {
		prepDiffs++
	}
}
