package cliutil

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bkit/bkit/lib/limits"
	"github.com/urfave/cli/v3"
)

// Flag names shared by every program.
const (
	FlagNow      = "now"
	FlagState    = "state"
	FlagInPlace  = "in-place"
	FlagOutput   = "output"
	FlagSeed     = "seed"
	FlagVerbose  = "verbose"
	FlagMaxInput = "max-input"
)

// NowFlag is --now: the time a decision is made, Unix seconds or RFC 3339.
func NowFlag() cli.Flag {
	return &cli.StringFlag{
		Name:  FlagNow,
		Usage: "decide as of `TIME`: Unix seconds (e.g. 1700000000.5) or RFC 3339 (e.g. 2026-11-22T10:00:00Z); default: the wall clock",
	}
}

// MaxInputFlag is --max-input: the most bytes the program reads of any one input (a
// document, a scenario file, a client_state.xml) before it refuses it.
func MaxInputFlag() cli.Flag {
	return &cli.StringFlag{
		Name:  FlagMaxInput,
		Usage: "refuse an input file or standard input larger than `SIZE` (bytes, or with a unit k, M, G; default " + limits.FormatBytes(limits.DocumentBytes) + ")",
		Validator: func(s string) error {
			_, err := limits.ParseBytes(s)
			return err
		},
	}
}

// MaxInput returns --max-input in bytes, or limits.DocumentBytes when it is not given
// (or the command has no such flag).
func MaxInput(cmd *cli.Command) (int64, error) {
	s := cmd.String(FlagMaxInput)
	if s == "" {
		return limits.DocumentBytes, nil
	}
	n, err := limits.ParseBytes(s)
	if err != nil {
		return 0, Usagef("--%s: %v", FlagMaxInput, err)
	}
	return n, nil
}

// LimitReader is r limited by --max-input; name is how messages call r.
func LimitReader(cmd *cli.Command, r io.Reader, name string) (*limits.Reader, error) {
	n, err := MaxInput(cmd)
	if err != nil {
		return nil, err
	}
	return limits.NewReader(r, name, n), nil
}

// StateFlags are --state FILE, --in-place and --max-input.
func StateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name:  FlagState,
			Usage: "read the state document from `FILE` instead of standard input (- means standard input)",
		},
		&cli.BoolFlag{
			Name:  FlagInPlace,
			Usage: "with --state, replace FILE with the result atomically (temporary file, fsync, rename) instead of writing to standard output; FILE is untouched on any error",
		},
		MaxInputFlag(),
	}
}

// OutputFlag is -o/--output of a program that writes a document back: the formats it
// offers; an empty value means "the input's format".
func OutputFlag(formats ...string) cli.Flag {
	return outputFlag("the input's format", formats)
}

// FormatFlag is -o/--output of a program that writes something of its own (figures, a
// converted file): the formats it offers, the first being the default.
func FormatFlag(formats ...string) cli.Flag {
	return outputFlag(formats[0], formats)
}

func outputFlag(def string, formats []string) cli.Flag {
	return &cli.StringFlag{
		Name:    FlagOutput,
		Aliases: []string{"o"},
		Usage:   "write `FORMAT`: " + strings.Join(formats, ", ") + " (default: " + def + ")",
		Validator: func(s string) error {
			for _, f := range formats {
				if s == f {
					return nil
				}
			}
			return fmt.Errorf("must be one of %s, got %q", strings.Join(formats, ", "), s)
		},
	}
}

// SeedFlag is --seed: the seed of every random choice, so a run can be repeated.
func SeedFlag() cli.Flag {
	return &cli.Uint64Flag{
		Name:  FlagSeed,
		Usage: "seed `N` for random choices (backoff jitter, emulation); the same seed gives the same output",
		Value: 1,
	}
}

// VerboseFlag is -v/--verbose: debug logging on stderr.
func VerboseFlag() cli.Flag {
	return &cli.BoolFlag{Name: FlagVerbose, Aliases: []string{"v"}, Usage: "log debug detail on standard error"}
}

// Now returns --now as Unix seconds, or the wall clock when it is not given.
func Now(cmd *cli.Command) (float64, error) {
	s := cmd.String(FlagNow)
	if s == "" {
		return float64(time.Now().UnixNano()) / 1e9, nil
	}
	t, err := ParseTime(s)
	if err != nil {
		return 0, Usagef("--now: %v", err)
	}
	return t, nil
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
			if v, err := strconv.ParseFloat(s[:len(s)-1], 64); err == nil && v >= 0 && !math.IsInf(v, 0) {
				return v * mult, nil
			}
		}
	}
	return 0, fmt.Errorf("want seconds or a number with a unit s, m, h, d or w (e.g. 36h, 10d), got %q", s)
}

// WriteJSON writes v as indented JSON with a trailing newline: the `-o json` form of the
// server programs' reports (status, accounts, give-ups, batches), one shape for all.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// FlagPolicy is --policy of the client's stage programs (bsched, bfetch, bdevices
// request, brpc poll) and of bsim.
const FlagPolicy = "policy"

// Stage policies: the client policies the stage programs run. Each keeps everything it
// decides from in the state document, so a shell loop of the programs runs it as bsim
// does. bsim's rr keeps its round-robin turns in memory and runs only in bsim.
const (
	PolicySeed  = "seed"
	PolicyGoals = "goals"
)

// PolicyFlag is --policy of a client stage program.
func PolicyFlag() cli.Flag {
	return &cli.StringFlag{Name: FlagPolicy, Value: PolicySeed,
		Usage: "the client policy that decides, `NAME`: seed (the seeds' algorithms) or goals (lib/goals: the seeds' goals; see docs/decisions.md)"}
}

// Policy returns --policy, or a usage error naming the flag and the policies a stage
// program runs.
func Policy(cmd *cli.Command) (string, error) {
	switch p := cmd.String(FlagPolicy); p {
	case PolicySeed, PolicyGoals:
		return p, nil
	case "rr":
		return "", Usagef("--%s: rr runs only in bsim run (it keeps its round-robin turns in memory, which a state document does not carry); %s takes seed or goals", FlagPolicy, cmd.FullName())
	default:
		return "", Usagef("--%s: unknown policy %q (known: goals, seed)", FlagPolicy, p)
	}
}
