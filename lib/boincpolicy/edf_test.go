package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestEarliestMissWalk: in runs of policy boinc on corpus scenarios with many jobs a
// pass lists for their deadlines (c143, c124), with several apps whose deadlines come
// out of arrival order (c026, c080, c105), random ones, the public scenarios and noisy
// (random seeds, both conventions, 2 to 10 days), every answer of earliestMiss's walk
// in deadline order is the one going through every job gives (edfScan), and the
// projects it looks at, kept from call to call within a pass, are the ones worked out
// afresh (checkEDFProj). It fails with the jobs left in arrival order (c026, c080,
// c105 among others), and with the project of the job returned last not looked at
// again (c143, c124 among others).
func TestEarliestMissWalk(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2121))
	dirs := []string{"../../scenarios/corpus/c143", "../../scenarios/corpus/c124",
		"../../scenarios/corpus/c026", "../../scenarios/corpus/c080", "../../scenarios/corpus/c105",
		"../../scenarios/deadlines-4cpu", "../../scenarios/seed002-gpu", "../../scenarios/part-time-4cpu",
		"../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedRuns(t, r, dirs, func(on bool) { boincpolicy.SetEDFCheck(on, false) },
		checked{boincpolicy.EDFDiffs, "of earliestMiss's answers differed from edfScan's"})
}

// TestEarliestMissTies: in runs of policy boinc on corpus c143 and c124, whose RPCs
// bring several jobs of one deadline, random corpus scenarios and the public ones
// (random seeds, both conventions, 2 to 10 days), every answer earliestMiss takes
// from its order of a run of one deadline (edfTies, edfTied) is the one going through
// every job gives (edfScan). It wants many such answers; it fails with the order made
// by the remaining time alone (a started job not first), and with the jobs of equal
// remaining time moved past one another (an order not stable).
func TestEarliestMissTies(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 4378))
	dirs := []string{"../../scenarios/corpus/c143", "../../scenarios/corpus/c143", "../../scenarios/corpus/c124",
		"../../scenarios/deadlines-4cpu", "../../scenarios/down-2cpu", "../../scenarios/example-2cpu-2to1",
		"../../scenarios/part-time-4cpu", "../../scenarios/share-75-25", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 12, dirs...)
	checkedAtLeast(t, r, dirs, func(on bool) { boincpolicy.SetEDFCheck(on, false) }, boincpolicy.EDFTiedChecks, 5000,
		"answers of earliestMiss from a run of one deadline",
		checked{boincpolicy.EDFDiffs, "of earliestMiss's answers differed from edfScan's"})
}

// TestEDFListingSureStarted: in runs of policy boinc on corpus c143, c124 and c153,
// random ones, deadlines-4cpu, part-time-4cpu and noisy (random seeds, both
// conventions, 2 to 10 days), every answer of edfListingSure, which pairs only the
// started jobs, is the one the pairs of every job give. It fails with each started
// job paired only with the next (c153, c143: three started jobs of one deadline).
func TestEDFListingSureStarted(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2123))
	dirs := []string{"../../scenarios/corpus/c143", "../../scenarios/corpus/c124",
		"../../scenarios/corpus/c153", "../../scenarios/deadlines-4cpu", "../../scenarios/part-time-4cpu",
		"../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 4, dirs...)
	checkedRuns(t, r, dirs, boincpolicy.SetEDFSureCheck,
		checked{boincpolicy.EDFSureDiffs, "of edfListingSure's answers differed from those over every pair"})
}
