package sim

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
)

// publicExample is the public example scenario (a copy of ../shared/scenarios/example-2cpu-2to1), relative to this package.
const publicExample = "../../scenarios/example-2cpu-2to1"

func load(t testing.TB, dir string) *boincxml.Scenario {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "client_state.xml")); err != nil {
		t.Skipf("scenario %s not available: %v", dir, err)
	}
	sc, err := boincxml.LoadScenario(dir)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestPublicExample(t *testing.T) {
	t.Parallel()
	for _, pol := range []string{"seed", "rr"} {
		res, err := Run(load(t, publicExample), Config{Duration: 10 * 86400, Delta: 60, Policy: pol, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s jain %f rpcs %d jobs %d", pol, res.OneLine(), res.JainIndex, res.RPCs, res.Jobs)
		for _, p := range res.Projects {
			t.Logf("  %+v", p)
		}
	}
}

func TestTraceChangesNothing(t *testing.T) {
	t.Parallel()
	cfg := Config{Duration: 2 * 86400, Delta: 60, Policy: "seed", Seed: 3}
	plain, err := Run(load(t, publicExample), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Trace = true
	s, err := New(load(t, publicExample), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for s.Step() {
	}
	if got, want := s.Result().OneLine(), plain.OneLine(); got != want {
		t.Errorf("with a trace: %s, without: %s", got, want)
	}
	tr := s.Trace()
	if len(tr.Runs) == 0 || len(tr.Buckets) == 0 || len(tr.Buckets) > MaxBuckets {
		t.Fatalf("trace has %d runs and %d buckets", len(tr.Runs), len(tr.Buckets))
	}
	// The trace's FLOPs are the figures' FLOPs.
	var used, avail float64
	for _, b := range tr.Buckets {
		for _, u := range b.Used {
			for _, x := range u {
				used += x
			}
		}
		for _, x := range b.Available {
			avail += x
		}
	}
	if math.Abs(used-plain.UsedFlops) > 1e-9*plain.UsedFlops || math.Abs(avail-plain.TotalFlops) > 1e-9*plain.TotalFlops {
		t.Errorf("trace used %g of %g, figures %g of %g", used, avail, plain.UsedFlops, plain.TotalFlops)
	}
	for _, r := range tr.Runs {
		if !(r.End > r.Start) || r.Start < tr.Start || r.End > tr.End {
			t.Fatalf("run %+v outside [%g, %g]", r, tr.Start, tr.End)
		}
	}
}
