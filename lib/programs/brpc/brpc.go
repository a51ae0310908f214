// Package brpc is the program brpc: seed 000's scheduler RPCs over a client state
// document: deciding when and whom to contact (poll) and performing the session over
// HTTP (session). lib/rpc does the deciding, lib/boincxml the wire format; this is
// their shell.
package brpc

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bkit/bkit/lib/boincpolicy"
	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/goals"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

// Exit statuses of poll --exit-action. They stay clear of 1 and 2, so a script can tell
// a decision from a failure.
const (
	ExitNone    = 0
	ExitGetWork = 10
	ExitReport  = 11
)

// Main runs brpc with args (args[0] is the program name) and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Run(command(), args, stdin, stdout, stderr)
}

func command() *cli.Command {
	return &cli.Command{
		Name:      "brpc",
		Usage:     "scheduler RPCs: when and whom the client contacts, and the session over HTTP (seed 000)",
		UsageText: "brpc poll | session | attach [flags]",
		Description: cliutil.Help(`
Seed 000 ("scheduler RPC timing and retry") on the client. Each project keeps an
exponentially averaged CPU time (decaying by a factor of e per week), a resource debt
(resource share / exp_avg_cpu; a project with no CPU time yet has the greatest), a
minimum RPC time, a count of consecutive failed RPCs and a master-fetch flag.

brpc attach points a project of the document at a master URL (a live server).
A client loop runs, with the same --now:
  bfetch, bdevices request   the work requests (seeds 001 and 002)
  brpc poll                  whether to start a session, with whom, asking for what
  brpc session               the session's RPCs over HTTP, backoff, master files
Each subcommand has its own --help.

`+cliutil.SchemaNote,
			[]string{
				"brpc poll --now 1700000000 -o table < client.yaml",
				"brpc poll --state client.json --in-place --exit-action; case $? in 10|11) brpc session --state client.json --in-place;; esac",
			}, ""),
		Commands: []*cli.Command{pollCommand(), sessionCommand(), attachCommand()},
	}
}

const (
	flagExitAction = "exit-action"
	flagAsked      = "asked"
	outProject     = "project"
)

func pollCommand() *cli.Command {
	return &cli.Command{
		Name:      "poll",
		Usage:     "decide whether to start a scheduler RPC session, with whom and asking for what (nothing is sent)",
		UsageText: "brpc poll [--now TIME] [--state FILE [--in-place]] [--asked PROJECT]... [-o json|yaml|table|project] [--exit-action] [--policy seed|goals|boinc]",
		Description: cliutil.Help(`
Seed 000's poll function at --now: if no session is active (rpc_session), then below
the low-water mark of estimated work (work_buf_min_days) a get-work session; otherwise
a report-result session for a project with a result overdue for reporting (done, and
its deadline within a day or finished a day ago), asking for work up to the high-water
mark (work_buf_min_days + work_buf_additional_days) when that project has the greatest
resource debt. Only projects whose min_rpc_time has passed count.

The first RPC's request follows the work-fetch decisions recorded in the document when
bfetch ran at --now: a report RPC first (at a step's first poll); else seed 001's CPU
request (projects[].work_request, the largest first, among projects not backed off);
else on a host with coprocessors the coprocessor part of bdevices request's request
(request, if made at --now). Without bfetch's decision at --now, seed 000 alone: the
project of greatest resource debt asked for the work that brings the buffer up to the
high-water mark.

--policy goals: the goals policy's choice (lib/goals) instead: a report RPC first (at
a step's first poll, as above), asking the reported project for what the goals policy
would ask it for; else the goals policy's request (bdevices request --policy goals).
--policy boinc: today's BOINC client's choice (lib/boincpolicy): at most one RPC a
poll, as BOINC's emulator polls: a project with a result overdue for reporting, with a
work request piggybacked for the resources it is the best project for; else the
project bdevices request --policy boinc chooses.

The session is recorded in rpc_session and the first RPC's request in request; brpc
session performs them. --asked names projects already contacted at this step (a shell
loop polls again after each RPC); they are not asked again.

-o table shows, per project, exp_avg_cpu, resource debt, min_rpc_time, nrpc_failures,
the master-fetch flag, the overdue results and the decision with its reason. -o project
prints only the project the first RPC goes to (nothing when none); the document is
then written only with --in-place. --exit-action makes the decision the exit status.

`+cliutil.SchemaNote,
			[]string{
				"brpc poll --now 1700000000 -o table < client.yaml",
				"brpc poll --now 1700000000 --state client.json --in-place -o project --asked A",
				"brpc poll --state client.json --in-place --exit-action; case $? in 0) ;; 10|11) brpc session --state client.json --in-place;; *) exit 1;; esac",
			}, `
0   success; with --exit-action also: no session
10  with --exit-action: a get-work session
11  with --exit-action: a report-result session
1   failure at run time (I/O error)
2   bad usage or invalid input (the message names the file and field); nothing is written`),
		Flags: append([]cli.Flag{
			cliutil.NowFlag(),
			cliutil.PolicyFlag(),
			&cli.StringSliceFlag{Name: flagAsked, Usage: "a project already contacted at this step, `PROJECT` (repeat the flag)"},
			&cli.BoolFlag{Name: flagExitAction, Usage: "exit with the decision: 0 none, 10 get_work, 11 report (failures keep 1 and 2)"},
		}, cliutil.DocumentFlags("json", "yaml", "table", outProject)...),
		Action: runPoll,
	}
}

// pollResult is what poll decided, for the table.
type pollResult struct {
	now      float64
	decision rpc.Decision // seed 000's poll before anything was recorded
	plan     rpc.Plan
	planned  bool
	source   string // which decisions the request follows
	rows     []projectRow
}

type projectRow struct {
	name                     string
	share, expAvgCPU, debt   float64
	minRPCTime               float64
	failures                 int
	masterFetch, contactable bool
	overdue                  int
}

func runPoll(_ context.Context, cmd *cli.Command) error {
	policy, err := cliutil.Policy(cmd)
	if err != nil {
		return err
	}
	now, in, err := cliutil.ReadStage(cmd, nil)
	if err != nil {
		return err
	}
	out := cmd.String(cliutil.FlagOutput)
	doc := in.Doc
	var asked []int
	for _, name := range cmd.StringSlice(flagAsked) {
		i := slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == name })
		if i < 0 {
			return cliutil.Usagef("--asked: %s has no project %q", in.File, name)
		}
		asked = append(asked, i)
	}
	res := poll(doc, now, asked, policy)
	log := cliutil.Logger(cmd)
	log.Debug("poll", "action", res.decision.Action.String(), "reason", res.decision.Reason)
	if res.planned {
		log.Debug("rpc", "project", doc.Projects[res.plan.Project].Name, "why", res.plan.Why)
	}
	if out == outProject {
		if cmd.Bool(cliutil.FlagInPlace) {
			if err := cliutil.WriteState(cmd, in, nil); err != nil {
				return err
			}
		}
		if res.planned {
			if _, err := fmt.Fprintln(cmd.Root().Writer, doc.Projects[res.plan.Project].Name); err != nil {
				return err
			}
		}
	} else if err := cliutil.WriteState(cmd, in, func(w io.Writer) error { return pollTable(w, res) }); err != nil {
		return err
	}
	if cmd.Bool(flagExitAction) && doc.RPCSession != nil && res.planned {
		if doc.RPCSession.Kind == rpc.Report.String() {
			return &cliutil.StatusError{Code: ExitReport}
		}
		return &cliutil.StatusError{Code: ExitGetWork}
	}
	return nil
}

// poll decides at now and records the session and the first RPC's request in doc.
func poll(doc *state.Document, now float64, asked []int, policy string) *pollResult {
	res := &pollResult{now: now, decision: rpc.Poll(doc, now)}
	res.rows = rows(doc, now)
	if doc.RPCSession != nil {
		res.source = "none: a session is active (brpc session performs it)"
		return res
	}
	if policy == cliutil.PolicyBOINC {
		res.source = "today's BOINC client (lib/boincpolicy: one RPC a poll; a report first, with work piggybacked, else bdevices request --policy boinc's choice)"
		var w boincpolicy.Workspace
		res.plan, res.planned = w.Next(doc, now, asked)
		if res.planned {
			doc.Request.Coprocs = slices.Clone(doc.Request.Coprocs)
		}
	} else if policy == cliutil.PolicyGoals {
		res.source = "the goals policy (a report first, else its request as bdevices request --policy goals makes it)"
		res.plan, res.planned = goals.Next(doc, now, asked)
	} else if wf := doc.WorkFetch; wf != nil && wf.Time == now {
		res.source = "seed 001 (bfetch at --now), seed 002 for coprocessors (bdevices request at --now)"
		res.plan, res.planned = rpc.Next(doc, now, asked, func() state.WorkRequest {
			if doc.Request == nil || doc.Request.Time != now {
				return state.WorkRequest{}
			}
			return *doc.Request
		})
	} else {
		res.source = "seed 000 alone (no bfetch decision at --now)"
		res.plan, res.planned = rpc.NextSeed000(doc, now, asked)
	}
	if !res.planned {
		return res
	}
	if d := res.decision; rpc.IsReportSession(doc, now, asked, res.plan.Project) {
		rpc.StartSession(doc, d, now)
	} else {
		rpc.StartSession(doc, rpc.Decision{Action: rpc.GetWork}, now)
	}
	if doc.RPCSession.Kind == rpc.GetWork.String() {
		doc.RPCSession.Contacted = []string{doc.Projects[res.plan.Project].Name}
	}
	return res
}

func rows(doc *state.Document, now float64) []projectRow {
	overdue := make(map[string]int)
	for i := range doc.Tasks {
		if t := &doc.Tasks[i]; rpc.Overdue(t, now) {
			overdue[t.Project]++
		}
	}
	out := make([]projectRow, len(doc.Projects))
	for i := range doc.Projects {
		p := &doc.Projects[i]
		out[i] = projectRow{name: p.Name, share: p.ResourceShare, expAvgCPU: rpc.DecayedExpAvgCPU(p, now),
			debt: rpc.ResourceDebt(p, now), minRPCTime: p.MinRPCTime, failures: p.NRPCFailures,
			masterFetch: p.MasterFetchPending, contactable: rpc.CanContact(p, now), overdue: overdue[p.Name]}
	}
	return out
}

func pollTable(w io.Writer, res *pollResult) error {
	d := res.decision
	fmt.Fprintf(w, "Scheduler RPC poll at %s\n", cliutil.When(res.now))
	fmt.Fprintf(w, "Estimated work %s days; low-water mark %s days, high-water mark %s days\n\n",
		cliutil.Num(d.WorkDays), cliutil.Num(d.LowWater), cliutil.Num(d.HighWater))
	t := cliutil.NewTable(w, "project", "share", "exp_avg_cpu", "resource debt", "min_rpc_time", "nrpc_failures", "master fetch", "overdue", "decision")
	for i, r := range res.rows {
		debt := cliutil.Num(r.debt)
		if math.IsInf(r.debt, 1) {
			debt = "inf (no CPU time yet)"
		}
		minRPC := "0"
		if r.minRPCTime > 0 {
			minRPC = strconv.FormatFloat(r.minRPCTime, 'f', -1, 64)
			if !r.contactable {
				minRPC += fmt.Sprintf(" (in %s)", dur(r.minRPCTime-res.now))
			}
		}
		decision := ""
		switch {
		case res.planned && res.plan.Project == i:
			decision = "first RPC: " + sessionKind(res)
		case !r.contactable:
			decision = "backed off"
		}
		if err := t.Append([]string{r.name, cliutil.Num(r.share), cliutil.Num(r.expAvgCPU), debt, minRPC,
			strconv.Itoa(r.failures), yesNo(r.masterFetch), strconv.Itoa(r.overdue), decision}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "Seed 000's poll: %s (%s).\n", d.Action, d.Reason)
	fmt.Fprintf(w, "Request from: %s.\n", res.source)
	if !res.planned {
		_, err := fmt.Fprintln(w, "No RPC.")
		return err
	}
	r := res.plan.Request
	_, err := fmt.Fprintf(w, "First RPC: %s (%s), asking cpu_req_secs %s, cpu_req_instances %s%s.\n",
		r.Project, res.plan.Why, cliutil.Num(r.CPUReqSecs), cliutil.Num(r.CPUReqInstances), coprocs(r))
	return err
}

// sessionKind says what the planned first RPC does.
func sessionKind(res *pollResult) string {
	r := &res.plan.Request
	work := r.CPUReqSecs > 0 || len(r.Coprocs) > 0
	switch {
	case strings.HasPrefix(res.plan.Why, "report:") && work:
		return "report, ask for work"
	case strings.HasPrefix(res.plan.Why, "report:"):
		return "report"
	}
	return "get work"
}

func coprocs(r state.WorkRequest) string {
	s := ""
	for _, c := range r.Coprocs {
		s += fmt.Sprintf(", %s req_secs %s req_instances %s", c.Type, cliutil.Num(c.ReqSecs), cliutil.Num(c.ReqInstances))
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// dur shows a duration in seconds with a readable unit.
func dur(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}
