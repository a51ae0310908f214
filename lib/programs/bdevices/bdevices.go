// Package bdevices is the program bdevices: seed 002's processing resources over a client
// state document: describing this machine (detect), keeping the per-resource long-term
// debts (debt), choosing whom to ask for which work (request) and taking in the answer
// (reply). lib/prsc does the deciding; this is its shell.
package bdevices

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/goals"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

// Main runs bdevices with args (args[0] is the program name) and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Run(command(), args, stdin, stdout, stderr)
}

func command() *cli.Command {
	return &cli.Command{
		Name:      "bdevices",
		Usage:     "processing resources (CPU, GPUs): per-resource debt, backoff and work requests (seed 002, client side)",
		UsageText: "bdevices detect | debt | request | reply [flags]",
		Description: cliutil.Help(`
Seed 002 ("work fetch and GPUs") on the client: the CPU and every coprocessor type
(NVIDIA, ATI, intel_gpu, any name) are processing resources with their own instances
and FLOPS; each project has, per resource, a long-term debt, a flag D(P,R) saying
whether it accumulates debt there, and a work-fetch backoff.

A client loop runs, with the same --now:
  bdevices debt     bring the long-term debts up to date over the time since the last run
  bdevices request  simulate the work buffer, choose the project and the per-resource request
  (ask the project: brpc session)
  bdevices reply    apply what came back to the backoffs and D flags
and starts from 'bdevices detect', which describes this machine. Each subcommand has
its own --help.

`+cliutil.SchemaNote,
			[]string{
				"bdevices detect > host.yaml",
				"bdevices request --now 1700000000 -o table < examples/gpu-seed-example.yaml",
				"bdevices reply --now 1700000000 --project A --jobs NVIDIA=3 --state client.yaml --in-place",
			}, ""),
		Commands: []*cli.Command{detectCommand(), debtCommand(), requestCommand(), replyCommand()},
	}
}

// --- debt ---

const flagDT = "dt"

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
(projects[].resources[].accumulate_debt) and those that used R in the interval.
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
	prsc.AccumulateDebt(doc, used, dt)
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

// entry is the project's state for type t, or a zero one (without adding it).
func entry(p *state.Project, t string) state.ProjectResource {
	for _, pr := range p.Resources {
		if pr.Type == t {
			return pr
		}
	}
	return state.ProjectResource{Type: t}
}

// --- request ---

func requestCommand() *cli.Command {
	return &cli.Command{
		Name:      "request",
		Usage:     "choose the project to ask for work and the per-resource request (seed 002's work fetch)",
		UsageText: "bdevices request [--now TIME] [--state FILE [--in-place]] [-o json|yaml|table] [--policy seed|goals] [--asked PROJECT]...",
		Description: cliutil.Help(`
Runs the round-robin simulation over the work buffer (preferences.work_buf_min_days +
work_buf_additional_days): per resource, the shortfall (idle instance-seconds) and the
instances idle now; per project and resource, its shortfall against its share of the
resource. Then the first of these that finds a project decides: an idle coprocessor,
an idle CPU, a coprocessor shortfall, a CPU shortfall. For a resource, select_project
takes, among the projects that may have its jobs (D(P,R), resources[].accumulate_debt)
and are not backed off for it (nor for RPCs: min_rpc_time), the one with the largest
overall debt + its shortfall there.

The request (the document's request) asks that project for each resource's shortfall
(cpu_req_secs, coprocs[].req_secs) and idle instances (cpu_req_instances,
coprocs[].req_instances), with work_req_seconds the largest req_secs; on an idle
coprocessor the CPU's seconds are left out, on an idle CPU the coprocessors' seconds,
and nothing is asked for a resource the project is backed off for. With no need, or
no project to ask, request.project is empty and request.reason says why.

-o table shows per resource the instances, shortfall, idle instances and the project
chosen, then every project's debts, shortfall, score and backoff.

--policy goals makes the goals policy's request instead (lib/goals): among the projects
not in --asked, not in RPC backoff and not backed off for the resource, first the one
of largest overall debt with an app version for a resource that has an idle instance,
else the one of largest overall debt below its low-water mark on some resource (see
bfetch --policy goals); it is asked, on each resource where it holds less than it
wants, for the difference (req_secs) and the idle instances (req_instances).
--asked names projects already contacted at this step (a shell loop asks again after
each RPC): none of them is chosen, under either policy.

`+cliutil.SchemaNote,
			[]string{
				"bdevices request --now 1700000000 -o table < examples/gpu-seed-example.yaml",
				"bdevices request --now 1700000000 --state client.yaml --in-place",
				"bdevices request --policy goals --now 1700000000 -o table < examples/gpu-seed-example.yaml",
			}, ""),
		Flags: append([]cli.Flag{cliutil.NowFlag(), cliutil.PolicyFlag(),
			&cli.StringSliceFlag{Name: flagAsked, Usage: "a project already contacted at this step, `PROJECT` (repeat the flag): it is not chosen"},
		}, cliutil.DocumentFlags("json", "yaml", "table")...),
		Action: runRequest,
	}
}

const flagAsked = "asked"

func runRequest(_ context.Context, cmd *cli.Command) error {
	policy, err := cliutil.Policy(cmd)
	if err != nil {
		return err
	}
	now, in, err := cliutil.ReadStage(cmd, nil)
	if err != nil {
		return err
	}
	var asked []int
	for _, name := range cmd.StringSlice(flagAsked) {
		i := slices.IndexFunc(in.Doc.Projects, func(p state.Project) bool { return p.Name == name })
		if i < 0 {
			return cliutil.Usagef("--asked: %s has no project %q", in.File, name)
		}
		asked = append(asked, i)
	}
	if policy == cliutil.PolicyGoals {
		req, ok := goals.Request(in.Doc, now, asked)
		if !ok {
			req = state.WorkRequest{Time: now, Reason: "no request: goals: no project that may be asked is below its low-water mark or has an idle instance to fill"}
		}
		in.Doc.Request = &req
		cliutil.Logger(cmd).Debug("request", "policy", policy, "project", req.Project, "reason", req.Reason)
		return cliutil.WriteState(cmd, in, func(w io.Writer) error { return goalsRequestTable(w, in.Doc, now, asked) })
	}
	d := prsc.Decide(in.Doc, now)
	req := d.Request
	if i := slices.IndexFunc(in.Doc.Projects, func(p state.Project) bool { return p.Name == req.Project }); i >= 0 && slices.Contains(asked, i) {
		req = state.WorkRequest{Time: now, Reason: fmt.Sprintf("no request: select_project chose %s, already asked at this step", req.Project)}
	}
	in.Doc.Request = &req
	cliutil.Logger(cmd).Debug("request", "project", req.Project, "reason", req.Reason)
	return cliutil.WriteState(cmd, in, func(w io.Writer) error { return requestTable(w, in.Doc, d, now) })
}

func requestTable(w io.Writer, doc *state.Document, d *prsc.Decision, now float64) error {
	fmt.Fprintf(w, "Work fetch (seed 002) at %s; work buffer %s s\n", cliutil.When(now), fmtNum(d.Sim.Period))
	fmt.Fprintf(w, "(shortfalls: instance-seconds over the buffer; debts: instance-seconds, overall debt: CPU seconds)\n\n")
	t := cliutil.NewTable(w, "resource", "instances", "FLOPS", "shortfall", "idle", "select project")
	for r, rs := range d.Sim.Resources {
		chosen := d.Selections[r].Project
		if chosen == "" {
			chosen = "(none: no D(P,R) or all backed off)"
		}
		if err := t.Append([]string{rs.Type, strconv.Itoa(rs.Instances), cliutil.Num(doc.Host.Resources[r].Flops),
			cliutil.Num(rs.Shortfall), cliutil.Num(rs.NIdle), chosen}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = cliutil.NewTable(w, "project", "resource", "D", "debt", "overall debt", "share", "shortfall", "debt+shortfall", "backoff")
	for p := range doc.Projects {
		pr := &doc.Projects[p]
		for r, sel := range d.Selections {
			c := sel.Candidates[p]
			st := entry(pr, sel.Type)
			if err := t.Append([]string{pr.Name, sel.Type, strconv.FormatBool(st.AccumulateDebt), cliutil.Num(st.LongTermDebt),
				cliutil.Num(c.OverallDebt), cliutil.Num(d.Sim.Resources[r].Projects[p].Share), cliutil.Num(c.Shortfall),
				cliutil.Num(c.Score), backoff(pr, st, now)}); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	return requestLine(w, doc.Request)
}

// goalsRequestTable explains the goals policy's request: every project's position per
// resource (bfetch --policy goals), its overall debt and backoff, then the request.
func goalsRequestTable(w io.Writer, doc *state.Document, now float64, asked []int) error {
	fmt.Fprintf(w, "Work request (policy goals) at %s\n", cliutil.When(now))
	fmt.Fprintf(w, "(held, low water, wants: estimated run time in instance-seconds; overall debt: CPU seconds)\n\n")
	t := cliutil.NewTable(w, "project", "resource", "held", "low water", "wants", "overall debt", "backoff")
	for _, nd := range goals.Needs(doc) {
		pr := &doc.Projects[nd.Project]
		st := entry(pr, doc.Host.Resources[nd.Resource].Type)
		b := backoff(pr, st, now)
		if slices.Contains(asked, nd.Project) {
			b = "asked at this step"
		}
		if err := t.Append([]string{pr.Name, st.Type, cliutil.Num(nd.Queued), cliutil.Num(nd.Low), cliutil.Num(nd.Want),
			cliutil.Num(prsc.OverallDebt(&doc.Host, pr)), b}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	return requestLine(w, doc.Request)
}

// requestLine says what the recorded request asks, and why.
func requestLine(w io.Writer, r *state.WorkRequest) error {
	if r.Project == "" {
		_, err := fmt.Fprintf(w, "\nNo request: %s.\n", strings.TrimPrefix(r.Reason, "no request: "))
		return err
	}
	parts := []string{fmt.Sprintf("cpu %s s / %s instances", cliutil.Num(r.CPUReqSecs), cliutil.Num(r.CPUReqInstances))}
	for _, c := range r.Coprocs {
		parts = append(parts, fmt.Sprintf("%s %s s / %s instances", c.Type, cliutil.Num(c.ReqSecs), cliutil.Num(c.ReqInstances)))
	}
	_, err := fmt.Fprintf(w, "\nRequest to %s: %s; work_req_seconds %s.\nWhy: %s.\n",
		r.Project, strings.Join(parts, ", "), cliutil.Num(r.WorkReqSeconds), r.Reason)
	return err
}

func backoff(p *state.Project, st state.ProjectResource, now float64) string {
	var s string
	switch {
	case st.BackoffUntil > now:
		s = fmt.Sprintf("until %s (interval %s s)", fmtNum(st.BackoffUntil), fmtNum(st.BackoffInterval))
	case st.BackoffInterval > 0:
		s = fmt.Sprintf("expired %s (interval %s s)", fmtNum(st.BackoffUntil), fmtNum(st.BackoffInterval))
	default:
		s = "none"
	}
	if p.MinRPCTime > now {
		s += fmt.Sprintf("; RPC until %s", fmtNum(p.MinRPCTime))
	}
	return s
}

// --- shared helpers ---

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func rng(cmd *cli.Command) *rand.Rand { return prsc.NewRand(cmd.Uint64(cliutil.FlagSeed)) }
