package sim

import (
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestGoalsReplyKeepsD: policy goals takes a reply without jobs as goals.ApplyReply does
// (D(P,R) kept, the resource backed off), where seed takes seed 002's rule (D cleared).
func TestGoalsReplyKeepsD(t *testing.T) {
	for _, c := range []struct {
		policy string
		keep   bool
	}{{"goals", true}, {"seed", false}} {
		doc := &state.Document{
			Version:  1,
			Host:     state.Host{Resources: []state.Resource{{Type: "cpu", Instances: 1, Flops: 1e9}}},
			Projects: []state.Project{{Name: "A", ResourceShare: 1, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}}}},
		}
		p := policies[c.policy]()
		p.Replied(doc, RPC{Project: 0, Request: state.WorkRequest{Project: "A", CPUReqSecs: 100}}, Reply{Jobs: map[string]int{}}, 1000)
		pr := &doc.Projects[0].Resources[0]
		if pr.AccumulateDebt != c.keep {
			t.Errorf("%s: D(A,cpu) %v after a reply without jobs, want %v", c.policy, pr.AccumulateDebt, c.keep)
		}
		if pr.BackoffUntil <= 1000 {
			t.Errorf("%s: the CPU not backed off (until %g)", c.policy, pr.BackoffUntil)
		}
	}
}

// TestGoalsKnowsGPUSuspension: under --emulate boinc goals is told when GPU computing is
// suspended (state.Document.GPUsSuspended, as BOINC's emulator's client knows it) and
// then runs no coprocessor task, so that their CPU fractions go to CPU tasks (c103: 16
// CPUs, GPU active 0.75, a CPU idle beside two stalled GPU tasks a third of the time),
// a pass being made whenever the suspension changes (cpusched.Due does not read it: in
// c103's first three days 18 task-steps of coprocessor tasks ran while suspended
// without). Policy seed is not told.
func TestGoalsKnowsGPUSuspension(t *testing.T) {
	for _, policy := range []string{"goals", "seed"} {
		s, err := New(load(t, "../../scenarios/corpus/c103"), Config{Duration: 3 * 86400, Delta: 60, Policy: policy, Seed: 1, EmulateBOINC: true})
		if err != nil {
			t.Fatal(err)
		}
		suspended, gpuRan := 0, 0
		for s.Step() {
			doc := s.Doc()
			if !doc.GPUsSuspended {
				continue
			}
			suspended++
			for i := range doc.Tasks {
				if doc.Tasks[i].State == state.TaskRunning && doc.AppVersions[s.jobs[i].av].Coproc != nil {
					gpuRan++
				}
			}
		}
		switch {
		case policy == "goals" && (suspended == 0 || gpuRan > 0):
			t.Errorf("goals: told of %d suspended steps, a coprocessor task ran in %d task-steps of them; want some and none", suspended, gpuRan)
		case policy == "seed" && suspended > 0:
			t.Errorf("seed: told of %d suspended steps, want none", suspended)
		}
	}
}

// TestGoalsPassOnSuspensionChange: goals makes a pass when GPU computing is suspended or
// resumes on a host with a coprocessor, though Due calls for none, and not on a host
// with CPUs only, where the emulator flips the flag with the host's activity.
func TestGoalsPassOnSuspensionChange(t *testing.T) {
	for _, gpu := range []bool{false, true} {
		doc := &state.Document{
			Version:     1,
			Host:        state.Host{Resources: []state.Resource{{Type: "cpu", Instances: 1, Flops: 1e9}}},
			Preferences: state.Preferences{CPUSchedulingPeriod: 3600},
			Projects:    []state.Project{{Name: "A", ResourceShare: 1, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}}}},
			AppVersions: []state.AppVersion{{Name: "a", Project: "A", AvgNCPUs: 1}},
			Tasks:       []state.Task{{Name: "a1", Project: "A", AppVersion: "a", State: state.TaskReady, EstimatedFlops: 1e13, ReceivedTime: 1, ReportDeadline: 1e6}},
		}
		if gpu {
			doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 1e10})
		}
		p := policies["goals"]()
		if !p.Schedule(doc, 100) {
			t.Fatalf("gpu %v: no first pass", gpu)
		}
		if p.Schedule(doc, 160) {
			t.Fatalf("gpu %v: a pass at 160 with nothing changed", gpu)
		}
		doc.GPUsSuspended = true
		if got := p.Schedule(doc, 220); got != gpu {
			t.Errorf("gpu %v: pass when GPU computing is suspended: %v, want %v", gpu, got, gpu)
		}
	}
}
