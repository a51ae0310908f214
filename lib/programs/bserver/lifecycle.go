package bserver

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/lifecycle"
	"github.com/bkit/bkit/lib/store"
	"github.com/urfave/cli/v3"
)

// The lifecycle jobs (issue 27) are bserver subcommands rather than programs of
// their own: they work on the project directory bserver lays out (--project-dir,
// upload/, download/) and on its database, as bserver's other commands do
// (docs/decisions.md).

// passFlags are the flags of every lifecycle job; batch is --batch's default.
func passFlags(batch int, extra ...cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		&cli.BoolFlag{Name: "once", Usage: "run one pass and exit (for cron)"},
		&cli.StringFlag{Name: "interval", Usage: "run a pass every `DURATION` until SIGINT or SIGTERM"},
		&cli.IntFlag{Name: "batch", Usage: "the most workunits per transaction (purge: per sync of the archive; on SQLite its transactions are cut to a few milliseconds each), `N` from 1 to 10000", Value: batch},
	}, extra...)
}

// passLoop checks the flags every lifecycle job shares and runs pass once (--once)
// or every --interval until SIGINT or SIGTERM, which the pass sees between batches
// (stop), each pass recorded in s (RecordRun). A failed pass in a loop is logged and
// the next one tried at the next interval, so a database restart does not stop the
// job.
func passLoop(ctx context.Context, cmd *cli.Command, s *store.Store, pass func(ctx context.Context, now float64, stop func() bool) (fmt.Stringer, error)) error {
	once, interval, now, err := cliutil.OnceOrInterval(cmd)
	if err != nil {
		return err
	}
	sctx, cancel := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	stop := func() bool { return sctx.Err() != nil }
	log := cliutil.Logger(cmd)
	for {
		// Each pass is a recorded run (RecordRun); a summary that counts rows says how
		// many it handled.
		var sum fmt.Stringer
		err := RecordRun(sctx, s, cmd.FullName(), "", now, log, func(ctx context.Context) (int64, error) {
			var err error
			sum, err = pass(ctx, now, stop)
			if r, ok := sum.(interface{ RowsHandled() int64 }); ok {
				return r.RowsHandled(), err
			}
			return 0, err
		})
		switch {
		case err != nil && once:
			return err
		case err != nil:
			log.Error(cmd.Name+" pass failed", "err", err)
		default:
			fmt.Fprintln(cmd.Root().Writer, sum)
		}
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

// batchFlag reads --batch.
func batchFlag(cmd *cli.Command) (int, error) {
	b := cmd.Int("batch")
	if b < 1 || b > 10000 {
		return 0, cliutil.Usagef("--batch: must be 1 to 10000, got %d", b)
	}
	return b, nil
}

// passStore checks --batch and opens the database of a lifecycle job; the caller
// closes it.
func passStore(ctx context.Context, cmd *cli.Command) (int, *store.Store, error) {
	batch, err := batchFlag(cmd)
	if err != nil {
		return 0, nil, err
	}
	s, err := openStore(ctx, cmd, true)
	return batch, s, err
}

// ageFlag reads a duration flag that must not be negative (--delay, --older-than).
func ageFlag(cmd *cli.Command, name string) (float64, error) {
	v, err := cliutil.ParseDuration(cmd.String(name))
	if err != nil {
		return 0, cliutil.Usagef("--%s: %v", name, err)
	}
	if v < 0 {
		return 0, cliutil.Usagef("--%s: must be >= 0, got %s", name, cmd.String(name))
	}
	return v, nil
}

func assimilateCommand() *cli.Command {
	return &cli.Command{
		Name:      "assimilate",
		Usage:     "hand each validated or given-up workunit to the scientist, once (BOINC's assimilator)",
		UsageText: "bserver assimilate --db DSN (--to DIR | --exec CMD) (--once | --interval DURATION) [flags]",
		Description: cliutil.Help(`
Hands over every workunit that has a canonical result (bretry's validator chose one)
or was given up (bretry's retry rules), exactly once, in one of two ways:

--to DIR writes DIR/APP/BATCH/WORKUNIT/ holding the canonical result's output files
  under their upload names (RESULT_N, N the file's number in the output template).
  BATCH is _nobatch/NNNNNN outside locality batches: the workunit's id / 10,000 in
  six digits, so that no directory holds more than 10,000 workunits however long the
  project runs. A given-up workunit's directory holds workunit.json instead: its
  name, app, batch, outcome (error) and the error it was given up for (as does a
  success's without output files). --workunit-json writes workunit.json for
  successes too (outcome success, the canonical result and its files' open names,
  sizes and MD5s): a file more per workunit, about a third more of the pass's time.
  A directory is written under a temporary name, synced and renamed: it appears
  whole or not at all.
--layout flat (with --to) makes no directory per workunit: DIR/APP/BATCH/ holds the
  output files themselves under their upload names (each begins with its
  workunit's name), each appearing whole, and WORKUNIT.json where a directory would
  hold workunit.json, renamed into place after the workunit's files are on disk
  (with --workunit-json, the sign that a workunit of several files is all there).
  BOINC's sample assimilator's layout; it saves an inode and a directory block per
  workunit: about 40 % of a pass's CPU time on ext4, and a third of the scheduler's
  RPC latency tail while the pass runs with the database on the same disk.
--exec CMD runs the shell command CMD once per workunit with, in its environment:
  BKIT_WORKUNIT, BKIT_WORKUNIT_ID, BKIT_APP, BKIT_BATCH, BKIT_OUTCOME (success or
  error), BKIT_ERROR (why it was given up), BKIT_CANONICAL_RESULT, BKIT_FILES (the
  output files' paths, space-separated) and BKIT_OPEN_NAMES (the app's names for
  them). Exit 0 is done. A non-zero exit, or a command still running after
  --exec-timeout (default 10m; its process group is killed), keeps the workunit for
  a later pass after a backoff of 1 minute doubling to a day; 'bserver status' counts
  the failures. A command that exits 0 is never run again for that workunit; one
  killed with the assimilator may be (make it idempotent: BKIT_WORKUNIT names the
  job).

A workunit whose output file is missing from the upload directory, or whose name
would lead out of it, fails the same way and is never handed over half. Any number
of assimilators may run at once: each claims its workunits (a lease of
--exec-timeout + 5m); one killed at any moment leaves its claims, which another on
the same machine takes over at once and one elsewhere when the lease ends.
--once prints: assimilated N, failed N.`,
			[]string{
				"bserver assimilate --db project.db --to /srv/results --once",
				"bserver assimilate --db project.db --to /srv/results --layout flat --once",
				"bserver assimilate --db project.db --exec 'cp $BKIT_FILES /srv/in/ && echo $BKIT_WORKUNIT $BKIT_OUTCOME >> /srv/log' --interval 5m",
				"*/5 * * * * bserver assimilate --db /var/lib/project/project.db --to /srv/results --once   # crontab",
			}, `0  success (--once: the pass is done, even if some workunits failed and wait; --interval: stopped by a signal)
1  failure at run time (unreachable database, schema not initialised, a database error)
2  bad usage (a flag); nothing is written`),
		Flags: passFlags(lifecycle.DefaultBatch,
			&cli.StringFlag{Name: "to", Usage: "write each workunit's files into `DIR`/APP/BATCH/WORKUNIT/"},
			&cli.StringFlag{Name: "exec", Usage: "run the shell command `CMD` for each workunit"},
			&cli.DurationFlag{Name: "exec-timeout", Usage: "kill a command running longer than `DURATION`", Value: 10 * time.Minute},
			&cli.BoolFlag{Name: "workunit-json", Usage: "with --to: write workunit.json for every workunit, not only given-up ones"},
			&cli.StringFlag{Name: "layout", Usage: "with --to: `dirs` (a directory per workunit) or flat (the files in the batch's directory)", Value: "dirs"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := cliutil.NoArgs(cmd); err != nil {
				return err
			}
			to, ex := cmd.String("to"), cmd.String("exec")
			switch {
			case to == "" && ex == "":
				return cliutil.Usagef("want --to DIR or --exec CMD")
			case to != "" && ex != "":
				return cliutil.Usagef("--to and --exec: give one")
			}
			if cmd.Bool("workunit-json") && to == "" {
				return cliutil.Usagef("--workunit-json: only with --to")
			}
			layout, err := lifecycle.ParseLayout(cmd.String("layout"))
			if err != nil {
				return cliutil.Usagef("--layout: %v", err)
			}
			if cmd.IsSet("layout") && to == "" {
				return cliutil.Usagef("--layout: only with --to")
			}
			if d := cmd.Duration("exec-timeout"); d <= 0 {
				return cliutil.Usagef("--exec-timeout: must be > 0, got %s", d)
			}
			batch, err := batchFlag(cmd)
			if err != nil {
				return err
			}
			if to != "" {
				if err := os.MkdirAll(to, 0o755); err != nil {
					return cliutil.Usagef("--to: %v", err)
				}
			}
			s, err := openStore(ctx, cmd, true)
			if err != nil {
				return err
			}
			defer s.Close()
			// Assimilate and delete-files commit without syncing SQLite's WAL
			// (store.BatchJob), as bretry does: a commit a power cut takes back is done again by
			// the next pass and changes nothing (a workunit's directory written again finds
			// itself in place; an unlinked file is found gone), and a sync per commit was most of
			// a short transaction's time (issue 33's short transactions, issue 27's 10 s). purge
			// does too (lifecycle.Purger), but for its record that a batch is being written,
			// which must be durable before the batch is appended to the archive, or a power
			// cut would have it archived twice.
			if err := s.BatchJob(ctx); err != nil {
				return err
			}
			pdir, err := projectDir(cmd)
			if err != nil {
				return err
			}
			owner := lifecycle.Owner()
			return passLoop(ctx, cmd, s, func(ctx context.Context, now float64, stop func() bool) (fmt.Stringer, error) {
				a := &lifecycle.Assimilator{Store: s, UploadDir: filepath.Join(pdir, uploadSubdir), To: to, Layout: layout, MetaAlways: cmd.Bool("workunit-json"), Exec: ex,
					ExecTimeout: cmd.Duration("exec-timeout"), Batch: batch, Clock: lifecycle.NewClock(now), Owner: owner,
					Lease: cmd.Duration("exec-timeout").Seconds() + 300, Log: cliutil.Logger(cmd), Stop: stop, Stderr: cmd.Root().ErrWriter}
				sum, err := a.Run(ctx)
				return sum, err
			})
		},
	}
}

func deleteFilesCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete-files",
		Usage:     "delete the input and output files of assimilated workunits that nothing needs (BOINC's file_deleter)",
		UsageText: "bserver delete-files --db DSN (--once | --interval DURATION) [--delay DURATION] [--batch N]",
		Description: cliutil.Help(`
For each workunit assimilated at least --delay ago (default 1h) that no result needs
any more (none unsent, none in progress, none waiting for validation), deletes every
output file its results uploaded (from upload/, in the fan-out tree or flat) and
each of its input files (from download/) that no other workunit whose files remain
reads. A locality batch's files (seed 004's sticky files) go once every job of all
its cursors is finished and every workunit of it has had its files deleted: until
then a cursor may still send them.

Every decision is recorded first (the deleted_file table: workunit or batch, name,
bytes, when) and carried out after, so a pass killed at any moment leaves nothing
half done that the next pass does not finish; two passes at once never decide for
one workunit twice. A name that would lead out of its directory (a path, "..", a
symbolic link) is refused and recorded as refused, never followed.
--once prints: workunits N, files deleted N (N bytes), refused N.`,
			[]string{
				"bserver delete-files --db project.db --once",
				"bserver delete-files --db mysql://boinc:secret@db:3306/project --project-dir /srv/project --delay 1d --interval 1h",
			}, `0  success (--once: the pass is done; --interval: stopped by a signal)
1  failure at run time (unreachable database, schema not initialised, a database or file system error)
2  bad usage (a flag); nothing is written`),
		Flags: passFlags(lifecycle.DefaultBatch,
			&cli.StringFlag{Name: "delay", Usage: "wait `DURATION` after assimilation before deleting a workunit's files", Value: "1h"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := cliutil.NoArgs(cmd); err != nil {
				return err
			}
			delay, err := ageFlag(cmd, "delay")
			if err != nil {
				return err
			}
			batch, s, err := passStore(ctx, cmd)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.BatchJob(ctx); err != nil { // as assimilate's
				return err
			}
			pdir, err := projectDir(cmd)
			if err != nil {
				return err
			}
			return passLoop(ctx, cmd, s, func(ctx context.Context, now float64, stop func() bool) (fmt.Stringer, error) {
				d := &lifecycle.FileDeleter{Store: s, UploadDir: filepath.Join(pdir, uploadSubdir), DownloadDir: filepath.Join(pdir, downloadSubdir),
					Delay: delay, Batch: batch, Clock: lifecycle.NewClock(now), Log: cliutil.Logger(cmd), Stop: stop}
				sum, err := d.Run(ctx)
				return sum, err
			})
		},
	}
}

// purgeLease is how long a purge batch stays its purger's: far longer than a batch
// takes (a second or so), so a live purger keeps it; one that died is taken over at
// once on its own machine (its process is gone) and after this elsewhere.
const purgeLease = 600

func purgeCommand() *cli.Command {
	return &cli.Command{
		Name:      "purge",
		Usage:     "move old finished workunits and their results out of the database into archive files (BOINC's db_purge)",
		UsageText: "bserver purge --db DSN --older-than DURATION --archive DIR (--once | --interval DURATION) [--batch N]",
		Description: cliutil.Help(`
Moves every workunit that is assimilated and whose files were deleted more than
--older-than ago, with its results and the rows that hang off them (the results'
output file list and stderr, the input and output file lists, give-ups, the file
deleter's journal), out of the database into the archive directory: one file per
day (UTC, of the purge) and table, DIR/DAY/TABLE.jsonl.gz, JSON Lines (one row an
object, columns by name) compressed with gzip; read them with zcat. A workunit of a
locality batch goes once its cursor has moved past its job.

Batch by batch (--batch workunits, default 1000): the batch is claimed, its rows
are appended to the archive files as one gzip member per table (whose header names
the batch), the files are synced, and only then are the rows deleted, in one
transaction. Archived rows are never lost and never archived twice: a purger killed
after writing and before deleting is found out by the next pass with the same
archive, which cuts its member back out of the files and writes the batch again.
Any number of purgers may run at once with one archive directory (they take turns
writing, by a lock on DIR/.purge.lock); give every purger of a project the same
--archive on one machine. A batch's rows that change while it is archived (a late
report) are cut back and written again as they are then.
--once prints: purged N workunits, N results (N rows, N archive bytes).`,
			[]string{
				"bserver purge --db project.db --older-than 30d --archive /srv/archive --once",
				"zcat /srv/archive/2026-11-28/result.jsonl.gz | jq -c '{name, outcome}'",
				"0 3 * * * bserver purge --db /var/lib/project/project.db --older-than 30d --archive /srv/archive --once   # crontab",
			}, `0  success (--once: the pass is done; --interval: stopped by a signal)
1  failure at run time (unreachable database, schema not initialised, a database or archive error, an archive file that is not gzip)
2  bad usage (a flag); nothing is written`),
		Flags: passFlags(lifecycle.DefaultPurgeBatch,
			&cli.StringFlag{Name: "older-than", Usage: "purge workunits whose files were deleted more than `DURATION` ago (required)"},
			&cli.StringFlag{Name: "archive", Usage: "append the purged rows to the archive files in `DIR` (required)"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := cliutil.NoArgs(cmd); err != nil {
				return err
			}
			if cmd.String("older-than") == "" {
				return cliutil.Usagef("want --older-than DURATION (how long purged rows stay after their files are deleted)")
			}
			olderThan, err := ageFlag(cmd, "older-than")
			if err != nil {
				return err
			}
			dir := cmd.String("archive")
			if dir == "" {
				return cliutil.Usagef("want --archive DIR (where the purged rows go)")
			}
			if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
				return cliutil.Usagef("--archive: %s is not a directory", dir)
			}
			batch, s, err := passStore(ctx, cmd)
			if err != nil {
				return err
			}
			defer s.Close()
			owner := lifecycle.Owner()
			return passLoop(ctx, cmd, s, func(ctx context.Context, now float64, stop func() bool) (fmt.Stringer, error) {
				p := &lifecycle.Purger{Store: s, Archive: dir, OlderThan: olderThan, Batch: batch, Clock: lifecycle.NewClock(now),
					Owner: owner, Lease: purgeLease, Log: cliutil.Logger(cmd), Stop: stop}
				sum, err := p.Run(ctx)
				return sum, err
			})
		},
	}
}
