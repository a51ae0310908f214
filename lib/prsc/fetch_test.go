package prsc

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/bkit/bkit/lib/state"
)

// TestOverallDebt: the overall LTD is the sum of the resource LTDs weighted by the
// speed of the resource (FLOPS per instance), in CPU seconds. CPU 1 GFLOPS, GPU
// 4 GFLOPS: debts cpu 10, GPU −2 make 10 + 4·(−2) = 2.
func TestOverallDebt(t *testing.T) {
	doc := cpuDoc()
	p := &doc.Projects[0]
	p.ResourceState("cpu").LongTermDebt = 10
	p.ResourceState("NVIDIA").LongTermDebt = -2
	if got := OverallDebt(&doc.Host, p); got != 2 {
		t.Errorf("overall debt %g, want 2", got)
	}
}

// TestSelectProject: select_project takes, among the projects not backed off for the
// resource (and with D(P,R), and past their RPC backoff), the one for which LTD +
// p->shortfall is largest. cpuDoc's 2 CPUs and no task: A (share 3) should get 1.5
// CPUs, shortfall 1.5·10,000 = 15,000; B (share 1) 0.5, 5,000.
func TestSelectProject(t *testing.T) {
	for _, tc := range []struct {
		name           string
		bCPU, bGPU     float64 // B's debts; A's are 0
		aRPC, bBackoff float64 // A's min_rpc_time, B's CPU backoff
		want           string
		aShort         float64 // A's shortfall (0: 15,000)
	}{
		// B owed 9,000 CPU-s: 14,000 < A's 15,000: A's shortfall outweighs B's debt.
		{name: "shortfall counts", bCPU: 9000, want: "A"},
		{name: "debt counts", bCPU: 11000, want: "B"}, // 16,000
		{name: "tie: the first listed", bCPU: 10000, want: "A"},
		// The GPU debt counts 4 CPU seconds an instance-second: 4·1000 + 5000 < 15,000,
		// 4·3000 + 5000 > 15,000.
		{name: "overall debt, GPU debt below", bGPU: 1000, want: "A"},
		{name: "overall debt, GPU debt above", bGPU: 3000, want: "B"},
		{name: "A in RPC backoff", aRPC: 1, want: "B"},
		// B backed off: A's share is reckoned among the projects not backed off, all 2
		// CPUs, shortfall 20,000; but A may not be asked.
		{name: "A in RPC backoff, B backed off for the CPU", aRPC: 1, bBackoff: 1, want: "", aShort: 20000},
	} {
		if tc.aShort == 0 {
			tc.aShort = 15000
		}
		doc := cpuDoc()
		doc.Projects[0].ResourceState("cpu").AccumulateDebt = true
		doc.Projects[0].MinRPCTime = tc.aRPC
		b := &doc.Projects[1]
		b.ResourceState("cpu").AccumulateDebt = true
		b.ResourceState("cpu").LongTermDebt = tc.bCPU
		b.ResourceState("cpu").BackoffUntil = tc.bBackoff
		b.ResourceState("NVIDIA").LongTermDebt = tc.bGPU
		sim := Simulate(doc, 0)
		sel := SelectProject(doc, sim.Resource("cpu"), 0)
		if sel.Project != tc.want {
			t.Errorf("%s: chose %q, want %q (candidates %+v)", tc.name, sel.Project, tc.want, sel.Candidates)
		}
		if a := sel.Candidates[0]; !approx(a.Shortfall, tc.aShort) || a.Score != a.OverallDebt+a.Shortfall {
			t.Errorf("%s: A's candidate %+v, want shortfall %g and score debt + shortfall", tc.name, a, tc.aShort)
		}
	}
}

// req is a request's figures, for comparing.
type req struct {
	Project        string
	CPUSecs, CPUN  float64
	Coprocs        map[string][2]float64 // type -> {req_secs, req_instances}
	WorkReqSeconds float64
}

func reqOf(r state.WorkRequest) req {
	out := req{Project: r.Project, CPUSecs: r.CPUReqSecs, CPUN: r.CPUReqInstances, Coprocs: map[string][2]float64{}, WorkReqSeconds: r.WorkReqSeconds}
	for _, c := range r.Coprocs {
		out.Coprocs[c.Type] = [2]float64{c.ReqSecs, c.ReqInstances}
	}
	return out
}

// TestDecideIdleCPU: the seed's work fetch on cpuDoc (2 CPUs, a GPU of 4 GFLOPS, a
// buffer of 10,000 s). B's GPU task (0.1 CPU + the GPU: 4.1 GFLOPS) runs 2.05e13 FLOPs,
// 5,000 s: the GPU is not idle, its shortfall is 5,000. The CPUs have no task: 2 idle,
// shortfall 20,000.
//
//   - "if cpu_work_fetch.nidle: cuda_work_fetch.shortfall = 0": A (CPU shortfall
//     15,000 against B's 5,000) is asked for 20,000 CPU seconds and 2 CPUs, and for no
//     GPU seconds (the GPU has no idle instance to ask for either).
//   - Nobody may have CPU jobs (no D(P,cpu)): the idle CPU finds no project, then the
//     GPU's shortfall asks B, and for the CPU's shortfall and idle CPUs too: the zeroing
//     is the request's only (DESIGN: bkit's decision; in the seed's pseudocode the
//     zeroed GPU shortfall would leave the GPU's step nothing to ask for).
func TestDecideIdleCPU(t *testing.T) {
	doc := cpuDoc()
	doc.Tasks = []state.Task{task("bg1", "B", "bg", state.TaskRunning, 2.05e13)}
	doc.Projects[0].ResourceState("cpu").AccumulateDebt = true
	doc.Projects[1].ResourceState("cpu").AccumulateDebt = true
	doc.Projects[1].ResourceState("NVIDIA").AccumulateDebt = true
	d := Decide(doc, 0)
	want := req{Project: "A", CPUSecs: 20000, CPUN: 2, Coprocs: map[string][2]float64{"NVIDIA": {0, 0}}, WorkReqSeconds: 20000}
	if diff := cmp.Diff(want, reqOf(d.Request), cmpopts.EquateApprox(1e-9, 0)); diff != "" {
		t.Errorf("idle CPU (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(d.Request.Reason, "cpu idle") {
		t.Errorf("reason %q, want the idle CPU's", d.Request.Reason)
	}
	doc.Projects[0].ResourceState("cpu").AccumulateDebt = false
	doc.Projects[1].ResourceState("cpu").AccumulateDebt = false
	d = Decide(doc, 0)
	want = req{Project: "B", CPUSecs: 20000, CPUN: 2, Coprocs: map[string][2]float64{"NVIDIA": {5000, 0}}, WorkReqSeconds: 20000}
	if diff := cmp.Diff(want, reqOf(d.Request), cmpopts.EquateApprox(1e-9, 0)); diff != "" {
		t.Errorf("GPU shortfall after an idle CPU nobody may fill (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(d.Request.Reason, "NVIDIA shortfall") {
		t.Errorf("reason %q, want the GPU's shortfall", d.Request.Reason)
	}
}

// TestDecideTwoCoprocs: with two coprocessor types, the idle ones come first, in host
// order, then the idle CPU. One CPU, an NVIDIA and an ATI GPU, no task, a buffer of
// 10,000 s: every resource idle, shortfall 10,000 each. B may have jobs for all three,
// C for the ATI GPU only and is owed much more. The NVIDIA GPU's turn: B, asked for no
// CPU seconds (but its idle CPU) and for both GPUs' seconds and instances (the seed
// zeroes the CPU's shortfall only). B backed off for the NVIDIA GPU: nobody to ask
// for it, so the ATI GPU's turn: C, asked for the NVIDIA GPU too.
func TestDecideTwoCoprocs(t *testing.T) {
	doc := &state.Document{
		Version: 1,
		Host: state.Host{
			Resources: []state.Resource{{Type: "cpu", Instances: 1, Flops: 1e9}, {Type: "NVIDIA", Instances: 1, Flops: 4e9}, {Type: "ATI", Instances: 1, Flops: 3e9}},
			TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1},
		},
		Preferences: state.Preferences{WorkBufMinDays: 10000.0 / 86400, CPUSchedulingPeriod: 3600},
		Projects: []state.Project{
			{Name: "B", ResourceShare: 1, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}, {Type: "NVIDIA", AccumulateDebt: true}, {Type: "ATI", AccumulateDebt: true}}},
			{Name: "C", ResourceShare: 1, Resources: []state.ProjectResource{{Type: "ATI", AccumulateDebt: true, LongTermDebt: 1e6}}},
		},
	}
	all := map[string][2]float64{"NVIDIA": {10000, 1}, "ATI": {10000, 1}}
	d := Decide(doc, 0)
	want := req{Project: "B", CPUSecs: 0, CPUN: 1, Coprocs: all, WorkReqSeconds: 10000}
	if diff := cmp.Diff(want, reqOf(d.Request)); diff != "" || !strings.HasPrefix(d.Request.Reason, "NVIDIA idle") {
		t.Errorf("idle NVIDIA GPU (-want +got):\n%s\nreason %q", diff, d.Request.Reason)
	}
	doc.Projects[0].Resources[1].BackoffUntil = 1
	d = Decide(doc, 0)
	want = req{Project: "C", CPUSecs: 0, CPUN: 1, Coprocs: all, WorkReqSeconds: 10000}
	if diff := cmp.Diff(want, reqOf(d.Request)); diff != "" || !strings.HasPrefix(d.Request.Reason, "ATI idle") {
		t.Errorf("idle ATI GPU (-want +got):\n%s\nreason %q", diff, d.Request.Reason)
	}
}

// TestReplyJobNotAsked: "If P supplies a job for R, D(P,R) is set to true" and the
// reply clears "backoff for the PRSC of each returned job", asked for or not.
func TestReplyJobNotAsked(t *testing.T) {
	doc := seedExample()
	doc.Projects[0].Resources[0] = state.ProjectResource{Type: "NVIDIA", BackoffInterval: 1200, BackoffUntil: 5000}
	err := ApplyReply(doc, map[string]bool{"cpu": true}, Reply{Project: "A", Jobs: map[string]int{"NVIDIA": 1}}, false, 1000, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	// The CPU, asked for, got nothing: it backs off; the GPU's job sets D and clears.
	want := map[string][2]float64{"NVIDIA": {1, 0}, "cpu": {0, 600}}
	if diff := cmp.Diff(want, flags(doc, 0)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
