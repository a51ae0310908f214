package sim

import (
	"math"
	"testing"

	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
)

// TestFigures checks the figures of merit against hand-computed values: two projects of
// equal share on one 1-GFLOPS CPU, two steps of 60 s; A runs throughout, B never.
func TestFigures(t *testing.T) {
	doc := &state.Document{
		Host:        state.Host{Resources: []state.Resource{{Type: state.ResourceCPU, Instances: 1, Flops: 1e9}}},
		Preferences: state.Preferences{CPUSchedulingPeriod: 3600},
		Projects:    []state.Project{{Name: "A", ResourceShare: 100}, {Name: "B", ResourceShare: 100}},
	}
	s := &Sim{doc: doc, start: 0, now: 120}
	s.m.init(doc)
	for range 2 {
		s.m.stepClear()
		s.m.credit(0, 0, 60e9, 0)
		s.m.step(doc, 60, true, true, false)
	}
	s.m.report(0, true, 30e9) // one late result of half a step's work
	s.m.rpcs, s.m.jobs = 3, 2
	res := s.Result()

	// All work to one of two equal-share projects: share violation 1, Jain 1/2.
	// Total 120 s × 1e9; wasted 30e9 / 120e9; nothing idle.
	// Monotony: B's time since it ran is 60 then 120 s: Σ dt·R² = 60·(60² + 120²) =
	// 1,080,000 over 120 s running: RMS √9000; A's is 0. X = (√9000 / 2) / (3600 × 2).
	x := math.Sqrt(9000) / 2 / 7200
	want := map[string][2]float64{
		"wasted":    {res.WastedFraction, 0.25},
		"idle":      {res.IdleFraction, 0},
		"violation": {res.ShareViolation, 1},
		"monotony":  {res.Monotony, x / (x + 1)},
		"rpcs/job":  {res.RPCsPerJob, 0.75},
		"jain":      {res.JainIndex, 0.5},
		"A used":    {res.Projects[0].UsedFraction, 1},
		"A share":   {res.Projects[0].Share, 0.5},
		"cpu A":     {res.Resources[0].Projects[0].UsedFraction, 1},
	}
	for name, g := range want {
		if math.Abs(g[0]-g[1]) > 1e-12 {
			t.Errorf("%s = %v, want %v", name, g[0], g[1])
		}
	}
	if res.Projects[0].DeadlinesMissed != 1 || res.Projects[0].DeadlinesMet != 0 {
		t.Errorf("deadlines met/missed %d/%d, want 0/1", res.Projects[0].DeadlinesMet, res.Projects[0].DeadlinesMissed)
	}
	if got := res.OneLine(); got != "wf 0.250000 if 0.000000 sv 1.000000 m 0.006545 r 0.750000" {
		t.Errorf("one line %q", got)
	}
}

// TestOnOff checks the availability process: always on at fraction 1, never at 0, and
// close to its fraction over a long time otherwise.
func TestOnOff(t *testing.T) {
	rng := newStream(1, 1)
	if p := newOnOff(1, 100, 0, rng); !p.at(1e6) {
		t.Error("fraction 1 is off")
	}
	if p := newOnOff(0, 100, 0, rng); p.at(1e6) {
		t.Error("fraction 0 is on")
	}
	p := newOnOff(0.3, 600, 0, rng)
	on := 0
	const n = 200000
	for i := range n {
		if p.at(float64(i) * 60) {
			on++
		}
	}
	if f := float64(on) / n; math.Abs(f-0.3) > 0.02 {
		t.Errorf("on %.3f of the time, want 0.3", f)
	}
}

// TestAbandonedIsWasted: a task given up unfinished (the goals policy abandons one that
// can no longer meet its deadline) is a missed deadline and its FLOPs are wasted, even
// when it is reported before its deadline. One 1-GFLOPS CPU, steps of 600 s: the task
// (7,200 s of work, due in 20,000 s) runs the first step, 600e9 FLOPs; it is then given
// up, and the next step's report counts 600e9 wasted of the 1,200e9 the two steps had.
func TestAbandonedIsWasted(t *testing.T) {
	doc := &state.Document{
		Version: state.Version,
		Host: state.Host{Resources: []state.Resource{{Type: state.ResourceCPU, Instances: 1, Flops: 1e9}},
			TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1}},
		Preferences: state.Preferences{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5, CPUSchedulingPeriod: 3600},
		Projects:    []state.Project{{Name: "A", ResourceShare: 1, SchedulerURLs: []string{"http://a/cgi"}}},
		AppVersions: []state.AppVersion{{Name: "a", Project: "A", AvgNCPUs: 1}},
		Tasks: []state.Task{{Name: "x", Project: "A", AppVersion: "a", State: state.TaskReady, EstimatedFlops: 7200e9,
			ReceivedTime: DefaultStart, ReportDeadline: DefaultStart + 20000}},
	}
	s, err := New(&scenario.Scenario{Doc: doc}, Config{Duration: 1200, Delta: 600, Policy: "goals", Seed: 1, ExistingJobsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Step()
	if got := s.doc.Tasks[0].FlopsDone; got != 600e9 {
		t.Fatalf("after a step the task did %g FLOPs, want 600e9", got)
	}
	s.doc.Tasks[0].State = state.TaskDone // given up
	s.Step()
	res := s.Result()
	if len(s.doc.Tasks) != 0 || res.Projects[0].DeadlinesMissed != 1 || res.Projects[0].DeadlinesMet != 0 {
		t.Errorf("tasks left %d, met/missed %d/%d, want 0 and 0/1", len(s.doc.Tasks), res.Projects[0].DeadlinesMet, res.Projects[0].DeadlinesMissed)
	}
	if res.WastedFraction != 0.5 {
		t.Errorf("wasted fraction %g, want 0.5", res.WastedFraction)
	}
}
