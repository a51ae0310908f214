package sim

import (
	"math"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/scenario"
)

// publicExample is BOINC's emulator's public example scenario, shipped in scenarios/,
// relative to this package. Its figures are pinned by golden-figures.json and
// TestPublicExampleBeatsBOINC; lib/programs/bsim's TestPublicExample runs it as a user would.
const publicExample = "../../scenarios/example-2cpu-2to1"

func load(t testing.TB, dir string) *scenario.Scenario {
	t.Helper()
	sc, err := boincxml.LoadScenario(dir)
	if err != nil {
		t.Fatal(err)
	}
	return sc
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

// estimates is an app's estimate distribution with its mean at the app's fpops_est
// (its spread kept), for tests that change fpops_est.
func estimates(f *scenario.NormalDist) *scenario.NormalDist {
	if f == nil {
		return nil
	}
	return &scenario.NormalDist{StdDev: f.StdDev}
}

// TestThreeStateAsksAgain: on the GPU latch (testdata/gpu-latch), seed 002's text clears
// D(A, NVIDIA) at A's first reply without jobs and the GPU idles for the rest of the
// run; with the three-state reply A is asked again once its backoff ends and the GPU
// stays busy, as under BOINC's emulator. Carried through a World, the setting holds.
func TestThreeStateAsksAgain(t *testing.T) {
	t.Parallel()
	cfg := Config{Duration: 2 * 86400, Delta: 60, Policy: "seed", Seed: 1}
	latched, err := Run(load(t, "testdata/gpu-latch"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ThreeState = true
	asked, err := Run(load(t, "testdata/gpu-latch"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if latched.IdleFraction < 0.5 || asked.IdleFraction > 0.01 {
		t.Errorf("idle fraction %g by the seed's text (want the GPU idle, > 0.5), %g with three-state replies (want < 0.01)",
			latched.IdleFraction, asked.IdleFraction)
	}
	s, err := New(load(t, "testdata/gpu-latch"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.World("testdata/gpu-latch")
	if err != nil {
		t.Fatal(err)
	}
	if !w.ThreeState {
		t.Error("the world does not carry the three-state setting")
	}
}
