package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestCoprocPassesKept: in runs of policy boinc on hosts with coprocessor jobs and
// on the public scenarios (random seeds, both conventions, 2 to 10 days), wherever a
// quiet pass is cut short (edfKeeps, keepsMore, the listing's end) or held, a whole
// pass (a workspace with no skips) starts and stops no task and counts the same
// misses. It fails with the coprocessors' picks left out of the box (coPickMargin),
// state.CPUsFit's rule for a coprocessor job taken for a CPU job's, the run list left
// unsorted in edfKeeps, or a running coprocessor job's (or a CPU job's) time slice
// left out of setKeepHold's end (c154, c193, c030, c141, part-time-4cpu).
func TestCoprocPassesKept(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2100))
	dirs := []string{"../../scenarios/seed002-gpu", "../../scenarios/corpus/c033", "../../scenarios/corpus/c154",
		"../../scenarios/corpus/c193", "../../scenarios/corpus/c030", "../../scenarios/corpus/c141",
		"../../scenarios/corpus/c138", "../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/deadlines-4cpu",
		"../../scenarios/share-75-25", "../../scenarios/example-2cpu-2to1", "../../lib/sim/testdata/noisy"}
	checkedAtLeast(t, r, dirs, boincpolicy.SetPassCheck, boincpolicy.PassChecks, 50000, "passes",
		checked{boincpolicy.PassDiffs, "of the passes cut short or held contradicted by a whole pass"})
}
