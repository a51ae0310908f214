package sim

import (
	"fmt"
	"testing"
)

// TestHoldAfterRPCChangesNothing runs the seed policy with seed 001's decision held
// across RPCs (afterRPC) and with it made again after every RPC, as before: every
// figure and count must agree, over the repository's scenarios and the noisy one
// (outages, failed RPCs, master file reads), several seeds and step lengths.
func TestHoldAfterRPCChangesNothing(t *testing.T) {
	// noHoldAfterRPC is a package variable: runs here are sequential.
	held := 0
	for _, dir := range []string{
		"../../scenarios/example-2cpu-2to1", "../../scenarios/deadlines-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/part-time-4cpu", seed002GPU, share7525, "testdata/noisy",
	} {
		for _, seed := range []uint64{1, 2, 3} {
			for _, delta := range []float64{17, 60, 300} {
				cfg := Config{Duration: 4 * 86400, Delta: delta, Policy: "seed", Seed: seed}
				run := func(noHold bool) (string, int) {
					noHoldAfterRPC = noHold
					defer func() { noHoldAfterRPC = false }()
					s, err := New(load(t, dir), cfg)
					if err != nil {
						t.Fatal(err)
					}
					for s.Step() {
					}
					sp, _ := s.policy.(*seedPolicy)
					return fmt.Sprintf("%+v rpcs %d jobs %d master %d", *s.Result(), s.m.rpcs, s.m.jobs, s.m.masterFetches), sp.decisions
				}
				want, fresh := run(true)
				got, kept := run(false)
				if got != want {
					t.Errorf("%s seed %d delta %g: held across RPCs\n%s\nwant (decided again after each RPC)\n%s", dir, seed, delta, got, want)
				}
				held += fresh - kept
			}
		}
	}
	if held <= 0 {
		t.Errorf("the decision was never held across an RPC (%d decisions fewer)", held)
	}
}
