package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestReholdMissesAlike: in runs of policy boinc on the tail's hosts of one project with
// many jobs of one deadline (c143, c182, c072), the public scenarios and random corpus hosts
// (random seeds, both conventions, 2 to 10 days; runHold off), wherever rehold carried a listing
// with misses other than its own (missesAlike), a whole pass (a workspace with no
// skips) starts and stops no task, counts the misses the quiet pass found and lists
// for their misses exactly the carried listing's jobs. It fails with missesAlike's
// test of the carried listing's picks left out (counts that differ taken alike
// wherever both are above none: corpus c143, c182 and others list fewer jobs for
// their misses) and with it taken ≥ for >.
func TestReholdMissesAlike(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 3400))
	dirs := withCorpus(r, 8, "../../scenarios/corpus/c143", "../../scenarios/corpus/c182", "../../scenarios/corpus/c072",
		"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/deadlines-4cpu",
		"../../scenarios/example-2cpu-2to1", "../../lib/sim/testdata/noisy")
	checkedAtLeast(t, r, dirs, boincpolicy.SetAlikeCheck, boincpolicy.AlikeChecks, 500, "passes reheld with other misses",
		checked{boincpolicy.AlikeDiffs, "of the passes reheld with other misses contradicted by a whole pass"})
}
