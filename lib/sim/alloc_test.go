package sim

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/scenario"
)

// TestStepLoopAllocatesNothing steps every policy (seed, round-robin, goals) through
// 20 simulated days of every scenario of the repository (but the corpus), after 15 days to warm up, and
// counts the heap allocations: none is wanted (15 days: policy boinc on noisy, its time
// slice ending only past the period, holds its most tasks, and its buffers reach their
// sizes, after day 10). A run makes too little garbage for the
// collector to start, so whatever a step allocated would stay, and a long run's
// memory would grow with its length (issue 17: 1,000 days in no more than 10). A
// buffer may still grow to a size it never reached before, now and then: fewer than
// one allocation a simulated day is allowed for that. One per step would be 28,800,
// one per RPC hundreds.
//
// In a process of its own (Alone): the count is the whole process's.
func TestStepLoopAllocatesNothing(t *testing.T) {
	if !Alone(t) {
		return
	}
	scenarios := map[string]func() *scenario.Scenario{"testdata/noisy": func() *scenario.Scenario { return load(t, "testdata/noisy") }}
	entries, err := os.ReadDir("../../scenarios")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		path := filepath.Join("../../scenarios", e.Name())
		switch {
		case e.IsDir() && (e.Name() == "corpus" || e.Name() == "heldout"):
			// The generated corpora (scenarios/corpus/cNNN, scenarios/heldout/cNNN) are
			// not in this count: on the corpus's first three hosts every policy still
			// allocates 20-100 times in 20 days (issue 29's report), which is for
			// another change to bring to none.
		case e.IsDir():
			scenarios[path] = func() *scenario.Scenario { return load(t, path) }
		case strings.HasSuffix(e.Name(), ".yaml"):
			scenarios[path] = func() *scenario.Scenario {
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				sc, err := scenario.Decode(data, e.Name())
				if err != nil {
					t.Fatal(err)
				}
				return sc
			}
		}
	}
	const warm, measured = 15 * 86400, 20 * 86400
	for name, sc := range scenarios {
		for _, policy := range Policies() {
			s, err := New(sc(), Config{Duration: warm + measured, Delta: 60, Policy: policy, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for s.now < s.start+warm && s.Step() {
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for s.Step() {
			}
			runtime.ReadMemStats(&after)
			if n := after.Mallocs - before.Mallocs; n >= measured/86400 {
				t.Errorf("%s, policy %s: %d allocations (%d bytes) in 20 simulated days, want none", name, policy, n, after.TotalAlloc-before.TotalAlloc)
			}
		}
	}
}
