package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestFallBound: in runs of policy boinc on random corpus scenarios, the public ones
// and noisy (random seeds, both conventions, 2 to 10 days), no job's simulated time
// falls from one pass to the next, the tasks unchanged, faster than runFall allows
// (prepareJobs' fall, or the job's own), which the holds rest on: under BOINC's
// emulator a job's true remaining work (state.Task.EmulatorFlopsLeft) falls as fast as
// its work is done, under bsim's conventions an estimated one up to the loop's
// overestimate × the correction factor times as fast, and a started one at most
// max(1, estimate × factor ÷ its true work) times as fast. It fails with runFall's
// max(1, ...) dropped (c117, c080, c140: past the estimate the true remaining work
// falls as fast as the work is done) and with the job's own rate taken 0.9 times.
func TestFallBound(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 1919))
	dirs := []string{"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/deadlines-4cpu", "../../scenarios/share-75-25", "../../lib/sim/testdata/noisy",
		"../../scenarios/corpus/c143",                                // c143: estimates well below the true work
		"../../scenarios/corpus/c117", "../../scenarios/corpus/c049"} // runFall's own rates
	dirs = withCorpus(r, 16, dirs...)
	checkedRuns(t, r, dirs, boincpolicy.SetFallCheck,
		checked{boincpolicy.FallBreaks, "jobs' simulated times fell faster than prepareJobs' fall allows"})
}
