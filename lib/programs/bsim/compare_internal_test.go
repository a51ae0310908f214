package bsim

import (
	"math"
	"testing"
)

func TestFiguresRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text     string
		dur, del float64
	}{
		{"# BOINC's client emulator (BOINC 8.3 client code), 10 simulated days, delta 60\nwf 0 if 0 sv 0 m 0 r 0\n", 864000, 60},
		{"# 0.5 simulated days\n# delta 10\nwf 0 if 0 sv 0 m 0 r 0\n", 43200, 10},
		{"# 1 simulated day, delta 60\n", 86400, 60},
		{"# 1e400 simulated days, delta 99999999999999999999999999999999999999999\n", 0, 0},
		{"# some figures\nwf 0 if 0 sv 0 m 0 r 0\n", 0, 0},
	} {
		if d, s := figuresRun(c.text); d != c.dur || s != c.del {
			t.Errorf("%q: %g s, delta %g; want %g, %g", c.text, d, s, c.dur, c.del)
		}
	}
}

// FuzzFiguresRun: a figures file's comments are outside input: never a panic, and what
// is read is finite and >= 0.
func FuzzFiguresRun(f *testing.F) {
	f.Add("# BOINC's client emulator, 10 simulated days, delta 60\nwf 0 if 0 sv 0 m 0 r 0\n")
	f.Add("# 1e400 simulated days, delta 99999999999999999999999999999999999999999\n")
	f.Fuzz(func(t *testing.T, s string) {
		d, del := figuresRun(s)
		if !(d >= 0) || !(del >= 0) || math.IsInf(d, 0) || math.IsInf(del, 0) {
			t.Fatalf("%q: %g, %g", s, d, del)
		}
	})
}

func TestParseSeeds(t *testing.T) {
	t.Parallel()
	got, err := ParseSeeds("1-3,7, 9")
	if err != nil || len(got) != 5 || got[0] != 1 || got[2] != 3 || got[3] != 7 || got[4] != 9 {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "3-1", "a", "1-", "-1", "1-20000", "18446744073709551615-0"} {
		if _, err := ParseSeeds(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzParseSeeds: --seeds is outside input: an error or at most 10,000 seeds, never a
// panic or a loop without end.
func FuzzParseSeeds(f *testing.F) {
	f.Add("1-20")
	f.Add("18446744073709551610-18446744073709551615")
	f.Fuzz(func(t *testing.T, s string) {
		seeds, err := ParseSeeds(s)
		if err == nil && (len(seeds) == 0 || len(seeds) > 10000) {
			t.Fatalf("%q: %d seeds", s, len(seeds))
		}
	})
}
