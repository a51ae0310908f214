package bsim_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/programs/bsim"
	"github.com/bkit/bkit/lib/sim"
)

// TestCompareMatchesRun: every row of bsim compare (runs in parallel) is what bsim run
// prints for that scenario and policy alone, to the last digit; a scenario with BOINC's
// figures gets a BOINC row with them.
func TestCompareMatchesRun(t *testing.T) {
	t.Parallel()
	scenarios := []string{"../../../scenarios/down-2cpu", "../../../scenarios/seed002-gpu"}
	policies := sim.Policies()
	var out, errb bytes.Buffer
	args := append([]string{"bsim", "compare", "--duration", "1d", "--seed", "3", "-o", "json", "--policy", strings.Join(policies, ",")}, scenarios...)
	if code := bsim.Main(args, nil, &out, &errb); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errb.String())
	}
	var rows []bsim.CompareRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if want := len(scenarios)*len(policies) + 1; len(rows) != want {
		t.Fatalf("%d rows, want %d (one BOINC row): %+v", len(rows), want, rows)
	}
	for _, r := range rows {
		if r.Policy == "BOINC" {
			if r.Scenario != scenarios[0] || r.ShareViolation != 0.015140 {
				t.Errorf("BOINC row %+v, want down-2cpu's figures (sv 0.015140)", r)
			}
			continue
		}
		var one bytes.Buffer
		if code := bsim.Main([]string{"bsim", "run", r.Scenario, "--duration", "1d", "--seed", "3", "-o", "json", "--policy", r.Policy}, nil, &one, &errb); code != 0 {
			t.Fatalf("run: exit %d: %s", code, errb.String())
		}
		var res sim.Result
		if err := json.Unmarshal(one.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		if r.WastedFraction != res.WastedFraction || r.IdleFraction != res.IdleFraction || r.ShareViolation != res.ShareViolation ||
			r.Monotony != res.Monotony || r.RPCsPerJob != res.RPCsPerJob {
			t.Errorf("%s %s: compare %+v, run %s", r.Scenario, r.Policy, r, res.OneLine())
		}
	}
}

func TestParseOneLine(t *testing.T) {
	t.Parallel()
	res, err := bsim.ParseOneLine(strings.NewReader("# BOINC\n\nwf 0.067708 if 0.018767 sv 0.383892 m 0.834928 r 0.230623\n"))
	if err != nil || res.WastedFraction != 0.067708 || res.RPCsPerJob != 0.230623 {
		t.Fatalf("got %+v, %v", res, err)
	}
	for _, bad := range []string{"", "wf 1 if 2", "wf 1 if 2 sv 3 m 4 x 5", "wf -1 if 2 sv 3 m 4 r 5", "wf 1 if 2 sv 3 m 4 r NaN",
		"wf 1 if 2 sv 3 m 4 r 5\nwf 1 if 2 sv 3 m 4 r 5"} {
		if _, err := bsim.ParseOneLine(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzParseOneLine: BOINC's figures file is outside input: never a panic, and what is
// accepted is finite and >= 0.
func FuzzParseOneLine(f *testing.F) {
	f.Add("wf 0.000000 if 0.000069 sv 0.015140 m 0.431688 r 0.387574")
	f.Add("# c\nwf 1 if 2 sv 3 m 4 r 5\n")
	f.Fuzz(func(t *testing.T, s string) {
		res, err := bsim.ParseOneLine(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, x := range []float64{res.WastedFraction, res.IdleFraction, res.ShareViolation, res.Monotony, res.RPCsPerJob} {
			if !(x >= 0) || x > 1e300 {
				t.Fatalf("%q: accepted %g", s, x)
			}
		}
	})
}

// TestParseFigures: the one-line form reads as one run without a seed, as it always
// did; 'seed N' lines read as one run each; the two forms do not mix, a seed comes once,
// and every error names its line.
func TestParseFigures(t *testing.T) {
	t.Parallel()
	one, err := bsim.ParseFigures(strings.NewReader("# BOINC\n\nwf 0.067708 if 0.018767 sv 0.383892 m 0.834928 r 0.230623\n"))
	if err != nil || len(one) != 1 || one[0].Seed != 0 || one[0].Figures.WastedFraction != 0.067708 || one[0].Figures.RPCsPerJob != 0.230623 {
		t.Fatalf("one line: got %+v, %v", one, err)
	}
	runs, err := bsim.ParseFigures(strings.NewReader("# c\nseed 1 wf 0.1 if 0 sv 0 m 0 r 1\n\nseed 7 wf 0.3 if 0 sv 0 m 0 r 2\n"))
	if err != nil || len(runs) != 2 || runs[0].Seed != 1 || runs[1].Seed != 7 || runs[1].Figures.WastedFraction != 0.3 || runs[1].Figures.RPCsPerJob != 2 {
		t.Fatalf("seeds: got %+v, %v", runs, err)
	}
	for _, c := range []struct{ in, want string }{
		{"", "no line of figures"},
		{"# c\nseed 1 wf 1 if 2 sv 3 m 4 r 5\nwf 1 if 2 sv 3 m 4 r 5", "line 3: one line of figures without 'seed N', or lines that each start 'seed N'"},
		{"wf 1 if 2 sv 3 m 4 r 5\nseed 2 wf 1 if 2 sv 3 m 4 r 5", "line 2: one line of figures without"},
		{"seed 1 wf 1 if 2 sv 3 m 4 r 5\nseed 1 wf 1 if 2 sv 3 m 4 r 5", "line 2: seed 1 a second time"},
		{"seed 0 wf 1 if 2 sv 3 m 4 r 5", "line 1: seed: want a whole number >= 1, got \"0\""},
		{"seed x wf 1 if 2 sv 3 m 4 r 5", "line 1: seed: want a whole number >= 1, got \"x\""},
		{"seed", "line 1: want 'seed N wf W if I sv S m M r R', got \"seed\""},
		{"seed 2 wf 1 if 2 sv 3 m 4", "line 1: want 'seed N wf W if I sv S m M r R'"},
		{"seed 2 wf 1 if 2 sx 3 m 4 r 5", "line 1: want \"sv\" as word 7, got \"sx\""},
		{"seed 2 wf 1 if 2 sv 3 m 4 r -inf", "line 1: r: want a number >= 0, got \"-inf\""},
		{"wf 1 if 2 sx 3 m 4 r 5", "line 1: want \"sv\" as word 5, got \"sx\""},
	} {
		if _, err := bsim.ParseFigures(strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.in, err, c.want)
		}
	}
}

// FuzzParseFigures: BOINC's figures file is outside input: never a panic; what is
// accepted is at least one run, finite figures >= 0, and either one run without a seed
// or runs of distinct seeds >= 1.
func FuzzParseFigures(f *testing.F) {
	f.Add("wf 0.000000 if 0.000069 sv 0.015140 m 0.431688 r 0.387574")
	f.Add("# c\nseed 1 wf 1 if 2 sv 3 m 4 r 5\nseed 2 wf 1 if 2 sv 3 m 4 r 5\n")
	f.Add("seed 3 wf 1 if 2 sv 3 m 4 r 5\nwf 1 if 2 sv 3 m 4 r 5")
	f.Fuzz(func(t *testing.T, s string) {
		runs, err := bsim.ParseFigures(strings.NewReader(s))
		if err != nil {
			return
		}
		if len(runs) == 0 {
			t.Fatalf("%q: accepted with no run", s)
		}
		seen := map[uint64]bool{}
		for _, r := range runs {
			if (r.Seed == 0) != (len(runs) == 1 && runs[0].Seed == 0) || seen[r.Seed] {
				t.Fatalf("%q: seeds %+v", s, runs)
			}
			seen[r.Seed] = true
			res := r.Figures
			for _, x := range []float64{res.WastedFraction, res.IdleFraction, res.ShareViolation, res.Monotony, res.RPCsPerJob} {
				if !(x >= 0) || x > 1e300 {
					t.Fatalf("%q: accepted %g", s, x)
				}
			}
		}
	})
}

// BenchmarkCompare is the policy lab's cost: every policy on the six scenarios of the
// repository, 10 simulated days each (the target: under 2 s on 2 cores).
func BenchmarkCompare(b *testing.B) {
	args := []string{"bsim", "compare", "--duration", "10d", "-o", "csv"}
	for _, s := range []string{"down-2cpu", "deadlines-4cpu", "part-time-4cpu", "example-2cpu-2to1", "seed002-gpu", "share-75-25"} {
		args = append(args, "../../../scenarios/"+s)
	}
	for b.Loop() {
		var out, errb bytes.Buffer
		if code := bsim.Main(args, nil, &out, &errb); code != 0 {
			b.Fatalf("exit %d: %s", code, errb.String())
		}
	}
}
