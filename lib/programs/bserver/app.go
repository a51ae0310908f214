package bserver

import (
	"context"
	"fmt"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/store"
	"github.com/urfave/cli/v3"
)

func appCommand() *cli.Command {
	return &cli.Command{
		Name:      "app",
		Usage:     "manage applications",
		UsageText: "bserver app add | set --db DSN NAME",
		Commands: []*cli.Command{{
			Name:      "add",
			Usage:     "register an application",
			UsageText: "bserver app add --db DSN [--locality] NAME",
			Description: cliutil.Help(`
Registers the application NAME. Jobs (bserver work create) and versions (bserver
app-version add) name it. An application that exists already is an error (status 2).

With --locality, the app's jobs come in batches over a sequence of input files and
are sent by seed 004's locality scheduling: each host joins a team (cursor) of a
batch and gets that cursor's jobs in job order, with the batch files as sticky input
files; blocality creates the batches, cursors and jobs.`,
				[]string{"bserver app add --db project.db uppercase", "bserver app add --db project.db --locality einstein_search"}, ""),
			Flags: append([]cli.Flag{&cli.BoolFlag{Name: "locality", Usage: "send the app's jobs by locality scheduling (seed 004)"}}, retryFlags()...),
			Action: func(ctx context.Context, cmd *cli.Command) error {
				if cmd.Args().Len() != 1 {
					return cliutil.Usagef("want one app NAME, got %d arguments (see 'bserver app add --help')", cmd.Args().Len())
				}
				name := cmd.Args().First()
				if err := checkName("app name", name); err != nil {
					return err
				}
				set, err := retrySet(cmd)
				if err != nil {
					return err
				}
				s, now, err := openStoreAt(ctx, cmd)
				if err != nil {
					return err
				}
				defer s.Close()
				id, err := s.AddApp(ctx, name, cmd.Bool("locality"), now)
				if err != nil {
					return userError(err)
				}
				if _, err := s.SetAppRetry(ctx, name, set); err != nil {
					return err
				}
				fmt.Fprintf(cmd.Root().Writer, "app %s: id %d\n", name, id)
				return nil
			},
		}, {
			Name:      "set",
			Usage:     "change an application's retry parameters (seed 003, used by bretry) and quotas (used by bserver serve)",
			UsageText: "bserver app set --db DSN NAME [--dwu D] [--dresult D] [--nerror N] [--ndet N] [--nredundancy N] [--daily-quota N] [--daily-quota-gpu N] [--max-in-progress N] [--max-in-progress-gpu N]",
			Description: cliutil.Help(`
Sets the retry parameters of application NAME that bretry uses when its own flags do
not give them (seed 003): DWU, the expected delay from creating a workunit to its
canonical result (and between retry checks); Dresult, the expected delay from
creating a result to its report (the deadline of the results a retry makes: send time
+ Dresult; a workunit's first results get send time + its delay bound); NError, give up after this many error
results; Ndet, give up after this many results done without a canonical result;
Nredundancy, try to get at least this many non-error results. Parameters not given
stay as they are (new apps: DWU 2d, Dresult 1d, NError 3, Ndet 6, Nredundancy 1).

And the quotas the scheduler holds each host to, per app version, as BOINC's does:
--daily-quota N jobs a day per CPU (BOINC's daily_result_quota; new apps 500, the
value BOINC's make_project writes) and --daily-quota-gpu N per GPU, times the host's
CPUs or GPUs of the version's type (each count taken at most 64, however many the
host claims); each host has its own quota per app version, one less after each error
result reported or timed out (at least 1, which is not multiplied) and doubled, up to
the app's, after each result bretry's validator finds valid; the day is the UTC day. --max-in-progress N and --max-in-progress-gpu N jobs
in progress per CPU or GPU (new apps 10). 0 means no limit. A host held by a quota
gets no job of that version and the reply says why ("This computer has finished a
daily quota of N tasks", "This computer has reached a limit on tasks in progress").

Prints them all afterwards. Durations are seconds or take a unit: 90s, 30m, 36h, 2d.`,
				[]string{"bserver app set --db project.db uppercase --dwu 3d --dresult 1d --nredundancy 2", "bserver app set --db project.db uppercase --daily-quota 100 --max-in-progress 4", "bserver app set --db project.db uppercase"}, ""),
			Flags: retryFlags(),
			Action: func(ctx context.Context, cmd *cli.Command) error {
				if cmd.Args().Len() != 1 {
					return cliutil.Usagef("want one app NAME, got %d arguments (see 'bserver app set --help')", cmd.Args().Len())
				}
				set, err := retrySet(cmd)
				if err != nil {
					return err
				}
				s, err := openStore(ctx, cmd, true)
				if err != nil {
					return err
				}
				defer s.Close()
				a, err := s.SetAppRetry(ctx, cmd.Args().First(), set)
				if err != nil {
					return userError(err)
				}
				fmt.Fprintf(cmd.Root().Writer, "app %s: dwu %ss, dresult %ss, nerror %d, ndet %d, nredundancy %d, daily quota %d (GPU %d), in progress %d (GPU %d)\n", cmd.Args().First(),
					cliutil.Num(a.DWU), cliutil.Num(a.Dresult), a.NError, a.Ndet, a.Nredundancy, a.DailyQuota, a.DailyQuotaGPU, a.MaxInProgress, a.MaxInProgressGPU)
				return nil
			},
		}},
	}
}

// retryFlags are seed 003's parameters of an app (bserver app add and app set).
func retryFlags() []cli.Flag {
	return []cli.Flag{
		durationFlag("dwu", "retry check `DURATION` > 0 (seed 003's DWU: creation or retry to the next check)", ""),
		durationFlag("dresult", "result deadline `DURATION` > 0 (seed 003's Dresult) for the results bretry creates", ""),
		&cli.IntFlag{Name: "nerror", Usage: "give up on a workunit after `N` error results (1 to 1000)"},
		&cli.IntFlag{Name: "ndet", Usage: "give up on a workunit after `N` results done without a canonical result (1 to 1000)"},
		&cli.IntFlag{Name: "nredundancy", Usage: "try to get at least `N` non-error results (1 to 100)"},
		&cli.IntFlag{Name: "daily-quota", Usage: "quota: `N` jobs a day per CPU of a host (BOINC's daily_result_quota; 0 no limit; new apps 500)"},
		&cli.IntFlag{Name: "daily-quota-gpu", Usage: "quota: `N` jobs a day per GPU of a host (0 no limit; new apps 500)"},
		&cli.IntFlag{Name: "max-in-progress", Usage: "quota: `N` jobs in progress per CPU of a host (0 no limit; new apps 10)"},
		&cli.IntFlag{Name: "max-in-progress-gpu", Usage: "quota: `N` jobs in progress per GPU of a host (0 no limit; new apps 10)"},
	}
}

// retrySet reads the retry flags that were given.
func retrySet(cmd *cli.Command) (store.AppRetrySet, error) {
	var set store.AppRetrySet
	for _, name := range []string{"dwu", "dresult"} {
		if !cmd.IsSet(name) {
			continue
		}
		v, err := cliutil.ParseDuration(cmd.String(name))
		if err != nil {
			return set, cliutil.Usagef("--%s: %v", name, err)
		}
		if !(v > 0) {
			return set, cliutil.Usagef("--%s: must be > 0, got %s", name, cmd.String(name))
		}
		if name == "dwu" {
			set.DWU = &v
		} else {
			set.Dresult = &v
		}
	}
	for _, f := range []struct {
		name string
		max  int
		p    **int
	}{{"nerror", limits.WorkunitResults, &set.NError}, {"ndet", limits.WorkunitResults, &set.Ndet}, {"nredundancy", limits.Redundancy, &set.Nredundancy}} {
		if !cmd.IsSet(f.name) {
			continue
		}
		v := cmd.Int(f.name)
		if v < 1 || v > f.max {
			return set, cliutil.Usagef("--%s: must be 1 to %d, got %d", f.name, f.max, v)
		}
		*f.p = &v
	}
	for _, f := range []struct {
		name string
		p    **int
	}{{"daily-quota", &set.DailyQuota}, {"daily-quota-gpu", &set.DailyQuotaGPU}, {"max-in-progress", &set.MaxInProgress}, {"max-in-progress-gpu", &set.MaxInProgressGPU}} {
		if !cmd.IsSet(f.name) {
			continue
		}
		v := cmd.Int(f.name)
		if v < 0 || v > limits.Quota {
			return set, cliutil.Usagef("--%s: must be 0 (no limit) to %d, got %d", f.name, limits.Quota, v)
		}
		*f.p = &v
	}
	return set, nil
}
