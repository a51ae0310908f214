package cpusched

import (
	"fmt"
	"math"
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
)

// host builds a valid document with ncpus CPUs of 1 GFLOPS and projects with the given
// shares; each project gets a one-CPU app version named after it.
func host(ncpus int, shares map[string]float64, names ...string) *state.Document {
	doc := &state.Document{
		Version:     1,
		Host:        state.Host{Resources: []state.Resource{{Type: "cpu", Instances: ncpus, Flops: 1e9}}},
		Preferences: state.Preferences{CPUSchedulingPeriod: 3600},
	}
	for _, n := range names {
		doc.Projects = append(doc.Projects, state.Project{Name: n, ResourceShare: shares[n]})
		doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: n + "_cpu", Project: n, AvgNCPUs: 1})
	}
	return doc
}

func addTask(doc *state.Document, name, project string, st state.TaskState, cpu, deadline float64) {
	doc.Tasks = append(doc.Tasks, state.Task{
		Name: name, Project: project, AppVersion: project + "_cpu", State: st,
		CPUTime: cpu, ReportDeadline: deadline, EstimatedFlops: 3.6e12,
	})
}

func mustValid(t *testing.T, doc *state.Document) {
	t.Helper()
	if err := state.Validate(doc); err != nil {
		t.Fatalf("test document invalid: %v", err)
	}
}

func states(doc *state.Document) map[string]state.TaskState {
	m := map[string]state.TaskState{}
	for _, t := range doc.Tasks {
		m[t.Name] = t.State
	}
	return m
}

func debts(doc *state.Document) map[string]float64 {
	m := map[string]float64{}
	for _, p := range doc.Projects {
		m[p.Name] = p.Debt
	}
	return m
}

// The seed's worked example: shares 75% and 25%; in a period A gets 25 minutes of CPU
// and B 15. A's debt falls by 25 minutes and rises by 75% of 40 = 30 minutes: +5 minutes
// (300 s). B's falls by 15 and rises by 25% of 40 = 10: -5 minutes.
func TestSeedWorkedExample(t *testing.T) {
	doc := host(2, map[string]float64{"A": 75, "B": 25}, "A", "B")
	addTask(doc, "a1", "A", state.TaskRunning, 25*60, 1e6)
	addTask(doc, "b1", "B", state.TaskRunning, 15*60, 1e6)
	mustValid(t, doc)
	pass := Schedule(doc, 1000)
	want := map[string]float64{"A": -25*60 + 0.75*40*60, "B": -15*60 + 0.25*40*60}
	if diff := cmp.Diff(want, debts(doc)); diff != "" {
		t.Errorf("debts (-want +got):\n%s", diff)
	}
	if got := pass.Resources[0].TotalWorkDone; got != 2400 {
		t.Errorf("total work done = %g, want 2400", got)
	}
	// Two CPUs, one task each: both keep running, and CPU time is brought up to date.
	if diff := cmp.Diff(map[string]state.TaskState{"a1": "running", "b1": "running"}, states(doc)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	for _, task := range doc.Tasks {
		if task.CPUTimeAtLastSched != task.CPUTime {
			t.Errorf("%s: cpu_time_at_last_sched %g, want %g", task.Name, task.CPUTimeAtLastSched, task.CPUTime)
		}
	}
}

// Preemption: one CPU, equal shares. A ran the whole period (3600 s), so
// debt(A) = 0 - 3600 + 0.5*3600 = -1800 and debt(B) = 0 + 0.5*3600 = +1800.
// B has the larger anticipated debt: its ready result starts and A's task is preempted.
func TestPreemption(t *testing.T) {
	doc := host(1, map[string]float64{"A": 1, "B": 1}, "A", "B")
	addTask(doc, "a1", "A", state.TaskRunning, 3600, 1e6)
	addTask(doc, "b1", "B", state.TaskReady, 0, 1e6)
	mustValid(t, doc)
	Schedule(doc, 3600)
	if diff := cmp.Diff(map[string]float64{"A": -1800, "B": 1800}, debts(doc)); diff != "" {
		t.Errorf("debts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]state.TaskState{"a1": "preempted", "b1": "running"}, states(doc)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

// Resumption: the pass after TestPreemption. B ran 3600 s: debt(A) = -1800 + 1800 = 0,
// debt(B) = 1800 - 3600 + 1800 = 0. A tie at 0: the first project in the document wins,
// and A's preempted task is resumed rather than its ready one started.
func TestResumptionPrefersPreemptedTask(t *testing.T) {
	doc := host(1, map[string]float64{"A": 1, "B": 1}, "A", "B")
	addTask(doc, "a2", "A", state.TaskReady, 0, 1) // earlier deadline, but not active
	addTask(doc, "a1", "A", state.TaskPreempted, 3600, 1e6)
	addTask(doc, "b1", "B", state.TaskRunning, 3600, 1e6)
	doc.Tasks[1].CPUTimeAtLastSched = 3600
	doc.Projects[0].Debt, doc.Projects[1].Debt = -1800, 1800
	mustValid(t, doc)
	Schedule(doc, 7200)
	if diff := cmp.Diff(map[string]float64{"A": 0, "B": 0}, debts(doc)); diff != "" {
		t.Errorf("debts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]state.TaskState{"a1": "running", "a2": "ready", "b1": "preempted"}, states(doc)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

// A project that runs out of work gets debt 0 and no part of the share sum: C's share
// does not dilute A's and B's, which split the 1200 s of work done 3:1.
// debt(A) = 100 - 1200 + 0.75*1200 = -200; debt(B) = -100 - 0 + 0.25*1200 = 200.
func TestProjectOutOfWork(t *testing.T) {
	doc := host(1, map[string]float64{"A": 3, "B": 1, "C": 4}, "A", "B", "C")
	addTask(doc, "a1", "A", state.TaskRunning, 1200, 1e6)
	addTask(doc, "b1", "B", state.TaskReady, 0, 1e6)
	addTask(doc, "c1", "C", state.TaskDone, 500, 1e6)
	doc.Projects[0].Debt, doc.Projects[1].Debt, doc.Projects[2].Debt = 100, -100, 5000
	mustValid(t, doc)
	Schedule(doc, 1200)
	if diff := cmp.Diff(map[string]float64{"A": -200, "B": 200, "C": 0}, debts(doc)); diff != "" {
		t.Errorf("debts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]state.TaskState{"a1": "preempted", "b1": "running", "c1": "done"}, states(doc)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

// Anticipated debt spreads CPUs: on the first pass no work was done, so the pay-off is
// the scheduling period (3600 s). Debts A 5000, B 2000 on 3 CPUs:
// pick 1: A (5000 -> 1400); pick 2: B (2000 -> -1600); pick 3: A (1400 -> -2200).
// Within A the earlier deadline goes first.
func TestAnticipatedDebtSpreadsCPUs(t *testing.T) {
	doc := host(3, map[string]float64{"A": 1, "B": 1}, "A", "B")
	addTask(doc, "a_late", "A", state.TaskReady, 0, 300)
	addTask(doc, "a_early", "A", state.TaskReady, 0, 100)
	addTask(doc, "a_mid", "A", state.TaskReady, 0, 200)
	addTask(doc, "b1", "B", state.TaskReady, 0, 100)
	addTask(doc, "b2", "B", state.TaskReady, 0, 200)
	doc.Projects[0].Debt, doc.Projects[1].Debt = 5000, 2000
	mustValid(t, doc)
	pass := Schedule(doc, 0)
	want := map[string]state.TaskState{"a_early": "running", "a_mid": "running", "a_late": "ready", "b1": "running", "b2": "ready"}
	if diff := cmp.Diff(want, states(doc)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if got := pass.Resources[0].Projects[0].AnticipatedEnd; got != 5000-2*3600 {
		t.Errorf("A's anticipated debt at the end = %g, want %g", got, 5000.0-2*3600)
	}
}

// Ties go to the project listed first, and within a project to the task listed first.
func TestTies(t *testing.T) {
	doc := host(1, map[string]float64{"A": 1, "B": 1}, "B", "A")
	addTask(doc, "a1", "A", state.TaskReady, 0, 100)
	addTask(doc, "b1", "B", state.TaskReady, 0, 100)
	addTask(doc, "b2", "B", state.TaskReady, 0, 100)
	mustValid(t, doc)
	Schedule(doc, 0)
	want := map[string]state.TaskState{"a1": "ready", "b1": "running", "b2": "ready"}
	if diff := cmp.Diff(want, states(doc)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

// Fractional CPUs: 2 CPUs; A's tasks take 1.5 CPUs, B's 0.5. A has the larger debt and
// gets 1.5 CPUs; 0.5 remain uncommitted, so A, whose anticipated debt is still the
// larger, starts its second task too, as BOINC's client would (a task starts while a
// CPU is uncommitted: state.CPUsFit): 3 CPUs committed, none free, B waits.
func TestFractionalCPUs(t *testing.T) {
	doc := host(2, map[string]float64{"A": 1, "B": 1}, "A", "B")
	doc.AppVersions[0].AvgNCPUs = 1.5
	doc.AppVersions[1].AvgNCPUs = 0.5
	addTask(doc, "a1", "A", state.TaskReady, 0, 100)
	addTask(doc, "a2", "A", state.TaskReady, 0, 100)
	addTask(doc, "b1", "B", state.TaskReady, 0, 100)
	addTask(doc, "b2", "B", state.TaskReady, 0, 100)
	doc.Projects[0].Debt = 10000
	mustValid(t, doc)
	pass := Schedule(doc, 0)
	want := map[string]state.TaskState{"a1": "running", "a2": "running", "b1": "ready", "b2": "ready"}
	if diff := cmp.Diff(want, states(doc)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if got := pass.Resources[0].Used; got != 3 {
		t.Errorf("CPUs used = %g, want 3", got)
	}
}

// A GPU task is scheduled on the GPU by its project's debt there, and the CPUs it takes
// are no longer available to CPU tasks: 2 CPUs, a GPU task using 1 GPU and 1 CPU leaves
// one CPU for B.
func TestCoprocessorTasks(t *testing.T) {
	doc := host(2, map[string]float64{"A": 1, "B": 1}, "A", "B")
	doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 1e10})
	doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "A_gpu", Project: "A", AvgNCPUs: 1, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}})
	addTask(doc, "b1", "B", state.TaskReady, 0, 100)
	addTask(doc, "b2", "B", state.TaskReady, 0, 200)
	doc.Tasks = append(doc.Tasks,
		state.Task{Name: "g1", Project: "A", AppVersion: "A_gpu", State: state.TaskRunning, ElapsedTime: 600, ReportDeadline: 100},
		state.Task{Name: "g2", Project: "A", AppVersion: "A_gpu", State: state.TaskReady, ReportDeadline: 50})
	mustValid(t, doc)
	pass := Schedule(doc, 600)
	want := map[string]state.TaskState{"b1": "running", "b2": "ready", "g1": "running", "g2": "ready"}
	if diff := cmp.Diff(want, states(doc)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	// The GPU's debts are seed 002's long-term debts, read: the pass adds no entry.
	if len(doc.Projects[0].Resources) != 0 {
		t.Errorf("the pass added resource entries %+v", doc.Projects[0].Resources)
	}
	if pass.Resources[0].Type != "NVIDIA" || pass.Resources[1].Instances != 1 {
		t.Errorf("want the GPU scheduled first and 1 CPU left for CPU tasks, got %+v", pass.Resources)
	}
}

// The next pass is due when a running task is expected to finish, if before the end of
// the scheduling period: a1 has 1e12 FLOPs left at 1 GFLOPS = 1000 s.
func TestNextPass(t *testing.T) {
	doc := host(1, map[string]float64{"A": 1}, "A")
	addTask(doc, "a1", "A", state.TaskRunning, 100, 1e6)
	doc.Tasks[0].EstimatedFlops, doc.Tasks[0].FlopsDone = 2e12, 1e12
	mustValid(t, doc)
	Schedule(doc, 5000)
	if got := doc.CPUSched; got.NextPass != 6000 || got.NextPassReason != "task a1 expected to finish" {
		t.Errorf("next pass = %+v, want 6000 (task a1 expected to finish)", got)
	}
	for _, c := range []struct {
		now  float64
		due  bool
		what string
	}{{5999, false, "before"}, {6000, true, "at"}} {
		if due, why := Due(doc, c.now); due != c.due {
			t.Errorf("Due %s the next pass = %v (%s), want %v", c.what, due, why, c.due)
		}
	}
	addTask(doc, "a2", "A", state.TaskReady, 0, 1e6)
	doc.Tasks[1].ReceivedTime = 5500
	if due, why := Due(doc, 5600); !due || why != "new result a2" {
		t.Errorf("Due after a new result = %v (%s)", due, why)
	}
}

// Over many passes, two always-busy projects with shares 3:1 on 4 CPUs get CPU time in
// that ratio.
func TestLongRunMeetsShares(t *testing.T) {
	doc := host(4, map[string]float64{"A": 3, "B": 1}, "A", "B")
	for i := 0; i < 8; i++ {
		addTask(doc, fmt.Sprintf("a%d", i), "A", state.TaskReady, 0, float64(i))
		addTask(doc, fmt.Sprintf("b%d", i), "B", state.TaskReady, 0, float64(i))
	}
	mustValid(t, doc)
	used := map[string]float64{}
	for step := 0; step < 200; step++ {
		Schedule(doc, float64(step*3600))
		for i := range doc.Tasks {
			if doc.Tasks[i].State == state.TaskRunning {
				doc.Tasks[i].CPUTime += 3600
				used[doc.Tasks[i].Project] += 3600
			}
		}
	}
	if frac := used["A"] / (used["A"] + used["B"]); math.Abs(frac-0.75) > 0.01 {
		t.Errorf("A got %.3f of the CPU time, want 0.75", frac)
	}
}

// The expected pay-off is the work done in the last period ÷ num_cpus (seed 001), not a
// whole scheduling period once work has been done. 2 CPUs, equal shares; A's two
// running tasks did 600 s each: total 1200, pay-off 600. debt(A) = 0.5 × 1200 − 1200 =
// −600, debt(B) = 0.5 × 1200 − 0 = +600. Pick 1: B (600 → 0); pick 2: B again, as
// 0 > −600 (0 → −600). Both of A's tasks are preempted. (With a pay-off of 3600, B would
// fall to −3000 at once and A would keep a CPU.)
func TestPayOffIsWorkDonePerCPU(t *testing.T) {
	doc := host(2, map[string]float64{"A": 1, "B": 1}, "A", "B")
	addTask(doc, "a1", "A", state.TaskRunning, 600, 1e6)
	addTask(doc, "a2", "A", state.TaskRunning, 600, 1e6)
	addTask(doc, "b1", "B", state.TaskReady, 0, 1e6)
	addTask(doc, "b2", "B", state.TaskReady, 0, 1e6)
	mustValid(t, doc)
	pass := Schedule(doc, 600)
	if got := pass.Resources[0].ExpectedPayOff; got != 600 {
		t.Errorf("expected pay-off = %g, want 600", got)
	}
	if diff := cmp.Diff(map[string]float64{"A": -600, "B": 600}, debts(doc)); diff != "" {
		t.Errorf("debts (-want +got):\n%s", diff)
	}
	want := map[string]state.TaskState{"a1": "preempted", "a2": "preempted", "b1": "running", "b2": "running"}
	if diff := cmp.Diff(want, states(doc)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if got := []float64{pass.Resources[0].Projects[0].AnticipatedEnd, pass.Resources[0].Projects[1].AnticipatedEnd}; !cmp.Equal(got, []float64{-600, -600}) {
		t.Errorf("anticipated debts at the end = %v, want [-600 -600]", got)
	}
}

// Within the chosen project the seed takes a running task first, then a preempted one,
// and starts a new result only in the last resort, whatever their deadlines: on one CPU
// A keeps a_run (latest deadline), a_pre and a_new (earliest) wait. Among several
// running (or preempted) tasks, where the seed says "some T", the one listed first in
// the document.
func TestRunningBeforePreemptedBeforeNew(t *testing.T) {
	doc := host(1, map[string]float64{"A": 1}, "A")
	addTask(doc, "a_new", "A", state.TaskReady, 0, 1)
	addTask(doc, "a_pre", "A", state.TaskPreempted, 100, 2)
	addTask(doc, "a_run", "A", state.TaskRunning, 100, 3)
	addTask(doc, "a_run2", "A", state.TaskRunning, 100, 0)
	mustValid(t, doc)
	Schedule(doc, 100)
	want := map[string]state.TaskState{"a_new": "ready", "a_pre": "preempted", "a_run": "running", "a_run2": "preempted"}
	if diff := cmp.Diff(want, states(doc)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

// DESIGN §5: a coprocessor is scheduled by seed 002's per-resource long-term debts, in
// the manner of seed 001's CPU debt. Two GPU instances; A's and B's tasks each ran the
// whole 1200 s since the last pass, so the pay-off is 2400 / 2 = 1200 instance-seconds
// per instance. Long-term debts A 2000, B 500 (bdevices keeps them); the old sched_debt
// says the opposite (A 0, B 9000) and must not count. A (2000) keeps a1 running and
// falls to 800; A (800 > 500) starts a2 and falls to -400; the GPU is full and B's b1
// is preempted. (Under the old rule B's sched_debt, 9000 + 1200 − 1200, would have kept
// b1 and started b2.) Nothing in the projects changes, and the CPU is seed 001's: B's
// CPU task takes the CPU with its debt brought up to date as before.
func TestCoprocessorByLongTermDebt(t *testing.T) {
	doc := host(1, map[string]float64{"A": 1, "B": 1}, "A", "B")
	doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 2, Flops: 2e9})
	for _, p := range []string{"A", "B"} {
		doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: p + "_gpu", Project: p, AvgNCPUs: 0, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}})
	}
	doc.Projects[0].Resources = []state.ProjectResource{{Type: "NVIDIA", LongTermDebt: 2000, SchedDebt: 0}}
	doc.Projects[1].Resources = []state.ProjectResource{{Type: "NVIDIA", LongTermDebt: 500, SchedDebt: 9000}}
	gpu := func(name, project string, st state.TaskState, elapsed, deadline float64) state.Task {
		return state.Task{Name: name, Project: project, AppVersion: project + "_gpu", State: st, ElapsedTime: elapsed, ReportDeadline: deadline, EstimatedFlops: 1e15}
	}
	doc.Tasks = append(doc.Tasks,
		gpu("a1", "A", state.TaskRunning, 1200, 500),
		gpu("a2", "A", state.TaskReady, 0, 600),
		gpu("b1", "B", state.TaskRunning, 1200, 100),
		gpu("b2", "B", state.TaskReady, 0, 200))
	addTask(doc, "b_cpu", "B", state.TaskRunning, 1200, 300)
	mustValid(t, doc)
	projects := cloneDoc(t, doc).Projects
	projects[1].Debt = 0 // B alone on the CPU: debt += 1 × 1200 − 1200
	pass := Schedule(doc, 10000)
	want := map[string]state.TaskState{"a1": "running", "a2": "running", "b1": "preempted", "b2": "ready", "b_cpu": "running"}
	if d := cmp.Diff(want, states(doc)); d != "" {
		t.Errorf("states (-want +got):\n%s", d)
	}
	g := pass.Resources[0]
	if g.Type != "NVIDIA" || g.ExpectedPayOff != 1200 || g.TotalWorkDone != 2400 {
		t.Fatalf("GPU pass %+v, want NVIDIA first with work 2400 and pay-off 1200", g)
	}
	wantRec := []ProjectDebt{
		{Project: "A", Runnable: 2, WorkDone: 1200, DebtBefore: 2000, DebtAfter: 2000, AnticipatedEnd: -400},
		{Project: "B", Runnable: 2, WorkDone: 1200, DebtBefore: 500, DebtAfter: 500, AnticipatedEnd: 500},
	}
	if d := cmp.Diff(wantRec, g.Projects); d != "" {
		t.Errorf("GPU record (-want +got):\n%s", d)
	}
	if d := cmp.Diff(projects, doc.Projects); d != "" {
		t.Errorf("projects after the pass (-want +got):\n%s", d)
	}
	for _, d := range pass.Tasks {
		if d.Name == "a2" && d.Reason() != "largest anticipated debt 800: starts its earliest-deadline result (deadline 600)" {
			t.Errorf("a2's reason: %q", d.Reason())
		}
	}
}

// CPU overcommit beside a coprocessor task, as BOINC's client commits the CPUs
// (state.CPUsFit): a GPU task that takes a fifth of a CPU leaves 1.8 of 2 CPUs, and both
// of B's one-CPU tasks start (2.2 committed) rather than one, which left 0.8 CPU idle.
// A second GPU task may then still take its fifth (2.4 ≤ 3).
func TestOvercommitBesideCoprocessor(t *testing.T) {
	doc := host(2, map[string]float64{"A": 1, "B": 1}, "A", "B")
	doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 2, Flops: 1e10})
	doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "A_gpu", Project: "A", AvgNCPUs: 0.2, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}})
	addTask(doc, "b1", "B", state.TaskReady, 0, 100)
	addTask(doc, "b2", "B", state.TaskReady, 0, 200)
	addTask(doc, "b3", "B", state.TaskReady, 0, 300)
	doc.Tasks = append(doc.Tasks, state.Task{Name: "g1", Project: "A", AppVersion: "A_gpu", State: state.TaskReady, ReportDeadline: 100})
	mustValid(t, doc)
	pass := Schedule(doc, 0)
	want := map[string]state.TaskState{"b1": "running", "b2": "running", "b3": "ready", "g1": "running"}
	if diff := cmp.Diff(want, states(doc)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if got := pass.Resources[1].Used; got != 2 {
		t.Errorf("CPU tasks' CPUs = %g, want 2 (beside the GPU task's 0.2)", got)
	}
	// The pass is not due again: no CPU is uncommitted.
	if due, why := Due(doc, 1); due {
		t.Errorf("due at once after the pass: %s", why)
	}
	// Once all CPUs are committed a GPU task still starts, up to one CPU over.
	doc.Tasks = append(doc.Tasks, state.Task{Name: "g2", Project: "A", AppVersion: "A_gpu", State: state.TaskReady, ReportDeadline: 100, ReceivedTime: 1})
	Schedule(doc, 2)
	if got := doc.Tasks[4].State; got != state.TaskRunning {
		t.Errorf("g2 %s, want running (2.4 CPUs committed of 2 + 1)", got)
	}
}
