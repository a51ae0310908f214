package blocality

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/localitysim"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/urfave/cli/v3"
)

func simulateCommand() *cli.Command {
	d := localitysim.Default()
	return &cli.Command{
		Name:      "simulate",
		Usage:     "emulate hosts drawing one batch's jobs: this policy against in-order dispatch",
		UsageText: "blocality simulate [--hosts N] [--files N] [--jobs N] [--redundancy N] [--team-size N] [flags]",
		Description: cliutil.Help(`
Emulates --hosts hosts (speeds log-uniform over --spread×, 1 CPU each; --churn of them
leave per day, finishing and reporting their work first, and are replaced by new
hosts; some volunteers own two hosts) drawing the jobs of one batch (--files files,
--jobs jobs over runs of 1 to 3 files with varying density, --redundancy results
each) through the scheduler bserver serve runs, in-process on a temporary in-memory SQLite
database, with the work generator and transitioner every --daemon-interval and the
locality daemon likewise. Clients keep BOINC's default work buffer (ask below 0.1
day of work, for up to 0.6 day). Hosts keep every file they receive.

The same run is made twice: with cursors for teams of --team-size and per-host
streams of --stream-jobs jobs (this policy), and with one cursor in plain job order
(naive in-order dispatch), and the figures printed side by side: bytes sent, copies
of each file sent to hosts (mean, p95, mean ÷ redundancy), the copies beyond the
redundancy by what the receiving host was doing (new to the batch, moved from
another cursor, a file of two cursors, replacing holders that left the team, or one
more member on a file its holders still work on), batch completion time and the
hosts' idle fraction. --plot DIR draws, per policy, a point
for each job sent at (day, first file of the job), coloured by host.`,
			[]string{
				"blocality simulate",
				"blocality simulate --hosts 20 --files 500 --jobs 5000 --team-size 3 -o json",
				"blocality simulate --team-size 2 --plot sim-plots",
			}, ""),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "hosts", Value: d.Hosts, Usage: "hosts present at any time (`N`)"},
			&cli.IntFlag{Name: "files", Value: d.Files, Usage: "files in the batch (`N`)"},
			&cli.IntFlag{Name: "jobs", Value: d.Jobs, Usage: "jobs in the batch (`N`)"},
			&cli.IntFlag{Name: "redundancy", Value: d.Redundancy, Usage: "results per job (`N`)"},
			&cli.IntFlag{Name: "team-size", Value: locality.DefaultTeamSize, Usage: "hosts per team (`N`) for this policy"},
			&cli.Float64Flag{Name: "spread", Value: d.Spread, Usage: "fastest ÷ slowest host speed (`X`)"},
			&cli.Float64Flag{Name: "churn", Value: d.Churn, Usage: "fraction of hosts replaced per day (`X`)"},
			&cli.Float64Flag{Name: "job-hours", Value: d.JobHours, Usage: "run time of a two-file job on the median host, `HOURS`"},
			&cli.IntFlag{Name: "cushion", Value: d.Cushion, Usage: "unsent jobs the generator keeps per cursor (`N`)"},
			&cli.IntFlag{Name: "stream-jobs", Usage: "per-host stream length in jobs (`N`; 0: none, seed 004's plain job order; default: 20 files' worth)"},
			&cli.StringFlag{Name: "daemon-interval", Value: "1h", Usage: "simulated `DURATION` between daemon passes"},
			&cli.StringFlag{Name: "plot", Usage: "draw where each host worked in the file sequence over time into `DIR`"},
			cliutil.SeedFlag(),
			cliutil.FormatFlag("table", "json"),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := cliutil.NoArgs(cmd); err != nil {
				return err
			}
			c := d
			c.Hosts, c.Files, c.Jobs, c.Redundancy = cmd.Int("hosts"), cmd.Int("files"), cmd.Int("jobs"), cmd.Int("redundancy")
			c.TeamSize, c.Spread, c.Churn, c.JobHours, c.Cushion = cmd.Int("team-size"), cmd.Float64("spread"), cmd.Float64("churn"), cmd.Float64("job-hours"), cmd.Int("cushion")
			if cmd.IsSet(cliutil.FlagSeed) {
				c.Seed = cmd.Uint64(cliutil.FlagSeed)
			}
			iv, err := cliutil.ParseDuration(cmd.String("daemon-interval"))
			if err != nil || iv <= 0 {
				return cliutil.Usagef("--daemon-interval: want a duration > 0 (e.g. 1h), got %q", cmd.String("daemon-interval"))
			}
			c.Daemon = iv
			if c.TeamSize < 1 {
				return cliutil.Usagef("--team-size: must be >= 1, got %d", c.TeamSize)
			}
			c.StreamJobs = locality.DefaultStreamJobs(c.Jobs, c.Files)
			if cmd.IsSet("stream-jobs") {
				c.StreamJobs = int64(cmd.Int("stream-jobs"))
			}
			if err := c.Check(); err != nil {
				return cliutil.Usagef("%v", err)
			}
			c.Trace = cmd.String("plot") != ""
			inOrder := c
			inOrder.InOrder = true
			// The two runs share nothing (each has its own database), so they run at
			// once: on two cores the wall time is the longer run's.
			configs := []localitysim.Config{c, inOrder}
			runs := make([]*localitysim.Figures, len(configs))
			errs := make([]error, len(configs))
			var wg sync.WaitGroup
			for i, rc := range configs {
				wg.Go(func() { runs[i], errs[i] = localitysim.Run(ctx, rc) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return err
			}
			if dir := cmd.String("plot"); dir != "" {
				if _, err := localitysim.Plot(dir, runs); err != nil {
					return err
				}
			}
			w := cmd.Root().Writer
			if cmd.String(cliutil.FlagOutput) == "json" {
				return cliutil.WriteJSON(w, runs)
			}
			fmt.Fprintf(w, "%d hosts (speeds ×%g, churn %g/day), %d files, %d jobs, redundancy %d, seed %d\n",
				c.Hosts, c.Spread, c.Churn, c.Files, c.Jobs, c.Redundancy, c.Seed)
			// The header as it should read: tablewriter's auto-format splits "in-order"
			// at the hyphen ("IN - ORDER").
			t := cliutil.NewTable(w)
			t.Options(tablewriter.WithHeaderAutoFormat(tw.Off))
			t.Header("FIGURE", strings.ToUpper(runs[0].Policy), strings.ToUpper(runs[1].Policy))
			row := func(name string, v func(f *localitysim.Figures) string) { t.Append(name, v(runs[0]), v(runs[1])) }
			t.Append("team size", strconv.Itoa(c.TeamSize), "all hosts")
			t.Append("stream length, jobs", strconv.FormatInt(c.StreamJobs, 10), "-")
			row("cursors", func(f *localitysim.Figures) string { return strconv.Itoa(f.Cursors) })
			row("bytes sent", func(f *localitysim.Figures) string { return cliutil.Num(f.BytesSent) })
			row("copies per file, mean", func(f *localitysim.Figures) string { return fmt.Sprintf("%.3f", f.CopiesMean) })
			row("copies per file, p95", func(f *localitysim.Figures) string { return cliutil.Num(f.CopiesP95) })
			row("copies per file ÷ redundancy", func(f *localitysim.Figures) string { return fmt.Sprintf("%.3f", f.CopiesPerRed) })
			row("extra copies: new hosts", func(f *localitysim.Figures) string { return strconv.Itoa(f.Waste.New) })
			row("extra copies: moved hosts", func(f *localitysim.Figures) string { return strconv.Itoa(f.Waste.Moved) })
			row("extra copies: cursor boundary", func(f *localitysim.Figures) string { return strconv.Itoa(f.Waste.Boundary) })
			row("extra copies: replacing holders", func(f *localitysim.Figures) string { return strconv.Itoa(f.Waste.Replace) })
			row("extra copies: same team", func(f *localitysim.Figures) string { return strconv.Itoa(f.Waste.Team) })
			row("batch completion, days", func(f *localitysim.Figures) string { return fmt.Sprintf("%.2f", f.CompletionDays) })
			row("host idle fraction", func(f *localitysim.Figures) string { return fmt.Sprintf("%.4f", f.IdleFraction) })
			row("scheduler RPCs", func(f *localitysim.Figures) string { return strconv.Itoa(f.RPCs) })
			row("hosts seen (churn)", func(f *localitysim.Figures) string { return strconv.Itoa(f.HostsSeen) })
			return t.Render()
		},
	}
}
