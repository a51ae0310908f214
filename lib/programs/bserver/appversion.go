package bserver

import (
	"context"
	"fmt"
	"math"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/store"
	"github.com/urfave/cli/v3"
)

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
				case av.Platform != "" && !store.ValidName(av.Platform, maxName):
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
