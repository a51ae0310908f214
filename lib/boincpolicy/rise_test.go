package boincpolicy_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/sim"
)

// TestNoRiseUntilKept: noRiseUntil's answer kept for the moment is the one computed
// again, bit for bit, at every call of runs of policy boinc on random corpus
// scenarios, the public ones and noisy (random seeds, both conventions, 2 to 10 days);
// and wherever Next's NoneYet answers, the rest of Next would make no RPC and change
// none of the holds NoneYet reads.
func TestNoRiseUntilKept(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 1818))
	dirs := []string{"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/deadlines-4cpu", "../../scenarios/share-75-25", "../../lib/sim/testdata/noisy"}
	for range 16 {
		dirs = append(dirs, fmt.Sprintf("../../scenarios/corpus/c%03d", r.IntN(200)))
	}
	boincpolicy.SetRiseCheck(true)
	defer boincpolicy.SetRiseCheck(false)
	boincpolicy.SetNoneYetCheck(true)
	defer boincpolicy.SetNoneYetCheck(false)
	for _, dir := range dirs {
		for _, emulate := range []bool{false, true} {
			sc, err := boincxml.LoadScenario(dir)
			if err != nil {
				t.Skipf("%s: %v", dir, err)
			}
			cfg := sim.Config{Duration: float64(2+r.IntN(9)) * 86400, Delta: 60, Policy: "boinc",
				Seed: 1 + r.Uint64N(1000), EmulateBOINC: emulate}
			if _, err := sim.Run(sc, cfg); err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			if n := boincpolicy.NoneYetDiffs(); n > 0 {
				t.Fatalf("%s (seed %d, emulate %v): %d of NoneYet's answers contradicted by Next", dir, cfg.Seed, emulate, n)
			}
			if n := boincpolicy.RiseDiffs(); n > 0 {
				t.Fatalf("%s (seed %d, emulate %v): %d of noRiseUntil's kept answers differ from the computed ones", dir, cfg.Seed, emulate, n)
			}
		}
	}
}
