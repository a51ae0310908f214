package sim

import (
	"testing"

	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
)

// TestRunLearnsDCF: a task whose estimate is half its real work teaches its project a
// correction factor of 2 when it completes (BOINC's rule: up at once), and while it
// runs its remaining work is estimated from its progress, not estimate − done (which
// reads 0 from half-way on).
func TestRunLearnsDCF(t *testing.T) {
	doc := &state.Document{
		Version: 1,
		Host: state.Host{Resources: []state.Resource{{Type: state.ResourceCPU, Instances: 1, Flops: 1e9}},
			TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1}},
		Preferences: state.Preferences{WorkBufMinDays: 0.1, CPUSchedulingPeriod: 3600},
		Projects:    []state.Project{{Name: "A", ResourceShare: 100}},
		AppVersions: []state.AppVersion{{Name: "cpu", Project: "A", AvgNCPUs: 1}},
		Tasks: []state.Task{
			{Name: "t1", Project: "A", AppVersion: "cpu", State: state.TaskReady, EstimatedFlops: 1.2e12, ReportDeadline: 1e7},
			{Name: "t2", Project: "A", AppVersion: "cpu", State: state.TaskReady, EstimatedFlops: 1.2e12, ReportDeadline: 1e7},
		},
	}
	s, err := New(&scenario.Scenario{Doc: doc}, Config{Duration: 3000, Delta: 60, Policy: "seed", Seed: 1, ExistingJobsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	// The emulator's real work of an explicit task is its estimate: make it twice.
	for i := range s.jobs {
		s.jobs[i].real = 2.4e12
	}
	for s.Step() && s.now < s.start+1800 {
	}
	t1 := &s.doc.Tasks[0]
	if t1.State != state.TaskRunning || !near(t1.FractionDone, 0.75) {
		t.Fatalf("t1 %s at %g, want running at 0.75", t1.State, t1.FractionDone)
	}
	if got, want := t1.RemainingWork(s.doc.ProjectDCF("A")), 0.6e12; !near(got, want) {
		t.Errorf("t1's remaining work %g, want %g (a quarter to go of its real work)", got, want)
	}
	for s.Step() {
	}
	if t1.State != state.TaskDone {
		t.Fatalf("t1 %s, want done", t1.State)
	}
	if got := s.doc.Projects[0].DurationCorrectionFactor; !near(got, 2) {
		t.Errorf("DCF %g after a task ran twice its estimate, want 2", got)
	}
	// t2's estimate is now corrected: twice 1.2e12 minus its work done.
	t2 := &s.doc.Tasks[1]
	if got, want := t2.RemainingWork(2), 2*1.2e12*(1-t2.FractionDone); !near(got, want) {
		t.Errorf("t2's remaining work %g, want %g", got, want)
	}
}
