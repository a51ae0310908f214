package cpusched

import (
	"fmt"
	"math"
	"testing"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

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
	cpuFree := w.choose(w.cands[0], nil, math.Inf(-1), anticipated, &rp, 3, &apps, why)
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
	cpuFree := w.choose(w.cands[1], nil, math.Inf(-1), []float64{0, 0}, &rp, 2, &apps, nil)
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
	cpuFree := w.choose(w.cands[0], nil, math.Inf(-1), anticipated, &rp, 2, &apps, why)
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
	cpuFree = w.choose(w.cands[1], nil, math.Inf(-1), []float64{0, 0}, &rp, 2, &apps, why)
	explain(ix, w.cands[1], []float64{0, 0}, &rp, cpuFree, &apps, w.chosen, why)
	if why[1].Why != WhyAppLimit {
		t.Errorf("g2 = %+v, want its app at max_concurrent", why[1])
	}
	w, ix, apps = grouped(t, doc)
	why = make([]TaskDecision, len(doc.Tasks))
	rp = ResourcePass{Type: "NVIDIA", Instances: 2, ExpectedPayOff: 3600}
	// A GPU task may overcommit the CPUs by up to one (state.CPUsFit): with a quarter
	// CPU free it fits, with the CPUs overcommitted by 0.75 its half CPU does not.
	explain(ix, w.cands[1], []float64{0, 0}, &rp, 0.25, &apps, w.chosen, why)
	if why[0].Why == WhyNoCPUs {
		t.Errorf("g1 with a quarter CPU free = %+v, want its CPUs free", why[0])
	}
	why = make([]TaskDecision, len(doc.Tasks))
	explain(ix, w.cands[1], []float64{0, 0}, &rp, -0.75, &apps, w.chosen, why)
	if why[0].Why != WhyNoCPUs {
		t.Errorf("g1 with the CPUs overcommitted by 0.75 = %+v, want its CPUs not free", why[0])
	}
}

// choose with least (leastNeed: the search stops once fewer instances are free than
// any candidate takes) chooses as it does without: on a host with a GPU, fractional
// needs, tasks of two instances, NaN needs and apps at their limit.
func TestLeastChangesNothing(t *testing.T) {
	for i := range 40 {
		doc := gpuHost()
		doc.AppVersions[0].AvgNCPUs = []float64{1, 0.5, 2, 1.5}[i%4]
		if i%5 == 4 {
			doc.AppVersions[1].AvgNCPUs = math.NaN()
		}
		doc.Host.Resources[0].Instances = 1 + i%4
		for k := range 30 {
			st := []state.TaskState{state.TaskReady, state.TaskReady, state.TaskRunning, state.TaskPreempted}[(k+i)%4]
			p := []string{"A", "B"}[(k*7+i)%2]
			addTask(doc, fmt.Sprint("t", k), p, st, 0, float64((k*13+i)%17))
			if p == "B" && k%3 == 0 {
				doc.Tasks[len(doc.Tasks)-1].AppVersion = "B_gpu"
			}
		}
		type outcome struct {
			Chosen      []bool
			Used, Free  []float64
			Anticipated [][]float64
		}
		run := func(shortcut bool) outcome {
			w := &Workspace{}
			ix := w.index(doc)
			apps := newAppLimits(doc)
			w.group(doc, ix, &apps)
			w.chosen = scratch.Grow(w.chosen, len(doc.Tasks))
			var o outcome
			cpuFree := float64(doc.Host.Resources[0].Instances)
			for _, r := range resourceOrder(doc.Host.Resources, nil) {
				least := math.Inf(-1)
				if shortcut {
					least = w.leastNeed(r)
				}
				anticipated := []float64{float64(i%3) * 100, 50}
				rp := ResourcePass{Type: doc.Host.Resources[r].Type, Instances: float64(doc.Host.Resources[r].Instances), ExpectedPayOff: 60}
				if rp.Type == state.ResourceCPU {
					rp.Instances = cpuFree
				}
				cpuFree = w.choose(w.cands[r], w.mixed[r], least, anticipated, &rp, cpuFree, &apps, nil)
				o.Used, o.Free, o.Anticipated = append(o.Used, rp.Used), append(o.Free, cpuFree), append(o.Anticipated, anticipated)
			}
			o.Chosen = w.chosen
			return o
		}
		if d := cmp.Diff(run(false), run(true), cmpopts.EquateNaNs()); d != "" {
			t.Fatalf("document %d (-without least +with):\n%s", i, d)
		}
	}
}
