package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestSliceFreeAgainstPass: wherever a hold lasts past a running job's time slice's
// end (sliceFree: a host of relistable's whose listing's first n entries for a miss
// are running jobs), a whole pass on a copy (passCheck's) starts and stops no task
// and counts the same misses. It wants many such passes, and fails with the test of
// the listing's first n entries for a miss dropped (c124) and with relistable's test
// dropped (part-time-4cpu, c030: more projects, coprocessor jobs).
func TestSliceFreeAgainstPass(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2828))
	dirs := []string{"../../scenarios/corpus/c150", "../../scenarios/corpus/c124",
		"../../scenarios/corpus/c065", "../../scenarios/corpus/c143", "../../scenarios/corpus/c057",
		"../../scenarios/corpus/c154", "../../scenarios/corpus/c030", "../../scenarios/part-time-4cpu",
		"../../scenarios/deadlines-4cpu", "../../scenarios/down-2cpu", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetPassCheck, boincpolicy.SliceChecks, 2000, "passes held past a slice's end",
		checked{boincpolicy.PassDiffs, "of the passes cut short or held contradicted by a whole pass"})
}
