package scenario

import "testing"

func TestSeconds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		out  string
	}{
		{"60", 60, "60"}, {"90.5", 90.5, "90.5"}, {"30d", 30 * 86400, "30d"}, {"36h", 36 * 3600, "36h"},
		{"2w", 14 * 86400, "14d"}, {"30m", 1800, "1800"}, {"1.5d", 1.5 * 86400, "36h"}, {"1e-3", 0.001, "0.001"},
	} {
		var s Seconds
		if err := s.UnmarshalText([]byte(c.in)); err != nil || float64(s) != c.want {
			t.Errorf("%q: %v, %v; want %v", c.in, float64(s), err, c.want)
		}
		if out, _ := s.text(); out != c.out {
			t.Errorf("%q written as %q, want %q", c.in, out, c.out)
		}
	}
	var s Seconds
	if err := s.UnmarshalText([]byte("1e308w")); err == nil {
		t.Errorf("1e308w: %v, want an error", float64(s))
	}
}
