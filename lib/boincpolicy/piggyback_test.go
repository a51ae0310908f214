package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestPiggybackSaturatedAgainstPiggyback: in runs of policy boinc on corpus hosts
// whose piggybacked requests workBound's sum left open (c198, one project; c049, two;
// c159, three on 13 CPUs; c106, c193, with a GPU), random ones, the public
// scenarios and noisy (random seeds, both conventions, 2 to 10 days), wherever
// quietPiggybackNone answers that nothing is piggybacked with a resource left out by
// saturatedPast, a whole Piggyback on a copy asks for nothing. It wants many such
// answers, and fails with work_buf_min taken for work_buf_total in saturatedPast.
func TestPiggybackSaturatedAgainstPiggyback(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2727))
	dirs := []string{"../../scenarios/corpus/c198", "../../scenarios/corpus/c049",
		"../../scenarios/corpus/c159", "../../scenarios/corpus/c106", "../../scenarios/corpus/c193",
		"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/deadlines-4cpu",
		"../../scenarios/seed002-gpu", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetPiggybackCheck, boincpolicy.PiggybackChecks, 300,
		"piggybacked requests known empty by saturatedPast",
		checked{boincpolicy.PiggybackDiffs, "of the piggybacked requests known empty by saturatedPast asked for work in a whole Piggyback"})
}

// TestSaturatedBelow: in runs of policy boinc on c143 (one project on 7 CPUs, whose
// work fetch tried both bounds at every request), c124, c198, c049, c159, c106, c193,
// the public scenarios, noisy and random corpus hosts (random seeds, both
// conventions, 2 to 10 days), at every call of saturatedBelow saturatedBound's sum
// (where at or above 0) and n-th longest time and saturatedList's time are at most
// its top, so that where it answers below x neither bound reaches x (80,183 calls).
// It fails with S ÷ (n + 1) for S ÷ n (c143, c124, …) and with the margin dropped
// (c069: rounding); not with the longest time left out of the top (with every time at
// or above 0 the n-th longest is at most S ÷ n: the longest is for times below 0).
func TestSaturatedBelow(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 3737))
	dirs := []string{"../../scenarios/corpus/c143", "../../scenarios/corpus/c124",
		"../../scenarios/corpus/c198", "../../scenarios/corpus/c049",
		"../../scenarios/corpus/c159", "../../scenarios/corpus/c106", "../../scenarios/corpus/c193",
		"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/deadlines-4cpu",
		"../../scenarios/seed002-gpu", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetSatBelowCheck, boincpolicy.SatBelowChecks, 1000,
		"saturatedBelow's tops",
		checked{boincpolicy.SatBelowDiffs, "of saturatedBelow's tops passed by a walk's bound"})
}
