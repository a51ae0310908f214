package sim

import (
	"testing"

	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
)

// TestBOINCBackoff: BOINC's client (SCHEDULER_OP::project_rpc_backoff, as its emulator
// calls it) starts its failure count over at the eleventh failure in a row, so that
// backoff is short again, and after three such rounds backs off a day at every failure,
// even after successes in between.
func TestBOINCBackoff(t *testing.T) {
	rng := newStream(1, 3).Rand
	srv := &server{}
	p := &state.Project{}
	now := 0.0
	fail := func() float64 {
		srv.boincBackoff(p, now, rng)
		b := p.MinRPCTime - now
		now = p.MinRPCTime
		return b
	}
	for round := range 3 {
		for n := 1; n <= 10; n++ {
			b := fail()
			if want := rpc.BackoffCap(n); !(b >= want/2 && b < want) {
				t.Fatalf("round %d, failure %d: backoff %g, want in [%g, %g)", round, n, b, want/2, want)
			}
			if p.NRPCFailures != n {
				t.Fatalf("round %d, failure %d: count %d", round, n, p.NRPCFailures)
			}
		}
		if srv.masterFetchFailures != round {
			t.Fatalf("after round %d: %d rounds counted, want %d", round, srv.masterFetchFailures, round)
		}
	}
	// The 31st failure ends the third round: the count starts over, a short backoff.
	if b := fail(); b >= rpc.BackoffCap(1) || srv.masterFetchFailures != 3 || p.NRPCFailures != 1 {
		t.Fatalf("31st failure: backoff %g, rounds %d, count %d; want < %g, 3, 1", b, srv.masterFetchFailures, p.NRPCFailures, rpc.BackoffCap(1))
	}
	// A success clears the count, not the rounds: the next failure backs off a day.
	rpc.RPCSucceeded(p, now, 0)
	for range 2 {
		at := now
		if b := fail(); p.MinRPCTime != at+86400 || p.NRPCFailures != 0 {
			t.Fatalf("after three rounds: backoff %g, count %d; want a day, 0", b, p.NRPCFailures)
		}
	}
	if p.MasterFetchPending {
		t.Error("master fetch pending: BOINC's emulator clears the flag")
	}
}

// TestEmulateBOINCNoMasterFetch: BOINC's client in BOINC's emulator reads no master
// file (the emulator has none); under bsim's conventions, and for bkit's own clients
// (seed 000's backoff and master file) under either, the emulated projects' master
// files are read.
func TestEmulateBOINCNoMasterFetch(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"boinc", "goals", "seed"} {
		cfg := Config{Duration: 86400, Delta: 60, Policy: policy, Seed: 1}
		own, err := Run(load(t, "../../scenarios/down-2cpu"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.EmulateBOINC = true
		boinc, err := Run(load(t, "../../scenarios/down-2cpu"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		wantNone := policy == "boinc"
		if own.MasterFetches == 0 || (boinc.MasterFetches == 0) != wantNone {
			t.Errorf("policy %s: master fetches %d under bsim's conventions, %d under BOINC's: want some and (none: %v)", policy, own.MasterFetches, boinc.MasterFetches, wantNone)
		}
	}
}
