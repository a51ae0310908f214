package goals

import (
	"math"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
)

// doc: 2 CPUs at 1 GFLOPS; A (share 3) and B (share 1), one-CPU app versions.
func doc() *state.Document {
	return &state.Document{
		Version: 1,
		Host: state.Host{
			Resources: []state.Resource{{Type: "cpu", Instances: 2, Flops: 1e9}},
			TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1},
		},
		Preferences: state.Preferences{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5, CPUSchedulingPeriod: 3600},
		Projects: []state.Project{
			{Name: "A", ResourceShare: 3, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}}},
			{Name: "B", ResourceShare: 1, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}}},
		},
		AppVersions: []state.AppVersion{{Name: "a", Project: "A", AvgNCPUs: 1}, {Name: "b", Project: "B", AvgNCPUs: 1}},
	}
}

func task(name, project, av string, flops, received, deadline float64) state.Task {
	return state.Task{Name: name, Project: project, AppVersion: av, State: state.TaskReady, EstimatedFlops: flops,
		ReceivedTime: received, ReportDeadline: deadline}
}

// TestScheduleDeadlineMode: B is owed nothing, A much, yet B's task that would miss its
// deadline under round-robin runs first; a task that cannot be done in time at all is
// abandoned (done, never run).
func TestScheduleDeadlineMode(t *testing.T) {
	d := doc()
	d.Projects[0].Resources[0].LongTermDebt = 1e5
	d.Tasks = []state.Task{
		task("a1", "A", "a", 3600e9, 0, 1e6),
		task("a2", "A", "a", 3600e9, 0, 1e6),
		task("b1", "B", "b", 3600e9, 0, 3600+1000), // needs a CPU now
		task("b2", "B", "b", 7200e9, 0, 3600),      // cannot be done in time
	}
	abandoned := Schedule(d, 0)
	got := []state.TaskState{d.Tasks[0].State, d.Tasks[1].State, d.Tasks[2].State, d.Tasks[3].State}
	want := []state.TaskState{state.TaskRunning, state.TaskReady, state.TaskRunning, state.TaskDone}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: %s, want %s", d.Tasks[i].Name, got[i], want[i])
		}
	}
	if len(abandoned) != 1 || abandoned[0] != 3 {
		t.Errorf("abandoned %v, want [3]", abandoned)
	}
}

// TestRequestLatencyCap: A's jobs have a 2-hour latency. A 3,000-second job leaves less
// than 0.3 × 7200 s once twice its run time is set aside, so A holds 0.3 × 7200 s at its
// rate (1.5 CPUs): 3240 CPU-seconds; with that task running it asks for 240 s and the
// one idle CPU. A 1,000-second job leaves 5,200 s, of which A may hold half the latency:
// 3600 s at its rate, 5400 CPU-seconds.
func TestRequestLatencyCap(t *testing.T) {
	for _, c := range []struct{ secs, want float64 }{{3000, 0.3 * 7200 * 1.5}, {1000, 0.5 * 7200 * 1.5}} {
		d := doc()
		d.Tasks = []state.Task{task("a1", "A", "a", c.secs*1e9, 1, 7201)}
		d.Tasks[0].State = state.TaskRunning
		req, ok := Request(d, 1, nil)
		if !ok || req.Project != "B" && req.Project != "A" {
			t.Fatalf("no request: %+v", req)
		}
		for _, n := range Needs(d) {
			if n.Project == 0 && math.Abs(n.Want-c.want) > 1e-6 {
				t.Errorf("%g-s job: A wants %g, want %g", c.secs, n.Want, c.want)
			}
		}
		// A asked alone: its shortfall against the cap, and the idle CPU.
		req, ok = Request(d, 1, []int{1})
		if !ok || req.Project != "A" || math.Abs(req.CPUReqSecs-(c.want-c.secs)) > 1e-6 || req.CPUReqInstances != 1 {
			t.Errorf("%g-s job: request to A %+v", c.secs, req)
		}
	}
}

// TestAccountClamp: a project owed more than a day of the resource is owed a day.
func TestAccountClamp(t *testing.T) {
	d := doc()
	used := [][]float64{{0}, {2}}
	Account(d, used, 1e6, 1e6)
	if a := d.Projects[0].Resources[0].LongTermDebt; a != 2*86400 {
		t.Errorf("A's debt %g, want the clamp %d", a, 2*86400)
	}
}

// TestDecide: A holds 1,000 s of a 2-hour-latency job on one of two CPUs; B nothing.
// A CPU is idle, so the urgency is need_work_immediately; A would be asked for its cap
// (half the latency: the job is short beside it) less what it holds, B (no job seen:
// the whole buffer) for 0.6 d × 0.5 CPU.
func TestDecide(t *testing.T) {
	d := doc()
	d.Tasks = []state.Task{task("a1", "A", "a", 1000e9, 1, 7201)}
	f := Decide(d, 1)
	if f.Urgency.String() != "need_work_immediately" {
		t.Errorf("urgency %s (%s)", f.Urgency, f.Reason)
	}
	want := []float64{5400 - 1000, 0.6 * 86400 * 0.5}
	for p := range want {
		if math.Abs(f.CPURequest[p]-want[p]) > 1e-6 {
			t.Errorf("%s: work request %g, want %g", d.Projects[p].Name, f.CPURequest[p], want[p])
		}
	}
	Apply(d, f, 1)
	if d.WorkFetch.Urgency != "need_work_immediately" || d.Projects[1].WorkRequest != want[1] {
		t.Errorf("recorded %+v, B's work_request %g", d.WorkFetch, d.Projects[1].WorkRequest)
	}
	// Every project at its want and the CPUs taken: nothing needed.
	d.Tasks = []state.Task{task("a1", "A", "a", 3240e9, 1, 7201), task("b1", "B", "b", 0.6*86400*0.5e9, 1, 1e7)}
	if f := Decide(d, 1); f.Urgency.String() != "dont_need_work" || f.CPURequest[0] != 0 || f.CPURequest[1] != 0 {
		t.Errorf("full buffers: %s, requests %v", f.Urgency, f.CPURequest)
	}
}

// gpuDoc is doc() with an NVIDIA GPU and A's GPU version taking cpus CPUs beside it,
// and the tasks g1 (A's GPU task), a1, b1 and then more.
func gpuDoc(cpus float64, more ...state.Task) *state.Document {
	d := doc()
	d.Host.Resources = append(d.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 1e10})
	d.AppVersions = append(d.AppVersions, state.AppVersion{Name: "a_gpu", Project: "A", AvgNCPUs: cpus, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}})
	d.Tasks = append([]state.Task{
		task("g1", "A", "a_gpu", 3600e10, 0, 1e6),
		task("a1", "A", "a", 3600e9, 0, 1e6),
		task("b1", "B", "b", 3600e9, 0, 1e6),
	}, more...)
	return d
}

// TestOvercommitBesideCoprocessor: a GPU task that takes a fifth of a CPU, and the two
// CPUs still both get a CPU task (2.2 CPUs committed, BOINC's rule: state.CPUsFit);
// only one did, and 0.8 of a CPU idled while the GPU task ran.
func TestOvercommitBesideCoprocessor(t *testing.T) {
	d := gpuDoc(0.2, task("b2", "B", "b", 3600e9, 0, 1e6))
	Schedule(d, 0)
	running := 0
	for _, tk := range d.Tasks {
		if tk.State == state.TaskRunning {
			running++
		}
	}
	if d.Tasks[0].State != state.TaskRunning || running != 3 {
		t.Errorf("%d tasks running (GPU task %s), want the GPU task and two CPU tasks", running, d.Tasks[0].State)
	}
}

// TestScheduleGPUsSuspended: while GPU computing is suspended (state.Document.GPUsSuspended,
// BOINC's gpu_suspend_reason) no coprocessor task runs and the CPUs its tasks would
// hold go to CPU tasks: a GPU task taking 1.5 CPUs beside two CPUs left one CPU task
// waiting and 0.5 of a CPU idle while the GPU computed nothing (c103, c011 under
// --emulate boinc). Once computing resumes the GPU task runs again.
func TestScheduleGPUsSuspended(t *testing.T) {
	d := gpuDoc(1.5)
	states := func() []state.TaskState {
		return []state.TaskState{d.Tasks[0].State, d.Tasks[1].State, d.Tasks[2].State}
	}
	Schedule(d, 0)
	if got := states(); !slices.Equal(got, []state.TaskState{state.TaskRunning, state.TaskRunning, state.TaskReady}) {
		t.Fatalf("GPUs computing: %v, want the GPU task and one CPU task running", got)
	}
	d.GPUsSuspended = true
	Schedule(d, 60)
	if got := states(); !slices.Equal(got, []state.TaskState{state.TaskPreempted, state.TaskRunning, state.TaskRunning}) {
		t.Errorf("GPUs suspended: %v, want the GPU task preempted and both CPU tasks running", got)
	}
	d.GPUsSuspended = false
	Schedule(d, 120)
	if d.Tasks[0].State != state.TaskRunning {
		t.Errorf("GPUs computing again: the GPU task %s, want running", d.Tasks[0].State)
	}
}

// TestRequestOverservedWaits: B is ahead of its share by more than a scheduling period
// of the two CPUs (7,200 s) and holds nothing, below its low-water mark (0.1 d × 0.5
// CPU). It is not asked while the CPUs' work as a whole (A's) is above the sum of the
// projects' low-water marks (0.1 d × 2 CPUs), nor, once that runs low, while A, owed
// more, may be asked instead (A holds more than its own low-water mark, 12,960 s: no
// one is asked until the CPUs run low enough for A, or one idles); it is when A is
// backed off, and at once when it is ahead by less than a period.
func TestRequestOverservedWaits(t *testing.T) {
	mk := func(aSecs, bDebt float64, aBackedOff bool) *state.Document {
		d := doc()
		d.Projects[1].Resources[0].LongTermDebt = bDebt
		if aBackedOff {
			d.Projects[0].Resources[0].BackoffUntil = 1e9
		}
		d.Tasks = []state.Task{task("a1", "A", "a", aSecs/2*1e9, 0, 1e7), task("a2", "A", "a", aSecs/2*1e9, 0, 1e7)}
		d.Tasks[0].State, d.Tasks[1].State = state.TaskRunning, state.TaskRunning
		return d
	}
	for _, c := range []struct {
		aSecs, bDebt float64
		aBackedOff   bool
		asked        bool
	}{
		{14000, -7201, true, true},   // the CPUs' 14,000 s are below 17,280, A may not be asked
		{14000, -7201, false, false}, // A may be asked, and is owed more
		{20000, -7201, true, false},  // the CPUs hold enough: B waits
		{20000, -7199, false, true},  // within a period of its share: B refills its buffer
		{200000, -7199, false, true}, // whatever the others hold
		{200000, -1e6, true, false},  // far ahead
	} {
		req, ok := Request(mk(c.aSecs, c.bDebt, c.aBackedOff), 1, nil)
		if ok != c.asked || ok && req.Project != "B" {
			t.Errorf("A holding %g s (backed off %v), B's debt %g: request %+v %v, want B asked %v", c.aSecs, c.aBackedOff, c.bDebt, req, ok, c.asked)
		}
	}
}

// TestAbandonByUncorrectedEstimate: a correction factor above 1 does not make an
// unstarted task look too long to finish (A's factor 10, learnt from one job whose
// estimate was far too low: tested with it, every new job would be abandoned and none
// would finish to bring the factor down); a factor below 1 shortens the estimate as
// everywhere else.
func TestAbandonByUncorrectedEstimate(t *testing.T) {
	for _, c := range []struct {
		dcf, secs float64
		abandon   bool
	}{
		{10, 1000, false},  // 10,000 s corrected, 1,000 s as estimated: it may make it
		{10, 6000, true},   // not even as estimated
		{0.5, 8000, false}, // 4,000 s corrected
		{0.5, 12000, true}, // 6,000 s corrected
	} {
		d := doc()
		d.Projects[0].DurationCorrectionFactor = c.dcf
		d.Tasks = []state.Task{task("a1", "A", "a", c.secs*1e9, 0, 5000)}
		abandoned := Schedule(d, 0)
		if got := len(abandoned) == 1; got != c.abandon {
			t.Errorf("factor %g, %g s estimated, deadline in 5,000 s: abandoned %v, want %v", c.dcf, c.secs, got, c.abandon)
		}
	}
}

// TestRequestIdleAsksNoWaitingResource: both CPUs idle and A, owed most, may not be
// contacted, so B is asked for them; B is far ahead of its share on the GPU, which holds
// A's day of work, so B is not asked for GPU work with them (it was: its buffer's worth
// of GPU jobs, which then ran beside A's).
func TestRequestIdleAsksNoWaitingResource(t *testing.T) {
	d := doc()
	d.Host.Resources = append(d.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 1e10})
	d.AppVersions = append(d.AppVersions,
		state.AppVersion{Name: "a_gpu", Project: "A", AvgNCPUs: 0.1, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
		state.AppVersion{Name: "b_gpu", Project: "B", AvgNCPUs: 0.1, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}})
	d.Projects[0].MinRPCTime = 1e9
	d.Projects[1].Resources = append(d.Projects[1].Resources, state.ProjectResource{Type: "NVIDIA", AccumulateDebt: true, LongTermDebt: -1e5})
	d.Tasks = []state.Task{task("g1", "A", "a_gpu", 86400e10, 0, 1e7)}
	d.Tasks[0].State = state.TaskRunning
	req, ok := Request(d, 1, nil)
	if !ok || req.Project != "B" || req.CPUReqInstances != 2 || len(req.Coprocs) != 0 {
		t.Errorf("request %+v %v, want B asked for the two idle CPUs and no GPU work", req, ok)
	}
	// Not ahead of its share: asked for its GPU buffer too.
	d.Projects[1].Resources[1].LongTermDebt = 0
	if req, ok := Request(d, 1, nil); !ok || req.Project != "B" || len(req.Coprocs) != 1 || req.Coprocs[0].ReqSecs <= 0 {
		t.Errorf("request %+v %v, want B asked for the CPUs and GPU work", req, ok)
	}
}

// TestAbandonStarted: a started task that cannot be done by its deadline even run
// without a break from now on is abandoned (its time is wasted either way, and its CPU
// goes to work that can still count); one that can is kept, and so is one that could
// only by its estimate uncorrected (a factor above 1 is left out, as for an unstarted
// task).
func TestAbandonStarted(t *testing.T) {
	for _, c := range []struct {
		name      string
		dcf, done float64 // the project's factor; the task's FLOPs done of 6,000e9
		abandon   bool
	}{
		{"4,000 s left, deadline in 5,000 s", 1, 2000e9, false},
		{"6,000 s left, deadline in 5,000 s", 1, 0.1e9, true},
		{"12,000 s left by a factor of 2, 6,000 s without it", 2, 0.1e9, true},
		{"8,000 s left by a factor of 2, 4,000 s without it", 2, 2000e9, false},
	} {
		d := doc()
		d.Projects[0].DurationCorrectionFactor = c.dcf
		tk := task("a1", "A", "a", 6000e9, 0, 5000)
		tk.State, tk.FlopsDone = state.TaskPreempted, c.done
		d.Tasks = []state.Task{tk}
		abandoned := Schedule(d, 0)
		if got := len(abandoned) == 1; got != c.abandon {
			t.Errorf("%s: abandoned %v, want %v", c.name, got, c.abandon)
		}
		if c.abandon && d.Tasks[0].State != state.TaskDone {
			t.Errorf("%s: state %s, want done", c.name, d.Tasks[0].State)
		}
	}
}

// TestAbandonStartedByProgress: a started task whose progress says how long it really
// takes is judged by it, whatever its estimate says: 2,000e9 FLOPs done of an estimate of
// 3,000e9 leaves 1,000 s by the estimate, but at a fraction done of 0.25 the task needs
// 6,000 s more, past its deadline in 5,000 s; at 0.5, 2,000 s more, so it is kept though
// its estimate (of 6,000e9, 4,000 s left) would have been as close. Without a reported
// progress the estimate decides.
func TestAbandonStartedByProgress(t *testing.T) {
	for _, c := range []struct {
		name    string
		est, fd float64
		abandon bool
	}{
		{"1,000 s left by the estimate, 6,000 s by the progress", 3000e9, 0.25, true},
		{"4,000 s left by the estimate, 2,000 s by the progress", 6000e9, 0.5, false},
		{"7,000 s left by the estimate, 2,000 s by the progress", 9000e9, 0.5, false},
		{"1,000 s left by the estimate, no progress reported", 3000e9, 0, false},
	} {
		d := doc()
		tk := task("a1", "A", "a", c.est, 0, 5000)
		tk.State, tk.FlopsDone, tk.FractionDone = state.TaskPreempted, 2000e9, c.fd
		d.Tasks = []state.Task{tk}
		abandoned := Schedule(d, 0)
		if got := len(abandoned) == 1; got != c.abandon {
			t.Errorf("%s: abandoned %v, want %v", c.name, got, c.abandon)
		}
	}
}

// TestNeedsCountOnFraction: a project's buffer is sized by the time the host is on, not
// by its active fraction: on half the time and active half of that, A (3/4 of 2 CPUs)
// holds 2 × 0.75 × 0.5 of the low-water mark's seconds, not a quarter.
func TestNeedsCountOnFraction(t *testing.T) {
	d := doc()
	d.Host.TimeStats.OnFrac, d.Host.TimeStats.ActiveFrac = 0.5, 0.5
	low, high := rpc.WaterMarks(&d.Preferences)
	for _, nd := range Needs(d) {
		if nd.Project != 0 {
			continue
		}
		wantLow, wantHigh := 2*0.75*0.5*low*86400, 2*0.75*0.5*high*86400
		if math.Abs(nd.Low-wantLow) > 1e-6 || math.Abs(nd.Want-wantHigh) > 1e-6 {
			t.Errorf("A: low %g want %g, expected %g and %g", nd.Low, nd.Want, wantLow, wantHigh)
		}
	}
}

// TestScheduleSqueezedStartedTask: one CPU; B's started task has 600 s left and its
// deadline in 2,000 s, B's two new 2,500-second tasks theirs in 3,000 s. The new ones
// are late in the round-robin simulation, the started one is not, yet run after either
// of them it would miss its deadline: it runs first (earliest deadline), not the late
// task. With more time to its deadline it waits behind the late task as before.
func TestScheduleSqueezedStartedTask(t *testing.T) {
	for _, c := range []struct {
		deadline float64 // the started task's
		runs     int     // the task that runs
	}{
		{2000, 0},
		{4000, 1},
	} {
		d := doc()
		d.Host.Resources[0].Instances = 1
		d.Preferences.WorkBufMinDays = 0.001
		s := task("s", "B", "b", 6000e9, 0, c.deadline)
		s.State, s.FlopsDone = state.TaskPreempted, 5400e9
		d.Tasks = []state.Task{s, task("l1", "B", "b", 2500e9, 0, 3000), task("l2", "B", "b", 2500e9, 0, 3000)}
		late := prsc.Late(d, 0, d.Preferences.WorkBufMinDays*86400)
		if late[0] || !late[1] || !late[2] {
			t.Fatalf("deadline %g: late %v, want the new tasks only", c.deadline, late)
		}
		Schedule(d, 0)
		for i := range d.Tasks {
			if got, want := d.Tasks[i].State == state.TaskRunning, i == c.runs; got != want {
				t.Errorf("deadline %g: %s %s, want task %d running", c.deadline, d.Tasks[i].Name, d.Tasks[i].State, c.runs)
			}
		}
	}
}

// TestRequestOwedTakesHeldInstances: B (share 1) is far ahead of its share and runs on
// both CPUs; A is owed more than a scheduling period and holds one task, more than its
// low-water mark, so no CPU is idle and A is below no mark. B's tasks could wait and
// still meet their deadlines, so the CPUs they hold are A's to ask for: A is asked for
// the one its own task would not take. Not
// when B's tasks have no time to wait, nor when A is owed less than a period (7,200
// instance-seconds here), nor when B is within a period of its share.
func TestRequestOwedTakesHeldInstances(t *testing.T) {
	mk := func(aDebt, bDebt, bDeadline float64) *state.Document {
		d := doc()
		d.Projects[0].Resources[0].LongTermDebt = aDebt
		d.Projects[1].Resources[0].LongTermDebt = bDebt
		d.Tasks = []state.Task{task("a1", "A", "a", 20000e9, 1, 1e7), task("b1", "B", "b", 3600e9, 1, bDeadline), task("b2", "B", "b", 3600e9, 1, bDeadline)}
		d.Tasks[1].State, d.Tasks[2].State = state.TaskRunning, state.TaskRunning
		return d
	}
	for _, c := range []struct {
		aDebt, bDebt, bDeadline float64
		asked                   bool
	}{
		{1e5, -1e5, 1e6, true},
		{1e5, -1e5, 3600 + 8640 + 3600, false}, // B's tasks cannot wait a period
		{7000, -1e5, 1e6, false},               // A owed less than a period
		{1e5, -7000, 1e6, false},               // B within a period of its share
	} {
		req, ok := Request(mk(c.aDebt, c.bDebt, c.bDeadline), 1, nil)
		if got := ok && req.Project == "A" && req.CPUReqInstances == 1; got != c.asked {
			t.Errorf("A's debt %g, B's %g, B's deadline %g: request %+v %v, want A asked for a CPU %v", c.aDebt, c.bDebt, c.bDeadline, req, ok, c.asked)
		}
	}
}

// TestNeedsAloneOnResource: on a host on half the time, a project that has a resource to
// itself wants the whole buffer of the resource (instances × the work buffer, BOINC's
// wall-clock shortfall) within its latency cap at its rate; a project that shares it
// wants the buffer at the on fraction's rate, and so does one whose latency is unknown.
func TestNeedsAloneOnResource(t *testing.T) {
	_, high := rpc.WaterMarks(&doc().Preferences)
	for _, c := range []struct {
		name     string
		alone    bool
		deadline float64 // of A's one job, received at 1 (0: no job)
		want     float64
	}{
		{"alone, long latency", true, 1 + 10*86400, 2 * high * 86400},
		{"alone, latency caps", true, 1 + 86400, 2 * 0.5 * 0.5 * 86400},
		{"alone, latency unknown", true, 0, 2 * 0.5 * high * 86400},
		{"shared", false, 1 + 10*86400, 2 * 0.75 * 0.5 * high * 86400},
	} {
		d := doc()
		d.Host.TimeStats.OnFrac = 0.5
		if c.alone {
			d.Projects, d.AppVersions = d.Projects[:1], d.AppVersions[:1]
		}
		if c.deadline > 0 {
			d.Tasks = []state.Task{task("a1", "A", "a", 100e9, 1, c.deadline)}
		}
		for _, nd := range Needs(d) {
			if nd.Project == 0 && math.Abs(nd.Want-c.want) > 1e-6 {
				t.Errorf("%s: A wants %g, want %g", c.name, nd.Want, c.want)
			}
		}
	}
}

// TestApplyReplyKeepsD: a reply without jobs leaves the project's D(P,R) set, so that it
// is owed its share while its server refuses it (c185: B's debt stayed 0 while A's
// late jobs filled the queue), and backs the resource off as seed 002's rule does; a
// type the reply names unsupported still loses D.
func TestApplyReplyKeepsD(t *testing.T) {
	d := doc()
	rng := prsc.NewRand(1)
	if err := ApplyReply(d, map[string]bool{"cpu": true}, prsc.Reply{Project: "B"}, 100, rng); err != nil {
		t.Fatal(err)
	}
	b := &d.Projects[1].Resources[0]
	if !b.AccumulateDebt {
		t.Fatal("B's D(P,cpu) cleared by a reply without jobs")
	}
	if !prsc.BackedOff(&d.Projects[1], "cpu", 100) {
		t.Error("B not backed off for the CPU after a reply without jobs")
	}
	// A runs both CPUs for an hour: B, refused, is owed its quarter.
	Account(d, [][]float64{{2}, {0}}, 3600, 3700)
	if b.LongTermDebt <= 0 {
		t.Errorf("B's debt %g after an hour of A alone, want > 0", b.LongTermDebt)
	}
	if err := ApplyReply(d, map[string]bool{"cpu": true}, prsc.Reply{Project: "B", Unsupported: []string{"cpu"}}, 200, rng); err != nil {
		t.Fatal(err)
	}
	if b.AccumulateDebt {
		t.Error("B's D(P,cpu) kept though the reply says the CPU is unsupported")
	}
}

// TestNeedsCapInRunTime: a project alone on a resource whose correction factor (3) is
// above what its started task shows (it ran as long as its uncorrected estimate said)
// has its latency cap counted in run time as the task shows it, so it may hold three
// times the corrected estimates the cap names; with no started task, or sharing the
// resource, the cap stays in corrected estimates (c052, c143: the factor twice or more
// the truth and the lone project's queue ran dry while its server was down).
func TestNeedsCapInRunTime(t *testing.T) {
	_, high := rpc.WaterMarks(&doc().Preferences)
	for _, c := range []struct {
		name           string
		alone, started bool
		want           float64
	}{
		{"alone, started", true, true, 2 * high * 86400},
		{"alone, nothing started", true, false, 2 * 0.5 * 86400},
		{"shared, started", false, true, 2 * 0.75 * 0.5 * 86400},
	} {
		d := doc()
		d.Projects[0].DurationCorrectionFactor = 3
		if c.alone {
			d.Projects, d.AppVersions = d.Projects[:1], d.AppVersions[:1]
		}
		a1 := task("a1", "A", "a", 100e9, 1, 1+86400)
		if c.started {
			a1.State, a1.FlopsDone, a1.FractionDone, a1.ElapsedTime = state.TaskRunning, 50e9, 0.5, 50
		}
		d.Tasks = []state.Task{a1}
		for _, nd := range Needs(d) {
			if nd.Project == 0 && math.Abs(nd.Want-c.want) > 1e-6 {
				t.Errorf("%s: A wants %g, want %g", c.name, nd.Want, c.want)
			}
		}
	}
}
