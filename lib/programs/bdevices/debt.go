package bdevices

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

func debtCommand() *cli.Command {
	return &cli.Command{
		Name:      "debt",
		Usage:     "bring the per-resource long-term debts up to date (seed 002's debt accounting)",
		UsageText: "bdevices debt [--now TIME] [--dt DURATION] [--state FILE [--in-place]] [-o json|yaml|table]",
		Description: cliutil.Help(`
Runs the debt accounting over the interval from debt_time (the last run) to --now,
taking the tasks in state running as having run throughout it, and sets debt_time to
--now. The first run (no debt_time) only sets it. --dt gives the interval instead.

Per resource R, the projects that take part are those with D(P,R)
(projects[].resources[].accumulate_debt) that are not backed off for R at --now
(backoff_until), and those that used R in the interval.
Each is credited its resource-share fraction, among R's participants, of R's use and
charged its own use (instance-seconds). Projects and resources linked that way form
groups; what a group processed (weighted by speed) is owed to its projects by
resource share, and the part of that not already credited per resource is spread over
the project's resources by capacity. So projects that compete for one resource even
out their whole processing through it (the seed's example: a GPU twice as fast as the
CPU, A with GPU jobs only, B with both: the GPU goes 75% to A, 25% to B), while a
project alone on its resources keeps its debts where they are.

The overall debt, which ranks projects in 'bdevices request', is the sum of a project's
resource debts weighted by their FLOPS relative to one CPU, in CPU seconds.

`+cliutil.SchemaNote,
			[]string{
				"bdevices debt --now 1700000600 -o table < examples/gpu-seed-example.yaml",
				"bdevices debt --now 1700000600 --state client.yaml --in-place",
			}, ""),
		Flags: append([]cli.Flag{
			cliutil.NowFlag(),
			&cli.StringFlag{Name: flagDT, Usage: "account an interval of `DURATION` (seconds, or 90s, 30m, 2h, 1d) instead of --now minus debt_time"},
		}, cliutil.DocumentFlags("json", "yaml", "table")...),
		Action: runDebt,
	}
}

func runDebt(_ context.Context, cmd *cli.Command) error {
	dt := -1.0
	now, in, err := cliutil.ReadStage(cmd, func() error {
		if s := cmd.String(flagDT); s != "" {
			var err error
			if dt, err = cliutil.ParseDuration(s); err != nil {
				return cliutil.Usagef("--dt: %v", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	doc := in.Doc
	if dt < 0 {
		dt = 0
		if doc.DebtTime > 0 {
			if now < doc.DebtTime {
				return cliutil.Usagef("%s: --now %s is before debt_time %s", in.File, fmtNum(now), fmtNum(doc.DebtTime))
			}
			dt = now - doc.DebtTime
		}
	}
	used := prsc.Usage(doc)
	prsc.AccumulateDebt(doc, used, dt, now)
	doc.DebtTime = now
	return cliutil.WriteState(cmd, in, func(w io.Writer) error { return debtTable(w, doc, used, dt, now) })
}

func debtTable(w io.Writer, doc *state.Document, used [][]float64, dt, now float64) error {
	fmt.Fprintf(w, "Long-term debts at %s after an interval of %s s\n", cliutil.When(now), fmtNum(dt))
	fmt.Fprintf(w, "(used: instances by running tasks; debt: instance-seconds of the resource; overall: CPU seconds)\n\n")
	t := cliutil.NewTable(w, "project", "share", "resource", "used", "D", "debt", "overall debt")
	for p := range doc.Projects {
		pr := &doc.Projects[p]
		overall := cliutil.Num(prsc.OverallDebt(&doc.Host, pr))
		for r, res := range doc.Host.Resources {
			st := entry(pr, res.Type)
			if err := t.Append([]string{pr.Name, cliutil.Num(pr.ResourceShare), res.Type, cliutil.Num(used[p][r]),
				strconv.FormatBool(st.AccumulateDebt), cliutil.Num(st.LongTermDebt), overall}); err != nil {
				return err
			}
		}
	}
	return t.Render()
}
