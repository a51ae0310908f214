package boincpolicy_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/sim"
)

// TestFallBound: in runs of policy boinc on random corpus scenarios, the public ones
// and noisy (random seeds, both conventions, 2 to 10 days), no job's simulated time
// falls from one pass to the next, the tasks unchanged, faster than prepareJobs' fall
// allows, which the holds rest on: under BOINC's emulator a job's true remaining work
// (state.Task.EmulatorFlopsLeft) falls as fast as its work is done, under bsim's
// conventions an estimated one up to the loop's overestimate × the correction factor
// times as fast.
func TestFallBound(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 1919))
	dirs := []string{"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/deadlines-4cpu", "../../scenarios/share-75-25", "../../lib/sim/testdata/noisy",
		"../../scenarios/corpus/c143"} // c143: estimates well below the true work
	for range 16 {
		dirs = append(dirs, fmt.Sprintf("../../scenarios/corpus/c%03d", r.IntN(200)))
	}
	defer boincpolicy.SetFallCheck(false)
	for _, dir := range dirs {
		for _, emulate := range []bool{false, true} {
			sc, err := boincxml.LoadScenario(dir)
			if err != nil {
				t.Skipf("%s: %v", dir, err)
			}
			boincpolicy.SetFallCheck(true)
			cfg := sim.Config{Duration: float64(2+r.IntN(9)) * 86400, Delta: 60, Policy: "boinc",
				Seed: 1 + r.Uint64N(1000), EmulateBOINC: emulate}
			if _, err := sim.Run(sc, cfg); err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			if n := boincpolicy.FallBreaks(); n > 0 {
				t.Errorf("%s (seed %d, emulate %v): %d jobs' simulated times fell faster than prepareJobs' fall allows", dir, cfg.Seed, emulate, n)
			}
		}
	}
}
