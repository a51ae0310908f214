package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestServedSameFailsAgain: in runs of policy boinc on corpus hosts whose bounds per job
// fail at a horizon and go to shorter ones (c105, c072, c192, c182), random ones, the
// public scenarios and noisy (random seeds, both conventions, 2 to 10 days), every
// level of recHorizons that missesKnown passes over for serving the same CPUs as the
// level that left a job open (servedSame) leaves that job open too when tried. It
// fails with servedSame taken as true whatever the CPUs served (c105, c072, ...).
func TestServedSameFailsAgain(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 4401))
	dirs := []string{"../../scenarios/corpus/c105", "../../scenarios/corpus/c072", "../../scenarios/corpus/c192",
		"../../scenarios/corpus/c182", "../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/deadlines-4cpu", "../../scenarios/example-2cpu-2to1", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetSameCheck, boincpolicy.SameChecks, 100,
		"levels passed over for the same CPUs served",
		checked{boincpolicy.SameDiffs, "of them decided the job the level before left open"})
}
