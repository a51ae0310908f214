package boincpolicy_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/sim"
)

// TestFetchHoldKept: in runs of policy boinc on the corpus scenarios whose work fetch
// the list schedules' bound decides at most moments (c029, c139, c063), random corpus
// scenarios, the public ones and noisy (random seeds, both conventions, 2 to 10 days),
// wherever the work fetch's hold answers that no project is to be asked, a whole work
// fetch (a workspace with no skips) asks none. (NoneYet's check is on too, so that the
// hold is asked at the moments NoneYet answers.) Under bsim's conventions lowHold's
// hold rests on served CPUs that read the RECs: it fails with fetchHeld's box test
// dropped or its box doubled (c139, deadlines-4cpu).
func TestFetchHoldKept(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 1920))
	dirs := []string{"../../scenarios/corpus/c029", "../../scenarios/corpus/c139", "../../scenarios/corpus/c063",
		"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/deadlines-4cpu",
		"../../scenarios/share-75-25", "../../lib/sim/testdata/noisy"}
	for range 12 {
		dirs = append(dirs, fmt.Sprintf("../../scenarios/corpus/c%03d", r.IntN(200)))
	}
	defer boincpolicy.SetFetchCheck(false)
	defer boincpolicy.SetNoneYetCheck(false)
	for _, dir := range dirs {
		for _, emulate := range []bool{false, true} {
			sc, err := boincxml.LoadScenario(dir)
			if err != nil {
				t.Skipf("%s: %v", dir, err)
			}
			boincpolicy.SetFetchCheck(true)
			boincpolicy.SetNoneYetCheck(true)
			cfg := sim.Config{Duration: float64(2+r.IntN(9)) * 86400, Delta: 60, Policy: "boinc",
				Seed: 1 + r.Uint64N(1000), EmulateBOINC: emulate}
			if _, err := sim.Run(sc, cfg); err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			if n := boincpolicy.FetchDiffs(); n > 0 {
				t.Errorf("%s (seed %d, emulate %v): %d of the work fetch hold's answers contradicted by a whole work fetch", dir, cfg.Seed, emulate, n)
			}
		}
	}
}
