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

// knownCheck, knownDiffs, knownChecks: the tests' check of the jobs' known marks
// (TestKnownMarks). At every call of prepareWhole each job's mark must be what its
// task says then (remaining's test: under BOINC's emulator, EmulatorFlopsLeft > 0);
// knownDiffs counts the jobs where it was not, knownChecks the jobs checked.
var (
	knownCheck              bool
	knownDiffs, knownChecks int
)

// checkKnown is knownCheck's test of the jobs' marks at a call of prepareWhole.
func (w *Workspace) checkKnown(doc *state.Document) {
	for i := range w.jobs {
		j := &w.jobs[i]
		knownChecks++
		if j.known != (doc.BOINCEmulator && doc.Tasks[j.task].EmulatorFlopsLeft > 0) {
			knownDiffs++
		}
	}
}
