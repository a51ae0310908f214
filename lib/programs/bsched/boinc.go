package bsched

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/bkit/bkit/lib/boincpolicy"
	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/state"
)

// boincDue is --if-due under policy boinc: BOINC's client schedules every minute and
// whenever a job finishes or arrives, so a pass is due whenever there are tasks
// (client/cpu_sched.cpp schedule_cpus; bsim's policy boinc runs one at every step).
func boincDue(doc *state.Document) (bool, string) {
	if len(doc.Tasks) == 0 {
		return false, "no tasks"
	}
	return true, "BOINC schedules every minute"
}

// boincPass is one pass of policy boinc and its explanation.
func boincPass(doc *state.Document, now float64) func(io.Writer) error {
	before := make([]state.TaskState, len(doc.Tasks))
	for i := range doc.Tasks {
		before[i] = doc.Tasks[i].State
	}
	var w boincpolicy.Workspace
	w.Simulate(doc, now)
	sims := slices.Clone(w.Sim)
	misses := map[int]bool{}
	for _, i := range w.Misses() {
		misses[i] = true
	}
	list := slices.Clone(w.Schedule(doc, now))
	prios := w.SchedPriorities(doc)
	return func(out io.Writer) error { return boincTable(out, doc, now, before, sims, misses, list, prios) }
}

// boincTable explains a pass of policy boinc: why each task runs or not, as BOINC's
// client would decide it now.
func boincTable(w io.Writer, doc *state.Document, now float64, before []state.TaskState, sims []boincpolicy.ResourceSim,
	misses map[int]bool, list []boincpolicy.RunEntry, prios []float64) error {
	fmt.Fprintf(w, "Scheduling pass (policy boinc: today's BOINC client) at %s\n\nProjects (priority = −REC fraction ÷ share fraction, over the projects with runnable tasks):\n", cliutil.When(now))
	pt := cliutil.NewTable(w, "project", "share", "REC", "priority")
	for i := range doc.Projects {
		p := &doc.Projects[i]
		prio := prios[i]
		if prio == 0 {
			prio = 0 // not −0
		}
		pt.Append([]string{p.Name, cliutil.Num(p.ResourceShare), cliutil.Num(p.REC), strconv.FormatFloat(prio, 'f', 4, 64)})
	}
	if err := pt.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nRound-robin simulation (work_buf_min %s s: a task misses its deadline when it would finish after deadline − work_buf_min; saturated: seconds all instances stay busy; shortfall: idle instance-seconds within the work buffer):\n",
		cliutil.Num(boincpolicy.WorkBufMin(&doc.Preferences)))
	st := cliutil.NewTable(w, "resource", "deadline misses", "saturated", "shortfall", "idle now")
	for _, s := range sims {
		st.Append([]string{s.Type, strconv.Itoa(s.Misses), cliutil.Num(s.Saturated), cliutil.Num(s.Shortfall), cliutil.Num(s.IdleNow)})
	}
	if err := st.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nRun list (in the order tried: deadline misses, coprocessor tasks, unfinished time slices, more CPUs, then the order chosen):\n")
	tt := cliutil.NewTable(w, "task", "project", "deadline", "state", "why listed", "outcome")
	listed := map[int]bool{}
	for _, e := range list {
		listed[e.Task] = true
		t := &doc.Tasks[e.Task]
		outcome := "runs"
		if !e.Runs {
			outcome = "not run: " + e.Skipped
		}
		tt.Append([]string{t.Name, t.Project, strconv.FormatFloat(t.ReportDeadline, 'f', -1, 64), stateChange(before[e.Task], t.State), e.Why, outcome})
	}
	waiting := 0
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if listed[i] || !before[i].Runnable() {
			continue
		}
		if before[i] == state.TaskReady && t.State == state.TaskReady {
			waiting++
			continue
		}
		tt.Append([]string{t.Name, t.Project, strconv.FormatFloat(t.ReportDeadline, 'f', -1, 64), stateChange(before[i], t.State), "-", "not listed: enough tasks before it"})
	}
	if err := tt.Render(); err != nil {
		return err
	}
	if waiting > 0 {
		fmt.Fprintf(w, "%d ready results stay ready (not listed).\n", waiting)
	}
	if len(misses) > 0 {
		fmt.Fprintf(w, "%d tasks are projected to miss their deadline.\n", len(misses))
	}
	_, err := fmt.Fprintf(w, "\nNext pass due at %s (%s).\n", cliutil.When(doc.CPUSched.NextPass), doc.CPUSched.NextPassReason)
	return err
}

func stateChange(b, a state.TaskState) string {
	if b == a {
		return string(a)
	}
	return string(b) + " → " + string(a)
}
