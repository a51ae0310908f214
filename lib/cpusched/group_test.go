package cpusched

import (
	"testing"

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
