package bserver

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/store"
	"github.com/urfave/cli/v3"
)

// validName is what app names and workunit name prefixes may be: they end up in file
// and result names.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

func checkName(what, s string) error {
	if !validName.MatchString(s) {
		return cliutil.Usagef("%s: want letters, digits, '_', '.' or '-' (at most 100, not starting with a punctuation mark), got %q", what, s)
	}
	return nil
}

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
			Usage:     "change an application's retry parameters (seed 003, used by bretry)",
			UsageText: "bserver app set --db DSN NAME [--dwu D] [--dresult D] [--nerror N] [--ndet N] [--nredundancy N]",
			Description: cliutil.Help(`
Sets the retry parameters of application NAME that bretry uses when its own flags do
not give them (seed 003): DWU, the expected delay from creating a workunit to its
canonical result (and between retry checks); Dresult, the expected delay from
creating a result to its report (its deadline); NError, give up after this many error
results; Ndet, give up after this many results done without a canonical result;
Nredundancy, try to get at least this many non-error results. Parameters not given
stay as they are (new apps: DWU 2d, Dresult 1d, NError 3, Ndet 6, Nredundancy 1).
Prints all five afterwards. Durations are seconds or take a unit: 90s, 30m, 36h, 2d.`,
				[]string{"bserver app set --db project.db uppercase --dwu 3d --dresult 1d --nredundancy 2", "bserver app set --db project.db uppercase"}, ""),
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
				fmt.Fprintf(cmd.Root().Writer, "app %s: dwu %ss, dresult %ss, nerror %d, ndet %d, nredundancy %d\n", cmd.Args().First(),
					cliutil.Num(a.DWU), cliutil.Num(a.Dresult), a.NError, a.Ndet, a.Nredundancy)
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
		&cli.IntFlag{Name: "nerror", Usage: "give up on a workunit after `N` >= 1 error results"},
		&cli.IntFlag{Name: "ndet", Usage: "give up on a workunit after `N` >= 1 results done without a canonical result"},
		&cli.IntFlag{Name: "nredundancy", Usage: "try to get at least `N` >= 1 non-error results"},
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
		p    **int
	}{{"nerror", &set.NError}, {"ndet", &set.Ndet}, {"nredundancy", &set.Nredundancy}} {
		if !cmd.IsSet(f.name) {
			continue
		}
		v := cmd.Int(f.name)
		if v < 1 {
			return set, cliutil.Usagef("--%s: must be >= 1, got %d", f.name, v)
		}
		*f.p = &v
	}
	return set, nil
}

func appVersionCommand() *cli.Command {
	return &cli.Command{
		Name:      "app-version",
		Usage:     "manage application versions",
		UsageText: "bserver app-version add --db DSN --app NAME --version N [flags]",
		Commands: []*cli.Command{{
			Name:      "add",
			Usage:     "register a version of an application: the resources it uses and its speed",
			UsageText: "bserver app-version add --db DSN --app NAME --version N [--avg-ncpus X] [--coproc TYPE --coproc-count X] [--flops F] [--plan-class S]",
			Description: cliutil.Help(`
App versions are platform-free: a version says how many CPUs its jobs use (possibly
fractional), which coprocessor type and how many instances of it (for a GPU version),
and optionally how fast its jobs run (FLOPS). The scheduler sends a job with the
fastest version the host can run for the resource it asks work for: a CPU version for
a CPU request, a version using coprocessor TYPE for a TYPE request, and only if the
host reports that coprocessor with enough instances.

Without --flops a job's speed on a host is the host's per-CPU FLOPS × avg-ncpus (CPU
versions) or the GPU's peak FLOPS × coproc-count (GPU versions).`,
				[]string{
					"bserver app-version add --db project.db --app uppercase --version 1 --avg-ncpus 1",
					"bserver app-version add --db project.db --app uppercase --version 1 --plan-class cuda --avg-ncpus 0.2 --coproc NVIDIA --coproc-count 1",
				}, ""),
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "app", Usage: "the application `NAME`"},
				&cli.IntFlag{Name: "version", Usage: "version `N` (with --plan-class, unique per app)", Value: -1},
				&cli.StringFlag{Name: "plan-class", Usage: "plan class `NAME`, to tell versions of one number apart (e.g. cuda)"},
				&cli.FloatFlag{Name: "avg-ncpus", Usage: "CPUs a job uses, possibly fractional (`X` > 0)", Value: 1},
				&cli.StringFlag{Name: "coproc", Usage: "coprocessor `TYPE` the version uses (NVIDIA, ATI, intel_gpu or any name); empty for a CPU version"},
				&cli.FloatFlag{Name: "coproc-count", Usage: "instances of --coproc a job uses, possibly fractional (`X` > 0)"},
				&cli.FloatFlag{Name: "flops", Usage: "FLOPS a job of this version runs at (`F`); 0: from the host's figures"},
				&cli.StringFlag{Name: "platform", Usage: "BOINC `PLATFORM` the files run on (e.g. x86_64-pc-linux-gnu); needed with --file"},
				&cli.StringSliceFlag{Name: "file", Usage: "a file of the version (`PATH`; repeat; the first is the main program), copied to download/ and signed"},
			},
			Action: func(ctx context.Context, cmd *cli.Command) error {
				if err := cliutil.NoArgs(cmd); err != nil {
					return err
				}
				av := store.AppVersion{AppName: cmd.String("app"), VersionNum: cmd.Int("version"), PlanClass: cmd.String("plan-class"),
					AvgNCPUs: cmd.Float("avg-ncpus"), CoprocType: cmd.String("coproc"), CoprocCount: cmd.Float("coproc-count"), Flops: cmd.Float("flops")}
				if av.AppName == "" {
					return cliutil.Usagef("--app is required")
				}
				if av.VersionNum < 0 {
					return cliutil.Usagef("--version is required (a number >= 0)")
				}
				if av.CoprocType != "" {
					av.CoprocType = boincxml.CanonicalType(av.CoprocType)
					if av.CoprocType == boincxml.ResourceCPU {
						return cliutil.Usagef("--coproc: cpu is not a coprocessor; leave --coproc out for a CPU version")
					}
					if !(av.CoprocCount > 0) || math.IsInf(av.CoprocCount, 0) {
						return cliutil.Usagef("--coproc-count: must be > 0 with --coproc %s, got %v", av.CoprocType, av.CoprocCount)
					}
				} else if av.CoprocCount != 0 {
					return cliutil.Usagef("--coproc-count needs --coproc TYPE")
				}
				if !(av.AvgNCPUs > 0) || math.IsInf(av.AvgNCPUs, 0) {
					return cliutil.Usagef("--avg-ncpus: must be > 0, got %v", av.AvgNCPUs)
				}
				if !(av.Flops >= 0) || math.IsInf(av.Flops, 0) {
					return cliutil.Usagef("--flops: must be >= 0, got %v", av.Flops)
				}
				av.Platform = cmd.String("platform")
				files := cmd.StringSlice("file")
				switch {
				case av.Platform != "" && !validName.MatchString(av.Platform):
					return cliutil.Usagef("--platform: want a BOINC platform name like x86_64-pc-linux-gnu, got %q", av.Platform)
				case av.Platform != "" && len(files) == 0:
					return cliutil.Usagef("--platform needs the version's files (--file PATH, the main program first)")
				case av.Platform == "" && len(files) > 0:
					return cliutil.Usagef("--file needs --platform (the platform the files run on)")
				}
				s, now, err := openStoreAt(ctx, cmd)
				if err != nil {
					return err
				}
				defer s.Close()
				if len(files) > 0 {
					if av.Files, err = stageAppFiles(cmd, av, files); err != nil {
						return err
					}
				}
				id, err := s.AddAppVersion(ctx, av, now)
				if err != nil {
					return userError(err)
				}
				res := "cpu"
				if av.CoprocType != "" {
					res = av.CoprocType + " x" + cliutil.Num(av.CoprocCount)
				}
				if av.Platform != "" {
					res = av.Platform + ", " + res
				}
				fmt.Fprintf(cmd.Root().Writer, "app version %s %d%s (%s, %s CPUs): id %d\n", av.AppName, av.VersionNum,
					map[bool]string{true: " " + av.PlanClass, false: ""}[av.PlanClass != ""], res, cliutil.Num(av.AvgNCPUs), id)
				for _, f := range av.Files {
					fmt.Fprintf(cmd.Root().Writer, "  %s: %.0f bytes, md5 %s, signed\n", f.Name, f.NBytes, f.MD5)
				}
				return nil
			},
		}},
	}
}

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
now + --retry-delay (seed 003's DWU). Durations are seconds or take a unit: 90s,
30m, 36h, 10d, 2w.`,
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
				durationFlag("retry-delay", "seconds from creation to the first retry check (`DURATION`; default: the delay bound)", ""),
				&cli.IntFlag{Name: "min-quorum", Usage: "successful results needed to validate (`N` >= 1)", Value: 1},
				&cli.IntFlag{Name: "target-nresults", Usage: "results created now (`N` >= min-quorum; default min-quorum)"},
				&cli.IntFlag{Name: "max-error-results", Usage: "give up after `N` error results", Value: 3},
				&cli.IntFlag{Name: "max-total-results", Usage: "give up after `N` results in all", Value: 10},
				&cli.IntFlag{Name: "max-success-results", Usage: "give up after `N` successes without a canonical result", Value: 6},
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
	spec.RetryDelay = spec.DelayBound
	if s := cmd.String("retry-delay"); s != "" {
		if spec.RetryDelay, err = cliutil.ParseDuration(s); err != nil {
			return cliutil.Usagef("--retry-delay: %v", err)
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
		{spec.MinQuorum >= 1, "--min-quorum: must be >= 1, got " + strconv.Itoa(spec.MinQuorum)},
		{spec.TargetNResults >= spec.MinQuorum, fmt.Sprintf("--target-nresults: must be >= --min-quorum (%d), got %d", spec.MinQuorum, spec.TargetNResults)},
		{spec.MaxErrorResults >= 1, "--max-error-results: must be >= 1, got " + strconv.Itoa(spec.MaxErrorResults)},
		{spec.MaxTotalResults >= spec.TargetNResults, fmt.Sprintf("--max-total-results: must be >= --target-nresults (%d), got %d", spec.TargetNResults, spec.MaxTotalResults)},
		{spec.MaxSuccessResults >= spec.MinQuorum, fmt.Sprintf("--max-success-results: must be >= --min-quorum (%d), got %d", spec.MinQuorum, spec.MaxSuccessResults)},
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

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "count apps, hosts, workunits and results by state",
		UsageText: "bserver status --db DSN [-o table|json]",
		Description: cliutil.Help(`
Counts the apps, app versions, hosts and workunits (and how many of them have a
canonical result, chosen by bretry's validator), the results by app, server
state (unsent, in_progress, over) and outcome (init, success, client_error,
no_reply, …), and the workunits bretry gave up on by app and reason (not_sent,
errors, ndet_done; 'bretry report' lists them), as a table or as JSON.`,
			[]string{"bserver status --db project.db", "bserver status --db project.db -o json | jq '.results'"}, ""),
		Flags: []cli.Flag{cliutil.FormatFlag("table", "json")},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := cliutil.NoArgs(cmd); err != nil {
				return err
			}
			s, err := openStore(ctx, cmd, true)
			if err != nil {
				return err
			}
			defer s.Close()
			st, err := s.Status(ctx)
			if err != nil {
				return err
			}
			w := cmd.Root().Writer
			if cmd.String(cliutil.FlagOutput) == "json" {
				return cliutil.WriteJSON(w, st)
			}
			fmt.Fprintf(w, "apps %d, app versions %d, hosts %d, workunits %d (%d validated)\n", st.Apps, st.AppVersions, st.Hosts, st.Workunits, st.Validated)
			t := cliutil.NewTable(w, "app", "server state", "outcome", "results")
			for _, c := range st.Results {
				t.Append(c.App, c.ServerState, c.Outcome, strconv.FormatInt(c.Count, 10))
			}
			if err := t.Render(); err != nil {
				return err
			}
			if len(st.GiveUps) == 0 {
				return nil
			}
			t = cliutil.NewTable(w, "app", "given up: reason", "workunits")
			for _, c := range st.GiveUps {
				t.Append(c.App, c.Reason, strconv.FormatInt(c.Count, 10))
			}
			return t.Render()
		},
	}
}

// openStoreAt is what every command that adds rows starts with: the time to stamp them
// with (--now) and the project's existing database.
func openStoreAt(ctx context.Context, cmd *cli.Command) (*store.Store, float64, error) {
	now, err := cliutil.Now(cmd)
	if err != nil {
		return nil, 0, err
	}
	s, err := openStore(ctx, cmd, true)
	return s, now, err
}
