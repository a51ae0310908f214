package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestCoprocCPUsOnce: in runs of policy boinc on hosts with coprocessor jobs (random
// seeds, both conventions, 2 to 10 days), at every pick of every simulation the
// coprocessor jobs' CPUs are within coCPUsOnce's bound, and wherever missesKnown
// decides the misses with it below every coprocessor job's CPUs, a whole simulation
// counts the same misses, and so after listUpper's exact case beside coprocessor jobs.
// It fails with the least CPUs of one job taken for the most (coOnceWrong 2: c073,
// c014, c026, c030) and with no CPU taken out for the coprocessor jobs in listUpper's
// exact case (3: c103, c030, c117); the corpus's coprocessors have one
// instance each, so every coprocessor taken one job at a time (1) passes here, and
// TestBoundsPerJobBesideCoprocessors' random queues (two instances, half-instance
// jobs) catch it.
func TestCoprocCPUsOnce(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	dirs := []string{"../../scenarios/seed002-gpu", "../../scenarios/corpus/c020", "../../scenarios/corpus/c073",
		"../../scenarios/corpus/c014", "../../scenarios/corpus/c103", "../../scenarios/corpus/c026",
		"../../scenarios/corpus/c030", "../../scenarios/corpus/c117"}
	r := rand.New(rand.NewPCG(30, 2200))
	checkedAtLeast(t, r, dirs, func(on bool) { boincpolicy.SetCoOnceCheck(on, coOnceWrong) }, boincpolicy.CoOnceChecks, 5000, "answers",
		checked{boincpolicy.CoOnceDiffs, "picks above coCPUsOnce's bound or answers of missesKnown contradicted by a simulation"})
}

// coOnceWrong: TestCoprocCPUsOnce's bound made wrong (by hand, to see the test fail).
var coOnceWrong = 0
