package cpusched

import (
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The steps of a pass, one by one, on the documents of the seed's examples (see
// cpusched_test.go for the whole passes).

// grouped is a Workspace with doc's candidates grouped, as a pass has them before step 1.
func grouped(t *testing.T, doc *state.Document) (*Workspace, *names, appLimits) {
	t.Helper()
	mustValid(t, doc)
	w := &Workspace{}
	ix := w.index(doc)
	apps := newAppLimits(doc)
	w.group(doc, ix, &apps)
	w.chosen = grow(w.chosen, len(doc.Tasks))
	return w, ix, apps
}

// gpuHost is host(2, A and B) with one GPU, B's app B_app limited to one task at a time
// and a version of it on the GPU taking half a CPU beside.
func gpuHost() *state.Document {
	doc := host(2, map[string]float64{"A": 1, "B": 1}, "A", "B")
	doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 1e10})
	doc.Apps = append(doc.Apps, state.App{Project: "B", Name: "B_app", MaxConcurrent: 1})
	doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "B_gpu", Project: "B", App: "B_app", AvgNCPUs: 0.5, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}})
	return doc
}

// Runnable tasks are grouped by resource and project, ranked running < preempted <
// ready, with their needs and app; a task that cannot run is left out.
func TestGroup(t *testing.T) {
	doc := gpuHost()
	addTask(doc, "a_ready", "A", state.TaskReady, 0, 100)
	addTask(doc, "a_done", "A", state.TaskDone, 50, 100)
	addTask(doc, "a_pre", "A", state.TaskPreempted, 10, 100)
	addTask(doc, "a_run", "A", state.TaskRunning, 20, 100)
	doc.Tasks = append(doc.Tasks, state.Task{Name: "b_gpu", Project: "B", AppVersion: "B_gpu", State: state.TaskReady, ReportDeadline: 100})
	w, _, apps := grouped(t, doc)
	const cpu, gpu = 0, 1
	want := [][][]candidate{
		cpu: {{{task: 0, need: 1, rank: 2, app: -1}, {task: 2, need: 1, rank: 1, app: -1}, {task: 3, need: 1, rank: 0, app: -1}}, nil},
		gpu: {nil, {{task: 4, need: 1, ncpus: 0.5, rank: 2, app: 0}}},
	}
	if d := cmp.Diff(want, w.cands, cmp.AllowUnexported(candidate{}), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("candidates (-want +got):\n%s", d)
	}
	if d := cmp.Diff([][]int{{3, 0}, {0, 1}}, w.runnable); d != "" {
		t.Errorf("runnable counts (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int32{0, 0, 0, 0, 2}, w.avOf); d != "" {
		t.Errorf("app versions (-want +got):\n%s", d)
	}
	if apps.full(0) || apps.full(-1) {
		t.Errorf("B_app full before any task is chosen")
	}
}

// Coprocessors are filled before the CPU, each in host order.
func TestResourceOrder(t *testing.T) {
	rs := []state.Resource{{Type: "NVIDIA"}, {Type: state.ResourceCPU}, {Type: "ATI"}}
	if got := resourceOrder(rs, nil); !cmp.Equal(got, []int{0, 2, 1}) {
		t.Errorf("order = %v, want [0 2 1]", got)
	}
}

// Step 1 on the seed's example: A's running task got 25 minutes of CPU and B's 15 since
// the last pass; A's preempted task's CPU time is old work and does not count. On the
// GPU the work is elapsed time times the instances taken.
func TestWorkDone(t *testing.T) {
	doc := host(2, map[string]float64{"A": 75, "B": 25}, "A", "B")
	addTask(doc, "a1", "A", state.TaskRunning, 25*60+100, 1e6)
	addTask(doc, "a2", "A", state.TaskPreempted, 500, 1e6)
	addTask(doc, "b1", "B", state.TaskRunning, 15*60, 1e6)
	doc.Tasks[0].CPUTimeAtLastSched = 100
	w, _, _ := grouped(t, doc)
	done := make([]float64, 2)
	if total := workDone(doc.Tasks, w.cands[0], state.ResourceCPU, done); total != 2400 {
		t.Errorf("total work done = %g, want 2400", total)
	}
	if !cmp.Equal(done, []float64{1500, 900}) {
		t.Errorf("work done = %v, want [1500 900]", done)
	}

	doc = gpuHost()
	doc.AppVersions[2].Coproc.Count = 0.5
	doc.Tasks = append(doc.Tasks, state.Task{Name: "g", Project: "B", AppVersion: "B_gpu", State: state.TaskRunning, CPUTime: 99, ElapsedTime: 700, ElapsedTimeAtLastSched: 100, ReportDeadline: 1})
	w, _, _ = grouped(t, doc)
	done = make([]float64, 2)
	if total := workDone(doc.Tasks, w.cands[1], "NVIDIA", done); total != 300 || !cmp.Equal(done, []float64{0, 300}) {
		t.Errorf("GPU work done = %g %v, want 300 [0 300] (600 s × 0.5 instances)", total, done)
	}
}

// Step 2 on the seed's example: A's debt falls by its 25 minutes and rises by 75% of 40
// (+300 s); B's falls by 15 and rises by 25% of 40 (-300 s). C has no runnable task: its
// debt goes to 0 and its share (which would otherwise take half) does not count.
func TestSettleDebts(t *testing.T) {
	doc := host(2, map[string]float64{"A": 75, "B": 25, "C": 100}, "A", "B", "C")
	doc.Projects[2].Debt = 5000
	rp := ResourcePass{Type: state.ResourceCPU, TotalWorkDone: 2400}
	debts := make([]float64, 3)
	settleDebts(doc, &rp, []int{1, 2, 0}, []float64{1500, 900, 0}, debts, true)
	want := []float64{300, -300, 0}
	if !cmp.Equal(debts, want) {
		t.Errorf("debts = %v, want %v", debts, want)
	}
	for p := range doc.Projects {
		if doc.Projects[p].Debt != want[p] {
			t.Errorf("%s's debt in the document = %g, want %g", doc.Projects[p].Name, doc.Projects[p].Debt, want[p])
		}
	}
	wantRec := []ProjectDebt{
		{Project: "A", Runnable: 1, ShareFraction: 0.75, WorkDone: 1500, DebtAfter: 300},
		{Project: "B", Runnable: 2, ShareFraction: 0.25, WorkDone: 900, DebtAfter: -300},
		{Project: "C", DebtBefore: 5000},
	}
	if d := cmp.Diff(wantRec, rp.Projects); d != "" {
		t.Errorf("record (-want +got):\n%s", d)
	}

	// Quiet: the same debts, no record; a coprocessor's debt is the scheduling debt of the
	// project's entry for it; all shares 0 count as equal shares.
	doc = gpuHost()
	doc.Projects[0].ResourceShare, doc.Projects[1].ResourceShare = 0, 0
	rp = ResourcePass{Type: "NVIDIA", TotalWorkDone: 600}
	settleDebts(doc, &rp, []int{1, 1}, []float64{600, 0}, debts[:2], false)
	if got := []float64{doc.Projects[0].ResourceState("NVIDIA").SchedDebt, doc.Projects[1].ResourceState("NVIDIA").SchedDebt}; !cmp.Equal(got, []float64{-300, 300}) || !cmp.Equal(debts[:2], got) || len(rp.Projects) != 0 {
		t.Errorf("GPU debts = %v (buffer %v, record %v), want [-300 300] and no record", got, debts[:2], rp.Projects)
	}
	if doc.Projects[0].Debt != 0 {
		t.Errorf("the GPU pass changed A's CPU debt to %g", doc.Projects[0].Debt)
	}
}

// The pay-off per instance: 2400 s done on 2 CPUs is 1200; the first pass (nothing
// done) expects a scheduling period.
func TestExpectedPayOff(t *testing.T) {
	if got := expectedPayOff(2400, 2, 3600); got != 1200 {
		t.Errorf("pay-off = %g, want 1200", got)
	}
	if got := expectedPayOff(0, 2, 3600); got != 3600 {
		t.Errorf("first pass pay-off = %g, want 3600", got)
	}
}

// Step 3 on the anticipated-debt example: debts A 5000, B 2000 on 3 CPUs, pay-off 3600:
// A (5000 → 1400), B (2000 → -1600), A (1400 → -2200). Within A the earlier deadline
// goes first, and a running task before a preempted one before any ready one.
func TestChoose(t *testing.T) {
	doc := host(3, map[string]float64{"A": 1, "B": 1}, "A", "B")
	addTask(doc, "a_late", "A", state.TaskReady, 0, 300)
	addTask(doc, "a_early", "A", state.TaskReady, 0, 100)
	addTask(doc, "a_mid", "A", state.TaskReady, 0, 200)
	addTask(doc, "b_ready", "B", state.TaskReady, 0, 1)
	addTask(doc, "b_pre", "B", state.TaskPreempted, 0, 900)
	w, _, apps := grouped(t, doc)
	anticipated := []float64{5000, 2000}
	rp := ResourcePass{Type: state.ResourceCPU, Instances: 3, ExpectedPayOff: 3600}
	why := make([]TaskDecision, len(doc.Tasks))
	cpuFree := w.choose(doc.Tasks, w.cands[0], anticipated, &rp, 3, &apps, why)
	if !cmp.Equal(w.chosen, []bool{false, true, true, false, true}) {
		t.Errorf("chosen = %v, want a_early, a_mid and b_pre", w.chosen)
	}
	if !cmp.Equal(anticipated, []float64{-2200, -1600}) || rp.Used != 3 || cpuFree != 0 {
		t.Errorf("anticipated %v, used %g, CPUs free %g; want [-2200 -1600], 3, 0", anticipated, rp.Used, cpuFree)
	}
	wantWhy := []TaskDecision{{}, {Why: WhyStarted, Anticipated: 5000}, {Why: WhyStarted, Anticipated: 1400}, {}, {Why: WhyResumed, Anticipated: 2000}}
	if d := cmp.Diff(wantWhy, why); d != "" {
		t.Errorf("reasons (-want +got):\n%s", d)
	}
}

// Step 3 on a GPU: B_app may run one task at a time, so B's second GPU task waits
// although A has no GPU work; each GPU task takes half a CPU from the CPUs left.
func TestChooseCoprocessorAndAppLimit(t *testing.T) {
	doc := gpuHost()
	doc.Host.Resources[1].Instances = 2
	for _, n := range []string{"g1", "g2"} {
		doc.Tasks = append(doc.Tasks, state.Task{Name: n, Project: "B", AppVersion: "B_gpu", State: state.TaskReady, ReportDeadline: 100})
	}
	w, _, apps := grouped(t, doc)
	rp := ResourcePass{Type: "NVIDIA", Instances: 2, ExpectedPayOff: 3600}
	cpuFree := w.choose(doc.Tasks, w.cands[1], []float64{0, 0}, &rp, 2, &apps, nil)
	if !cmp.Equal(w.chosen, []bool{true, false}) || rp.Used != 1 || cpuFree != 1.5 || !apps.full(0) {
		t.Errorf("chosen %v, GPUs used %g, CPUs free %g, app full %v; want [true false], 1, 1.5, true", w.chosen, rp.Used, cpuFree, apps.full(0))
	}
}

// After step 3, each unchosen task says why it waits, and each project's anticipated
// debt at the end is recorded.
func TestExplain(t *testing.T) {
	doc := host(2, map[string]float64{"A": 1, "B": 1}, "A", "B")
	doc.AppVersions[0].AvgNCPUs, doc.AppVersions[1].AvgNCPUs = 1.5, 0.5
	addTask(doc, "a1", "A", state.TaskReady, 0, 100)
	addTask(doc, "a2", "A", state.TaskReady, 0, 200)
	addTask(doc, "b1", "B", state.TaskReady, 0, 100)
	addTask(doc, "b2", "B", state.TaskReady, 0, 200)
	w, ix, apps := grouped(t, doc)
	anticipated := []float64{100, 50}
	rp := ResourcePass{Type: state.ResourceCPU, Instances: 2, ExpectedPayOff: 3600, Projects: []ProjectDebt{{Project: "A"}, {Project: "B"}}}
	why := make([]TaskDecision, len(doc.Tasks))
	cpuFree := w.choose(doc.Tasks, w.cands[0], anticipated, &rp, 2, &apps, why)
	explain(ix, w.cands[0], anticipated, &rp, cpuFree, &apps, w.chosen, why)
	// A takes 1.5 CPUs (100 → -5300), B one of its tasks in the 0.5 left (50 → -1750).
	if got := []float64{rp.Projects[0].AnticipatedEnd, rp.Projects[1].AnticipatedEnd}; !cmp.Equal(got, []float64{-5300, -1750}) {
		t.Errorf("anticipated at the end = %v, want [-5300 -1750]", got)
	}
	if why[1].Why != WhyNoRoom || why[1].Free != 0 || why[1].Anticipated != -5300 {
		t.Errorf("a2 = %+v, want no room (0 free, anticipated -5300)", why[1])
	}
	if why[3].Why != WhyNoRoom {
		t.Errorf("b2 = %+v, want no room", why[3])
	}

	doc = gpuHost()
	doc.Host.Resources[1].Instances = 2
	for _, n := range []string{"g1", "g2"} {
		doc.Tasks = append(doc.Tasks, state.Task{Name: n, Project: "B", AppVersion: "B_gpu", State: state.TaskReady, ReportDeadline: 100})
	}
	w, ix, apps = grouped(t, doc)
	rp = ResourcePass{Type: "NVIDIA", Instances: 2, ExpectedPayOff: 3600}
	why = make([]TaskDecision, len(doc.Tasks))
	cpuFree = w.choose(doc.Tasks, w.cands[1], []float64{0, 0}, &rp, 2, &apps, why)
	explain(ix, w.cands[1], []float64{0, 0}, &rp, cpuFree, &apps, w.chosen, why)
	if why[1].Why != WhyAppLimit {
		t.Errorf("g2 = %+v, want its app at max_concurrent", why[1])
	}
	w, ix, apps = grouped(t, doc)
	why = make([]TaskDecision, len(doc.Tasks))
	rp = ResourcePass{Type: "NVIDIA", Instances: 2, ExpectedPayOff: 3600}
	explain(ix, w.cands[1], []float64{0, 0}, &rp, 0.25, &apps, w.chosen, why)
	if why[0].Why != WhyNoCPUs {
		t.Errorf("g1 with a quarter CPU free = %+v, want its CPUs not free", why[0])
	}
}

// Step 4: chosen tasks run, running tasks not chosen are preempted, the others keep
// their state; every runnable task's times at the last pass catch up, a finished
// task's do not.
func TestCarryOut(t *testing.T) {
	doc := host(2, map[string]float64{"A": 1}, "A")
	addTask(doc, "run_kept", "A", state.TaskRunning, 100, 1)
	addTask(doc, "run_dropped", "A", state.TaskRunning, 200, 2)
	addTask(doc, "pre_resumed", "A", state.TaskPreempted, 300, 3)
	addTask(doc, "ready_started", "A", state.TaskReady, 0, 4)
	addTask(doc, "ready_waits", "A", state.TaskReady, 0, 5)
	addTask(doc, "done", "A", state.TaskDone, 600, 6)
	for i := range doc.Tasks {
		doc.Tasks[i].ElapsedTime = doc.Tasks[i].CPUTime + 10
	}
	w, _, _ := grouped(t, doc)
	chosen := []bool{true, false, true, true, false, false}
	why := []TaskDecision{{Why: WhyKeepsRunning}, {Why: WhyOtherTasks}, {Why: WhyResumed}, {Why: WhyStarted}, {Why: WhyNoRoom}, {}}
	got := carryOut(doc, chosen, w.avOf, why)
	want := map[string]state.TaskState{"run_kept": "running", "run_dropped": "preempted", "pre_resumed": "running", "ready_started": "running", "ready_waits": "ready", "done": "done"}
	if d := cmp.Diff(want, states(doc)); d != "" {
		t.Errorf("states (-want +got):\n%s", d)
	}
	for _, tk := range doc.Tasks[:5] {
		if tk.CPUTimeAtLastSched != tk.CPUTime || tk.ElapsedTimeAtLastSched != tk.ElapsedTime {
			t.Errorf("%s: times at the last pass %g %g, want %g %g", tk.Name, tk.CPUTimeAtLastSched, tk.ElapsedTimeAtLastSched, tk.CPUTime, tk.ElapsedTime)
		}
	}
	if tk := doc.Tasks[5]; tk.CPUTimeAtLastSched != 0 || tk.ElapsedTimeAtLastSched != 0 {
		t.Errorf("the finished task's times at the last pass changed: %g %g", tk.CPUTimeAtLastSched, tk.ElapsedTimeAtLastSched)
	}
	if len(got) != 5 || got[1].Name != "run_dropped" || got[1].Before != "running" || got[1].After != "preempted" || got[1].Why != WhyOtherTasks || got[4].Deadline != 5 || got[2].Need != 1 {
		t.Errorf("decisions = %+v", got)
	}
	// Quiet: the same document changes, no decisions.
	doc.Tasks[0].State, doc.Tasks[0].CPUTime = state.TaskRunning, 150
	if got := carryOut(doc, []bool{false, false, false, false, false, false}, w.avOf, nil); got != nil || doc.Tasks[0].State != state.TaskPreempted || doc.Tasks[0].CPUTimeAtLastSched != 150 {
		t.Errorf("quiet carry-out: decisions %v, state %s, cpu_time_at_last_sched %g", got, doc.Tasks[0].State, doc.Tasks[0].CPUTimeAtLastSched)
	}
}

// The pass is recorded in cpu_sched: its time and the next pass's (a scheduling period
// on, when no running task finishes before).
func TestRecord(t *testing.T) {
	doc := host(1, map[string]float64{"A": 1}, "A")
	addTask(doc, "a1", "A", state.TaskReady, 0, 1e6)
	w, _, _ := grouped(t, doc)
	pass := Pass{Now: 500}
	record(doc, &pass, w.avOf)
	want := state.CPUSched{LastPass: 500, NextPass: 4100, NextPassReason: "scheduling period"}
	if doc.CPUSched == nil || *doc.CPUSched != want || pass.NextPass != 4100 || pass.NextPassReason != want.NextPassReason {
		t.Errorf("cpu_sched = %+v, pass %+v; want %+v", doc.CPUSched, pass, want)
	}
}
