package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestNextBest: in runs of policy boinc on the tail's hosts (c008, c192, c120, c156,
// c056, c113; c143 and c124, one project each), random corpus hosts, the public
// scenarios and noisy (random seeds, both conventions, 2 to 10 days), at every step
// of the round-robin simulation that keeps its pick, and at every pick that shifts
// the active jobs (pickShift), the job that finishes first and its time as the step
// before found them (nextBest; after a shift the new job compared last) are those a
// scan of the active jobs' times afresh finds, bit for bit. It fails with nextBest's
// comparison taken as ≤ (the last among equals: c192, c120, c156, c056, ...), with
// the job that ended not left out of nextBest and with the new job not compared.
func TestNextBest(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 4701))
	dirs := []string{"../../scenarios/corpus/c008", "../../scenarios/corpus/c192", "../../scenarios/corpus/c120",
		"../../scenarios/corpus/c156", "../../scenarios/corpus/c056", "../../scenarios/corpus/c113",
		"../../scenarios/corpus/c143", "../../scenarios/corpus/c124",
		"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/seed002-gpu",
		"../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetNextBestCheck, boincpolicy.NextBestChecks, 100000,
		"steps that kept their pick or shifted it",
		checked{boincpolicy.NextBestDiffs, "of the steps' nextBest contradicted by a scan afresh"})
}
