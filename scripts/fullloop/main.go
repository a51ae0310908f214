// Command fullloop is the full loop of bkit's programs, client and server side, on one
// machine over simulated time (issue 13; scripts/full-loop.sh builds and runs it). The
// programs are the moving parts; this driver only starts them, passes them one clock and
// checks what they did:
//
//   - project A, a database with a CPU app, a GPU app, an app with a nondeterministic
//     flavour (its results disagree at random, so some workunits are given up) and a
//     locality batch, behind one or more 'bserver serve' front ends; project B, a
//     second database with one CPU app, behind its own;
//   - emulated clients of several kinds (CPU counts and speeds, one with a GPU, one that
//     goes offline and loses its work, one attached to both projects so seed 001's
//     shares matter), each a chain of the real programs over its own state document at
//     every step: bsim clock, bfetch, bdevices request, brpc poll, brpc session (HTTP to
//     the front ends), bsched --if-due, bsim settle, bsim advance (a live world: bsim
//     init --live);
//   - the cron jobs between steps on their own schedules: bretry, bretry validate,
//     blocality generate, transition and credit;
//   - one clock: the driver's simulated time goes to the clients and the cron jobs as
//     --now and to the front ends through a clock file (bserver serve --clock-file), a
//     testing feature that is off by default in every program.
//
// At the end it prints one summary (jobs created, sent, reported, validated, retried,
// lost, given up; the batch's bytes sent against its unique bytes; each client's
// figures of merit as bsim prints them; the front ends' RPC count and latency, read from
// their /metrics) and
// checks the loop's invariants on the databases and the documents; a broken invariant
// is exit status 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/bkit/bkit/lib/cliutil"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs the loop with args and returns the exit status: 0 success, 1 a failure or
// a broken invariant, 2 bad usage.
func Main(args []string, stdout, stderr io.Writer) int {
	cfg, err := parse(args, stderr)
	if err == flag.ErrHelp {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "full-loop:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := Run(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "full-loop:", err)
		return 1
	}
	if cfg.Output == "json" {
		err = cliutil.WriteJSON(stdout, sum)
	} else {
		err = sum.Table(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "full-loop:", err)
		return 1
	}
	if len(sum.Broken) > 0 {
		fmt.Fprintf(stderr, "full-loop: %d invariant(s) broken\n", len(sum.Broken))
		return 1
	}
	return 0
}

const usage = `full-loop [flags]: bkit's client and server programs together over simulated time

  bash scripts/full-loop.sh --clients 6 --duration 6h [--plot DIR]

The summary goes to standard output, progress to standard error. See the package
comment of scripts/fullloop (go doc ./scripts/fullloop) and README.md.

Flags:
`

func parse(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("full-loop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	var c Config
	var duration, delta, killAt, purgeAge string
	fs.StringVar(&c.Bin, "bin", os.Getenv("BKIT_BIN"), "directory of the bkit programs (default $BKIT_BIN, else this program's directory)")
	fs.IntVar(&c.Clients, "clients", 6, "number of emulated clients (kinds in turn: quad, gpu, offline, two-projects, small, big)")
	fs.StringVar(&duration, "duration", "6h", "simulated time (seconds or with a unit: 6h, 1d)")
	fs.StringVar(&delta, "delta", "15m", "a client step, simulated")
	fs.StringVar(&c.DB, "db", "", "project A's database `DSN`: empty, or made by an earlier run of the loop (emptied first); default SQLite in the work directory")
	fs.StringVar(&c.DB2, "db2", "", "project B's database `DSN`, likewise")
	fs.IntVar(&c.FrontEnds, "front-ends", 1, "'bserver serve' processes on project A's database")
	fs.StringVar(&killAt, "kill-at", "", "SIGKILL project A's first front end this long (simulated) after the start, between two clients' sessions, and restart it a step later")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the clients' random streams")
	fs.StringVar(&c.Plot, "plot", "", "draw the jobs in each state over time into `DIR` (SVG, PNG, index.html), and save each project's status page there at the end")
	fs.StringVar(&c.Keep, "keep", "", "work in `DIR` and leave it (databases, documents, worlds, logs); default a temporary directory, removed")
	fs.StringVar(&c.Output, "o", "table", "summary format: table or json")
	fs.StringVar(&purgeAge, "purge-after", "1h", "bserver purge's --older-than: how long (simulated) a workunit's rows stay in the database after its files are deleted")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if c.Duration, err = cliutil.ParsePositiveDuration(duration); err != nil {
		return c, fmt.Errorf("--duration: %v", err)
	}
	if c.Delta, err = cliutil.ParsePositiveDuration(delta); err != nil {
		return c, fmt.Errorf("--delta: %v", err)
	}
	if c.PurgeAge, err = cliutil.ParseDuration(purgeAge); err != nil {
		return c, fmt.Errorf("--purge-after: %v", err)
	}
	if killAt != "" {
		if c.KillAt, err = cliutil.ParsePositiveDuration(killAt); err != nil {
			return c, fmt.Errorf("--kill-at: %v", err)
		}
	}
	switch {
	case c.Clients < 1 || c.Clients > 10000:
		return c, fmt.Errorf("--clients: want 1 to 10000, got %d", c.Clients)
	case c.FrontEnds < 1 || c.FrontEnds > 16:
		return c, fmt.Errorf("--front-ends: want 1 to 16, got %d", c.FrontEnds)
	case c.Output != "table" && c.Output != "json":
		return c, fmt.Errorf("-o: want table or json, got %q", c.Output)
	case c.DB != "" && c.DB == c.DB2:
		return c, fmt.Errorf("--db and --db2 name one database: projects A and B need one each")
	case c.Duration/c.Delta > 1e6:
		return c, fmt.Errorf("--duration %s in steps of --delta %s: more than a million steps", duration, delta)
	}
	if c.Bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, err
		}
		c.Bin = filepath.Dir(exe)
	}
	return c, nil
}
