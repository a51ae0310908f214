// Package bsched is the program bsched: one CPU scheduling pass of seed 001 over a client
// state document (lib/cpusched does the deciding; this is its shell).
package bsched

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/cpusched"
	"github.com/bkit/bkit/lib/goals"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

// Main runs bsched with args (args[0] is the program name) and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Run(command(), args, stdin, stdout, stderr)
}

func command() *cli.Command {
	return &cli.Command{
		Name:      "bsched",
		Usage:     "decide which tasks run on the host's processors (one CPU scheduling pass, seed 001)",
		UsageText: "bsched [--now TIME] [--state FILE [--in-place]] [-o json|yaml|table] [--if-due] [--policy seed|goals|boinc]",
		Description: cliutil.Help(`
Reads a client state document, runs one scheduling pass as of --now and writes the
document back with the decision recorded: debts brought up to date from the work each
project got since the last pass, tasks marked running or preempted, cpu_time_at_last_sched
updated, and cpu_sched.next_pass set to when the next pass is due (the end of the
scheduling period, or earlier when a running task is expected to finish by its estimate).
Call it again then, when a result arrives or when a processor becomes free (seed 001's
three occasions); --if-due makes a loop that
calls it often cheap and safe.

Per processing resource (coprocessors first, then the CPU), the project with the largest
anticipated debt gets an instance for its running task, else a preempted task, else its
ready result with the earliest deadline. The CPU's debt is seed 001's (projects[].debt),
brought up to date by the pass; a coprocessor's is seed 002's long-term debt of the
project on that resource (projects[].resources[].long_term_debt), kept by bdevices debt
(or bsim advance) and only read here. -o table explains every decision.

--policy goals runs the goals policy's pass instead (lib/goals): a ready result that
cannot meet its deadline even if started now is abandoned (done, never run); then per
resource the tasks the round-robin simulation sees missing their deadline, earliest
deadline first (each project up to the instances its share gives it); then the rest by
overall long-term debt (seed 002's), as seed 001 does. The debts are seed 002's, kept
by bdevices debt (or bsim advance in an emulated run).

--policy boinc runs today's BOINC client's pass instead (lib/boincpolicy, from BOINC's
client/cpu_sched.cpp and rr_sim.cpp): each project's priority from its recent
estimated credit (projects[].rec) and share; a round-robin simulation marks the tasks
that would finish after their deadline − work_buf_min, which run first, earliest
deadline first; then tasks by project priority, each lowering its project's; a running
task keeps its processors for its time slice (the scheduling period). -o table says
what BOINC would run now and why. A pass is due whenever there are tasks (BOINC
schedules every minute).

`+cliutil.SchemaNote,
			[]string{
				"bsched --now 1700003600 -o table < examples/two-projects.yaml",
				"bsched --state client.json --in-place --now 2026-11-22T10:00:00Z",
				"bsched --state client.json --in-place --if-due   # in a loop: a pass only when one is due",
				"bsched --policy goals --now 1700003600 -o table < examples/two-projects.yaml",
				"bsched --policy boinc --now 1700003600 -o table < examples/two-projects.yaml",
			}, ""),
		Flags: append([]cli.Flag{
			cliutil.NowFlag(),
			cliutil.PolicyFlag(),
			&cli.BoolFlag{Name: "if-due", Usage: "run the pass only if one is due (first pass, next_pass reached, a new result, a running task that has finished its work, or a free processor with work waiting); otherwise write the document unchanged"},
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
	if cmd.Bool("if-due") {
		due, why := cpusched.Due(in.Doc, now)
		if policy == cliutil.PolicyBOINC {
			due, why = boincDue(in.Doc)
		}
		if !due {
			log.Info("no pass", "why", why)
			return cliutil.WriteState(cmd, in, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "No pass at %s: %s.\n", cliutil.When(now), why)
				return err
			})
		}
		log.Debug("pass due", "why", why)
	}
	if policy == cliutil.PolicyBOINC {
		explain := boincPass(in.Doc, now)
		log.Debug("boinc pass", "now", now)
		return cliutil.WriteState(cmd, in, explain)
	}
	if policy == cliutil.PolicyGoals {
		before := slices.Clone(in.Doc.Tasks)
		abandoned := goals.Schedule(in.Doc, now)
		log.Debug("goals pass", "now", now, "abandoned", len(abandoned), "next_pass", in.Doc.CPUSched.NextPass)
		return cliutil.WriteState(cmd, in, func(w io.Writer) error { return goalsTable(w, in.Doc, before, abandoned, now) })
	}
	pass := cpusched.Schedule(in.Doc, now)
	log.Debug("pass", "now", now, "tasks", len(pass.Tasks), "next_pass", pass.NextPass)
	return cliutil.WriteState(cmd, in, func(w io.Writer) error { return table(w, pass, in.Doc) })
}

func table(w io.Writer, pass *cpusched.Pass, doc *state.Document) error {
	fmt.Fprintf(w, "Scheduling pass at %s\n\nProjects (debt in instance-seconds of each resource):\n", cliutil.When(pass.Now))
	pt := cliutil.NewTable(w, "resource", "project", "share", "runnable", "work done", "debt before", "debt after", "anticipated at end")
	for _, r := range pass.Resources {
		for _, p := range r.Projects {
			share := "-" // a coprocessor's debt is not moved by shares here
			if p.Runnable > 0 && r.Type == state.ResourceCPU {
				share = fmt.Sprintf("%.1f%%", 100*p.ShareFraction)
			}
			pt.Append([]string{r.Type, p.Project, share, fmt.Sprint(p.Runnable), cliutil.Num(p.WorkDone),
				cliutil.Num(p.DebtBefore), cliutil.Num(p.DebtAfter), cliutil.Num(p.AnticipatedEnd)})
		}
	}
	if err := pt.Render(); err != nil {
		return err
	}
	for _, r := range pass.Resources {
		// The CPU's instances are what the coprocessor tasks given an instance leave of
		// the host's CPUs: say so, or "1 of 3.95" reads as a typo.
		left := ""
		if h, ok := doc.Host.Resource(r.Type); ok && float64(h.Instances) != r.Instances {
			left = fmt.Sprintf(" (the host's %d less %s that the running coprocessor tasks use)", h.Instances, cliutil.Num(float64(h.Instances)-r.Instances))
		}
		debts := "seed 001's debts, brought up to date by this pass"
		if r.Type != state.ResourceCPU {
			debts = "seed 002's long-term debts, as bdevices debt keeps them, read and not changed"
		}
		fmt.Fprintf(w, "%s: %s of %s instances given%s; work done since the last pass %s; expected pay-off %s per instance; debts: %s\n",
			r.Type, cliutil.Num(r.Used), cliutil.Num(r.Instances), left, cliutil.Num(r.TotalWorkDone), cliutil.Num(r.ExpectedPayOff), debts)
	}
	fmt.Fprintf(w, "\nTasks:\n")
	tt := cliutil.NewTable(w, "task", "project", "resource", "state", "reason")
	waiting := 0
	for i := range pass.Tasks {
		d := &pass.Tasks[i]
		if d.Before == state.TaskReady && d.After == state.TaskReady {
			waiting++
			continue
		}
		st := string(d.After)
		if d.Before != d.After {
			st = string(d.Before) + " → " + string(d.After)
		}
		tt.Append([]string{d.Name, d.Project, d.Resource, st, d.Reason()})
	}
	if err := tt.Render(); err != nil {
		return err
	}
	if waiting > 0 {
		fmt.Fprintf(w, "%d ready results stay ready (not shown).\n", waiting)
	}
	_, err := fmt.Fprintf(w, "\nNext pass due at %s (%s).\n", cliutil.When(pass.NextPass), pass.NextPassReason)
	return err
}

// goalsTable explains a goals pass: each project's overall debt, then every task whose
// state the pass changed or kept running.
func goalsTable(w io.Writer, doc *state.Document, before []state.Task, abandoned []int, now float64) error {
	fmt.Fprintf(w, "Scheduling pass (policy goals) at %s\n\nProjects (overall long-term debt, CPU seconds):\n", cliutil.When(now))
	pt := cliutil.NewTable(w, "project", "share", "overall debt")
	for i := range doc.Projects {
		p := &doc.Projects[i]
		pt.Append([]string{p.Name, cliutil.Num(p.ResourceShare), cliutil.Num(prsc.OverallDebt(&doc.Host, p))})
	}
	if err := pt.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nTasks:\n")
	tt := cliutil.NewTable(w, "task", "project", "deadline", "state", "why")
	waiting := 0
	for i := range doc.Tasks {
		t, b := &doc.Tasks[i], before[i].State
		if b == state.TaskReady && t.State == state.TaskReady {
			waiting++
			continue
		}
		if !b.Runnable() {
			continue
		}
		st := string(t.State)
		if b != t.State {
			st = string(b) + " → " + string(t.State)
		}
		why := ""
		switch {
		case slices.Contains(abandoned, i):
			why = "abandoned: cannot meet its deadline even if started now"
		case t.State == state.TaskRunning:
			why = "given an instance (deadline mode, else by debt)"
		default:
			why = "no instance left for it"
		}
		tt.Append([]string{t.Name, t.Project, strconv.FormatFloat(t.ReportDeadline, 'f', -1, 64), st, why})
	}
	if err := tt.Render(); err != nil {
		return err
	}
	if waiting > 0 {
		fmt.Fprintf(w, "%d ready results stay ready (not shown).\n", waiting)
	}
	_, err := fmt.Fprintf(w, "\nNext pass due at %s (%s).\n", cliutil.When(doc.CPUSched.NextPass), doc.CPUSched.NextPassReason)
	return err
}
