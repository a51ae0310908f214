package cpusched

import (
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
)

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
	if total := workDone(doc.Tasks, w.cands[0], w.mixed[0], state.ResourceCPU, done); total != 2400 {
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
	if total := workDone(doc.Tasks, w.cands[1], w.mixed[1], "NVIDIA", done); total != 300 || !cmp.Equal(done, []float64{0, 300}) {
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
	settleDebts(doc, &rp, []int{1, 2, 0}, []float64{1500, 900, 0}, debts, false)
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

	// Quiet: the same debts, no record; all shares 0 count as equal shares.
	doc = host(2, map[string]float64{"A": 0, "B": 0}, "A", "B")
	rp = ResourcePass{Type: state.ResourceCPU, TotalWorkDone: 600}
	settleDebts(doc, &rp, []int{1, 1}, []float64{600, 0}, debts[:2], true)
	if got := []float64{doc.Projects[0].Debt, doc.Projects[1].Debt}; !cmp.Equal(got, []float64{-300, 300}) || !cmp.Equal(debts[:2], got) || len(rp.Projects) != 0 {
		t.Errorf("zero-share debts = %v (buffer %v, record %v), want [-300 300] and no record", got, debts[:2], rp.Projects)
	}
}

// Step 2 on a coprocessor reads each project's seed 002 long-term debt there and
// changes nothing: not the long-term debts (bdevices' debt stage keeps them), not the
// old sched_debt, not the CPU debt, and it adds no resource entry. A project without a
// runnable task brings 0; one with neither a task nor a debt is left out of the record.
func TestSettleDebtsCoprocessorReadsLongTermDebt(t *testing.T) {
	doc := host(2, map[string]float64{"A": 1, "B": 1, "C": 1, "D": 1}, "A", "B", "C", "D")
	doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 2e9})
	doc.Projects[0].Debt = 77
	doc.Projects[0].Resources = []state.ProjectResource{{Type: "NVIDIA", LongTermDebt: 1500, SchedDebt: -9000}}
	doc.Projects[1].Resources = []state.ProjectResource{{Type: "cpu", LongTermDebt: -40}, {Type: "NVIDIA", LongTermDebt: -250, SchedDebt: 9000}}
	doc.Projects[2].Resources = []state.ProjectResource{{Type: "NVIDIA", LongTermDebt: 60}}
	before := cloneDoc(t, doc).Projects
	rp := ResourcePass{Type: "NVIDIA", TotalWorkDone: 600}
	debts := make([]float64, 4)
	settleDebts(doc, &rp, []int{1, 2, 0, 0}, []float64{600, 0, 0, 0}, debts, false)
	if want := []float64{1500, -250, 0, 0}; !cmp.Equal(debts, want) {
		t.Errorf("debts = %v, want %v", debts, want)
	}
	if d := cmp.Diff(before, doc.Projects); d != "" {
		t.Errorf("the coprocessor's step 2 changed the document (-before +after):\n%s", d)
	}
	wantRec := []ProjectDebt{
		{Project: "A", Runnable: 1, WorkDone: 600, DebtBefore: 1500, DebtAfter: 1500},
		{Project: "B", Runnable: 2, DebtBefore: -250, DebtAfter: -250},
		{Project: "C", DebtBefore: 60, DebtAfter: 60},
	}
	if d := cmp.Diff(wantRec, rp.Projects); d != "" {
		t.Errorf("record (-want +got):\n%s", d)
	}
}
