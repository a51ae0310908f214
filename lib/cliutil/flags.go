package cliutil

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bkit/bkit/lib/input"
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

// MaxTime, ParseTime, ParsePositiveDuration and ParseDuration are lib/input's, here
// beside the flags that read them.
const MaxTime = input.MaxTime

// ParseTime is input.ParseTime: Unix seconds or RFC 3339, between 1970 and MaxTime.
func ParseTime(s string) (float64, error) { return input.ParseTime(s) }

// ParsePositiveDuration is input.ParsePositiveDuration.
func ParsePositiveDuration(s string) (float64, error) { return input.ParsePositiveDuration(s) }

// ParseDuration is input.ParseDuration: seconds, or a number with a unit s, m, h, d, w.
func ParseDuration(s string) (float64, error) { return input.ParseDuration(s) }

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
	PolicyBOINC = "boinc" // today's BOINC client (lib/boincpolicy)
)

// PolicyFlag is --policy of a client stage program.
func PolicyFlag() cli.Flag {
	return &cli.StringFlag{Name: FlagPolicy, Value: PolicySeed,
		Usage: "the client policy that decides, `NAME`: seed (the seeds' algorithms), goals (lib/goals: the seeds' goals) or boinc (lib/boincpolicy: today's BOINC client); see docs/decisions.md"}
}

// Policy returns --policy, or a usage error naming the flag and the policies a stage
// program runs.
func Policy(cmd *cli.Command) (string, error) {
	switch p := cmd.String(FlagPolicy); p {
	case PolicySeed, PolicyGoals, PolicyBOINC:
		return p, nil
	case "rr":
		return "", Usagef("--%s: rr runs only in bsim run (it keeps its round-robin turns in memory, which a state document does not carry); %s takes seed, goals or boinc", FlagPolicy, cmd.FullName())
	default:
		return "", Usagef("--%s: unknown policy %q (known: boinc, goals, seed)", FlagPolicy, p)
	}
}
