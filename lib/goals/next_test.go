package goals

import (
	"math"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
)

// TestNextReportsFirst: at a step's first poll a project with a result overdue for
// reporting is contacted first, asked for what Request would ask it alone for; after
// it, Request's choice among the others.
func TestNextReportsFirst(t *testing.T) {
	d := doc()
	d.Tasks = []state.Task{
		task("a1", "A", "a", 1e15, 1, 1e7),
		task("a2", "A", "a", 1e15, 1, 1e7),
		task("b1", "B", "b", 1e12, 0, 50000), // done, deadline within a day: overdue
	}
	d.Tasks[2].State = state.TaskDone
	p, ok := Next(d, 100, nil)
	if !ok || p.Project != 1 || p.Request.Project != "B" || d.Request == nil || d.Request.Project != "B" {
		t.Fatalf("first RPC %+v, recorded %+v", p, d.Request)
	}
	if p.Request.CPUReqSecs != 0.6*86400*0.5 {
		t.Errorf("B asked for %g CPU seconds, want its whole buffer %g", p.Request.CPUReqSecs, 0.6*86400*0.5)
	}
	if p, ok := Next(d, 100, []int{1}); ok {
		t.Errorf("after B: %+v; A holds more than it wants", p)
	}
}

// TestNextReportsOverdue: jobs of a 10-hour latency (36,000 s). A's 14,000-second job
// leaves less than 0.3 × 36,000 = 10,800 s once twice its run time is set aside, so A
// holds at most 10,800 s at its rate and asks below half that: 8,100 CPU-seconds at 1.5
// CPUs. B's 5,000-second job leaves more, so B may hold half the latency, 18,000 s, and
// asks below 4,500 CPU-seconds at 0.5 CPU. A holds 14,000, B 5,000 and both CPUs run: no
// project needs work. The host holds 19,000 CPU-seconds, 0.11 days of its 2 CPUs, below
// seed 000's low-water mark of 0.15 days, so seed 000's Poll starts a get-work session
// instead of reporting B's done result (due in 6,000 s); the goals policy reports it,
// asking for nothing.
func TestNextReportsOverdue(t *testing.T) {
	const now = 100000
	mk := func(aSecs float64) *state.Document {
		d := doc()
		d.Preferences.WorkBufMinDays = 0.15
		d.Tasks = []state.Task{
			task("a1", "A", "a", aSecs*1e9, now-3600, now+32400),
			task("b1", "B", "b", 5000e9, now-3600, now+32400),
			task("b0", "B", "b", 1000e9, now-30000, now+6000),
		}
		d.Tasks[0].State, d.Tasks[1].State, d.Tasks[2].State = state.TaskRunning, state.TaskRunning, state.TaskDone
		return d
	}
	d := mk(14000)
	if dec := rpc.Poll(d, now); dec.Action != rpc.GetWork {
		t.Fatalf("seed 000's Poll: %v, want a get-work session (the case this rule is for)", dec.Action)
	}
	plan, ok := Next(d, now, nil)
	if !ok || plan.Project != 1 || plan.Request.CPUReqSecs != 0 || plan.Request.CPUReqInstances != 0 ||
		!strings.HasPrefix(plan.Request.Reason, `report: project "B" has a result overdue`) {
		t.Errorf("first RPC %+v %v, want a report-only RPC to B", plan, ok)
	}
	if plan, ok := Next(d, now, []int{1}); ok {
		t.Errorf("after B: %+v, want none", plan)
	}
	// B's last RPC failed: no report-only RPC (its server is likely down).
	d = mk(14000)
	d.Projects[1].NRPCFailures = 1
	if plan, ok := Next(d, now, nil); ok {
		t.Errorf("B failing: %+v, want none", plan)
	}
	// ... unless the result is due within a scheduling period (an hour): not reported,
	// it is lost whatever the backoff.
	d = mk(14000)
	d.Projects[1].NRPCFailures = 1
	d.Tasks[2].ReportDeadline = now + 3000
	if plan, ok := Next(d, now, nil); !ok || plan.Project != 1 || plan.Request.CPUReqSecs != 0 {
		t.Errorf("B failing, its result due in 3000 s: %+v %v, want a report-only RPC to B", plan, ok)
	}
	if plan, ok := Next(d, now, []int{1}); ok {
		t.Errorf("B failing, its result due in 3000 s, B asked: %+v, want none", plan)
	}
	// A holds 7,200 s, below its 13,500 (a job short beside its 10-hour latency: A may
	// hold half of it, 27,000 CPU-seconds): Request's choice first, A asked for
	// 27,000 − 7,200; then B's report.
	d = mk(7200)
	plan, ok = Next(d, now, nil)
	if !ok || plan.Project != 0 || math.Abs(plan.Request.CPUReqSecs-19800) > 1e-6 {
		t.Errorf("first RPC %+v %v, want A asked for 19800 s", plan, ok)
	}
	plan, ok = Next(d, now, []int{0})
	if !ok || plan.Project != 1 || plan.Request.CPUReqSecs != 0 {
		t.Errorf("second RPC %+v %v, want a report-only RPC to B", plan, ok)
	}
}

// TestNextReportPiggybacksLone: the host's one project, above its low-water mark but
// below its want, is asked for the difference on the RPC that reports its result, as
// BOINC's client piggybacks a request on a report (c027: goals' queue ran down to the
// low-water mark, the server went down, the CPUs ran dry); with two projects the
// report asks for nothing (TestNextReportsOverdue).
func TestNextReportPiggybacksLone(t *testing.T) {
	const now = 100000
	d := doc()
	d.Projects, d.AppVersions = d.Projects[:1], d.AppVersions[:1]
	d.Tasks = []state.Task{
		task("a1", "A", "a", 25000e9, now-3600, now+10*86400),
		task("a2", "A", "a", 25000e9, now-3600, now+10*86400),
		task("a0", "A", "a", 1000e9, now-30000, now+50000),
	}
	d.Tasks[0].State, d.Tasks[1].State, d.Tasks[2].State = state.TaskRunning, state.TaskRunning, state.TaskDone
	// A's want: both CPUs × the 0.6-day buffer (its latency, 10 days, caps it at 5 days
	// of both), 103,680 s; it holds 50,000, above its low-water mark (2 × 0.1 days).
	plan, ok := Next(d, now, nil)
	if !ok || plan.Project != 0 || math.Abs(plan.Request.CPUReqSecs-53680) > 1e-6 || plan.Request.CPUReqInstances != 0 ||
		!strings.HasPrefix(plan.Request.Reason, `report: project "A" has a result overdue`) || !strings.Contains(plan.Request.Reason, "piggybacked") {
		t.Errorf("RPC %+v %v, want A's report with 53680 CPU seconds piggybacked", plan, ok)
	}
	// At its want already: the report asks for nothing.
	d.Tasks[0].EstimatedFlops, d.Tasks[1].EstimatedFlops = 60000e9, 60000e9
	if plan, ok := Next(d, now, nil); !ok || plan.Project != 0 || plan.Request.CPUReqSecs != 0 {
		t.Errorf("A at its want: %+v %v, want a report-only RPC", plan, ok)
	}
}
