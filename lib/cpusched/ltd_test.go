package cpusched_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/bkit/bkit/lib/cpusched"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/state"
)

// TestGPUByLongTermDebtsLongRun runs passes (when Due) and seed 002's debt accounting
// (prsc, as bdevices debt and bsim do) every minute for 10 days on seed 002's example
// host, with every queue full so that only the scheduler decides: 1 CPU, a GPU twice
// as fast, A with GPU tasks only, B with CPU and GPU tasks, equal shares. The CPU goes
// to B. On the GPU, with a to A, each second does 1 + 2·1 = 3 CPU-seconds of
// processing, 1.5 owed to each project, and prsc's rule moves the GPU debts by
//
//	A: ½ (its share of the GPU's use) − a + (1.5 − ½·2) / 2 (the rest, over A's GPU) = ¾ − a
//	B: ½ − (1 − a) + (1.5 − 1 − ½·2) / 3 (the rest by capacity, a third on the GPU)   = a − ⅔
//
// Scheduling by these debts keeps them together, so ¾ − a = a − ⅔: a = 17/24, not the
// seed's 75 %, which work fetch by the overall debt brings (docs/decisions.md, "Which
// debt for a coprocessor"). The test pins that interplay of the two stages.
func TestGPUByLongTermDebtsLongRun(t *testing.T) {
	doc := &state.Document{
		Version:     1,
		Host:        state.Host{Resources: []state.Resource{{Type: "cpu", Instances: 1, Flops: 1e9}, {Type: "NVIDIA", Instances: 1, Flops: 2e9}}},
		Preferences: state.Preferences{CPUSchedulingPeriod: 3600},
		Projects: []state.Project{
			{Name: "A", ResourceShare: 100, Resources: []state.ProjectResource{{Type: "NVIDIA", AccumulateDebt: true}}},
			{Name: "B", ResourceShare: 100, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}, {Type: "NVIDIA", AccumulateDebt: true}}},
		},
		AppVersions: []state.AppVersion{
			{Name: "A_gpu", Project: "A", Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
			{Name: "B_cpu", Project: "B", AvgNCPUs: 1},
			{Name: "B_gpu", Project: "B", Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
		},
	}
	for i, av := range []string{"A_gpu", "A_gpu", "B_cpu", "B_cpu", "B_gpu", "B_gpu"} {
		doc.Tasks = append(doc.Tasks, state.Task{Name: fmt.Sprint("t", i), Project: av[:1], AppVersion: av,
			State: state.TaskReady, ReportDeadline: 1e12, EstimatedFlops: 1e30})
	}
	if err := state.Validate(doc); err != nil {
		t.Fatal(err)
	}
	const step, days = 60.0, 10
	var w cpusched.Workspace
	var debts prsc.DebtWork
	gpu := map[string]float64{}
	cpuB := 0.0
	for now := 0.0; now < days*86400; now += step {
		if due, _ := cpusched.Due(doc, now); due {
			w.Schedule(doc, now)
		}
		debts.AccumulateDebt(doc, prsc.Usage(doc), step, now+step)
		for i := range doc.Tasks {
			tk := &doc.Tasks[i]
			if tk.State != state.TaskRunning {
				continue
			}
			if tk.AppVersion == "B_cpu" {
				tk.CPUTime += step
				cpuB += step
			} else {
				tk.ElapsedTime += step
				gpu[tk.Project] += step
			}
		}
	}
	if cpuB != days*86400 {
		t.Errorf("B had the CPU %g s of %g", cpuB, days*86400.0)
	}
	a := gpu["A"] / (gpu["A"] + gpu["B"])
	if math.Abs(a-17.0/24) > 0.001 {
		t.Errorf("GPU to A %.5f, want 17/24 = %.5f (GPU debts A %g, B %g)", a, 17.0/24,
			doc.Projects[0].Resources[0].LongTermDebt, doc.Projects[1].Resources[1].LongTermDebt)
	}
}
