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
