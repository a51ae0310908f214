package cpusched

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The steps of a pass, one by one (group_test.go, debt_test.go, choose_test.go,
// carryout_test.go), on the documents of the seed's examples (cpusched_test.go has the
// whole passes).

// grouped is a Workspace with doc's candidates grouped, as a pass has them before step 1.
func grouped(t *testing.T, doc *state.Document) (*Workspace, *names, appLimits) {
	t.Helper()
	mustValid(t, doc)
	w := &Workspace{}
	ix := w.index(doc)
	apps := newAppLimits(doc)
	w.group(doc, ix, &apps)
	w.chosen = scratch.Grow(w.chosen, len(doc.Tasks))
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
		cpu: {{{task: 0, deadline: 100, need: 1, rank: 2, app: -1}, {task: 2, deadline: 100, need: 1, rank: 1, app: -1}, {task: 3, deadline: 100, need: 1, rank: 0, app: -1}}, nil},
		gpu: {nil, {{task: 4, deadline: 100, need: 1, ncpus: 0.5, rank: 2, app: 0}}},
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

// group's word on which lists are out of order (mixed) spares sortCandidates a sort
// of lists in order only, and workDone a look past their running candidates: with it the candidates come out as a sort of every list puts
// them, on documents whose projects' tasks are in order, in order but for one, or not
// at all, with equal and NaN deadlines and every runnable state.
func TestMixedSortsAlike(t *testing.T) {
	states := []state.TaskState{state.TaskReady, state.TaskReady, state.TaskRunning, state.TaskPreempted, state.TaskDone}
	sorted, mixed := 0, 0
	for i := range 60 {
		doc := host(2, map[string]float64{"A": 1, "B": 1}, "A", "B")
		for k := range 40 {
			deadline := float64(k * 10) // in order
			switch i % 4 {
			case 1:
				if k == 20+i%7 {
					deadline = 5 // one out of order
				}
			case 2:
				deadline = float64((k*37 + i*11) % 50) // any order, some equal
			case 3:
				if k%9 == i%9 {
					deadline = math.NaN()
				}
			}
			st := state.TaskReady
			if i%2 == 1 || k%13 == 0 {
				st = states[(k*7+i)%len(states)]
			}
			addTask(doc, fmt.Sprintf("t%d", k), []string{"A", "B"}[(k/3+i)%2], st, float64(k*k+i), deadline)
		}
		w, _, _ := grouped(t, doc)
		// workDone stops at a list's first candidate not running when the list is in
		// order: the same sums as looking at every one.
		wantDone, gotDone := make([]float64, 2), make([]float64, 2)
		wantTotal := workDone(doc.Tasks, w.cands[0], nil, state.ResourceCPU, wantDone)
		gotTotal := workDone(doc.Tasks, w.cands[0], w.mixed[0], state.ResourceCPU, gotDone)
		if wantTotal != gotTotal || !slices.Equal(wantDone, gotDone) {
			t.Fatalf("document %d: work done %g %v, looking at every candidate %g %v", i, gotTotal, gotDone, wantTotal, wantDone)
		}
		for p, m := range w.mixed[0] {
			if m {
				mixed++
			} else if len(w.cands[0][p]) > 12 {
				sorted++
			}
		}
		want := make([][]candidate, len(w.cands[0]))
		for p := range want {
			want[p] = slices.Clone(w.cands[0][p])
		}
		sortCandidates(want, nil)
		sortCandidates(w.cands[0], w.mixed[0])
		if d := cmp.Diff(want, w.cands[0], cmp.AllowUnexported(candidate{}), cmpopts.EquateNaNs()); d != "" {
			t.Fatalf("document %d (-every list sorted +mixed ones sorted):\n%s", i, d)
		}
	}
	if sorted == 0 || mixed == 0 {
		t.Fatalf("%d lists in order, %d out of order: the test compares one kind only", sorted, mixed)
	}
}

// An app version is found as state.IndexName finds it (the first alike), whether the
// name looked up is stored where the document's is or elsewhere, the names distinct or
// not.
func TestAppVersionIndexIsIndexName(t *testing.T) {
	for _, names := range [][]string{{"a", "b", "c"}, {"a", "b", "a"}, {"x", "x"}, {"p", "q", "r", "s", "t", "u", "v", "w", "x"}} {
		doc := &state.Document{}
		for _, n := range names {
			doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: strings.Clone(n)})
		}
		var w Workspace
		ix := w.index(doc)
		for k := range doc.AppVersions {
			for _, name := range []string{doc.AppVersions[k].Name, strings.Clone(doc.AppVersions[k].Name)} {
				want := state.IndexName(names, name)
				if len(names) > linearMax {
					want = state.NewIndex(doc).AppVersion[name]
				}
				if got := ix.appVersion(name); got != want {
					t.Errorf("%v: app version %d (%q) found at %d, want %d", names, k, name, got, want)
				}
			}
		}
	}
}
