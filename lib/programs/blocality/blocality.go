// Package blocality is the program blocality: seed 004's locality scheduling around
// the scheduler — batch creation and status, the three cron daemons (work generator,
// transitioner, locality daemon). The
// decisions are lib/locality's, the database work lib/store's; bserver serve does the
// scheduler half (host assignment, in-order jobs, sticky files, file deletion).
package blocality

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/store"
	"github.com/urfave/cli/v3"
)

// Main runs blocality with args (args[0] is the program name) and returns its exit
// status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Run(command(), args, stdin, stdout, stderr)
}

func command() *cli.Command {
	return &cli.Command{
		Name:      "blocality",
		Usage:     "locality scheduling (seed 004): batches, cursors and teams, work generator, transitioner, locality daemon",
		UsageText: "blocality batch create | batch status | generate | transition | credit | simulate [flags]",
		Description: cliutil.Help(`
Jobs that share large input files are sent so that each file travels to as few hosts
as possible. A batch is a sequence of files and jobs over contiguous runs of them; its
jobs are cut into cursors, each worked on by a team of hosts. bserver serve puts each
host on a team and sends it its cursor's jobs in order; the commands here do the rest:

  blocality batch create FILE   create a batch, its files and its cursors
  blocality batch status        show each cursor: team, jobs, progress, est_time_left
  blocality generate            work generator: keep a cushion of unsent jobs per cursor
  blocality transition          transitioner: move cursors past finished jobs
  blocality credit              locality daemon: recompute team credit; silent hosts leave
  blocality simulate            emulate hosts on one batch: this policy against in-order

The daemons are fit for cron (one pass by default) or run with --interval; any of
them may run twice at once, beside bserver serve, and be killed at any moment.
--db (or $BSERVER_DB) names the database as for bserver.`,
			[]string{
				"bserver app add --db project.db --locality einstein",
				"blocality batch create --db project.db --app einstein batch.yaml",
				"blocality generate --db project.db --cushion 40 --interval 1m",
				"blocality batch status --db project.db",
				"blocality simulate --hosts 200 --files 5000 --jobs 50000 --redundancy 2",
			}, ""),
		Flags:    []cli.Flag{bserver.DBFlag(), cliutil.NowFlag(), cliutil.VerboseFlag()},
		Commands: []*cli.Command{batchCommand(), generateCommand(), transitionCommand(), creditCommand(), simulateCommand()},
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 0 {
				return cliutil.Usagef("unknown command %q (see 'blocality --help')", cmd.Args().First())
			}
			return cliutil.Usagef("missing command (see 'blocality --help')")
		},
	}
}

func batchCommand() *cli.Command {
	return &cli.Command{
		Name:      "batch",
		Usage:     "create batches and show their cursors",
		UsageText: "blocality batch create | status",
		Commands:  []*cli.Command{batchCreateCommand(), batchStatusCommand()},
	}
}

const descriptionHelp = `
A batch description (YAML or JSON; unknown fields are errors):

  name: s5r6                     # the batch's name; workunits are NAME_jJOBNUM
  url_base: http://data.example/ # a file's URL is url_base + name unless it gives url
  files:                         # the file sequence F0..Fn-1, or files_csv: FILE.csv
    - {name: s5r6_f0, size: 4.2e6}   #   (name,size[,url] per line, header optional)
    - {name: s5r6_f1, size: 4.2e6, url: http://mirror.example/s5r6_f1}
  jobs:                          # in file order; each a contiguous run of files
    - {first: s5r6_f0, last: s5r6_f1, fpops_est: 1e13}  # by name or number,
    - {first: 1}                                         # or jobs_csv: first,last,fpops_est
  fpops_est: 1e13                # for jobs that do not say
  delay_bound: 7d                # and min_quorum, target_nresults, max_error_results,
  target_nresults: 2             #   max_total_results, max_success_results (1,1,3,10,6)
  cursors:                       # optional: the cursors' job ranges; by default
    - {first_job: 0, last_job: 0}    # --team-size decides them
    - {first_job: 1, last_job: 1}`

func batchCreateCommand() *cli.Command {
	return &cli.Command{
		Name:      "create",
		Usage:     "create a batch of a locality app: its files, jobs and cursors",
		UsageText: "blocality batch create --db DSN --app NAME [--team-size N] [--hosts N] FILE",
		Description: cliutil.Help(`
Reads the batch description FILE, checks it whole, and writes the batch, its files,
its jobs and its cursors in one transaction. Cursors are contiguous job ranges of
roughly equal estimated credit, one per --team-size active hosts (hosts that contacted
the scheduler within --active-within; --hosts overrides the count), so a region of
the file sequence dense in jobs gets more cursors. No workunit is made here: blocality
generate makes them, a cushion at a time.

Each cursor's job range is cut into per-host streams of --stream-jobs jobs (default:
20 files' worth of jobs; 0: none): a host takes jobs from its own stream, so each
stretch of files goes to about as many hosts as a job has results
(docs/decisions.md). With streams, keep blocality generate's --cushion at least
--stream-jobs × 2 × (team size ÷ target_nresults + 1): a job counts as unsent while
one of its results is, so each pair's trail takes up to a stream of the cushion, and
a host looking for a stream of its own must find one.

An invalid description (a negative size, an unknown file, a job whose last file
comes before its first, jobs out of file order, overlapping or non-contiguous
cursors) is refused with exit status 2, every problem named by its field, and
nothing is written.
`+descriptionHelp,
			[]string{
				"blocality batch create --db project.db --app einstein batch.yaml",
				"blocality batch create --db project.db --app einstein --team-size 20 --hosts 5000 batch.json",
			}, ""),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "app", Usage: "the locality app (`NAME`) the batch's jobs run", Required: false},
			&cli.IntFlag{Name: "team-size", Usage: "hosts per team (`N`): one cursor per N active hosts", Value: locality.DefaultTeamSize},
			&cli.IntFlag{Name: "hosts", Usage: "plan for `N` hosts instead of counting the active ones", Value: -1},
			&cli.StringFlag{Name: "active-within", Usage: "a host is active when it contacted the scheduler within `DURATION`", Value: "3d"},
			&cli.IntFlag{Name: "stream-jobs", Usage: "per-host stream length in jobs (`N`; 0: none; default: 20 files' worth)", Value: -1},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return cliutil.Usagef("want one batch description FILE, got %d arguments (see 'blocality batch create --help')", cmd.Args().Len())
			}
			app := cmd.String("app")
			if app == "" {
				return cliutil.Usagef("--app is required")
			}
			teamSize := cmd.Int("team-size")
			if teamSize < 1 {
				return cliutil.Usagef("--team-size: must be >= 1, got %d", teamSize)
			}
			streamJobs := int64(cmd.Int("stream-jobs"))
			if cmd.IsSet("stream-jobs") && streamJobs < 0 {
				return cliutil.Usagef("--stream-jobs: must be >= 0, got %d", streamJobs)
			}
			within, err := cliutil.ParseDuration(cmd.String("active-within"))
			if err != nil {
				return cliutil.Usagef("--active-within: %v", err)
			}
			now, err := cliutil.Now(cmd)
			if err != nil {
				return err
			}
			spec, err := readDescription(cmd.Args().First())
			if err != nil {
				return cliutil.BadInput(err)
			}
			spec.App = app
			spec.StreamJobs = streamJobs
			if streamJobs < 0 {
				spec.StreamJobs = locality.DefaultStreamJobs(len(spec.Jobs), len(spec.Files))
			}
			s, err := bserver.OpenStore(ctx, cmd, true)
			if err != nil {
				return err
			}
			defer s.Close()
			hosts := cmd.Int("hosts")
			if hosts < 0 {
				if hosts, err = s.ActiveHosts(ctx, now-within); err != nil {
					return err
				}
			}
			if len(spec.Cursors) == 0 {
				credit := make([]float64, len(spec.Jobs))
				for i, j := range spec.Jobs {
					credit[i] = j.FpopsEst * locality.CreditPerFlop
				}
				spec.Cursors = locality.PlanCursors(credit, hosts, teamSize)
			}
			id, err := s.CreateBatch(ctx, spec, now)
			if err != nil {
				return bserver.UserError(err)
			}
			fmt.Fprintf(cmd.Root().Writer, "batch %s: id %d, %d files, %d jobs, %d cursors (%d active hosts, team size %d)\n",
				spec.Name, id, len(spec.Files), len(spec.Jobs), len(spec.Cursors), hosts, teamSize)
			return nil
		},
	}
}

func batchStatusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show batches and each cursor: team, job range, progress, credit, est_time_left",
		UsageText: "blocality batch status --db DSN [-o table|json] [NAME...]",
		Description: cliutil.Help(`
For each batch (those NAMEd, or all), its state and, per cursor: the team's size, the
cursor's job range, the first unfinished and first ungenerated job, the estimated
credit of its unfinished jobs (remaining), the team's credit per day (expavg) and
est_time_left = remaining / expavg in days ("inf" for a team with no credit; -1 in
JSON).`,
			[]string{"blocality batch status --db project.db", "blocality batch status --db project.db -o json s5r6"}, ""),
		Flags: []cli.Flag{cliutil.FormatFlag("table", "json")},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			s, err := bserver.OpenStore(ctx, cmd, true)
			if err != nil {
				return err
			}
			defer s.Close()
			bs, err := s.BatchStatuses(ctx, cmd.Args().Slice())
			if err != nil {
				return bserver.UserError(err)
			}
			w := cmd.Root().Writer
			if cmd.String(cliutil.FlagOutput) == "json" {
				if bs == nil {
					bs = []store.BatchStatus{}
				}
				return cliutil.WriteJSON(w, bs)
			}
			for _, b := range bs {
				fmt.Fprintf(w, "batch %s (id %d, app %s): %s, %d jobs, %d files\n", b.Name, b.ID, b.App, b.State, b.NJobs, b.NFiles)
				t := cliutil.NewTable(w, "cursor", "team", "jobs", "first unfinished", "first ungenerated", "remaining credit", "expavg credit", "est_time_left days")
				for _, c := range b.Cursors {
					etl := cliutil.Num(c.EstTimeLeft)
					if c.EstTimeLeft < 0 {
						etl = "inf"
					}
					t.Append(strconv.FormatInt(c.ID, 10), strconv.FormatInt(c.NHosts, 10), fmt.Sprintf("%d..%d", c.FirstJobNum, c.LastJobNum),
						strconv.FormatInt(c.FirstUnfinishedJobNum, 10), strconv.FormatInt(c.FirstUngeneratedJobNum, 10),
						cliutil.Num(c.RemainingCredit), cliutil.Num(c.ExpavgCredit), etl)
				}
				if err := t.Render(); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// daemonFlags are the flags every daemon takes.
func daemonFlags(extra ...cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		&cli.BoolFlag{Name: "once", Usage: "make one pass and exit (the default without --interval; for cron)"},
		&cli.StringFlag{Name: "interval", Usage: "make a pass every `DURATION` until SIGINT or SIGTERM"},
	}, extra...)
}

// runDaemon runs pass once, or every --interval until a signal; a failed pass in a
// loop is logged and retried at the next interval, so a database restart does not
// stop the daemon.
func runDaemon(ctx context.Context, cmd *cli.Command, pass func(ctx context.Context, s *store.Store, now float64) (string, int64, error)) error {
	var interval float64
	if iv := cmd.String("interval"); iv != "" {
		if cmd.Bool("once") {
			return cliutil.Usagef("--once and --interval: give one")
		}
		v, err := cliutil.ParseDuration(iv)
		if err != nil || v <= 0 {
			return cliutil.Usagef("--interval: want a duration > 0 (e.g. 1m), got %q", iv)
		}
		interval = v
	}
	if _, err := cliutil.Now(cmd); err != nil {
		return err
	}
	s, err := bserver.OpenStore(ctx, cmd, true)
	if err != nil {
		return err
	}
	defer s.Close()
	w := cmd.Root().Writer
	log := cliutil.Logger(cmd)
	// Each pass is a recorded run (bserver.RecordRun), with the rows it handled.
	recorded := func(ctx context.Context, now float64) (msg string, err error) {
		err = bserver.RecordRun(ctx, s, cmd.FullName(), "", now, log, func(ctx context.Context) (int64, error) {
			var n int64
			msg, n, err = pass(ctx, s, now)
			return n, err
		})
		return msg, err
	}
	if interval == 0 {
		now, _ := cliutil.Now(cmd)
		msg, err := recorded(ctx, now)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, msg)
		return nil
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for {
		now, _ := cliutil.Now(cmd) // the wall clock at each pass, unless --now froze it
		msg, err := recorded(ctx, now)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error(cmd.Name+" pass failed", "err", err)
		} else {
			log.Debug(msg)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Duration(interval * float64(time.Second))):
		}
	}
}

func generateCommand() *cli.Command {
	return &cli.Command{
		Name:      "generate",
		Usage:     "work generator: keep a cushion of unsent jobs per cursor",
		UsageText: "blocality generate --db DSN [--cushion N] [--once | --interval DURATION]",
		Description: cliutil.Help(`
For every cursor of every open batch, counts the cursor's unsent jobs and makes
workunits (each with target_nresults results) for its next jobs, from
first_ungenerated_job_num on, until --cushion jobs are unsent or the cursor's range
ends (seed 004's work generator). Each cursor is one transaction holding its row
locked; workunit names are unique (BATCH_jJOBNUM), so two generators at once never
make a job twice, and a killed one leaves nothing half-made.`,
			[]string{"blocality generate --db project.db", "blocality generate --db project.db --cushion 100 --interval 30s"}, ""),
		Flags: daemonFlags(&cli.IntFlag{Name: "cushion", Usage: "unsent jobs to keep per cursor (`N`)", Value: locality.DefaultCushion}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			cushion := cmd.Int("cushion")
			if cushion < 1 {
				return cliutil.Usagef("--cushion: must be >= 1, got %d", cushion)
			}
			return runDaemon(ctx, cmd, func(ctx context.Context, s *store.Store, now float64) (string, int64, error) {
				n, err := s.Generate(ctx, cushion, now)
				return fmt.Sprintf("generated %d workunits", n), int64(n), err
			})
		},
	}
}

func transitionCommand() *cli.Command {
	return &cli.Command{
		Name:      "transition",
		Usage:     "transitioner: move cursors past finished jobs; complete finished batches",
		UsageText: "blocality transition --db DSN [--once | --interval DURATION]",
		Description: cliutil.Help(`
For every unfinished cursor of every open batch: while the job at
first_unfinished_job_num is finished (successfully or not: a canonical result, an
error, or min_quorum successful results that agree and none outstanding), advance it;
then set remaining_credit to the estimated credit of the cursor's unfinished jobs
(seed 004's transitioner). A batch whose cursors are all finished is marked completed. Idempotent:
safe to run twice at once and to kill.`,
			[]string{"blocality transition --db project.db", "blocality transition --db project.db --interval 1m"}, ""),
		Flags: daemonFlags(),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runDaemon(ctx, cmd, func(ctx context.Context, s *store.Store, now float64) (string, int64, error) {
				changed, done, err := s.Transition(ctx, now)
				return fmt.Sprintf("%d cursors moved, %d batches completed", changed, done), int64(changed + done), err
			})
		},
	}
}

func creditCommand() *cli.Command {
	return &cli.Command{
		Name:      "credit",
		Usage:     "locality daemon: recompute each team's credit; silent hosts leave their teams",
		UsageText: "blocality credit --db DSN [--team-timeout DURATION] [--once | --interval DURATION]",
		Description: cliutil.Help(`
For every open batch (one transaction, cursor rows locked): hosts that have not
contacted the scheduler within --team-timeout leave their teams (a team left empty
waits for the next host: its est_time_left is infinite); then each cursor's
expavg_credit becomes the sum of its members' credit rates (a host's expavg_credit,
or, before it has earned any, its processors' peak rate as credit), with the team's
size and fastest member (seed 004's locality_daemon; run it hourly or daily).`,
			[]string{"blocality credit --db project.db", "blocality credit --db project.db --team-timeout 2d --interval 1h"}, ""),
		Flags: daemonFlags(&cli.StringFlag{Name: "team-timeout", Usage: "a host silent for `DURATION` leaves its team", Value: "3d"}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			timeout, err := cliutil.ParseDuration(cmd.String("team-timeout"))
			if err != nil || timeout <= 0 {
				return cliutil.Usagef("--team-timeout: want a duration > 0 (e.g. 3d), got %q", cmd.String("team-timeout"))
			}
			return runDaemon(ctx, cmd, func(ctx context.Context, s *store.Store, now float64) (string, int64, error) {
				left, err := s.Credit(ctx, timeout, now)
				return fmt.Sprintf("team credit recomputed; %d hosts left their teams", left), int64(left), err
			})
		},
	}
}
