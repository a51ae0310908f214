package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestMissesListedCoAgainstSimulation: in runs of policy boinc on the corpus's hosts
// of one project with coprocessor jobs (c020 and others), seed002-gpu, random corpus
// hosts and noisy (random seeds, both conventions, 2 to 10 days), wherever
// missesListedCo decides the misses from the coprocessors' queues and the CPUs' list
// schedule, and wherever missesKept gives an answer kept from one, the whole
// simulation finds the same jobs missing their deadlines. It wants many such answers,
// and fails with the CPUs taken as all free from now (c020), with the coprocessor
// jobs' CPUs counted while GPU computing is suspended (c020 under the emulator) and
// with the one-project test dropped (c041, c028, drawn from the corpus). (Not caught:
// the coprocessors' running jobs' fall left out of the CPUs' slots from T_r.)
func TestMissesListedCoAgainstSimulation(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2929))
	dirs := []string{"../../scenarios/corpus/c020", "../../scenarios/corpus/c016",
		"../../scenarios/corpus/c027", "../../scenarios/corpus/c032", "../../scenarios/corpus/c043",
		"../../scenarios/corpus/c051", "../../scenarios/corpus/c058", "../../scenarios/corpus/c064",
		"../../scenarios/corpus/c071", "../../scenarios/corpus/c114", "../../scenarios/corpus/c125",
		"../../scenarios/corpus/c126", "../../scenarios/corpus/c127", "../../scenarios/corpus/c131",
		"../../scenarios/corpus/c142", "../../scenarios/corpus/c161", "../../scenarios/corpus/c162",
		"../../scenarios/corpus/c169", "../../scenarios/corpus/c179", "../../scenarios/corpus/c193",
		"../../scenarios/seed002-gpu", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 6, dirs...)
	n := 0
	checkedAtLeast(t, r, dirs, func(on bool) {
		n += boincpolicy.ListedCoChecks()
		boincpolicy.SetListedCoCheck(on)
	}, boincpolicy.ListedChecks, 2000, "answers missesListed or missesListedCo decided or kept",
		checked{boincpolicy.ListedDiffs, "of the answers missesListed or missesListedCo decided or kept differed from the whole simulation's"})
	if n < 2000 {
		t.Errorf("%d answers missesListedCo decided checked: want more", n)
	}
	t.Logf("%d answers missesListedCo decided checked", n)
}
