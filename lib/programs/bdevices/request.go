package bdevices

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/goals"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

func requestCommand() *cli.Command {
	return &cli.Command{
		Name:      "request",
		Usage:     "choose the project to ask for work and the per-resource request (seed 002's work fetch)",
		UsageText: "bdevices request [--now TIME] [--state FILE [--in-place]] [-o json|yaml|table] [--policy seed|goals|boinc] [--asked PROJECT]...",
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
each RPC): none of them is chosen, under any policy.

--policy boinc makes today's BOINC client's request (lib/boincpolicy, from BOINC's
client/work_fetch.cpp choose_project): the round-robin simulation gives each
resource's saturated time and shortfall; the projects in decreasing fetch priority
(from their recent estimated credit and share, less the work they have queued); the
first that may be asked (no RPC backoff) with a resource it may be asked for (an app
version, not backed off) saturated for less than work_buf_min is asked for that
resource's shortfall and instances enough for its share or the idle ones, and for any
other resource below work_buf_total that no higher-priority project may be asked for.

`+cliutil.SchemaNote,
			[]string{
				"bdevices request --now 1700000000 -o table < examples/gpu-seed-example.yaml",
				"bdevices request --now 1700000000 --state client.yaml --in-place",
				"bdevices request --policy goals --now 1700000000 -o table < examples/gpu-seed-example.yaml",
				"bdevices request --policy boinc --now 1700000000 -o table < examples/gpu-seed-example.yaml",
			}, ""),
		Flags: append([]cli.Flag{cliutil.NowFlag(), cliutil.PolicyFlag(),
			&cli.StringSliceFlag{Name: flagAsked, Usage: "a project already contacted at this step, `PROJECT` (repeat the flag): it is not chosen"},
		}, cliutil.DocumentFlags("json", "yaml", "table")...),
		Action: runRequest,
	}
}

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
	if policy == cliutil.PolicyBOINC {
		explain := boincRequest(in.Doc, now, asked)
		cliutil.Logger(cmd).Debug("request", "policy", policy, "project", in.Doc.Request.Project, "reason", in.Doc.Request.Reason)
		return cliutil.WriteState(cmd, in, explain)
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
