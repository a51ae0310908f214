package boincpolicy_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/sim"
)

// checked is one count a shortcut's check keeps during a run: how many of its answers
// the full computation contradicted, and what each one is ("of NoneYet's answers
// contradicted by Next"), for the failure's message.
type checked struct {
	count func() int
	what  string
}

// checkedRuns runs policy boinc on each of dirs under both conventions (a random seed,
// 2 to 10 days each) with a shortcut's check on: set(true) before each run (it zeroes
// the counts and whatever the check keeps from run to run), set(false) at the end.
// After each run every count must be zero.
func checkedRuns(t *testing.T, r *rand.Rand, dirs []string, set func(on bool), counts ...checked) {
	t.Helper()
	defer set(false)
	for _, dir := range dirs {
		for _, emulate := range []bool{false, true} {
			sc, err := boincxml.LoadScenario(dir)
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			set(true)
			cfg := sim.Config{Duration: float64(2+r.IntN(9)) * 86400, Delta: 60, Policy: "boinc",
				Seed: 1 + r.Uint64N(1000), EmulateBOINC: emulate}
			if _, err := sim.Run(sc, cfg); err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			for _, c := range counts {
				if n := c.count(); n > 0 {
					t.Errorf("%s (seed %d, emulate %v): %d %s", dir, cfg.Seed, emulate, n, c.what)
				}
			}
		}
	}
}

// checkedAtLeast is checkedRuns for a check that counts what it checked: checks
// (read before each set, so it gives the run just ended) must come to least, or the
// check passed for want of anything to check; what names the things checked.
func checkedAtLeast(t *testing.T, r *rand.Rand, dirs []string, set func(on bool), checks func() int, least int, what string, counts ...checked) {
	t.Helper()
	n := 0
	checkedRuns(t, r, dirs, func(on bool) {
		n += checks()
		set(on)
	}, counts...)
	if n < least {
		t.Errorf("%d %s checked: want more", n, what)
	}
	t.Logf("%d %s checked", n, what)
}

// withCorpus returns dirs and n corpus scenarios drawn from r (a scenario may come
// twice): the checks' runs on hosts nobody picked for them.
func withCorpus(r *rand.Rand, n int, dirs ...string) []string {
	for range n {
		dirs = append(dirs, fmt.Sprintf("../../scenarios/corpus/c%03d", r.IntN(200)))
	}
	return dirs
}
