package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/state"
)

// TestOccupy: BUSY_TIME_ESTIMATOR::update puts a job on the least busy instance (the
// first among equals) and the ones after it, wrapping, whole instances only.
func TestOccupy(t *testing.T) {
	b := []float64{5, 1, 3}
	occupy(b, 10, 2.7) // two instances from the second
	if want := []float64{5, 11, 13}; !slices.Equal(b, want) {
		t.Errorf("after a 2.7-instance job: %v, want %v", b, want)
	}
	occupy(b, 10, 0.5)
	if want := []float64{5, 11, 13}; !slices.Equal(b, want) {
		t.Errorf("a job of half an instance changed the estimate: %v, want %v", b, want)
	}
	occupy(b, 1, 3) // from the first (5), wrapping round
	if want := []float64{6, 12, 14}; !slices.Equal(b, want) {
		t.Errorf("after a 3-instance job: %v, want %v", b, want)
	}
}

// TestBOINCBusyTimes: policy boinc's delay is BOINC's client's: every job its
// simulation sees late occupies the CPUs for its avg_ncpus, a GPU job too (one CPU
// here), for its remaining time ÷ on × active; a GPU job's time on the GPU is ÷ on ×
// GPU active. prsc.BusyTimes, the server's delay for the other policies, leaves the
// GPU job off the CPUs and divides by on × active × GPU active.
func TestBOINCBusyTimes(t *testing.T) {
	doc := &state.Document{
		Version: 1,
		Host: state.Host{
			Resources: []state.Resource{{Type: "cpu", Instances: 2, Flops: 1e9}, {Type: "NVIDIA", Instances: 1, Flops: 1e10}},
			TimeStats: state.TimeStats{OnFrac: 0.5, ActiveFrac: 0.8, GPUActiveFrac: 0.5, ConnectedFrac: 1},
		},
		Preferences: state.Preferences{CPUSchedulingPeriod: 3600, WorkBufMinDays: 0.1},
		Projects:    []state.Project{{Name: "A", ResourceShare: 100}},
		Apps:        []state.App{{Project: "A", Name: "x"}},
		AppVersions: []state.AppVersion{
			{Name: "x_cpu", Project: "A", App: "x", AvgNCPUs: 1, Flops: 1e9},
			{Name: "x_gpu", Project: "A", App: "x", AvgNCPUs: 1, Flops: 1e10, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
		},
	}
	for i, av := range []string{"x_cpu", "x_cpu", "x_cpu", "x_gpu"} {
		flops := 3.6e12
		if av == "x_gpu" {
			flops = 3.6e13
		}
		// Due in 100 s: every one is late.
		doc.Tasks = append(doc.Tasks, state.Task{Name: string(rune('a' + i)), Project: "A", AppVersion: av, State: state.TaskReady, EstimatedFlops: flops, ReportDeadline: 100})
	}
	if err := state.Validate(doc); err != nil {
		t.Fatal(err)
	}
	bp := &boincPolicy{}
	got := bp.busyTimes(doc, 0)
	// CPU jobs: 3600 s ÷ 0.4 = 9000 s each, on [0 0] → [9000 0] → [9000 9000] →
	// [18000 9000]. The GPU job: 3600 s ÷ (0.5 × 0.5) = 14400 s, on the GPU and (the
	// same time: BOINC takes one duration a job) on the second CPU: [18000 23400].
	if want := []float64{18000, 14400}; !slices.Equal(got, want) {
		t.Errorf("policy boinc's delays %v, want %v", got, want)
	}
	if other := prsc.BusyTimes(doc, 0); slices.Equal(other, got) {
		t.Errorf("prsc.BusyTimes gives the same %v: the test shows no difference", other)
	}
}

// TestAsksWork: the server asks the policy for its delay only when a request asks for
// work.
func TestAsksWork(t *testing.T) {
	for _, c := range []struct {
		req  state.WorkRequest
		want bool
	}{
		{state.WorkRequest{}, false},
		{state.WorkRequest{CPUReqSecs: 1}, true},
		{state.WorkRequest{CPUReqInstances: 1}, true},
		{state.WorkRequest{Coprocs: []state.CoprocRequest{{Type: "NVIDIA"}}}, false},
		{state.WorkRequest{Coprocs: []state.CoprocRequest{{Type: "NVIDIA", ReqSecs: 5}}}, true},
	} {
		if got := asksWork(&c.req); got != c.want {
			t.Errorf("asksWork(%+v) = %v, want %v", c.req, got, c.want)
		}
	}
}

// TestBOINCBusyTimesStarted: BOINC's client takes a started task's remaining run time
// from its ACTIVE_TASK, in its emulator its true remaining work (client/result.cpp
// RESULT::estimated_runtime_remaining, #ifdef SIM), even before it has computed; an
// unstarted one's is its estimate × the correction factor. c003 at seed 1 parted so: a
// task started a step before, not yet computed, was 1,808 s in policy boinc's busy
// time (estimate × factor) and 551 s in BOINC's, whose server then sent 2 jobs where
// bsim's sent none.
func TestBOINCBusyTimesStarted(t *testing.T) {
	doc := &state.Document{
		Version:       1,
		BOINCEmulator: true,
		Host: state.Host{
			Resources: []state.Resource{{Type: "cpu", Instances: 1, Flops: 1e9}},
			TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1},
		},
		Preferences: state.Preferences{CPUSchedulingPeriod: 3600, WorkBufMinDays: 0.1},
		Projects:    []state.Project{{Name: "A", ResourceShare: 100, DurationCorrectionFactor: 2}},
		AppVersions: []state.AppVersion{{Name: "x", Project: "A", AvgNCPUs: 1, Flops: 1e9}},
		// Due in 100 s: late. Its estimate 1,000 s (× 2), its true work 300 s.
		Tasks: []state.Task{{Name: "a", Project: "A", AppVersion: "x", State: state.TaskReady, EstimatedFlops: 1e12, EmulatorFlopsLeft: 3e11, ReportDeadline: 100}},
	}
	for _, c := range []struct {
		state state.TaskState
		want  float64
	}{{state.TaskReady, 2000}, {state.TaskPreempted, 300}} {
		doc.Tasks[0].State = c.state
		bp := &boincPolicy{}
		if got := bp.busyTimes(doc, 0); got[0] != c.want {
			t.Errorf("a %s task's busy time %g, want %g", c.state, got[0], c.want)
		}
	}
}

// busyTimesByName is busyTimes' loop as it was before issue 30's forty-third round,
// each job's app version and project looked up by name and what is read of them taken
// again: TestBOINCBusyTimesAgainstByName's reference.
func busyTimesByName(doc *state.Document, order []int, started []bool) []float64 {
	h := &doc.Host
	busy := make([][]float64, len(h.Resources))
	for r, res := range h.Resources {
		busy[r] = make([]float64, res.Instances)
	}
	cpu := slices.IndexFunc(h.Resources, func(res state.Resource) bool { return res.Type == state.ResourceCPU })
	ts := &h.TimeStats
	for k, i := range order {
		t := &doc.Tasks[i]
		v := slices.IndexFunc(doc.AppVersions, func(av state.AppVersion) bool { return av.Name == t.AppVersion })
		p := slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == t.Project })
		if v < 0 || p < 0 {
			continue
		}
		av := &doc.AppVersions[v]
		speed := av.Speed(h)
		if speed <= 0 {
			continue
		}
		frac := ts.OnFrac * ts.ActiveFrac
		if av.Coproc != nil {
			frac = ts.OnFrac * ts.GPUActiveFrac
		}
		frac = min(1, max(0.01, frac))
		left := t.RemainingWork(doc.Projects[p].DCF())
		if started[k] && t.EmulatorFlopsLeft > 0 {
			left = t.EmulatorFlopsLeft
		}
		dur := left / speed / frac
		if cpu >= 0 {
			occupyByIndex(busy[cpu], dur, av.AvgNCPUs)
		}
		if r := resourceOf(h, av); av.Coproc != nil && r >= 0 && r != cpu {
			occupyByIndex(busy[r], dur, av.Instances())
		}
	}
	delay := make([]float64, len(h.Resources))
	for r, b := range busy {
		if len(b) > 0 {
			delay[r] = slices.Min(b)
		}
	}
	return delay
}

// occupyByIndex is occupy as it was before issue 30's forty-third round, the least
// busy instance read through its index at each test.
func occupyByIndex(busy []float64, dur, nused float64) {
	if len(busy) == 0 || nused < 1 {
		return
	}
	best := 0
	for k := range busy {
		if busy[k] < busy[best] {
			best = k
		}
	}
	for k := range int(nused) {
		busy[(best+k)%len(busy)] += dur
	}
}

// TestBOINCBusyTimesAgainstByName: on random queues of two projects and five app
// versions (of one CPU, several, a fraction of one, a GPU's, one of the host's speed), every
// job late and the app versions and projects mixed in the simulation's order,
// busyTimes' delays (the app version and project of the job before kept, the least
// busy instance found in a local) are busyTimesByName's, to the bit. It fails with
// the project's correction factor kept across a change of project, and with the
// coprocessor's resource kept across a change of app version.
func TestBOINCBusyTimesAgainstByName(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 43))
	versions := []state.AppVersion{
		{Name: "a1", Project: "A", App: "x", AvgNCPUs: 1, Flops: 1e9},
		{Name: "a3", Project: "A", App: "x", AvgNCPUs: 2.5, Flops: 2e9},
		{Name: "ag", Project: "A", App: "x", AvgNCPUs: 0.2, Flops: 1e10, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
		{Name: "b1", Project: "B", App: "y", AvgNCPUs: 0.5, Flops: 5e8},
		{Name: "b0", Project: "B", App: "y", AvgNCPUs: 1, Flops: 0},
	}
	var misses, switches int
	for trial := range 3000 {
		doc := &state.Document{
			Version:       1,
			BOINCEmulator: true,
			Host: state.Host{
				Resources: []state.Resource{{Type: "cpu", Instances: 3 + rng.IntN(6), Flops: 1e9}, {Type: "NVIDIA", Instances: 1 + rng.IntN(2), Flops: 1e10}},
				TimeStats: state.TimeStats{OnFrac: rng.Float64(), ActiveFrac: rng.Float64(), GPUActiveFrac: rng.Float64(), ConnectedFrac: 1},
			},
			Preferences: state.Preferences{CPUSchedulingPeriod: 3600, WorkBufMinDays: 0.1},
			Projects: []state.Project{
				{Name: "A", ResourceShare: 100, DurationCorrectionFactor: 0.5 + rng.Float64()},
				{Name: "B", ResourceShare: 50, DurationCorrectionFactor: []float64{0, 3}[rng.IntN(2)]},
			},
			Apps:        []state.App{{Project: "A", Name: "x"}, {Project: "B", Name: "y"}},
			AppVersions: versions,
		}
		for i := range rng.IntN(25) {
			av := &versions[rng.IntN(len(versions))]
			tk := state.Task{Name: fmt.Sprint("t", i), Project: av.Project, AppVersion: av.Name, State: state.TaskReady,
				EstimatedFlops: 1e11 + rng.Float64()*1e13, ReportDeadline: 100 + rng.Float64()*1000}
			if rng.IntN(3) == 0 {
				tk.State = state.TaskPreempted
				tk.EmulatorFlopsLeft = rng.Float64() * 1e12
			}
			doc.Tasks = append(doc.Tasks, tk)
		}
		if err := state.Validate(doc); err != nil {
			t.Fatal(err)
		}
		bp := &boincPolicy{}
		got := slices.Clone(bp.busyTimes(doc, 0))
		order := bp.work.MissOrder()
		misses += len(order)
		for k := 1; k < len(order); k++ {
			if doc.Tasks[order[k]].AppVersion != doc.Tasks[order[k-1]].AppVersion {
				switches++
			}
		}
		if want := busyTimesByName(doc, order, bp.work.MissStarted()); !slices.Equal(got, want) {
			t.Fatalf("trial %d: busyTimes %v, by name %v", trial, got, want)
		}
	}
	if misses < 20000 || switches < 10000 {
		t.Errorf("%d late jobs, %d changes of app version between them: want more", misses, switches)
	}
	t.Logf("%d late jobs, %d changes of app version between them", misses, switches)
}
