package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// The repository's own scenarios, relative to this package.
const (
	seed002GPU = "../../scenarios/seed002-gpu"
	share7525  = "../../scenarios/share-75-25"
)

func run(t *testing.T, dir, policy string, days float64, seed uint64) *Result {
	t.Helper()
	res, err := Run(load(t, dir), Config{Duration: days * 86400, Delta: 60, Policy: policy, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func fraction(t *testing.T, res *Result, resource, project string) float64 {
	t.Helper()
	f, ok := res.ResourceFraction(resource, project)
	if !ok {
		t.Fatalf("no %s/%s in the result", resource, project)
	}
	return f
}

// TestSeed002Example is seed 002's worked example as a run: a GPU twice as fast as the
// CPU, A with GPU jobs only, B with both, equal shares: the CPU 100 % to B, the GPU 75 %
// to A and 25 % to B. The GPU's split converges over weeks (73/27 after 10 days).
func TestSeed002Example(t *testing.T) {
	t.Parallel()
	res := run(t, seed002GPU, "seed", 30, 1)
	t.Logf("%s; GPU A %.4f B %.4f", res.OneLine(), fraction(t, res, "NVIDIA", "A"), fraction(t, res, "NVIDIA", "B"))
	if b := fraction(t, res, "cpu", "B"); b < 0.97 {
		t.Errorf("CPU to B %.4f, want >= 0.97", b)
	}
	if a := fraction(t, res, "NVIDIA", "A"); math.Abs(a-0.75) > 0.03 {
		t.Errorf("GPU to A %.4f, want 0.75 ± 0.03", a)
	}
	if b := fraction(t, res, "NVIDIA", "B"); math.Abs(b-0.25) > 0.03 {
		t.Errorf("GPU to B %.4f, want 0.25 ± 0.03", b)
	}
}

// TestShare7525 is seed 001's 75/25 debt example on 4 CPUs over 10 days.
func TestShare7525(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		res := run(t, share7525, "seed", 10, seed)
		if res.ShareViolation > 0.01 {
			t.Errorf("seed %d: share violation %f, want <= 0.01 (%s)", seed, res.ShareViolation, res.OneLine())
		}
	}
	// The baseline ignores shares: 2 CPUs each, half the work each.
	if rr := run(t, share7525, "rr", 10, 1); rr.ShareViolation < 0.4 {
		t.Errorf("rr: share violation %f, want about 0.5", rr.ShareViolation)
	}
}

// TestShareNoDrift: on seed 001's 75/25 example the debts enforce the shares for good.
// A's CPU time stays within two one-hour jobs of 75 % of the whole over 100 days, under
// both debt policies, so the share violation falls as 1/time (docs/decisions.md, "The
// 1,000-day share figure"); debt or exp_avg_cpu accounting that leaked would show here
// as an offset growing with the run.
func TestShareNoDrift(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"seed", "goals"} {
		res := run(t, share7525, policy, 100, 1)
		a := res.Projects[0]
		offset := (a.UsedFraction - 0.75) * res.UsedFlops / 1e9 // CPU seconds (1 GFLOPS CPUs)
		if math.Abs(offset) > 7200 {
			t.Errorf("%s: A's CPU time is %.0f s off 75 %% after 100 days, want within 7200 s (%s)", policy, offset, res.OneLine())
		}
	}
}

// TestPublicExampleBeatsBOINC keeps the seed policy at least as good as BOINC's
// emulator on the public example (sv 0.022014 m 0.352439 r 0.183226, nothing wasted
// or idle).
func TestPublicExampleBeatsBOINC(t *testing.T) {
	t.Parallel()
	res := run(t, publicExample, "seed", 10, 1)
	if res.WastedFraction != 0 || res.IdleFraction != 0 || res.ShareViolation > 0.022014 || res.Monotony > 0.352439 || res.RPCsPerJob > 0.183226 {
		t.Errorf("%s, BOINC wf 0.000000 if 0.000000 sv 0.022014 m 0.352439 r 0.183226", res.OneLine())
	}
}

// TestDeterministic: the same scenario and seed give byte-identical JSON, for every
// policy, and the random processes are really used (another seed differs).
func TestDeterministic(t *testing.T) {
	t.Parallel()
	for _, policy := range Policies() {
		enc := func(seed uint64) []byte {
			b, err := json.Marshal(run(t, "testdata/noisy", policy, 3, seed))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		a, b, c := enc(7), enc(7), enc(8)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two runs with seed 7 differ:\n%s\n%s", policy, a, b)
		}
		if bytes.Equal(a, c) {
			t.Errorf("%s: seeds 7 and 8 give the same run", policy)
		}
	}
}

// TestServerDeadlineCheck: BOINC's emulated server refuses a job only when the delay
// the client reports (work already late) plus the job's own run time passes its
// latency bound. bsim's server used to count all the work the host held, B's
// long-deadline jobs too, so on deadlines-4cpu A (60 %, 2-hour latency) got about 1 %
// under every policy. Now seed 001's debts give A its share.
func TestServerDeadlineCheck(t *testing.T) {
	t.Parallel()
	res := run(t, "../../scenarios/deadlines-4cpu", "seed", 3, 1)
	if a := res.Projects[0].UsedFraction; a < 0.5 {
		t.Errorf("A got %.4f of the work, want about 0.6 (%s)", a, res.OneLine())
	}
}

// TestGoalsPolicy keeps the goals policy at least as good as BOINC's emulator (each of
// wf, if, sv within +0.01 of its figure; BOINC's figures from ../shared/boinc-emulator.md)
// on the public scenarios where both count the same time, and seed 002's GPU target
// within 3 points in 10 days. part-time-4cpu's waste is measured on BOINC's own total,
// the wall time (see docs/decisions.md: BOINC's emulator counts off time and computes
// through it).
func TestGoalsPolicy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dir         string
		wf, if_, sv float64
		wall        bool
	}{
		{"../../scenarios/example-2cpu-2to1", 0, 0, 0.022014, false},
		{"../../scenarios/down-2cpu", 0, 0.000069, 0.015140, false},
		{"../../scenarios/deadlines-4cpu", 0.067708, 0.018767, 0.383892, false},
		{"../../scenarios/part-time-4cpu", 0.036458, 0.520069, 0.035509, true},
	} {
		res := run(t, c.dir, "goals", 10, 1)
		wf, idle := res.WastedFraction, res.IdleFraction
		if c.wall {
			// Waste over BOINC's total; idle stays bsim's: off time is idle by BOINC's
			// count whatever the policy does, and its tasks compute through it.
			wf, _ = res.OnWallTime()
		}
		if wf > c.wf+0.01 || idle > c.if_+0.01 || res.ShareViolation > c.sv+0.01 {
			t.Errorf("%s: wf %f if %f sv %f; BOINC wf %f if %f sv %f", c.dir, wf, idle, res.ShareViolation, c.wf, c.if_, c.sv)
		}
	}
	res := run(t, seed002GPU, "goals", 10, 1)
	if a := fraction(t, res, "NVIDIA", "A"); math.Abs(a-0.75) > 0.03 {
		t.Errorf("seed002-gpu: GPU to A %.4f in 10 days, want 0.75 ± 0.03", a)
	}
}

// TestZeroMinBuffer: a BOINC scenario whose work_buf_min_days is 0 (a common setting:
// "fetch when needed, keep 3 more days"). Seed 001's connection period T was 0, so it
// never found work needed and every policy but rr left the host idle (if 1.000000
// where BOINC's emulator has 0). BOINC's client never lets the minimum buffer fall
// below 180 s (work_buf_min, WF_EST_FETCH_TIME); neither does the reader.
func TestZeroMinBuffer(t *testing.T) {
	t.Parallel()
	for _, pol := range []string{"seed", "goals"} {
		res := run(t, "testdata/nobuffer", pol, 1, 2)
		if res.Jobs == 0 || res.IdleFraction > 0.1 {
			t.Errorf("%s: %d jobs, %s; want work and the CPUs busy", pol, res.Jobs, res.OneLine())
		}
	}
}

// TestRRBacksOffWhenRefused: the baseline too backs off a project that sends no job of
// the resource asked for (seed 002's per-resource backoff, doubling up to a day), rather
// than asking it at every step. The public example with latency bounds shorter than its
// jobs: the server's deadline check refuses every request, the host stays idle. Asking
// each of the two projects at every step was 14,400 RPCs in 10 days. With the backoff a
// project is asked once, then after each of the 9 intervals from 600 s doubling to the
// day's cap, then at most every half day (the jitter's least, 0.5): 1 + 9 + 20 asks.
func TestRRBacksOffWhenRefused(t *testing.T) {
	t.Parallel()
	sc := load(t, publicExample)
	for i := range sc.Apps {
		sc.Apps[i].LatencyBound = 1000
	}
	res, err := Run(sc, Config{Duration: 10 * 86400, Delta: 60, Policy: "rr", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 0 {
		t.Fatalf("%d jobs came, want none (every request refused): %s", res.Jobs, res.OneLine())
	}
	if max := 2 * (1 + 9 + 20); res.RPCs > max {
		t.Errorf("rr made %d RPCs to projects that never send a job, want at most %d", res.RPCs, max)
	}
}
