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
	if !Alone(t) {
		return
	}
	// noHoldAfterRPC is a package variable: runs here are sequential, in a process of their own (Alone).
	held := 0
	for _, dir := range []string{
		"../../scenarios/example-2cpu-2to1", "../../scenarios/deadlines-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/part-time-4cpu", seed002GPU, share7525, "testdata/noisy",
	} {
		for _, seed := range []uint64{1, 2, 3} {
			for _, delta := range []float64{17, 60, 300} {
				cfg := Config{Duration: 4 * 86400, Delta: delta, Policy: "seed", Seed: seed}
				run := func(noHold bool) (string, int) {
					s, figures := runSwitched(t, dir, cfg, &noHoldAfterRPC, noHold, nil)
					sp, _ := s.policy.(*seedPolicy)
					return fmt.Sprintf("%s master %d", figures, s.m.masterFetches), sp.decisions
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

// runSwitched runs the scenario in dir under cfg to its end with a test's switch (a
// package variable: such runs are sequential) set to on, and put back to false after;
// each, when not nil, is called after every step. It returns the run and its figures
// and counts, for a test that compares a shortcut's run with the run without it.
func runSwitched(t *testing.T, dir string, cfg Config, sw *bool, on bool, each func(*Sim)) (*Sim, string) {
	t.Helper()
	*sw = on
	defer func() { *sw = false }()
	s, err := New(load(t, dir), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for s.Step() {
		if each != nil {
			each(s)
		}
	}
	return s, fmt.Sprintf("%+v rpcs %d jobs %d", *s.Result(), s.m.rpcs, s.m.jobs)
}
