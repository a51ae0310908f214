package input

import (
	"errors"
	"math"
	"testing"
)

func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1700000000", 1700000000, true},
		{"1700000000.5", 1700000000.5, true},
		{"2023-11-14T22:13:20Z", 1700000000, true},
		{"2023-11-14T23:13:20+01:00", 1700000000, true},
		{"-1", 0, false},
		{"NaN", 0, false},
		{"yesterday", 0, false},
		// Issue 18: times outside a sane range are refused.
		{"1e300", 0, false}, {"4102444800", 4102444800, true}, {"4102444801", 0, false},
		{"9999-12-31T23:59:59Z", 0, false}, {"1969-12-31T23:59:59Z", 0, false}, {"Inf", 0, false},
	} {
		got, err := ParseTime(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseTime(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"60", 60, true}, {"90s", 90, true}, {"30m", 1800, true}, {"36h", 129600, true},
		{"10d", 864000, true}, {"2w", 1209600, true}, {"1.5d", 129600, true},
		{"-5", 0, false}, {"d", 0, false}, {"10x", 0, false}, {"", 0, false},
	} {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestBadInput(t *testing.T) {
	if BadInput(nil) != nil {
		t.Error("BadInput(nil) is not nil")
	}
	u := Usagef("bad %s", "flag")
	if BadInput(u) != u {
		t.Error("BadInput wrapped a UsageError again")
	}
	var ue *UsageError
	if err := BadInput(errors.New("bad doc")); !errors.As(err, &ue) || err.Error() != "bad doc" {
		t.Errorf("BadInput gave %v", err)
	}
}

// FuzzParseDuration: whatever the text, a duration is finite and >= 0, or an error
// that quotes the text.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"60", "90s", "1.5d", "2w", "-5", "1e309d", "1e308w", "NaN", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseDuration(s)
		if err != nil {
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Errorf("ParseDuration(%q) = %v", s, v)
		}
		if p, err := ParsePositiveDuration(s); err == nil && (p != v || p <= 0) {
			t.Errorf("ParsePositiveDuration(%q) = %v, ParseDuration %v", s, p, v)
		}
	})
}
