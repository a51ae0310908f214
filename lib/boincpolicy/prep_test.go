package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestPrepSame: in runs of policy boinc on corpus hosts that prepare the same jobs
// again often (c182, c072, c143), random ones, the public scenarios and noisy (random
// seeds, both conventions, 2 to 10 days), every call of prepareJobs that keeps its last
// work (prepSame) gets bit for bit what the whole work gives. It fails with prepSame's
// test of simGen left out (prepWrong: c182, c072, c143, down-2cpu, ...); the
// availabilities' and the correction factors' tests left out it passes (refresh
// counts in simGen wherever they change).
func TestPrepSame(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 3202))
	dirs := []string{"../../scenarios/corpus/c182", "../../scenarios/corpus/c072", "../../scenarios/corpus/c143",
		"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/deadlines-4cpu",
		"../../scenarios/seed002-gpu", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, func(on bool) { boincpolicy.SetPrepCheck(on, prepWrong) }, boincpolicy.PrepChecks, 10000,
		"kept works of prepareJobs",
		checked{boincpolicy.PrepDiffs, "of prepareJobs' kept works contradicted by the whole work"})
}

// prepWrong breaks prepSame (by hand, to see TestPrepSame fail).
var prepWrong = false
