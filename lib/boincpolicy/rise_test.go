package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestNoRiseUntilKept: noRiseUntil's answer kept for the moment is the one computed
// again, bit for bit, at every call of runs of policy boinc on random corpus
// scenarios, the public ones and noisy (random seeds, both conventions, 2 to 10 days);
// and wherever Next's NoneYet answers, the rest of Next would make no RPC and change
// none of the holds NoneYet reads.
func TestNoRiseUntilKept(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 1818))
	dirs := []string{"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/deadlines-4cpu", "../../scenarios/share-75-25", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 16, dirs...)
	checkedRuns(t, r, dirs, func(on bool) { boincpolicy.SetRiseCheck(on); boincpolicy.SetNoneYetCheck(on) },
		checked{boincpolicy.NoneYetDiffs, "of NoneYet's answers contradicted by Next"},
		checked{boincpolicy.RiseDiffs, "of noRiseUntil's kept answers differ from the computed ones"})
}
