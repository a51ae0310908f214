package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestRankAgainstWhole: in runs of policy boinc on corpus hosts of many CPUs and
// several projects (c105, c056, c192, c182), the public scenarios, noisy and random
// corpus hosts (random seeds, both conventions, 2 to 10 days), every job the CPUs'
// listing by priority takes with each project's first job not chosen kept from call
// to call (bestCPUByPriority) is the one the walk of every project's lists takes
// (bestCPUWhole). It fails with the last answered project's first job not moved on.
func TestRankAgainstWhole(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 4343))
	dirs := []string{"../../scenarios/corpus/c105", "../../scenarios/corpus/c056", "../../scenarios/corpus/c192",
		"../../scenarios/corpus/c182", "../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/seed002-gpu", "../../scenarios/example-2cpu-2to1", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 4, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetRankCheck, boincpolicy.RankChecks, 100000, "jobs listed by priority",
		checked{boincpolicy.RankDiffs, "jobs listed by priority differed from the walk of every list"})
}
