package sim

import (
	"fmt"
	"os"
	"testing"

	"github.com/bkit/bkit/lib/scenario"
)

// TestSkipsChangeNothing runs the seed policy with its skips (Due not asked again,
// no RPC planned while none can be made, seed 001's decision held), and the goals
// policy with its one (Due), and the rr policy's (a project's candidates in order not
// sorted), and the boinc policy's (the round-robin simulation left out when a bound
// shows that it cannot mark a miss or find a resource to fetch for), and without them, asking every function at every poll and sorting every
// list: the figures and the counts must be the same.
// live-2cpu.yaml (no app version, no server) is where an idle skip once held rpc.Next's
// "no RPC" for good, though a project becomes contactable when its min_rpc_time passes
// (1 RPC in 10 days where asking every poll makes 21).
func TestSkipsChangeNothing(t *testing.T) {
	if !Alone(t) {
		return
	}
	// noSkips is a package variable: runs here are sequential, in a process of their own (Alone).
	data, err := os.ReadFile("../../scenarios/live-2cpu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	live := func() *scenario.Scenario {
		sc, err := scenario.Decode(data, "live-2cpu.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	scenarios := map[string]func() *scenario.Scenario{"live-2cpu.yaml": live}
	for _, dir := range []string{"../../scenarios/deadlines-4cpu", "../../scenarios/down-2cpu", "../../scenarios/part-time-4cpu", seed002GPU, "testdata/noisy", "testdata/gpuhalf"} {
		scenarios[dir] = func() *scenario.Scenario { return load(t, dir) }
	}
	for name, sc := range scenarios {
		for _, c := range []struct {
			policy string
			seed   uint64
			delta  float64
			boinc  bool // BOINC's emulator's conventions
		}{{"seed", 1, 60, false}, {"seed", 2, 300, false}, {"seed", 3, 17, false}, {"goals", 1, 60, false}, {"goals", 2, 300, false}, {"rr", 1, 60, false}, {"rr", 2, 300, false},
			{"boinc", 1, 60, false}, {"boinc", 2, 300, false}, {"boinc", 3, 60, true}} {
			cfg := Config{Duration: 4 * 86400, Delta: c.delta, Policy: c.policy, Seed: c.seed, EmulateBOINC: c.boinc}
			if name == "live-2cpu.yaml" {
				cfg.Duration = 10 * 86400
			}
			run := func(off bool) string {
				noSkips = off
				defer func() { noSkips = false }()
				s, err := New(sc(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				for s.Step() {
				}
				return fmt.Sprintf("%+v rpcs %d jobs %d master %d", *s.Result(), s.m.rpcs, s.m.jobs, s.m.masterFetches)
			}
			if got, want := run(false), run(true); got != want {
				t.Errorf("%s, policy %s, seed %d, delta %g, BOINC's conventions %v: with the skips\n%s\nwant (every function asked at every poll)\n%s", name, c.policy, c.seed, c.delta, c.boinc, got, want)
			}
		}
	}
}

// TestSkipsChangeNothingOverestimated: corpus scenario c143 (one project, jobs of
// 1.06e12 estimated FLOPs and 1.44e12 ± 0.42e12 real, 2.5-hour latency) under bsim's
// conventions: the correction factor learns about 1.4, so a short job's estimated
// remaining work falls up to twice as fast as its work is done. Policy boinc's work
// fetch hold once took it to fall no faster (wasted fraction 0.0763 with the skips,
// 0.0715 without, seed 1); it allows for the loop's overestimate now (workBound).
func TestSkipsChangeNothingOverestimated(t *testing.T) {
	if !Alone(t) {
		return
	}
	const dir = "../../scenarios/corpus/c143"
	for _, seed := range []uint64{1, 2} {
		run := func(off bool) string {
			noSkips = off
			defer func() { noSkips = false }()
			s, err := New(load(t, dir), Config{Duration: 10 * 86400, Delta: 60, Policy: BOINCPolicy, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			for s.Step() {
			}
			return fmt.Sprintf("%+v rpcs %d jobs %d", *s.Result(), s.m.rpcs, s.m.jobs)
		}
		if got, want := run(false), run(true); got != want {
			t.Errorf("seed %d: with the skips\n%s\nwant\n%s", seed, got, want)
		}
	}
}
