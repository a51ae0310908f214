package bserver

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/store"
	"github.com/urfave/cli/v3"
)

func durationFlag(name, usage, def string) *cli.StringFlag {
	return &cli.StringFlag{Name: name, Usage: usage, Value: def}
}

func workCommand() *cli.Command {
	return &cli.Command{
		Name:      "work",
		Usage:     "manage work",
		UsageText: "bserver work create --db DSN --app NAME --count N --fpops-est F --delay-bound D [flags]",
		Commands: []*cli.Command{{
			Name:      "create",
			Usage:     "create workunits and their results (like BOINC's create_work)",
			UsageText: "bserver work create --db DSN --app NAME --count N --fpops-est F --delay-bound D [flags]",
			Description: cliutil.Help(`
Creates --count workunits of --app in one transaction, named PREFIX_ID (PREFIX is
--name-prefix, default the app name), each with --target-nresults unsent results
named WU_0, WU_1, …. The scheduler sends a result with report deadline = send time +
--delay-bound. The redundancy and error limits are BOINC's: min_quorum,
target_nresults, max_error_results, max_total_results, max_success_results; the
retry job (bretry) reads them and the workunit's retry check time, which starts at
now + the app's DWU (seed 003; bserver app set --dwu), or now + --retry-delay when
given. Durations are seconds or take a unit: 90s, 30m, 36h, 10d, 2w.`,
				[]string{
					"bserver work create --db project.db --app uppercase --count 100 --fpops-est 1e12 --delay-bound 2d",
					"bserver work create --db project.db --app uppercase --count 10 --fpops-est 3.6e12 --delay-bound 7d --min-quorum 2 --target-nresults 2",
				}, ""),
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "app", Usage: "the application `NAME`"},
				&cli.IntFlag{Name: "count", Usage: "how many workunits (`N` >= 1)", Value: 1},
				&cli.StringFlag{Name: "name-prefix", Usage: "workunit names are `PREFIX`_ID (default: the app name)"},
				&cli.FloatFlag{Name: "fpops-est", Usage: "estimated FLOPs of a job (`F` > 0)"},
				&cli.FloatFlag{Name: "fpops-bound", Usage: "FLOPs after which a job is aborted (`F` >= fpops-est; default 10 × fpops-est)"},
				durationFlag("delay-bound", "seconds from sending a result to its report deadline (`DURATION` > 0)", ""),
				durationFlag("retry-delay", "seconds from creation to the first retry check (`DURATION` > 0; default: the app's DWU)", ""),
				&cli.IntFlag{Name: "min-quorum", Usage: "successful results needed to validate (`N` 1 to 100)", Value: 1},
				&cli.IntFlag{Name: "target-nresults", Usage: "results created now (`N` from min-quorum to 100; default min-quorum)"},
				&cli.IntFlag{Name: "max-error-results", Usage: "give up after more than `N` error results (1 to 1000)", Value: 3},
				&cli.IntFlag{Name: "max-total-results", Usage: "at most `N` results in all (target-nresults to 1000)", Value: 10},
				&cli.IntFlag{Name: "max-success-results", Usage: "give up after more than `N` successes without a canonical result (min-quorum to 1000)", Value: 6},
				&cli.StringSliceFlag{Name: "input", Usage: "an input file of every workunit: `[OPEN_NAME=]PATH` (repeat), copied to download/ under its base name"},
				&cli.StringSliceFlag{Name: "output", Usage: "an output file each result writes: `OPEN_NAME[:MAX_BYTES]` (repeat; default limit 10 MB), uploaded to upload/ as RESULT_k"},
				&cli.StringFlag{Name: "result-template", Usage: "the outputs as a BOINC result template `FILE` (<file_info> with <max_nbytes>, <result><file_ref> with <open_name>), instead of --output"},
			},
			Action: workCreate,
		}},
	}
}

func workCreate(ctx context.Context, cmd *cli.Command) error {
	if err := cliutil.NoArgs(cmd); err != nil {
		return err
	}
	spec := store.WorkSpec{App: cmd.String("app"), Count: cmd.Int("count"), NamePrefix: cmd.String("name-prefix"),
		FpopsEst: cmd.Float("fpops-est"), FpopsBound: cmd.Float("fpops-bound"), MinQuorum: cmd.Int("min-quorum"),
		TargetNResults: cmd.Int("target-nresults"), MaxErrorResults: cmd.Int("max-error-results"),
		MaxTotalResults: cmd.Int("max-total-results"), MaxSuccessResults: cmd.Int("max-success-results")}
	if spec.App == "" {
		return cliutil.Usagef("--app is required")
	}
	if spec.NamePrefix != "" {
		if err := checkName("--name-prefix", spec.NamePrefix); err != nil {
			return err
		}
	}
	if spec.TargetNResults == 0 {
		spec.TargetNResults = spec.MinQuorum
	}
	var err error
	if cmd.String("delay-bound") == "" {
		return cliutil.Usagef("--delay-bound is required (e.g. 2d)")
	}
	if spec.DelayBound, err = cliutil.ParseDuration(cmd.String("delay-bound")); err != nil {
		return cliutil.Usagef("--delay-bound: %v", err)
	}
	if s := cmd.String("retry-delay"); s != "" {
		if spec.RetryDelay, err = cliutil.ParseDuration(s); err != nil {
			return cliutil.Usagef("--retry-delay: %v", err)
		}
		if !(spec.RetryDelay > 0) {
			return cliutil.Usagef("--retry-delay: must be > 0, got %s", s)
		}
	}
	for _, c := range []struct {
		ok  bool
		msg string
	}{
		{spec.Count >= 1 && spec.Count <= 1_000_000, "--count: must be 1 to 1000000, got " + strconv.Itoa(spec.Count)},
		{spec.FpopsEst > 0 && !math.IsInf(spec.FpopsEst, 0), fmt.Sprintf("--fpops-est: must be > 0, got %v", spec.FpopsEst)},
		{spec.FpopsBound == 0 || (spec.FpopsBound >= spec.FpopsEst && !math.IsInf(spec.FpopsBound, 0)),
			fmt.Sprintf("--fpops-bound: must be >= --fpops-est (%v), got %v", spec.FpopsEst, spec.FpopsBound)},
		{spec.DelayBound > 0, "--delay-bound: must be > 0"},
		{spec.MinQuorum >= 1 && spec.MinQuorum <= limits.Redundancy, fmt.Sprintf("--min-quorum: must be 1 to %d, got %d", limits.Redundancy, spec.MinQuorum)},
		{spec.TargetNResults >= spec.MinQuorum, fmt.Sprintf("--target-nresults: must be >= --min-quorum (%d), got %d", spec.MinQuorum, spec.TargetNResults)},
		{spec.TargetNResults <= limits.Redundancy, fmt.Sprintf("--target-nresults: must be at most %d, got %d", limits.Redundancy, spec.TargetNResults)},
		{spec.MaxErrorResults >= 1 && spec.MaxErrorResults <= limits.WorkunitResults,
			fmt.Sprintf("--max-error-results: must be 1 to %d, got %d", limits.WorkunitResults, spec.MaxErrorResults)},
		{spec.MaxTotalResults >= spec.TargetNResults, fmt.Sprintf("--max-total-results: must be >= --target-nresults (%d), got %d", spec.TargetNResults, spec.MaxTotalResults)},
		{spec.MaxTotalResults <= limits.WorkunitResults, fmt.Sprintf("--max-total-results: must be at most %d, got %d", limits.WorkunitResults, spec.MaxTotalResults)},
		{spec.MaxSuccessResults >= spec.MinQuorum, fmt.Sprintf("--max-success-results: must be >= --min-quorum (%d), got %d", spec.MinQuorum, spec.MaxSuccessResults)},
		{spec.MaxSuccessResults <= limits.WorkunitResults, fmt.Sprintf("--max-success-results: must be at most %d, got %d", limits.WorkunitResults, spec.MaxSuccessResults)},
	} {
		if !c.ok {
			return cliutil.Usagef("%s", c.msg)
		}
	}
	if spec.Outputs, err = outputSpecs(cmd); err != nil {
		return err
	}
	s, now, err := openStoreAt(ctx, cmd)
	if err != nil {
		return err
	}
	defer s.Close()
	if spec.Inputs, err = stageInputs(cmd); err != nil {
		return err
	}
	names, err := s.CreateWork(ctx, spec, now)
	if err != nil {
		return userError(err)
	}
	fmt.Fprintf(cmd.Root().Writer, "created %d workunits (%s … %s) with %d results\n", len(names), names[0], names[len(names)-1], len(names)*spec.TargetNResults)
	return nil
}
