package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestRunHold: in runs of policy boinc on hosts of one project with many jobs of one
// deadline (c143 and others of relistable's kind), the public scenarios and random
// corpus hosts (random seeds, both conventions, 2 to 10 days), wherever runHold set a
// hold, its pass and every pass held after it are a whole pass's (passCheck: a
// workspace with no skips starts and stops no task and counts the same misses). It
// fails with runHold's test of the running jobs' place in the order dropped (c198);
// its other tests, which these runs seldom meet, are TestRunHoldListing's.
func TestRunHold(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 3401))
	dirs := withCorpus(r, 8, "../../scenarios/corpus/c143", "../../scenarios/corpus/c049", "../../scenarios/corpus/c117",
		"../../scenarios/corpus/c198", "../../scenarios/corpus/c072", "../../scenarios/part-time-4cpu",
		"../../scenarios/down-2cpu", "../../scenarios/deadlines-4cpu", "../../lib/sim/testdata/noisy")
	checkedAtLeast(t, r, dirs, boincpolicy.SetRunHoldCheck, boincpolicy.RunHolds, 1000, "holds runHold set",
		checked{boincpolicy.PassDiffs, "of the passes held contradicted by a whole pass"})
}

// TestRunHoldProjects is TestRunHold on hosts of several projects (issue 30,
// thirty-sixth round: the corpus tail c182, c192, c156, c120, c008, c056, c113 and
// random corpus hosts), where runHold's holds rest on each project's misses and the
// listing's stop at twice the CPUs, or on a listing of running jobs only
// (listsRunning): every hold's pass and every pass held after it are a whole pass's.
func TestRunHoldProjects(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 3602))
	dirs := withCorpus(r, 6, "../../scenarios/corpus/c182", "../../scenarios/corpus/c192", "../../scenarios/corpus/c156",
		"../../scenarios/corpus/c120", "../../scenarios/corpus/c008", "../../scenarios/corpus/c056", "../../scenarios/corpus/c113")
	checkedAtLeast(t, r, dirs, boincpolicy.SetRunHoldCheck, boincpolicy.RunHolds, 1000, "holds runHold set",
		checked{boincpolicy.PassDiffs, "of the passes held contradicted by a whole pass"})
}
