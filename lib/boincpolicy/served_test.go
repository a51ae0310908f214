package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestServedAgainstWhole: in runs of policy boinc on corpus hosts of several projects
// (c072, c182, c029, c120), the public scenarios, noisy and random corpus hosts
// (random seeds, both conventions, 2 to 10 days), every project's CPUs served and the
// box's margin that projectServed finds with the priorities it keeps through a call
// (servedREC) are those of the walk that works each priority out afresh
// (servedWhole). It fails with the kept priorities carried from one call to the next
// (servedPrios' restart dropped).
func TestServedAgainstWhole(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 3143))
	dirs := []string{"../../scenarios/corpus/c072", "../../scenarios/corpus/c182", "../../scenarios/corpus/c029",
		"../../scenarios/corpus/c120", "../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/share-75-25", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 4, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetServedCheck, boincpolicy.ServedChecks, 10000, "projects' CPUs served",
		checked{boincpolicy.ServedDiffs, "projects' CPUs served or box margins differed from the walk afresh"})
}
