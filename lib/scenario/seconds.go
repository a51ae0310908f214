package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/bkit/bkit/lib/input"
)

// Seconds is a duration in a scenario file: a number of seconds, or a string with a
// unit as bsim's flags take it (input.ParseDuration: "90s", "30m", "36h", "30d",
// "2w").
type Seconds float64

func (s *Seconds) UnmarshalText(b []byte) error {
	v, err := input.ParseDuration(string(b))
	if err == nil && math.IsInf(v, 0) {
		err = fmt.Errorf("want a finite duration, got %q", b)
	}
	if err != nil {
		return err
	}
	*s = Seconds(v)
	return nil
}

func (s *Seconds) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		b = []byte(str)
	}
	return s.UnmarshalText(b)
}

// text is how a duration is written: with the unit d or h when that is exact, else
// as seconds.
func (s Seconds) text() (string, bool) {
	v := float64(s)
	for _, u := range []struct {
		name string
		mult float64
	}{{"d", 86400}, {"h", 3600}} {
		if v > 0 && v < 1e12 && math.Mod(v, u.mult) == 0 {
			str := strconv.FormatFloat(v/u.mult, 'f', -1, 64) + u.name
			if back, err := input.ParseDuration(str); err == nil && back == v {
				return str, true
			}
		}
	}
	return strconv.FormatFloat(v, 'g', -1, 64), false
}

func (s Seconds) MarshalJSON() ([]byte, error) {
	str, unit := s.text()
	if unit {
		return json.Marshal(str)
	}
	return []byte(str), nil
}

func (s Seconds) MarshalYAML() (any, error) {
	if str, unit := s.text(); unit {
		return str, nil
	}
	return float64(s), nil
}

func (Seconds) JSONSchema() map[string]any {
	return map[string]any{
		"type":    []string{"number", "string"},
		"pattern": `^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?[smhdw]?$`,
	}
}
