package sim

import (
	"math"
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
)

// The steps of a server's reply (fill), one by one, on a host with one CPU at 1 GFLOPS
// and one GPU at 10 GFLOPS; project A has app x in a CPU and a GPU version and app y on
// the GPU only.

func fillDoc() *state.Document {
	return &state.Document{
		Version: 1,
		Host: state.Host{
			Resources: []state.Resource{{Type: "cpu", Instances: 1, Flops: 1e9}, {Type: "NVIDIA", Instances: 2, Flops: 1e10}},
			TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1},
		},
		Preferences: state.Preferences{CPUSchedulingPeriod: 3600, WorkBufMinDays: 0.1},
		Projects:    []state.Project{{Name: "A", ResourceShare: 100}},
		Apps:        []state.App{{Project: "A", Name: "x"}, {Project: "A", Name: "y"}},
		AppVersions: []state.AppVersion{
			{Name: "x_cpu", Project: "A", App: "x", AvgNCPUs: 1},
			{Name: "x_gpu", Project: "A", App: "x", AvgNCPUs: 0.5, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
			{Name: "y_gpu", Project: "A", App: "y", AvgNCPUs: 0.5, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
		},
	}
}

// testApp is a generated app of project A with the given versions (indices in
// fillDoc's app versions) and its values in force.
func testApp(name string, weight, mean, stddev, bound float64, versions ...int) genApp {
	g := genApp{weight: weight, mean: mean, stdDev: stddev, versions: versions}
	g.Project, g.Name, g.LatencyBound, g.FpopsEst = "A", name, bound, 2*mean
	return g
}

func fillServer() *server {
	return &server{project: "A", apps: []genApp{testApp("x", 1, 3.6e12, 0, 86400, 0, 1), testApp("y", 3, 1e13, 0, 86400, 2)}, rng: newStream(1, 2)}
}

// The request's seconds and instances per resource; nothing late, so no delay. With a
// task that will miss its deadline on the CPU (3600 s of work due in 100 s), the CPU's
// delay is its run time, 3600 s.
func TestStartNeeds(t *testing.T) {
	doc := fillDoc()
	s := fillServer()
	req := &state.WorkRequest{CPUReqSecs: 1000, CPUReqInstances: 0.5, Coprocs: []state.CoprocRequest{{Type: "NVIDIA", ReqSecs: 200, ReqInstances: 1}}}
	needs := s.startNeeds(doc, req, 0, nil)
	want := []need{{secs: 1000, inst: 0.5}, {secs: 200, inst: 1}}
	if d := cmp.Diff(want, needs, cmp.AllowUnexported(need{})); d != "" {
		t.Errorf("needs (-want +got):\n%s", d)
	}
	doc.Tasks = []state.Task{{Name: "late", Project: "A", AppVersion: "x_cpu", State: state.TaskReady, EstimatedFlops: 3.6e12, ReportDeadline: 100}}
	if err := state.Validate(doc); err != nil {
		t.Fatal(err)
	}
	needs = s.startNeeds(doc, req, 0, nil)
	if needs[0].delay != 3600 || needs[1].delay != 0 {
		t.Errorf("delays = %g, %g; want 3600, 0", needs[0].delay, needs[1].delay)
	}
	needs = s.startNeeds(doc, &state.WorkRequest{}, 0, nil)
	if needs[0].delay != 0 || needs[0].open() || needs[1].open() {
		t.Errorf("nothing asked: needs %+v, want closed and no delay (the client's simulation is not run)", needs)
	}
}

func TestResourceOf(t *testing.T) {
	doc := fillDoc()
	doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "ati", Coproc: &state.CoprocUsage{Type: "ATI", Count: 1}})
	for v, want := range []int{0, 1, 1, -1} {
		if got := resourceOf(&doc.Host, &doc.AppVersions[v]); got != want {
			t.Errorf("%s: resource %d, want %d", doc.AppVersions[v].Name, got, want)
		}
	}
}

// With both resources open, x's fastest version is its GPU one and both apps count
// (weight 4); with x's GPU version rejected in this reply, x falls back to its CPU
// version; with the GPU not asked for, x runs on the CPU and y has none.
func TestFastestVersions(t *testing.T) {
	doc := fillDoc()
	s := fillServer()
	needs := []need{{secs: 1}, {secs: 1}}
	if total := s.fastestVersions(doc, needs); total != 4 || !cmp.Equal(s.best, []int{1, 2}) {
		t.Errorf("both open: total %g, best %v; want 4, [1 2]", total, s.best)
	}
	s.rejected = []bool{false, true, false}
	if total := s.fastestVersions(doc, needs); total != 4 || !cmp.Equal(s.best, []int{0, 2}) {
		t.Errorf("x_gpu rejected: total %g, best %v; want 4, [0 2]", total, s.best)
	}
	s.rejected = nil
	needs[1].secs = 0
	if total := s.fastestVersions(doc, needs); total != 1 || !cmp.Equal(s.best, []int{0, -1}) {
		t.Errorf("GPU not asked: total %g, best %v; want 1, [0 -1]", total, s.best)
	}
	doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "x_cpu2", Project: "A", App: "x", AvgNCPUs: 1})
	s.apps[0].versions = append(s.apps[0].versions, 3)
	if s.fastestVersions(doc, needs); s.best[0] != 0 {
		t.Errorf("x's two CPU versions as fast: best %d, want the first (0)", s.best[0])
	}
	needs[0].secs = 0
	if total := s.fastestVersions(doc, needs); total != 0 || !cmp.Equal(s.best, []int{-1, -1}) {
		t.Errorf("nothing open: total %g, best %v; want 0, [-1 -1]", total, s.best)
	}
}

// An app is drawn by weight: x (1) when the draw falls in [0, 1) of 4, else y (3); an
// app without a version, or of weight 0, never.
func TestPickApp(t *testing.T) {
	s := fillServer()
	s.best = []int{1, 2}
	twin := newStream(1, 2)
	for range 100 {
		want := 1
		if twin.Float64()*4 < 1 {
			want = 0
		}
		if got := s.pickApp(4); got != want {
			t.Fatalf("picked %d, want %d", got, want)
		}
	}
	s.best = []int{-1, 2}
	for range 20 {
		if got := s.pickApp(3); got != 1 {
			t.Fatalf("picked %d, want 1 (x has no version)", got)
		}
	}
	s.apps[1].weight, s.best = 0, []int{1, 2}
	for range 20 {
		if got := s.pickApp(1); got != 0 {
			t.Fatalf("picked %d, want 0 (y weighs nothing)", got)
		}
	}
}

// The estimate is <fpops>' mean when it has no spread (and draws nothing), else a
// normal sample, clamped at 0.
func TestEstimate(t *testing.T) {
	s := fillServer()
	twin := newStream(1, 2)
	app := testApp("x", 1, 3.6e12, 0, 86400, 0, 1)
	if got := s.estimate(&app); got != 3.6e12 {
		t.Errorf("estimate without spread = %g, want 3.6e12", got)
	}
	app.stdDev = 1e12
	if got, want := s.estimate(&app), 3.6e12+1e12*twin.NormFloat64(); got != want {
		t.Errorf("estimate = %g, want %g (the stream's first normal sample)", got, want)
	}
	app.mean = -1e20
	if got := s.estimate(&app); got != 0 {
		t.Errorf("estimate of a negative mean = %g, want 0", got)
	}
}

// BOINC's deadline check: with 100 s of delay, a job of 50 s is late for a bound of 149
// s, not for 150; a job of 1000 s (stretched) on one of two instances uses 500
// instance-seconds of the request and adds 250 s of delay.
func TestNeedLateAndUse(t *testing.T) {
	n := need{secs: 800, inst: 2, delay: 100}
	if n.late(50, 150) || !n.late(50, 149) {
		t.Errorf("late(50, 150) = %v, late(50, 149) = %v; want false, true", n.late(50, 150), n.late(50, 149))
	}
	if n.late(math.Inf(1), math.Inf(1)) {
		t.Errorf("an infinite bound is never passed")
	}
	n.use(1000, 0.5, 2)
	if want := (need{secs: 300, inst: 1.5, delay: 350}); n != want {
		t.Errorf("after use: %+v, want %+v", n, want)
	}
}

// A new job is a ready task named after the project and the server's count, of the
// chosen version, due latency_bound from now, with its real work beside.
func TestMakeJob(t *testing.T) {
	doc := fillDoc()
	s := fillServer()
	s.index, s.seq, s.best = 0, 41, []int{1, 2}
	var jobs []job
	s.makeJob(doc, 1, 9e12, 500, &jobs)
	want := state.Task{Name: "A_42", Project: "A", AppVersion: "y_gpu", State: state.TaskReady, EstimatedFlops: 9e12, ReportDeadline: 500 + 86400, ReceivedTime: 500}
	if len(doc.Tasks) != 1 || !cmp.Equal(doc.Tasks[0], want) {
		t.Errorf("tasks = %+v, want %+v", doc.Tasks, want)
	}
	if d := cmp.Diff([]job{{real: 2e13, av: 2}}, jobs, cmp.AllowUnexported(job{})); d != "" {
		t.Errorf("jobs (-want +got):\n%s", d)
	}
}

// TestFillRejectsTheVersion: BOINC's emulated server, finding that a job would miss its
// deadline, stops using that job's app version for the rest of the reply
// (avp->dont_use in simulate_rpc), not the resource: the project's other apps go on
// filling the request. Here app "long" (10,000 s jobs, a 5,000 s latency) is drawn
// first nearly always; "short" (1,000 s) fills the 10,000 s asked.
func TestFillRejectsTheVersion(t *testing.T) {
	doc := fillDoc()
	doc.AppVersions = []state.AppVersion{
		{Name: "long_cpu", Project: "A", App: "x", AvgNCPUs: 1, Flops: 1e9},
		{Name: "short_cpu", Project: "A", App: "y", AvgNCPUs: 1, Flops: 1e9},
	}
	s := &server{project: "A", apps: []genApp{testApp("long", 100, 1e13, 0, 5000, 0), testApp("short", 1, 1e12, 0, 86400, 1)}, rng: newStream(1, 2)}
	var jobs []job
	sent := s.fill(doc, map[string]int{"long_cpu": 0, "short_cpu": 1}, &state.WorkRequest{CPUReqSecs: 10000, CPUReqInstances: 1}, 0, nil, &jobs)
	if sent["cpu"] != 10 || len(doc.Tasks) != 10 {
		t.Fatalf("sent %v, %d tasks; want 10 CPU jobs", sent, len(doc.Tasks))
	}
	for _, task := range doc.Tasks {
		if task.AppVersion != "short_cpu" {
			t.Errorf("a job of %s, want short_cpu only", task.AppVersion)
		}
	}
}
