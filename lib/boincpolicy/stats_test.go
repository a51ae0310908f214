package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestStatsAgainstWalk: in runs of policy boinc on the public scenarios, noisy and
// corpus hosts (c072, c182, c117 with its GPUs, and random ones; random seeds, both
// conventions, 2 to 10 days), every answer projectStats gives from the figures it
// kept of the same jobs (statsTimes: the projects with jobs, their counts, CPUs and
// peaks) is, to the bit, the walk of the jobs afresh (statsWalk). It fails with the
// kept figures used after refresh dropped a job (refresh's jobsGen left as it was).
func TestStatsAgainstWalk(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(32, 3143))
	dirs := []string{"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/deadlines-4cpu",
		"../../scenarios/share-75-25", "../../scenarios/example-2cpu-2to1", "../../lib/sim/testdata/noisy",
		"../../scenarios/corpus/c072", "../../scenarios/corpus/c182", "../../scenarios/corpus/c117"}
	dirs = withCorpus(r, 4, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetStatsCheck, boincpolicy.StatsChecks, 5000, "kept projectStats answers",
		checked{boincpolicy.StatsDiffs, "kept projectStats answers differed from the walk afresh"})
}
