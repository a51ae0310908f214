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

// TestKnownMarks: in runs of policy boinc on one-project hosts of c143's kind (c143,
// c124, c150, c065), random corpus hosts, the public scenarios and noisy (random
// seeds, both conventions, 2 to 10 days), at every call of prepareWhole each job's
// known mark (its view's) is what its task says then, so that fall reads the marks
// for the tasks. It fails with a true remaining work not marked (c143, c124, c150
// under BOINC's emulator) and with a started task's estimate marked (c143, c124,
// c150 under bsim's conventions). (With refresh's marks left as the jobs were built
// it passes: no job's mark changed in these runs while its view was kept.)
func TestKnownMarks(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 3803))
	dirs := []string{"../../scenarios/corpus/c143", "../../scenarios/corpus/c124", "../../scenarios/corpus/c150",
		"../../scenarios/corpus/c065", "../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/deadlines-4cpu", "../../scenarios/seed002-gpu", "../../scenarios/example-2cpu-2to1",
		"../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetKnownCheck, boincpolicy.KnownChecks, 100000,
		"jobs' known marks at prepareWhole",
		checked{boincpolicy.KnownDiffs, "of the jobs' known marks contradicted by their tasks"})
}
