package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestListLowerKeptEnds: in runs of policy boinc on corpus hosts of one project
// (c143, c124), of several (c060, c159, c063), random ones, the public scenarios and
// noisy (random seeds, both conventions, 2 to 10 days), missBounds' list schedules
// from below, which keep a served project's ends on CPUs all free from now rather
// than place its jobs again, are bit for bit those with every job placed again, and
// lowFall's rates, which leave out how far the served projects' schedules may fall on
// a host of one project, those with it worked out; where listUpper's ends of a host's
// only project are read, those placed afresh. It fails with the CPUs' test dropped
// (other served projects' CPUs ahead: c060, c159, part-time-4cpu, ...), with lowFall's
// test of one project dropped (c060, c159, part-time-4cpu, ...) and with the kept
// ends read whatever the jobs' times (simGen: c143, c124, part-time-4cpu, ...).
func TestListLowerKeptEnds(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2122))
	dirs := []string{"../../scenarios/corpus/c143", "../../scenarios/corpus/c124",
		"../../scenarios/corpus/c060", "../../scenarios/corpus/c159", "../../scenarios/corpus/c063",
		"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/deadlines-4cpu",
		"../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedRuns(t, r, dirs, boincpolicy.SetLowCheck,
		checked{boincpolicy.LowDiffs, "of listLower's bounds or lowFall's rates differed from those worked out in full"})
}

// TestLowKept: in runs of policy boinc on corpus hosts whose bounds from below and
// their rates are worked out again with the same inputs (c182, c143, c159, c060),
// random ones, the public scenarios and noisy (random seeds, both conventions, 2 to 10
// days), every call of missBounds whose last work stands (lowSame) and of lowFall whose
// last work stands (fallSame) gets bit for bit what the work done again gives. It fails
// with lowSame's test of simGen left out (lowWrong: c182, c159, ...) and with
// fallSame's test of the running jobs' d's left out (fallWrong: c182, c143, c159, c060, ...).
func TestLowKept(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 4061))
	dirs := []string{"../../scenarios/corpus/c182", "../../scenarios/corpus/c143", "../../scenarios/corpus/c159",
		"../../scenarios/corpus/c060", "../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/deadlines-4cpu", "../../scenarios/example-2cpu-2to1", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, func(on bool) { boincpolicy.SetLowKeptCheck(on, lowWrong, fallWrong) }, boincpolicy.LowKeptChecks, 10000,
		"kept works of missBounds and lowFall",
		checked{boincpolicy.LowDiffs, "of missBounds' or lowFall's kept works (or listLower's bounds, lowFall's rates) contradicted by the work done again"})
}

// lowWrong and fallWrong break lowSame and fallSame (by hand, to see TestLowKept fail).
var lowWrong, fallWrong = false, false
