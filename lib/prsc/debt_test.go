package prsc

import (
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// AccumulateDebt's steps, one by one, on TestDebtOneInterval's interval (worked by hand
// there): CPU 2 instances at 1 GFLOPS, GPU 1 at 3 GFLOPS; A (share 1) has D on the CPU
// only, B (share 3) on both; for 10 s A uses 2 CPUs and B the GPU. C (share 5) has no
// D flag and used nothing.
func oneInterval() (*state.Document, [][]float64) {
	doc := &state.Document{
		Host: state.Host{Resources: []state.Resource{{Type: "cpu", Instances: 2, Flops: 1e9}, {Type: "GPU", Instances: 1, Flops: 3e9}}},
		Projects: []state.Project{
			{Name: "A", ResourceShare: 1, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}}},
			{Name: "B", ResourceShare: 3, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}, {Type: "GPU", AccumulateDebt: true}}},
			{Name: "C", ResourceShare: 5, Resources: []state.ProjectResource{{Type: "GPU"}}},
		},
	}
	return doc, [][]float64{{2, 0}, {0, 1}, {0, 0}}
}

// A takes part on the CPU (D set), B on both, C nowhere (no D, no use); use alone also
// makes a project take part.
func TestParticipation(t *testing.T) {
	doc, used := oneInterval()
	var w DebtWork
	w.participation(doc, used, 0)
	if want := []bool{true, false, true, true, false, false}; !cmp.Equal(w.part, want) {
		t.Errorf("part = %v, want %v", w.part, want)
	}
	doc.Projects[0].Resources[0].AccumulateDebt = false
	used[2][1] = 0.5
	w.participation(doc, used, 0)
	if want := []bool{true, false, true, true, false, true}; !cmp.Equal(w.part, want) {
		t.Errorf("part from use alone = %v, want %v", w.part, want)
	}
}

// Per resource (shareSums, then resourceUse): the CPU's use is 2, by participants of shares 1 + 3; the GPU's 1, B
// alone taking part (C's share does not count); the GPU's speed is 3.
func TestResourceUse(t *testing.T) {
	doc, used := oneInterval()
	var w DebtWork
	w.participation(doc, used, 0)
	w.shareSums(doc)
	w.groups(doc)
	w.resourceUse(doc, used, 10)
	got := [][]float64{w.speed, w.useR, w.wR, {float64(w.nR[0]), float64(w.nR[1])}}
	want := [][]float64{{1, 3}, {2, 1}, {4, 3}, {2, 1}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("speed, use, share weights, participants (-want +got):\n%s", d)
	}
}

// A, B, the CPU and the GPU form one group, which did U = 20·1 + 10·3 = 50 CPU seconds
// and whose shares add up to 4; C is a group of its own with nothing done.
func TestGroups(t *testing.T) {
	doc, used := oneInterval()
	var w DebtWork
	w.participation(doc, used, 0)
	w.shareSums(doc)
	w.groups(doc)
	w.resourceUse(doc, used, 10)
	g := find(w.parent, 0)
	for _, i := range []int{1, 3, 4} { // B, the CPU, the GPU
		if find(w.parent, i) != g {
			t.Errorf("node %d not in A's group", i)
		}
	}
	c := find(w.parent, 2)
	if c == g {
		t.Fatalf("C in A's group")
	}
	if w.groupU[g] != 50 || w.groupW[g] != 4 || w.groupN[g] != 2 {
		t.Errorf("A's group: U %g, W %g, N %d; want 50, 4, 2", w.groupU[g], w.groupW[g], w.groupN[g])
	}
	if w.groupU[c] != 0 || w.groupW[c] != 5 || w.groupN[c] != 1 {
		t.Errorf("C's group: U %g, W %g, N %d; want 0, 5, 1", w.groupU[c], w.groupW[c], w.groupN[c])
	}
}

// find follows a chain to its root and halves it on the way.
func TestFind(t *testing.T) {
	parent := []int{1, 2, 3, 3}
	if r := find(parent, 0); r != 3 {
		t.Errorf("root = %d, want 3", r)
	}
	if !cmp.Equal(parent, []int{2, 2, 3, 3}) {
		t.Errorf("parent after find = %v, want [2 2 3 3]", parent)
	}
}

// Each project's debts (TestDebtOneInterval's arithmetic): A is owed 12.5 CPU seconds,
// credited 5 on the CPU and charged 20, and the rest 7.5 goes to its CPU: −7.5. B is
// owed 37.5, credited 15 + 30: the rest −7.5 is spread by capacity (CPU 2, GPU 3):
// CPU 15 − 3 = 12, GPU 10 − 10 − 1.5 = −1.5. C takes part nowhere: no entry changes.
func TestSettle(t *testing.T) {
	doc, used := oneInterval()
	var w DebtWork
	w.participation(doc, used, 0)
	w.shareSums(doc)
	w.groups(doc)
	w.resourceUse(doc, used, 10)
	want := [][]float64{{-7.5, 0}, {12, -1.5}, {0, 0}}
	for p := range doc.Projects {
		w.settle(doc, p, used[p], 10)
		got := make([]float64, 2)
		for _, pr := range doc.Projects[p].Resources {
			got[map[string]int{"cpu": 0, "GPU": 1}[pr.Type]] = pr.LongTermDebt
		}
		if d := cmp.Diff(want[p], got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
			t.Errorf("%s's debts [cpu GPU] (-want +got):\n%s", doc.Projects[p].Name, d)
		}
	}
	if len(doc.Projects[0].Resources) != 1 || len(doc.Projects[2].Resources) != 1 {
		t.Errorf("entries made for resources a project neither takes part on nor used: %+v", doc.Projects)
	}
}
