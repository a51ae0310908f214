package rpc

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// NextSeed000: seed 000 alone. 2 CPUs, low 0.5 days, high 1.5 days.
func TestNextSeed000(t *testing.T) {
	// No work at all: a get-work session with the project of greatest debt (C has no
	// CPU time yet), asking for 1.5 days × 86,400 × 2 CPUs = 259,200 s; then, asked C,
	// the next by debt: B (share 50 / 100 s) before A (100 / 1000 s).
	d := doc(t, 2, []state.Project{proj("A", 100, 1000), proj("B", 50, 100), proj("C", 10, 0)})
	r, ok := NextSeed000(d, t0, nil)
	if !ok || r.Project != 2 || d.Request == nil || d.Request.Project != "C" || d.Request.CPUReqSecs != 259200 || d.Request.Time != t0 {
		t.Fatalf("first: %+v %v, request %+v", r, ok, d.Request)
	}
	if r, ok = NextSeed000(d, t0, []int{2}); !ok || r.Project != 1 {
		t.Fatalf("after C: %+v %v", r, ok)
	}
	if r, ok = NextSeed000(d, t0, []int{2, 1, 0}); ok {
		t.Fatalf("everyone asked: %+v", r)
	}

	// One CPU-day of work each (1 day ≥ low): A's done result is overdue (deadline in
	// an hour): a report session; A is not the greatest debt (B has no CPU time), so no
	// work is asked.
	d = doc(t, 2, []state.Project{proj("A", 100, 1000), proj("B", 50, 0)},
		task("a1", "A", state.TaskReady, 2*cpuDay, 0, t0+10*86400, 0),
		task("a2", "A", state.TaskDone, cpuDay, cpuDay, t0+3600, 0))
	if r, ok = NextSeed000(d, t0, nil); !ok || r.Project != 0 || r.Request.CPUReqSecs != 0 {
		t.Fatalf("report: %+v %v", r, ok)
	}
	// Only A can be contacted now: it has the greatest debt, so it asks up to the
	// high-water mark: (1.5 − 1) × 86,400 × 2 = 86,400 s.
	d.Projects[1].MinRPCTime = t0 + 60
	if r, ok = NextSeed000(d, t0, nil); !ok || r.Project != 0 || r.Request.CPUReqSecs != 86400 {
		t.Fatalf("report with work: %+v %v", r, ok)
	}
	// A day before, nothing is overdue and work is above the low-water mark: nothing.
	if r, ok = NextSeed000(d, t0-86400, nil); ok {
		t.Fatalf("nothing to do: %+v", r)
	}
}

// Next without seed 001's decision and without coprocessors asks nobody for work, but
// still reports.
func TestNextWithoutFetchDecision(t *testing.T) {
	d := doc(t, 2, []state.Project{proj("A", 100, 1000)},
		task("a1", "A", state.TaskReady, 2*cpuDay, 0, t0+10*86400, 0),
		task("a2", "A", state.TaskDone, cpuDay, cpuDay, t0+3600, 0))
	r, ok := Next(d, t0, nil, func() state.WorkRequest { t.Fatal("coproc asked on a CPU-only host"); return state.WorkRequest{} })
	if !ok || r.Project != 0 || d.Request.Project != "A" || d.Request.CPUReqSecs != 0 {
		t.Fatalf("%+v %v", r, ok)
	}
	if _, ok := Next(d, t0, []int{0}, nil); ok {
		t.Fatal("asked again")
	}
}

// The debt ordering a get-work session follows, by hand: at t0 + one week, A (share 100,
// 200 s of CPU averaged at t0 + week) has debt 100/200 = 0.5; B (share 100, 100 s at
// t0, so 100/e = 36.79 s a week later) has 100/36.79 = e = 2.718; C (share 10, no CPU
// time yet) has +Inf; D (share 0) has 0. Order: C, B, A, then D.
func TestGetWorkOrderByDebtAfterAWeek(t *testing.T) {
	now := t0 + SecondsPerWeek
	d := doc(t, 1, []state.Project{
		{Name: "A", ResourceShare: 100, ExpAvgCPU: 200, ExpAvgTime: now},
		{Name: "B", ResourceShare: 100, ExpAvgCPU: 100, ExpAvgTime: t0},
		{Name: "C", ResourceShare: 10},
		{Name: "D", ResourceShare: 0, ExpAvgCPU: 5, ExpAvgTime: t0},
	})
	if got := ResourceDebt(&d.Projects[1], now); math.Abs(got-math.E) > 1e-12 {
		t.Fatalf("B's debt %g, want e", got)
	}
	var order []string
	for {
		i := NextGetWork(d, now)
		if i < 0 {
			break
		}
		order = append(order, d.Projects[i].Name)
	}
	if got := strings.Join(order, ","); got != "C,B,A,D" {
		t.Fatalf("order %s, want C,B,A,D", got)
	}
}

// Seed 001's CPU request goes to a project with a CPU app version, or with no app
// version at all (just attached: the client learns its apps from the first reply, as
// BOINC's does), never to one whose versions all use a GPU. All three ask 1000 s; A
// comes first in the document but has only a GPU version, so B (no versions) is asked,
// then C (a CPU version), then nobody.
func TestNextCPUWorkNeedsACPUVersionOrNone(t *testing.T) {
	d := doc(t, 2, []state.Project{proj("A", 100, 10), proj("B", 100, 10), proj("C", 100, 10)})
	d.Host.Resources = append(d.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 1e10})
	d.AppVersions = []state.AppVersion{
		{Name: "a_gpu", Project: "A", AvgNCPUs: 0.1, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
		{Name: "c_cpu", Project: "C", AvgNCPUs: 1},
	}
	d.WorkFetch = &state.WorkFetch{Time: t0, Urgency: "need_work"}
	for i := range d.Projects {
		d.Projects[i].WorkRequest = 1000
	}
	if err := state.Validate(d); err != nil {
		t.Fatal(err)
	}
	none := func() state.WorkRequest { return state.WorkRequest{} }
	var order []string
	var asked []int
	for {
		r, ok := Next(d, t0, asked, none)
		if !ok {
			break
		}
		if r.Request.CPUReqSecs != 1000 {
			t.Fatalf("%s asked for %g s", d.Projects[r.Project].Name, r.Request.CPUReqSecs)
		}
		order = append(order, d.Projects[r.Project].Name)
		asked = append(asked, r.Project)
	}
	if got := strings.Join(order, ","); got != "B,C" {
		t.Fatalf("asked %s, want B,C", got)
	}
}

// A host whose one project has CPU and GPU versions: seed 001 asks that project for
// 1000 s of CPU work and seed 002 chose the same project for the idle GPU (3600
// instance-seconds, 1 instance). The one RPC asks for both, as seed 002's send_req
// does (work_req_seconds the larger); with the GPU's request to another project, the
// CPU RPC carries no GPU part and that project is asked for it next. Before this, the
// GPU part was sent only in an RPC of its own, which never came once the project had
// been contacted at the step, and the full loop's GPU client stood idle 74 % of the time.
func TestNextCPURequestCarriesSameProjectsCoprocs(t *testing.T) {
	d := doc(t, 2, []state.Project{proj("A", 100, 10), proj("B", 100, 10)})
	d.Host.Resources = append(d.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 1e10})
	d.AppVersions = []state.AppVersion{
		{Name: "a_cpu", Project: "A", AvgNCPUs: 1},
		{Name: "a_gpu", Project: "A", AvgNCPUs: 0.1, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
		{Name: "b_gpu", Project: "B", AvgNCPUs: 0.1, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
	}
	d.WorkFetch = &state.WorkFetch{Time: t0, Urgency: "need_work"}
	d.Projects[0].WorkRequest = 1000
	if err := state.Validate(d); err != nil {
		t.Fatal(err)
	}
	gpuFrom := func(p string) func() state.WorkRequest {
		return func() state.WorkRequest {
			return state.WorkRequest{Project: p, Reason: "NVIDIA idle", CPUReqSecs: 500, WorkReqSeconds: 3600,
				Coprocs: []state.CoprocRequest{{Type: "NVIDIA", ReqSecs: 3600, ReqInstances: 1}}}
		}
	}
	r, ok := Next(d, t0, nil, gpuFrom("A"))
	if !ok || r.Project != 0 || r.Request.CPUReqSecs != 1000 || r.Request.WorkReqSeconds != 3600 ||
		len(r.Request.Coprocs) != 1 || r.Request.Coprocs[0] != (state.CoprocRequest{Type: "NVIDIA", ReqSecs: 3600, ReqInstances: 1}) {
		t.Fatalf("same project: %+v %v", r, ok)
	}
	if d.Request == nil || len(d.Request.Coprocs) != 1 {
		t.Fatalf("recorded request %+v", d.Request)
	}
	r, ok = Next(d, t0, nil, gpuFrom("B"))
	if !ok || r.Project != 0 || r.Request.WorkReqSeconds != 1000 || len(r.Request.Coprocs) != 0 {
		t.Fatalf("GPU to another project: %+v %v", r, ok)
	}
	r, ok = Next(d, t0, []int{0}, gpuFrom("B"))
	if !ok || r.Project != 1 || r.Request.CPUReqSecs != 0 || len(r.Request.Coprocs) != 1 {
		t.Fatalf("then B for the GPU: %+v %v", r, ok)
	}
}

// TestNextQuietIsNextWithoutWords: NextQuiet chooses and records what Next does, for
// CPU work, coprocessor work (with the CPU RPC and on its own) and a report asking for
// work, and leaves every reason empty.
func TestNextQuietIsNextWithoutWords(t *testing.T) {
	// C's result is overdue and C, without CPU time, has the greatest debt; A's ready
	// task is a day of work: between the water marks, so C's report asks for work.
	d := doc(t, 2, []state.Project{proj("A", 100, 10), proj("B", 100, 10), proj("C", 100, 0)},
		task("over", "C", state.TaskDone, 1, 1, t0+3600, t0-60), task("work", "A", state.TaskReady, 2*cpuDay, 0, t0+9e5, 0))
	d.Host.Resources = append(d.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 1e10})
	d.AppVersions = append(d.AppVersions,
		state.AppVersion{Name: "a_gpu", Project: "A", AvgNCPUs: 0.1, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
		state.AppVersion{Name: "b_gpu", Project: "B", AvgNCPUs: 0.1, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}})
	d.WorkFetch = &state.WorkFetch{Time: t0, Urgency: "need_work"}
	d.Projects[0].WorkRequest, d.Projects[2].WorkRequest = 1000, 500
	if err := state.Validate(d); err != nil {
		t.Fatal(err)
	}
	gpuFrom := func(p string) func() state.WorkRequest {
		return func() state.WorkRequest {
			return state.WorkRequest{Project: p, Reason: "NVIDIA idle", CPUReqSecs: 500, WorkReqSeconds: 3600,
				Coprocs: []state.CoprocRequest{{Type: "NVIDIA", ReqSecs: 3600, ReqInstances: 1}}}
		}
	}
	noWords := cmpopts.IgnoreFields(state.WorkRequest{}, "Reason")
	for _, gpu := range []string{"A", "B", "C"} {
		var asked []int
		for step := 0; ; step++ {
			loud, quiet := clone(t, d), clone(t, d)
			lp, lok := Next(loud, t0, asked, gpuFrom(gpu))
			qp, qok := NextQuiet(quiet, t0, asked, gpuFrom(gpu))
			if lok != qok {
				t.Fatalf("GPU to %s, RPC %d: Next %v, NextQuiet %v", gpu, step, lok, qok)
			}
			if !lok {
				if step < 2 {
					t.Errorf("GPU to %s: only %d RPCs", gpu, step)
				}
				break
			}
			if lp.Why == "" || lp.Request.Reason == "" {
				t.Errorf("GPU to %s, RPC %d: Next gave no words: %+v", gpu, step, lp)
			}
			if qp.Why != "" || qp.Request.Reason != "" || quiet.Request.Reason != "" {
				t.Errorf("GPU to %s, RPC %d: NextQuiet's words %q, %q, %q", gpu, step, qp.Why, qp.Request.Reason, quiet.Request.Reason)
			}
			if step == 0 && (!strings.HasPrefix(lp.Why, "report: ") || lp.Request.CPUReqSecs != 500) {
				t.Errorf("GPU to %s: first RPC %+v, want C's report asking for 500 s", gpu, lp)
			}
			lp.Why = ""
			if diff := cmp.Diff(lp, qp, noWords); diff != "" {
				t.Errorf("GPU to %s, RPC %d (-Next +NextQuiet):\n%s", gpu, step, diff)
			}
			if diff := cmp.Diff(loud, quiet, noWords); diff != "" {
				t.Errorf("GPU to %s, RPC %d, document (-Next +NextQuiet):\n%s", gpu, step, diff)
			}
			asked = append(asked, lp.Project)
		}
	}
}

func clone(t *testing.T, d *state.Document) *state.Document {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var c state.Document
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// BenchmarkNextQuietEmulator is the emulator's planning at a step's first poll
// (NextQuiet) on a document of its size, 2 projects and 14 tasks of which one done
// result is overdue: a report asking for seed 001's request. Allocations per op must be
// 0 (the request is recorded in place).
func BenchmarkNextQuietEmulator(b *testing.B) {
	var tasks []state.Task
	for i := range 13 {
		tasks = append(tasks, task(fmt.Sprintf("t%d", i), []string{"A", "B"}[i%2], state.TaskReady, cpuDay/4, 0, t0+9e5, 0))
	}
	tasks = append(tasks, task("over", "B", state.TaskDone, 1, 1, t0+3600, t0-60))
	d := doc(b, 2, []state.Project{proj("A", 100, 10), proj("B", 100, 0)}, tasks...)
	d.WorkFetch = &state.WorkFetch{Time: t0, Urgency: "need_work"}
	d.Projects[1].WorkRequest = 500
	none := func() state.WorkRequest { return state.WorkRequest{} }
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := NextQuiet(d, t0, nil, none); !ok {
			b.Fatal("no RPC")
		}
	}
}
