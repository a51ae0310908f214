// Package input owns what every reader of outside input shares below the programs'
// edge: the error that marks input as the caller's fault (UsageError, BadInput: exit
// status 2 once a program reports it) and the parsers of the values people type:
// times (Unix seconds or RFC 3339) and durations (seconds or with a unit). It imports
// nothing of bkit's and no CLI library, so that data packages (lib/scenario) may use it;
// lib/cliutil builds the programs' flags on it.
package input

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// UsageError marks an error caused by the caller: a bad flag, argument or input document.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// BadInput marks err (typically a document validation error) as the caller's fault.
func BadInput(err error) error {
	if err == nil {
		return nil
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return err
	}
	return &UsageError{Err: err}
}

// MaxTime is the latest time a program accepts, Unix seconds (2100-01-01T00:00:00Z):
// later than any real or emulated run, and far inside what a float64 holds to the
// microsecond and time.Time's UnixNano to the nanosecond.
const MaxTime = 4102444800

// ParseTime reads a time as Unix seconds (possibly fractional) or RFC 3339, between the
// epoch and MaxTime.
func ParseTime(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t, terr := time.Parse(time.RFC3339Nano, s)
		if terr != nil {
			return 0, fmt.Errorf("want Unix seconds or RFC 3339 (2026-11-22T10:00:00Z), got %q", s)
		}
		if t.Before(time.Unix(0, 0)) || t.After(time.Unix(MaxTime, 0)) {
			v = -1 // refused below; UnixNano would overflow
		} else {
			v = float64(t.UnixNano()) / 1e9
		}
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > MaxTime {
		return 0, fmt.Errorf("want a time from 1970-01-01 to 2100-01-01 (Unix seconds 0 to %d), got %q", MaxTime, s)
	}
	return v, nil
}

// ParsePositiveDuration is ParseDuration for a duration that must be more than 0.
func ParsePositiveDuration(s string) (float64, error) {
	v, err := ParseDuration(s)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("want a duration > 0: seconds, or a number with a unit s, m, h, d or w (e.g. 60, 36h), got %q", s)
	}
	return v, nil
}

// ParseDuration reads a duration as seconds ("3600", "90.5") or with a unit
// ("90s", "30m", "36h", "10d", "2w").
func ParseDuration(s string) (float64, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fmt.Errorf("want a duration >= 0, got %q", s)
		}
		return v, nil
	}
	units := map[string]float64{"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
	if len(s) > 1 {
		if mult, ok := units[s[len(s)-1:]]; ok {
			if v, err := strconv.ParseFloat(s[:len(s)-1], 64); err == nil && v >= 0 && !math.IsInf(v*mult, 0) {
				return v * mult, nil
			}
		}
	}
	return 0, fmt.Errorf("want seconds or a number with a unit s, m, h, d or w (e.g. 36h, 10d), got %q", s)
}
