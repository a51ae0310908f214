// Package bretry is the program bretry: the project's result retry job (seed 003)
// and the validator it depends on, run from cron (--once) or continuously
// (--interval) over the database bserver serves. lib/retry owns the rules; this
// package runs them in short batches over lib/store's database (pass.go) and lists
// what it gave up on (report.go).
package bretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/retry"
	"github.com/bkit/bkit/lib/store"
	"github.com/urfave/cli/v3"
)

// Main runs bretry with args (args[0] is the program name) and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Run(command(), args, stdin, stdout, stderr)
}

// EnvDB is the environment variable --db falls back to: the same as bserver's, since
// both work on one project database.
const EnvDB = "BSERVER_DB"

// maxBatch bounds --batch: a batch's ids go into one IN list.
const maxBatch = 10000

func command() *cli.Command {
	return &cli.Command{
		Name:      "bretry",
		Usage:     "retry lost and erroneous results, give up on hopeless workunits, validate (seed 003)",
		UsageText: "bretry --db DSN --app NAME (--once | --interval DURATION) [flags]\nbretry validate --db DSN --app NAME (--once | --interval DURATION)\nbretry report --db DSN [--app NAME] [-o table|json]",
		Description: cliutil.Help(`
The result retry job of seed 003 (BOINC's result_retry), over the project database
bserver serves. A pass over the app --app does, in order:

 1. Lost results: a result sent and past its deadline (report_deadline < now) with no
    reply is marked over with outcome no_reply.
 2. Validation (skip with --no-validate, e.g. when 'bretry validate' runs apart): a
    workunit with reported successes gets a canonical result when at least its
    min_quorum successes agree (same output digest; a result reported without one
    agrees with all); then its retry check time is 0 and its unsent results are
    withdrawn (didnt_need). Disagreeing results are marked invalid. Each valid
    result is granted its workunit's estimated credit once (rsc_fpops_est × 200 per
    day of 1 GFLOPS: BOINC's cobblestone, fixed credit), added to its host's and
    user's total and weekly-decaying average (expavg_credit, BOINC's).
 3. Retry: every workunit past its retry check time (check time < now; 0 is never),
    not waiting for validation and without a canonical result, by the seed's rules in
    the seed's order:
      a result never sent            -> give up
      at least NError error results  -> give up
      at least Ndet results done     -> give up
      otherwise create Nredundancy - n new results (n: results done and not found
      invalid), deadline now + Dresult, and set the check time to now + DWU.
    Each workunit's own limits (bserver work create, a batch) are checked beside
    these, as BOINC's transitioner does: more error results than its
    max_error_results gives up after the NError rule, more successes than its
    max_success_results after the Ndet rule; new results never take it past its
    max_total_results, and when more are needed than that allows it is given up.
    Giving up sets the check time to 0, sets the workunit's error_mask, withdraws its
    unsent results, writes a wu_giveup row (see 'bretry report', 'bserver status')
    and a structured line on standard error.

DWU, Dresult, NError, Ndet and Nredundancy come from the flags, or else from the
app's values in the database ('bserver app set'). Work goes in transactions of at
most --batch workunits (default 1000; on SQLite fewer, as many as take about 2 ms,
each followed by a pause of at least 3 ms, since each holds the one write lock), so the
scheduler keeps answering during a pass
over millions of rows, and any number of bretry processes may run at once: each batch
takes its rows (FOR UPDATE SKIP LOCKED on MySQL/MariaDB; one writer at a time on
SQLite) and no workunit is handled twice. Killed at any moment, a pass leaves whole
batches done; the next pass does the rest.

--once runs one pass and prints one line: examined, retried, given up, lost,
validated (for cron). --interval DURATION runs a pass every DURATION until SIGINT or
SIGTERM, which stop it between batches. --now fixes the time of a --once pass: a
testing feature (tests, the emulated loop), not for production. -appname NAME is
BOINC's spelling of --app. Durations are seconds or take a unit: 90s, 30m, 36h, 2d.`,
			[]string{
				"bretry --db project.db --app uppercase --once",
				"bretry --db mysql://boinc:secret@db:3306/project -appname uppercase --interval 5m",
				"bretry --db project.db --app uppercase --once --dwu 2d --dresult 1d --nerror 3 --ndet 6 --nredundancy 2",
				"*/10 * * * * bretry --db /var/lib/project/project.db --app uppercase --once   # crontab (scripts/bretry.crontab)",
				"bretry report --db project.db -o json",
			}, `0  success (--once: the pass is done; --interval: stopped by a signal)
1  failure at run time (unreachable database, schema not initialised, a database error)
2  bad usage (a flag, the app unknown); nothing is written`),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Usage: "the project database `DSN`: sqlite:PATH, PATH, or mysql://user:pass@host:port/db", Sources: cli.EnvVars(EnvDB)},
			&cli.StringFlag{Name: "app", Aliases: []string{"appname"}, Usage: "the application `NAME` (-appname NAME works too)"},
			&cli.BoolFlag{Name: "once", Usage: "run one pass and exit (for cron)"},
			&cli.StringFlag{Name: "interval", Usage: "run a pass every `DURATION` until SIGTERM"},
			&cli.StringFlag{Name: "dwu", Usage: "seed 003's DWU: `DURATION` from a check (or creation) to the next (default: the app's)"},
			&cli.StringFlag{Name: "dresult", Usage: "seed 003's Dresult: deadline `DURATION` of the results created (default: the app's)"},
			&cli.IntFlag{Name: "nerror", Usage: "give up after `N` error results, 1 to 1000 (default: the app's)"},
			&cli.IntFlag{Name: "ndet", Usage: "give up after `N` results done without a canonical result, 1 to 1000 (default: the app's)"},
			&cli.IntFlag{Name: "nredundancy", Usage: "try to get at least `N` non-error results, 1 to 100 (default: the app's)"},
			&cli.IntFlag{Name: "batch", Usage: "at most `N` workunits (or results) per transaction, 1 to 10000", Value: DefaultBatch},
			&cli.BoolFlag{Name: "no-validate", Usage: "skip the validator (run 'bretry validate' separately)"},
			cliutil.NowFlag(),
			cliutil.VerboseFlag(),
		},
		Commands: []*cli.Command{validateCommand(), reportCommand()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := cliutil.NoArgs(cmd); err != nil {
				return err
			}
			return run(ctx, cmd, false)
		},
	}
}

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "only mark lost results and validate (canonical results by output digests)",
		UsageText: "bretry validate --db DSN --app NAME (--once | --interval DURATION) [--batch N]",
		Description: cliutil.Help(`
Runs steps 1 and 2 of a bretry pass (see 'bretry --help'): lost results, then the
validator over the app's workunits that wait for it. A workunit whose successful
results include min_quorum that agree (equal output digests, or no digest) gets the
oldest of them as its canonical result, its retry check time set to 0 and its unsent
results withdrawn; its agreeing results are valid (and granted credit: see 'bretry
--help'), the others invalid. With fewer
successes it waits for more; with enough that disagree, all are invalid until a later
result agrees with some (so a nondeterministic app runs into Ndet). Prints the same
one-line summary as a pass.`,
			[]string{"bretry validate --db project.db --app uppercase --once"}, ""),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := cliutil.NoArgs(cmd); err != nil {
				return err
			}
			return run(ctx, cmd, true)
		},
	}
}

// run is a pass (or only the validator) once or every --interval.
func run(ctx context.Context, cmd *cli.Command, validateOnly bool) error {
	once, interval, now, err := cliutil.OnceOrInterval(cmd)
	if err != nil {
		return err
	}
	batch := cmd.Int("batch")
	if batch < 1 || batch > maxBatch {
		return cliutil.Usagef("--batch: must be 1 to %d, got %d", maxBatch, batch)
	}
	app := cmd.String("app")
	if app == "" {
		return cliutil.Usagef("--app is required (or -appname NAME)")
	}
	override, err := paramFlags(cmd)
	if err != nil {
		return err
	}
	s, err := openStore(ctx, cmd)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.BatchJob(ctx); err != nil { // the scheduler's commits synced, the pass's batches redone if lost
		return err
	}
	ar, err := s.AppRetryByName(ctx, app)
	if err != nil {
		return userError(err)
	}
	params := override(retry.Params{DWU: ar.DWU, Dresult: ar.Dresult, NError: ar.NError, Ndet: ar.Ndet, Nredundancy: ar.Nredundancy})
	if err := params.Check(); err != nil {
		return cliutil.Usagef("app %s: %v (see 'bserver app set')", app, err)
	}
	log := cliutil.Logger(cmd)
	sctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	w := cmd.Root().Writer
	for {
		p := &Pass{Store: s, AppID: ar.AppID, App: app, Params: params, Now: now, Batch: batch,
			NoValidate: cmd.Bool("no-validate"), Log: log, Stop: func() bool { return sctx.Err() != nil }}
		var sum Summary
		err := bserver.RecordRun(sctx, s, cmd.FullName(), app, now, log, func(ctx context.Context) (int64, error) {
			var err error
			if validateOnly {
				sum, err = p.Validate(ctx)
			} else {
				sum, err = p.Run(ctx)
			}
			return sum.RowsHandled(), err
		})
		if err != nil {
			return err
		}
		fmt.Fprintln(w, sum)
		log.Debug("pass done", "app", app, "examined", sum.Examined, "retried", sum.Retried, "given_up", sum.GivenUp,
			"lost", sum.Lost, "validated", sum.Validated)
		if once || sctx.Err() != nil {
			return nil
		}
		select {
		case <-sctx.Done():
			return nil
		case <-time.After(time.Duration(interval * float64(time.Second))):
		}
		now = float64(time.Now().UnixNano()) / 1e9
	}
}

// paramFlags reads the seed 003 parameters given as flags and returns what lays them
// over the app's.
func paramFlags(cmd *cli.Command) (func(retry.Params) retry.Params, error) {
	var sets []func(*retry.Params)
	for _, name := range []string{"dwu", "dresult"} {
		if !cmd.IsSet(name) {
			continue
		}
		v, err := cliutil.ParseDuration(cmd.String(name))
		if err != nil {
			return nil, cliutil.Usagef("--%s: %v", name, err)
		}
		if !(v > 0) {
			return nil, cliutil.Usagef("--%s: must be > 0, got %s", name, cmd.String(name))
		}
		if name == "dwu" {
			sets = append(sets, func(p *retry.Params) { p.DWU = v })
		} else {
			sets = append(sets, func(p *retry.Params) { p.Dresult = v })
		}
	}
	for _, f := range []struct {
		name string
		max  int
		set  func(*retry.Params, int)
	}{
		{"nerror", limits.WorkunitResults, func(p *retry.Params, v int) { p.NError = v }},
		{"ndet", limits.WorkunitResults, func(p *retry.Params, v int) { p.Ndet = v }},
		{"nredundancy", limits.Redundancy, func(p *retry.Params, v int) { p.Nredundancy = v }},
	} {
		if !cmd.IsSet(f.name) {
			continue
		}
		v := cmd.Int(f.name)
		if v < 1 || v > f.max {
			return nil, cliutil.Usagef("--%s: must be 1 to %d, got %d", f.name, f.max, v)
		}
		set := f.set
		sets = append(sets, func(p *retry.Params) { set(p, v) })
	}
	return func(p retry.Params) retry.Params {
		for _, s := range sets {
			s(&p)
		}
		return p
	}, nil
}

// openStore opens --db, which must be an initialised project database.
func openStore(ctx context.Context, cmd *cli.Command) (*store.Store, error) {
	dsn := cmd.String("db")
	if dsn == "" {
		return nil, cliutil.Usagef("--db is required (or set $%s): sqlite:PATH, PATH or mysql://user:pass@host:port/db", EnvDB)
	}
	if _, _, err := store.ParseDSN(dsn); err != nil {
		return nil, cliutil.Usagef("--db: %v", err)
	}
	return store.OpenInitialised(ctx, dsn)
}

// userError makes an unknown app exit 2: the caller's mistake, nothing written.
func userError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return cliutil.BadInput(err)
	}
	return err
}
