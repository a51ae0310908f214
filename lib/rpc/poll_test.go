package rpc

import (
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
)

// Every host here has CPUs of 1e9 FLOPS: 8.64e13 FLOPs of remaining work is 86,400 CPU
// seconds, one CPU-day. Water marks are low 0.5 days, high 0.5 + 1 = 1.5 days unless a
// case says otherwise.

const cpuDay = 8.64e13 // FLOPs one 1e9-FLOPS CPU does in a day

func proj(name string, share, avg float64) state.Project {
	at := 0.0
	if avg > 0 {
		at = t0
	}
	return state.Project{Name: name, ResourceShare: share, ExpAvgCPU: avg, ExpAvgTime: at,
		SchedulerURLs: []string{"http://" + name + "/cgi"}}
}

func task(name, project string, st state.TaskState, est, done, deadline, completed float64) state.Task {
	return state.Task{Name: name, Project: project, AppVersion: project + "_cpu", State: st,
		EstimatedFlops: est, FlopsDone: done, ReportDeadline: deadline, CompletedTime: completed}
}

func doc(t testing.TB, ncpus int, projects []state.Project, tasks ...state.Task) *state.Document {
	t.Helper()
	d := &state.Document{
		Version:     state.Version,
		Host:        state.Host{Resources: []state.Resource{{Type: state.ResourceCPU, Instances: ncpus, Flops: 1e9}}},
		Preferences: state.Preferences{WorkBufMinDays: 0.5, WorkBufAdditionalDays: 1, CPUSchedulingPeriod: 3600},
		Projects:    projects,
		Tasks:       tasks,
	}
	for _, p := range projects {
		d.AppVersions = append(d.AppVersions, state.AppVersion{Name: p.Name + "_cpu", Project: p.Name, AvgNCPUs: 1})
	}
	if err := state.Validate(d); err != nil {
		t.Fatalf("test document is invalid: %v", err)
	}
	return d
}

// TestOverdueReport: A's result is due in 20 hours, B's in 10 and C's in 5 but C is
// backed off: B first; with B asked, A; with both asked, none.
func TestOverdueReport(t *testing.T) {
	c := proj("C", 1, 0)
	c.MinRPCTime = t0 + 60
	d := doc(t, 1, []state.Project{proj("A", 1, 0), proj("B", 1, 0), c},
		task("a", "A", state.TaskDone, 1, 1, t0+20*3600, t0),
		task("b", "B", state.TaskDone, 1, 1, t0+10*3600, t0),
		task("c", "C", state.TaskDone, 1, 1, t0+5*3600, t0),
		task("b2", "B", state.TaskReady, 1, 0, t0+3600, 0))
	for _, tc := range []struct {
		asked    []int
		project  int
		deadline float64
	}{{nil, 1, t0 + 10*3600}, {[]int{1}, 0, t0 + 20*3600}, {[]int{0, 1}, -1, 0}} {
		if p, dl := OverdueReport(d, t0, tc.asked); p != tc.project || dl != tc.deadline {
			t.Errorf("asked %v: project %d deadline %g, want %d %g", tc.asked, p, dl, tc.project, tc.deadline)
		}
	}
}

func TestOverdue(t *testing.T) {
	day := float64(SecondsPerDay)
	tests := []struct {
		name string
		t    state.Task
		want bool
	}{
		{"deadline in 2 days, just done", task("r", "A", state.TaskDone, 1, 1, t0+2*day, t0), false},
		{"deadline in exactly a day", task("r", "A", state.TaskDone, 1, 1, t0+day, t0), true},   // 86400 <= 86400
		{"deadline in 23 hours", task("r", "A", state.TaskDone, 1, 1, t0+23*3600, t0), true},    // within the cushion
		{"deadline passed", task("r", "A", state.TaskDone, 1, 1, t0-60, t0-120), true},          // negative slack
		{"waited a day", task("r", "A", state.TaskDone, 1, 1, t0+10*day, t0-day), true},         // now − completed = 86400
		{"waited 23 hours", task("r", "A", state.TaskDone, 1, 1, t0+10*day, t0-23*3600), false}, // 82800 < 86400
		{"no completed time, far deadline", task("r", "A", state.TaskDone, 1, 1, t0+10*day, 0), false},
		{"running, deadline passed", task("r", "A", state.TaskRunning, 1, 0, t0-60, 0), false}, // not done
		{"already reported", task("r", "A", state.TaskReported, 1, 1, t0-60, t0-day*2), false}, // nothing to report
	}
	for _, tt := range tests {
		if got := Overdue(&tt.t, t0); got != tt.want {
			t.Errorf("%s: Overdue = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestEstimatedWork(t *testing.T) {
	ps := []state.Project{proj("A", 100, 0)}
	tests := []struct {
		name      string
		ncpus     int
		minDays   float64
		addDays   float64
		tasks     []state.Task
		wantDays  float64
		wantReqSc float64
	}{
		// ready 1 CPU-day + running half left (0.5) + preempted 0.25 = 1.75 CPU-days; done
		// and reported do not count. 1.75 / 2 CPUs = 0.875 days. High 1.5 → request 0.625
		// days × 86400 × 2 CPUs = 108000 CPU s.
		{"mixed states, 2 CPUs", 2, 0.5, 1, []state.Task{
			task("r1", "A", state.TaskReady, cpuDay, 0, t0+9e5, 0),
			task("r2", "A", state.TaskRunning, cpuDay, cpuDay/2, t0+9e5, 0),
			task("r3", "A", state.TaskPreempted, cpuDay/2, cpuDay/4, t0+9e5, 0),
			task("r4", "A", state.TaskDone, 10*cpuDay, 10*cpuDay, t0+9e5, t0),
			task("r5", "A", state.TaskReported, 10*cpuDay, 0, t0+9e5, t0),
		}, 0.875, 108000},
		// nothing: 0 days; request the whole 1.5 days × 86400 × 4 = 518400
		{"empty, 4 CPUs", 4, 0.5, 1, nil, 0, 518400},
		// done beyond the estimate counts 0: remaining max(0, 1 − 2) CPU-days
		{"overrun", 1, 0.5, 1, []state.Task{task("r1", "A", state.TaskRunning, cpuDay, 2*cpuDay, t0+9e5, 0)}, 0, 129600},
		// 3 CPU-days on 1 CPU = 3 days ≥ high 1.5: request 0
		{"above high water", 1, 0.5, 1, []state.Task{task("r1", "A", state.TaskReady, 3*cpuDay, 0, t0+9e5, 0)}, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := doc(t, tt.ncpus, ps, tt.tasks...)
			d.Preferences.WorkBufMinDays, d.Preferences.WorkBufAdditionalDays = tt.minDays, tt.addDays
			got := [2]float64{EstimatedWorkDays(d), WorkRequestSeconds(d)}
			if diff := cmp.Diff([2]float64{tt.wantDays, tt.wantReqSc}, got, approx); diff != "" {
				t.Errorf("(-want +got) [days, request seconds]\n%s", diff)
			}
		})
	}
	if low, high := WaterMarks(&state.Preferences{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5}); low != 0.1 || high != 0.6 {
		t.Errorf("WaterMarks(0.1, 0.5) = %v, %v; want 0.1, 0.6", low, high)
	}
}

func TestPoll(t *testing.T) {
	day := float64(SecondsPerDay)
	// Debts at t0: A 100/50 = 2, B 100/200 = 0.5, C has no CPU time: +Inf.
	a, b, c := proj("A", 100, 50), proj("B", 100, 200), proj("C", 100, 0)
	backedOff := func(p state.Project) state.Project { p.MinRPCTime = t0 + 60; return p }
	full := task("full", "A", state.TaskReady, 2*cpuDay, 0, t0+9e5, 0)   // 2 days on 1 CPU
	mid := task("mid", "A", state.TaskReady, cpuDay, 0, t0+9e5, 0)       // 1 day: between the marks
	overB := task("overB", "B", state.TaskDone, 1, 1, t0+3600, t0-60)    // deadline in an hour
	overA := task("overA", "A", state.TaskDone, 1, 1, t0+7200, t0-60)    // deadline in two hours
	fresh := task("fresh", "B", state.TaskDone, 1, 1, t0+5*day, t0-60)   // not overdue
	overC := task("overC", "C", state.TaskDone, 1, 1, t0+3600, t0-2*day) // waited two days
	tests := []struct {
		name     string
		projects []state.Project
		tasks    []state.Task
		want     Decision
		session  *state.RPCSession
	}{
		{"session active", []state.Project{a, b}, nil,
			Decision{Action: None, WorkDays: 0}, &state.RPCSession{Kind: "get_work", Started: t0 - 5}},
		// 0 days < 0.5
		{"below low water", []state.Project{a, b}, []state.Task{overB},
			Decision{Action: GetWork, WorkDays: 0}, nil},
		// 0 < 0.5 but nobody can be contacted; no overdue result either
		{"below low water, all backed off", []state.Project{backedOff(a), backedOff(b)}, nil,
			Decision{Action: None, WorkDays: 0}, nil},
		// 2 days ≥ 0.5 and nothing overdue
		{"enough work, nothing overdue", []state.Project{a, b}, []state.Task{full, fresh},
			Decision{Action: None, WorkDays: 2}, nil},
		// 2 ≥ 0.5; B overdue; B's debt 0.5 < A's 2: report only
		{"report, not the greatest debt", []state.Project{a, b}, []state.Task{full, overB},
			Decision{Action: Report, Project: "B", WorkDays: 2}, nil},
		// A overdue and A has the greatest debt (2 > 0.5), but 2 days ≥ high 1.5: no work
		{"report greatest debt above high water", []state.Project{a, b}, []state.Task{full, overA},
			Decision{Action: Report, Project: "A", WorkDays: 2}, nil},
		// 1 day: ≥ low 0.5, < high 1.5; A overdue with the greatest debt: ask work
		{"report and ask work", []state.Project{a, b}, []state.Task{mid, overA},
			Decision{Action: Report, Project: "A", AskWork: true, WorkDays: 1}, nil},
		// A and B overdue: B's deadline t0+3600 is earlier than A's t0+7200
		{"earliest deadline first", []state.Project{a, b}, []state.Task{mid, overA, overB},
			Decision{Action: Report, Project: "B", WorkDays: 1}, nil},
		// B backed off: A is reported even though B's deadline is earlier
		{"backed-off project skipped", []state.Project{a, backedOff(b)}, []state.Task{mid, overB, overA},
			Decision{Action: Report, Project: "A", AskWork: true, WorkDays: 1}, nil},
		// C (+Inf) has the greatest debt but is backed off: A (2) is the greatest contactable
		{"greatest among contactable", []state.Project{a, b, backedOff(c)}, []state.Task{mid, overA},
			Decision{Action: Report, Project: "A", AskWork: true, WorkDays: 1}, nil},
		// C overdue by waiting, +Inf debt: ask work
		{"no CPU time yet is the greatest", []state.Project{a, b, c}, []state.Task{mid, overC},
			Decision{Action: Report, Project: "C", AskWork: true, WorkDays: 1}, nil},
		// B and D have no CPU time yet and the same share: both have the greatest debt
		// (+Inf, no larger share), so B, after D in the document, asks for work too.
		{"tie for the greatest debt, no CPU time", []state.Project{proj("D", 100, 0), proj("B", 100, 0)}, []state.Task{task("midD", "D", state.TaskReady, cpuDay, 0, t0+9e5, 0), overB},
			Decision{Action: Report, Project: "B", AskWork: true, WorkDays: 1}, nil},
		// A 100/50 = 2 and B 200/100 = 2: B ties for the greatest debt and asks for work.
		{"tie for the greatest debt", []state.Project{a, proj("B", 200, 100)}, []state.Task{mid, overB},
			Decision{Action: Report, Project: "B", AskWork: true, WorkDays: 1}, nil},
		// Both without CPU time, but A's share 300 > B's 100: A comes first (DESIGN §5's
		// order among infinite debts), so B does not ask.
		{"no CPU time, larger share first", []state.Project{proj("A", 300, 0), proj("B", 100, 0)}, []state.Task{mid, overB},
			Decision{Action: Report, Project: "B", WorkDays: 1}, nil},
		// 0.5 days is not below the low-water mark 0.5: no get-work session; B's overdue
		// result makes it a report session (B 0.5 < A 2: no work).
		{"exactly at the low-water mark", []state.Project{a, b}, []state.Task{task("half", "A", state.TaskReady, cpuDay/2, 0, t0+9e5, 0), overB},
			Decision{Action: Report, Project: "B", WorkDays: 0.5}, nil},
		// 1.5 days is not below the high-water mark 1.5: A, greatest, reports only.
		{"exactly at the high-water mark", []state.Project{a, b}, []state.Task{task("x", "A", state.TaskReady, 1.5*cpuDay, 0, t0+9e5, 0), overA},
			Decision{Action: Report, Project: "A", WorkDays: 1.5}, nil},
		// min_rpc_time exactly now: the earliest time an RPC may be done, so A counts.
		{"min_rpc_time now may be contacted", []state.Project{func() state.Project { p := a; p.MinRPCTime = t0; return p }()}, nil,
			Decision{Action: GetWork, WorkDays: 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := doc(t, 1, tt.projects, tt.tasks...)
			d.RPCSession = tt.session
			got := Poll(d, t0)
			if got.Reason == "" {
				t.Errorf("no reason given")
			}
			// Without its words (PollIfOverdue's), the decision is the same, and a
			// report's reason is Poll's.
			quiet := poll(d, t0, false, true)
			if got.Action == Report && quiet.Reason != got.Reason {
				t.Errorf("quiet report's reason %q, want Poll's %q", quiet.Reason, got.Reason)
			}
			if got.Action != Report && quiet.Reason != "" {
				t.Errorf("quiet %s decision has a reason: %q", quiet.Action, quiet.Reason)
			}
			tt.want.LowWater, tt.want.HighWater = 0.5, 1.5
			got.Reason, quiet.Reason = "", ""
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(got, quiet); diff != "" {
				t.Errorf("quiet (-Poll +quiet)\n%s", diff)
			}
		})
	}
}

func TestSessionRecord(t *testing.T) {
	d := doc(t, 1, []state.Project{proj("A", 1, 0)})
	StartSession(d, Decision{Action: None}, t0)
	if d.RPCSession != nil {
		t.Fatalf("None started a session: %+v", d.RPCSession)
	}
	StartSession(d, Decision{Action: Report, Project: "A", AskWork: true}, t0)
	want := &state.RPCSession{Kind: "report", Project: "A", AskWork: true, Started: t0}
	if diff := cmp.Diff(want, d.RPCSession); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if err := state.Validate(d); err != nil {
		t.Errorf("document with a session is invalid: %v", err)
	}
	if Poll(d, t0+1).Action != None {
		t.Errorf("Poll started a second session")
	}
	EndSession(d)
	if d.RPCSession != nil {
		t.Errorf("EndSession left %+v", d.RPCSession)
	}
	StartSession(d, Decision{Action: GetWork}, t0)
	if diff := cmp.Diff(&state.RPCSession{Kind: "get_work", Started: t0}, d.RPCSession); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestNextGetWork(t *testing.T) {
	// Debts: A 2, B 0.5, C +Inf (share 100), D +Inf (share 300) but backed off.
	a, b, c, dd := proj("A", 100, 50), proj("B", 100, 200), proj("C", 100, 0), proj("D", 300, 0)
	dd.MinRPCTime = t0 + 1
	d := doc(t, 1, []state.Project{a, b, c, dd})
	StartSession(d, Decision{Action: GetWork}, t0)
	var order []string
	for range 6 {
		i := NextGetWork(d, t0)
		if i < 0 {
			break
		}
		order = append(order, d.Projects[i].Name)
	}
	// C (+Inf), A (2), B (0.5); D is backed off; then the loop ends.
	if diff := cmp.Diff([]string{"C", "A", "B"}, order); diff != "" {
		t.Errorf("order (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"C", "A", "B"}, d.RPCSession.Contacted); diff != "" {
		t.Errorf("contacted (-want +got)\n%s", diff)
	}

	// Work arrives after the first RPC: 2 CPU-days ≥ high 1.5 ends the loop.
	d = doc(t, 1, []state.Project{a, b, c})
	if i := NextGetWork(d, t0); i != 2 { // C; the session is started implicitly
		t.Fatalf("first = %d, want 2 (C)", i)
	}
	d.Tasks = append(d.Tasks, task("new", "C", state.TaskReady, 2*cpuDay, 0, t0+9e5, 0))
	if i := NextGetWork(d, t0); i != -1 {
		t.Errorf("after reaching high water: %d, want -1", i)
	}

	// At one day (between the marks) the loop goes on: the seed loops to high water.
	d = doc(t, 1, []state.Project{a, b}, task("mid", "A", state.TaskReady, cpuDay, 0, t0+9e5, 0))
	if i := NextGetWork(d, t0); i != 0 {
		t.Errorf("at 1 day: %d, want 0 (A)", i)
	}
	// "while estimated work < high water mark": exactly 1.5 days (3 CPU-days on 2 CPUs)
	// ends the loop.
	d = doc(t, 2, []state.Project{a, b}, task("x", "A", state.TaskReady, 3*cpuDay, 0, t0+9e5, 0))
	if i := NextGetWork(d, t0); i != -1 {
		t.Errorf("at exactly the high-water mark: %d, want -1", i)
	}
}

func TestMasterFetchesAndReportTasks(t *testing.T) {
	a, b, c := proj("A", 1, 0), proj("B", 1, 0), proj("C", 1, 0)
	a.MasterFetchPending, c.MasterFetchPending = true, true
	c.MinRPCTime = t0 + 3600 // the flag alone decides
	d := doc(t, 1, []state.Project{a, b, c},
		task("a1", "A", state.TaskDone, 1, 1, t0+9e5, t0),
		task("b1", "B", state.TaskDone, 1, 1, t0+9e5, t0),
		task("a2", "A", state.TaskRunning, 1, 0, t0+9e5, 0),
		task("a3", "A", state.TaskDone, 1, 1, t0+9e5, t0),
		task("a4", "A", state.TaskReported, 1, 1, t0+9e5, t0))
	if diff := cmp.Diff([]int{0, 2}, MasterFetches(d)); diff != "" {
		t.Errorf("MasterFetches (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]int{0, 3}, ReportTasks(d, "A")); diff != "" {
		t.Errorf("ReportTasks (-want +got)\n%s", diff)
	}
}

func TestActionString(t *testing.T) {
	got := []string{None.String(), GetWork.String(), Report.String(), Action(9).String(),
		MasterFailed.String(), MasterUnchanged.String(), MasterNewSchedulers.String(), MasterOutcome(9).String()}
	want := []string{"none", "get_work", "report", "unknown", "failed", "unchanged", "new_schedulers", "unknown"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}
