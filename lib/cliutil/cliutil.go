// Package cliutil owns what every bkit program shares at its edge: the common flags
// (--now, --state, --in-place, -o, --seed, -v), reading and writing the client state
// document through them, atomic file replacement, and the one place where errors become
// exit statuses (0 ok, 1 run-time failure, 2 bad usage or input).
package cliutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/input"
	"github.com/bkit/bkit/lib/limits"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twcache"

	"github.com/urfave/cli/v3"
)

// Exit statuses shared by every program.
const (
	ExitOK      = 0
	ExitFailure = 1 // a failure at run time: database unreachable, server error
	ExitUsage   = 2 // bad usage or invalid input; nothing was written
)

// UsageError marks an error caused by the caller: a bad flag, argument or input
// document. It is lib/input's, so that data packages below the programs can mark their
// errors without importing this package.
type UsageError = input.UsageError

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error { return input.Usagef(format, args...) }

// BadInput marks err (typically a document validation error) as the caller's fault.
func BadInput(err error) error { return input.BadInput(err) }

// StatusError lets a program choose its exit status for an outcome that is not a
// failure, such as bfetch's urgency; Msg, when set, is printed to stderr.
type StatusError struct {
	Code int
	Msg  string
}

func (e *StatusError) Error() string { return e.Msg }

// ExitStatus maps an error to the exit status every bkit program uses.
func ExitStatus(err error) int {
	if err == nil {
		return ExitOK
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	var ue *UsageError
	if errors.As(err, &ue) || limits.IsTooLarge(err) {
		return ExitUsage
	}
	return ExitFailure
}

// Run runs cmd with args (args[0] is the program name) and the given streams, prints
// any error as "prog: message" on stderr (each line of it) and returns the exit status. It never calls
// os.Exit, so programs can be run in-process by tests.
func Run(cmd *cli.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd.Reader = stdin
	cmd.Writer = stdout
	cmd.ErrWriter = stderr
	cmd.ExitErrHandler = func(context.Context, *cli.Command, error) {}
	prepare(cmd)
	err := cmd.Run(context.Background(), args)
	if err != nil {
		var se *StatusError
		if !errors.As(err, &se) || se.Msg != "" {
			// An error listing several problems (a document's) has one per line: each
			// line says which program it comes from.
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(stderr, "%s: %s\n", cmd.Name, line)
			}
		}
	}
	return ExitStatus(err)
}

// prepare makes flag-parsing errors usage errors (status 2) in cmd and every subcommand,
// with a pointer to --help instead of the whole help text.
func prepare(cmd *cli.Command) {
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
			return Usagef("%v (see '%s --help')", err, c.FullName())
		}
	}
	for _, sub := range cmd.Commands {
		prepare(sub)
	}
}

// Help builds the long description of a command: what it does, then EXAMPLES and
// EXIT STATUS sections, so every program's --help reads the same way.
func Help(what string, examples []string, exitStatus string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(what))
	if len(examples) > 0 {
		b.WriteString("\n\nEXAMPLES:\n")
		for _, e := range examples {
			b.WriteString("   " + e + "\n")
		}
	}
	if exitStatus == "" {
		exitStatus = DefaultExitStatus
	}
	b.WriteString("\nEXIT STATUS:\n")
	for _, l := range strings.Split(strings.TrimSpace(exitStatus), "\n") {
		b.WriteString("   " + l + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// DefaultExitStatus is the EXIT STATUS section of a program with no statuses of its own.
const DefaultExitStatus = `0  success
1  failure at run time (I/O error, unreachable database or server)
2  bad usage or invalid input (the message names the file and field); nothing is written`

// Logger returns the program's slog logger on stderr: warnings and errors by default,
// debug with -v.
func Logger(cmd *cli.Command) *slog.Logger {
	level := slog.LevelWarn
	if cmd.Bool("verbose") {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(cmd.Root().ErrWriter, &slog.HandlerOptions{Level: level}))
}

// NewTable returns a table for -o table output in the style all programs share.
//
// Its stringer cache (used only with a custom stringer, which no program sets) holds
// one entry: tablewriter makes a 10,240-entry map for it on every table and again on
// every Reset, some 400 KB whose pages the first touch faults in one by one (about
// 100 page faults, a sizeable part of a short bsim run). NewTable cannot avoid the
// first one; NextTable, a table made again from this one, then costs no new map.
func NewTable(w io.Writer, header ...any) *tablewriter.Table {
	t := tablewriter.NewTable(w, tablewriter.WithStringerCacheCustom(twcache.NewLRU[reflect.Type, reflect.Value](1)))
	t.Header(header...)
	return t
}

// NextTable is t (from NewTable, rendered) emptied for a new table with these columns
// in the same writer: what NewTable would give, without a new stringer cache.
func NextTable(t *tablewriter.Table, header ...any) *tablewriter.Table {
	t.Reset()
	t.Header(header...)
	return t
}

// Num formats a number for tables: six significant digits, no exponent for ordinary
// magnitudes.
func Num(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

// NoArgs is the check of a command that takes flags only: a stray argument is a usage
// error.
func NoArgs(cmd *cli.Command) error {
	if cmd.Args().Len() > 0 {
		return Usagef("unexpected argument %q (see '%s --help')", cmd.Args().First(), cmd.FullName())
	}
	return nil
}
