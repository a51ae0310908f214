// Package bfetch is the program bfetch: seed 001's work fetch decision over a client state
// document (lib/workfetch does the deciding; this is its shell).
package bfetch

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/goals"
	"github.com/bkit/bkit/lib/state"
	"github.com/bkit/bkit/lib/workfetch"
	"github.com/urfave/cli/v3"
)

// Exit statuses of --exit-urgency. They stay clear of 1 and 2, so a script can tell a
// decision from a failure.
const (
	ExitDontNeedWork        = 0
	ExitNeedWork            = 10
	ExitNeedWorkImmediately = 11
)

// ExitStatus is the --exit-urgency status of an urgency.
func ExitStatus(u workfetch.Urgency) int {
	switch u {
	case workfetch.NeedWork:
		return ExitNeedWork
	case workfetch.NeedWorkImmediately:
		return ExitNeedWorkImmediately
	}
	return ExitDontNeedWork
}

// Main runs bfetch with args (args[0] is the program name) and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Run(command(), args, stdin, stdout, stderr)
}

const flagExitUrgency = "exit-urgency"

func command() *cli.Command {
	return &cli.Command{
		Name:      "bfetch",
		Usage:     "decide whether the client needs work and how much to ask each project for (work fetch, seed 001)",
		UsageText: "bfetch [--now TIME] [--state FILE [--in-place]] [-o json|yaml|table] [--exit-urgency] [--policy seed|goals|boinc]",
		Description: cliutil.Help(`
Reads a client state document, runs seed 001's compute_work_request() and writes the
document back with the decision recorded: every project's work_request (CPU seconds to
ask it for) and work_fetch (time = --now, urgency). -o table explains the decision.

The aim is that the CPU scheduler never runs out of work, with a scheduler contact only
about every T days (preferences.connection_period_days). For each project P:
  avg_proc_rate(P) = share(P) / total share × CPUs × host.time_stats.active_frac (1 if absent)
  min_results(P)   = ceil(CPUs × share(P) / total share), the results P may need at once
  ETTPRC(P)        = time until P is down to min_results(P)−1 runnable results: its
                     results' estimated CPU time (remaining FLOPs ÷ one CPU's FLOPS),
                     earliest deadline first, the min_results(P)−1 latest skipped,
                     divided by avg_proc_rate(P); only results that run on the CPU
                     count (a coprocessor's work is bdevices' to fetch)
The urgency is need_work_immediately if some ETTPRC is 0 (and T > 0), need_work if
some ETTPRC is below T, else dont_need_work. Then each project asks for
max(0, (2T − ETTPRC) × avg_proc_rate) seconds, enough to last 2T; with dont_need_work
every request is 0. A project that takes no CPU time (resource share 0, or active
fraction 0) never starves and asks for nothing; its ETTPRC shows as "never".

--policy goals shows the goals policy's position instead (lib/goals): per project and
resource the estimated run time it holds (instance-seconds), its low-water mark and
what it wants: the work buffer at the rate its share gives it, the host's on and
active fractions counted, but never more than 0.3 of its jobs' latency. The urgency is
need_work_immediately when an instance is idle and a project that may be asked has an
app version for it, need_work when a project is below its low-water mark, else
dont_need_work; work_request is the CPU seconds each such project would be asked for.
Whom the goals policy asks, and for what, is bdevices request --policy goals.

--policy boinc shows today's BOINC client's position (lib/boincpolicy, from BOINC's
client/work_fetch.cpp): per resource the round-robin simulation's saturated time and
shortfall against work_buf_min, and per project its fetch priority (from its recent
estimated credit and share) and what keeps it from being asked. The document is
written back unchanged (--exit-urgency exits 0): bdevices request --policy boinc makes
the request.

With --exit-urgency the urgency becomes the exit status (below), so a shell script can
branch on it without reading the output; the document is written first, as usual.

`+cliutil.SchemaNote,
			[]string{
				"bfetch --now 1700000000 -o table < examples/two-projects.yaml",
				"bfetch --state client.json --in-place --now 2026-11-22T10:00:00Z",
				"bfetch --state client.json --in-place --exit-urgency; case $? in 10|11) echo fetch;; 0) echo enough;; *) exit 1;; esac",
				"bfetch --policy goals --now 1700000000 -o table < examples/two-projects.yaml",
			}, `
0   success; with --exit-urgency also: dont_need_work
10  with --exit-urgency: need_work (a project will run out of work within T)
11  with --exit-urgency: need_work_immediately (a project has run out of work now)
1   failure at run time (I/O error)
2   bad usage or invalid input (the message names the file and field); nothing is written`),
		Flags: append([]cli.Flag{
			cliutil.NowFlag(),
			cliutil.PolicyFlag(),
			&cli.BoolFlag{Name: flagExitUrgency, Usage: "exit with the urgency: 0 dont_need_work, 10 need_work, 11 need_work_immediately (failures keep 1 and 2)"},
		}, cliutil.DocumentFlags("json", "yaml", "table")...),
		Action: run,
	}
}

func run(_ context.Context, cmd *cli.Command) error {
	policy, err := cliutil.Policy(cmd)
	if err != nil {
		return err
	}
	now, in, err := cliutil.ReadStage(cmd, nil)
	if err != nil {
		return err
	}
	log := cliutil.Logger(cmd)
	if policy == cliutil.PolicyBOINC {
		// BOINC's client records no decision of this stage: the position is shown and
		// the document written back unchanged (bdevices request --policy boinc asks).
		return cliutil.WriteState(cmd, in, func(w io.Writer) error { return boincTable(w, in.Doc, now) })
	}
	if policy == cliutil.PolicyGoals {
		f := goals.Decide(in.Doc, now)
		log.Debug("decision", "policy", policy, "urgency", f.Urgency.String(), "reason", f.Reason)
		goals.Apply(in.Doc, f, now)
		return finish(cmd, in, f.Urgency, func(w io.Writer) error { return goalsTable(w, in.Doc, &f, now) })
	}
	d := workfetch.Compute(in.Doc)
	for _, r := range d.Rows {
		log.Debug("project", "name", r.Project, "runnable", r.Runnable, "min_results", r.MinResults,
			"avg_proc_rate", r.AvgProcRate, "ettprc", r.ETTPRC, "work_request", r.WorkRequest, "reason", r.Reason)
	}
	log.Debug("decision", "urgency", d.Urgency.String(), "reason", d.Reason)
	workfetch.Apply(in.Doc, d, now)
	return finish(cmd, in, d.Urgency, func(w io.Writer) error { return table(w, &d, now) })
}

// finish writes the document (or the table) and, with --exit-urgency, exits with the
// urgency.
func finish(cmd *cli.Command, in *cliutil.Input, u workfetch.Urgency, table func(io.Writer) error) error {
	if err := cliutil.WriteState(cmd, in, table); err != nil {
		return err
	}
	if cmd.Bool(flagExitUrgency) {
		if code := ExitStatus(u); code != 0 {
			return &cliutil.StatusError{Code: code}
		}
	}
	return nil
}

// goalsTable explains the goals policy's work-fetch position.
func goalsTable(w io.Writer, doc *state.Document, f *goals.Fetch, now float64) error {
	fmt.Fprintf(w, "Work fetch position (policy goals) at %s\n", cliutil.When(now))
	fmt.Fprintf(w, "(held, low water, wants: estimated run time in instance-seconds of the resource; latency: of its jobs as seen)\n\n")
	t := cliutil.NewTable(w, "project", "resource", "idle instances", "held", "low water", "wants", "latency", "work request")
	for _, nd := range f.Needs {
		res := doc.Host.Resources[nd.Resource].Type
		req := "-"
		if res == state.ResourceCPU {
			req = workfetch.Seconds(f.CPURequest[nd.Project])
		}
		lat := "none seen"
		if nd.Latency > 0 {
			lat = workfetch.Seconds(nd.Latency)
		}
		if err := t.Append([]string{doc.Projects[nd.Project].Name, res, cliutil.Num(max(0, f.Idle[nd.Resource])), cliutil.Num(nd.Queued),
			cliutil.Num(nd.Low), cliutil.Num(nd.Want), lat, req}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "Urgency: %s (%s).\n", f.Urgency, f.Reason)
	return err
}

func table(w io.Writer, d *workfetch.Decision, now float64) error {
	fmt.Fprintf(w, "Work fetch decision at %s\n", cliutil.When(now))
	fmt.Fprintf(w, "T (connection period) %s; %d CPU(s) of %s FLOPS; active fraction %s; total resource share %s\n\n",
		workfetch.Seconds(d.T), d.NCPUs, cliutil.Num(d.CPUFlops), cliutil.Num(d.ActiveFrac), cliutil.Num(d.TotalShare))
	t := cliutil.NewTable(w, "project", "share", "runnable", "min results", "avg proc rate", "ETTPRC", "work request", "reason")
	for _, r := range d.Rows {
		if err := t.Append([]string{r.Project, cliutil.Num(r.Share), strconv.Itoa(r.Runnable), strconv.Itoa(r.MinResults),
			cliutil.Num(r.AvgProcRate), workfetch.Seconds(r.ETTPRC), workfetch.Seconds(r.WorkRequest), r.Reason}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "Urgency: %s (%s).\n", d.Urgency, d.Reason)
	return err
}
