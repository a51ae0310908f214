package workfetch

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Every host in these tests has CPUs of 1e9 FLOPS, so 1e12 FLOPs of remaining work is
// 1000 CPU seconds. T = 0.1 days = 8640 s unless a case says otherwise (2T = 17280 s).

type host struct {
	ncpus  int
	active float64
	tDays  float64
}

func project(name string, share float64) state.Project {
	return state.Project{Name: name, ResourceShare: share}
}

func task(name, project string, st state.TaskState, est, done, deadline float64) state.Task {
	return state.Task{Name: name, Project: project, AppVersion: project + "_cpu", State: st,
		EstimatedFlops: est, FlopsDone: done, ReportDeadline: deadline}
}

// newDoc builds a valid document: one CPU app version per project.
func newDoc(t testing.TB, h host, projects []state.Project, tasks ...state.Task) *state.Document {
	t.Helper()
	doc := &state.Document{
		Version: state.Version,
		Host: state.Host{
			Resources: []state.Resource{{Type: state.ResourceCPU, Instances: h.ncpus, Flops: 1e9}},
			TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: h.active, GPUActiveFrac: 1, ConnectedFrac: 1},
		},
		Preferences: state.Preferences{ConnectionPeriodDays: h.tDays, CPUSchedulingPeriod: 3600},
		Projects:    projects,
		Tasks:       tasks,
	}
	for _, p := range projects {
		doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: p.Name + "_cpu", Project: p.Name, AvgNCPUs: 1})
	}
	if err := state.Validate(doc); err != nil {
		t.Fatalf("test document is invalid: %v", err)
	}
	return doc
}

var inf = math.Inf(1)

func TestCompute(t *testing.T) {
	tests := []struct {
		name     string
		doc      *state.Document
		urgency  Urgency
		rows     []Row // Project, Runnable, MinResults, Skip, AvgProcRate, ETTPRC, Urgency, WorkRequest
		wantText string
	}{{
		// 2 CPUs, shares 1 and 1 (total 2), active fraction 1.
		// A: rate = 1/2 × 2 × 1 = 1; min_results = ceil(2 × 1/2) = 1, skip 0.
		//    a1 = 3.6e13 FLOPs = 36000 s; S = 36000/1 = 36000 ≥ T: A alone needs nothing,
		//    request = max(0, (17280 − 36000) × 1) = 0.
		// B: same rate and min_results, no results: S = 0 → NEED_WORK_IMMEDIATELY,
		//    request = (17280 − 0) × 1 = 17280.
		name: "starved now: a project with no results",
		doc: newDoc(t, host{2, 1, 0.1}, []state.Project{project("A", 1), project("B", 1)},
			task("a1", "A", state.TaskRunning, 3.6e13, 0, 1000)),
		urgency: NeedWorkImmediately,
		rows: []Row{
			{Project: "A", Runnable: 1, MinResults: 1, AvgProcRate: 1, ETTPRC: 36000},
			{Project: "B", MinResults: 1, AvgProcRate: 1, ETTPRC: 0, Urgency: NeedWorkImmediately, WorkRequest: 17280},
		},
	}, {
		// 2 CPUs, one project of share 1: rate = 1/1 × 2 × 1 = 2; min_results = ceil(2) = 2,
		// skip 1. Its only result (1000 s) is the one skipped: S = 0 → starved now.
		// request = (17280 − 0) × 2 = 34560.
		name: "starved now: fewer results than min_results",
		doc: newDoc(t, host{2, 1, 0.1}, []state.Project{project("A", 1)},
			task("a1", "A", state.TaskRunning, 1e12, 0, 1000)),
		urgency: NeedWorkImmediately,
		rows: []Row{
			{Project: "A", Runnable: 1, MinResults: 2, Skip: 1, AvgProcRate: 2, ETTPRC: 0, Urgency: NeedWorkImmediately, WorkRequest: 34560},
		},
	}, {
		// 1 CPU, active fraction 0.5, one project of share 100 (total 100):
		// rate = 100/100 × 1 × 0.5 = 0.5; min_results = ceil(1 × 100/100) = 1, skip 0.
		// a1: 2e12 − 0.5e12 done = 1.5e12 = 1500 s; a2: 2e12 = 2000 s.
		// S = 2000/0.5 + 1500/0.5 = 4000 + 3000 = 7000 < T = 8640 → NEED_WORK.
		// request = (17280 − 7000) × 0.5 = 5140.
		name: "will starve within T",
		doc: newDoc(t, host{1, 0.5, 0.1}, []state.Project{project("A", 100)},
			task("a1", "A", state.TaskRunning, 2e12, 0.5e12, 1000),
			task("a2", "A", state.TaskReady, 2e12, 0, 2000)),
		urgency: NeedWork,
		rows: []Row{
			{Project: "A", Runnable: 2, MinResults: 1, AvgProcRate: 0.5, ETTPRC: 7000, Urgency: NeedWork, WorkRequest: 5140},
		},
	}, {
		// As above with three results of 2000 s: S = 3 × 2000/0.5 = 12000 ≥ T = 8640.
		// (2T − S) × rate = (17280 − 12000) × 0.5 = 2640 would be asked, but nobody needs
		// work, so every request is zeroed.
		name: "no need: enough for T, requests zeroed",
		doc: newDoc(t, host{1, 0.5, 0.1}, []state.Project{project("A", 100)},
			task("a1", "A", state.TaskReady, 2e12, 0, 1000),
			task("a2", "A", state.TaskReady, 2e12, 0, 2000),
			task("a3", "A", state.TaskReady, 2e12, 0, 3000)),
		urgency: DontNeedWork,
		rows: []Row{
			{Project: "A", Runnable: 3, MinResults: 1, AvgProcRate: 0.5, ETTPRC: 12000},
		},
	}, {
		// 2 CPUs, shares 75 and 25, T = 0.5 d = 43200 s (2T = 86400 s).
		// A: rate = 75/100 × 2 = 1.5; min_results = ceil(1.5) = 2, skip 1.
		//    a1 2100 s (deadline 200), a2 3600 s (deadline 300): a2 is skipped.
		//    S = 2100/1.5 = 1400 < T → NEED_WORK; request = (86400 − 1400) × 1.5 = 127500.
		// B: rate = 25/100 × 2 = 0.5; min_results = ceil(0.5) = 1, skip 0.
		//    b1 2.4e13 = 24000 s: S = 24000/0.5 = 48000 ≥ T, but < 2T, so once work is
		//    fetched B is topped up: request = (86400 − 48000) × 0.5 = 19200.
		name: "need work: every project topped up to 2T",
		doc: newDoc(t, host{2, 1, 0.5}, []state.Project{project("A", 75), project("B", 25)},
			task("a1", "A", state.TaskRunning, 3.6e12, 1.5e12, 200),
			task("a2", "A", state.TaskReady, 3.6e12, 0, 300),
			task("b1", "B", state.TaskReady, 2.4e13, 0, 200)),
		urgency: NeedWork,
		rows: []Row{
			{Project: "A", Runnable: 2, MinResults: 2, Skip: 1, AvgProcRate: 1.5, ETTPRC: 1400, Urgency: NeedWork, WorkRequest: 127500},
			{Project: "B", Runnable: 1, MinResults: 1, AvgProcRate: 0.5, ETTPRC: 48000, WorkRequest: 19200},
		},
	}, {
		// 2 CPUs, one project: rate 2, min_results 2, skip 1. In document order:
		// x (deadline 300, 1000 s), y (deadline 100, 2000 s), z (deadline 200, 4000 s).
		// The latest deadline, x, is skipped: S = 4000/2 + 2000/2 = 3000 < T.
		// request = (17280 − 3000) × 2 = 28560.
		name: "the latest deadlines are skipped, whatever the document order",
		doc: newDoc(t, host{2, 1, 0.1}, []state.Project{project("A", 1)},
			task("x", "A", state.TaskReady, 1e12, 0, 300),
			task("y", "A", state.TaskRunning, 2e12, 0, 100),
			task("z", "A", state.TaskReady, 4e12, 0, 200)),
		urgency: NeedWork,
		rows: []Row{
			{Project: "A", Runnable: 3, MinResults: 2, Skip: 1, AvgProcRate: 2, ETTPRC: 3000, Urgency: NeedWork, WorkRequest: 28560},
		},
	}, {
		// Rate 2, skip 1; p and q share deadline 100. The CPU scheduler meets p first, so
		// q, later in the document, is skipped: S = 1000/2 = 500; request =
		// (17280 − 500) × 2 = 33560.
		name: "equal deadlines: the later in the document is skipped",
		doc: newDoc(t, host{2, 1, 0.1}, []state.Project{project("A", 1)},
			task("p", "A", state.TaskReady, 1e12, 0, 100),
			task("q", "A", state.TaskReady, 3e12, 0, 100)),
		urgency: NeedWork,
		rows: []Row{
			{Project: "A", Runnable: 2, MinResults: 2, Skip: 1, AvgProcRate: 2, ETTPRC: 500, Urgency: NeedWork, WorkRequest: 33560},
		},
	}, {
		// 1 CPU, shares 1 and 0 (total 1).
		// A: rate 1, min_results 1, skip 0; a1 5000 s: S = 5000 < T → NEED_WORK;
		//    request = (17280 − 5000) × 1 = 12280.
		// B: rate = 0/1 × 1 × 1 = 0, min_results = ceil(0) = 0: it takes no CPU time,
		//    so its result lasts for ever (ETTPRC +Inf, not the seed's 1e12/0) and it asks
		//    for nothing, even though work is being fetched.
		name: "zero share: never starves, asks for nothing",
		doc: newDoc(t, host{1, 1, 0.1}, []state.Project{project("A", 1), project("B", 0)},
			task("a1", "A", state.TaskRunning, 5e12, 0, 100),
			task("b1", "B", state.TaskReady, 1e12, 0, 100)),
		urgency: NeedWork,
		rows: []Row{
			{Project: "A", Runnable: 1, MinResults: 1, AvgProcRate: 1, ETTPRC: 5000, Urgency: NeedWork, WorkRequest: 12280},
			{Project: "B", Runnable: 1, AvgProcRate: 0, ETTPRC: inf},
		},
	}, {
		// Total share 0: every rate would be 0/0; all are 0 and nobody starves.
		name: "all shares zero",
		doc:  newDoc(t, host{1, 1, 0.1}, []state.Project{project("A", 0)}),
		rows: []Row{{Project: "A", ETTPRC: inf}},
	}, {
		// Active fraction 0: rate = 1/1 × 2 × 0 = 0. The seed's S would be 0 (no results,
		// nothing divided) and so NEED_WORK_IMMEDIATELY with a request of 2T × 0 = 0; the
		// client computes nothing, so we say it never starves and asks for nothing.
		name: "active fraction 0",
		doc:  newDoc(t, host{2, 0, 0.1}, []state.Project{project("A", 1)}),
		rows: []Row{{Project: "A", MinResults: 2, Skip: 1, ETTPRC: inf}},
	}, {
		// 1 CPU, rate 1, skip 0. a1 has no estimate (0 FLOPs → 0 s); a2's work done exceeds
		// its estimate (remaining max(0, 1e12 − 3e12) = 0 s). S = 0/1 + 0/1 = 0 → starved
		// now: neither keeps the CPU busy. request = 17280 × 1 = 17280.
		name: "results without estimates count as no work",
		doc: newDoc(t, host{1, 1, 0.1}, []state.Project{project("A", 1)},
			task("a1", "A", state.TaskReady, 0, 0, 100),
			task("a2", "A", state.TaskRunning, 1e12, 3e12, 200)),
		urgency: NeedWorkImmediately,
		rows: []Row{
			{Project: "A", Runnable: 2, MinResults: 1, AvgProcRate: 1, ETTPRC: 0, Urgency: NeedWorkImmediately, WorkRequest: 17280},
		},
	}, {
		// The seed has no notion of "now": a result whose deadline (1) has long passed is
		// still runnable and still work. 1 CPU, rate 1: S = 10000 s ≥ T → no need.
		name: "deadlines already past still count",
		doc: newDoc(t, host{1, 1, 0.1}, []state.Project{project("A", 1)},
			task("a1", "A", state.TaskReady, 1e13, 0, 1)),
		rows: []Row{{Project: "A", Runnable: 1, MinResults: 1, AvgProcRate: 1, ETTPRC: 10000}},
	}, {
		// Only ready, running and preempted results are runnable: S = 1000/1 = 1000 < T,
		// request = (17280 − 1000) × 1 = 16280.
		name: "done and reported results are not work",
		doc: newDoc(t, host{1, 1, 0.1}, []state.Project{project("A", 1)},
			task("a1", "A", state.TaskDone, 1e13, 1e13, 100),
			task("a2", "A", state.TaskReported, 1e13, 1e13, 100),
			task("a3", "A", state.TaskPreempted, 1e12, 0, 100)),
		urgency: NeedWork,
		rows: []Row{
			{Project: "A", Runnable: 1, MinResults: 1, AvgProcRate: 1, ETTPRC: 1000, Urgency: NeedWork, WorkRequest: 16280},
		},
	}, {
		// Seed 002's example host: 1 CPU, a GPU. B's GPU results feed the GPU, not the CPU
		// scheduler (bdevices fetches their work): they are no CPU work. B's one CPU
		// result (1000 s) is all it has for the CPU: rate 1/2 × 1 × 1 = 0.5,
		// min_results = ceil(1/2) = 1, S = 1000/0.5 = 2000 < T, request
		// (17280 − 2000) × 0.5 = 7640. A has only GPU results: none for the CPU, S = 0.
		// (Counted as CPU work, B's 36000 s of GPU results would hide its starving CPU.)
		name: "coprocessor results are not CPU work",
		doc: func() *state.Document {
			doc := newDoc(t, host{1, 1, 0.1}, []state.Project{project("A", 1), project("B", 1)},
				task("b1", "B", state.TaskRunning, 1e12, 0, 100))
			doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 2e9})
			for _, p := range []string{"A", "B"} {
				doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: p + "_gpu", Project: p, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}})
				for i := range 2 {
					doc.Tasks = append(doc.Tasks, state.Task{Name: fmt.Sprint(p, "_g", i), Project: p, AppVersion: p + "_gpu", State: state.TaskReady, EstimatedFlops: 1.8e13, ReportDeadline: 200})
				}
			}
			if err := state.Validate(doc); err != nil {
				t.Fatal(err)
			}
			return doc
		}(),
		urgency: NeedWorkImmediately,
		rows: []Row{
			{Project: "A", MinResults: 1, AvgProcRate: 0.5, ETTPRC: 0, Urgency: NeedWorkImmediately, WorkRequest: 8640},
			{Project: "B", Runnable: 1, MinResults: 1, AvgProcRate: 0.5, ETTPRC: 2000, Urgency: NeedWork, WorkRequest: 7640},
		},
	}, {
		// T = 0: S < 0 never holds, not even for S = 0; nothing is fetched.
		name: "connection period 0",
		doc:  newDoc(t, host{1, 1, 0}, []state.Project{project("A", 1)}),
		rows: []Row{{Project: "A", MinResults: 1, AvgProcRate: 1, ETTPRC: 0}},
	}}
	opts := cmp.Options{
		cmpopts.IgnoreFields(Row{}, "Reason", "CPUTime", "Share"),
		cmpopts.EquateApprox(1e-12, 0),
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Compute(tc.doc)
			if d.Urgency != tc.urgency {
				t.Errorf("urgency = %v, want %v (%s)", d.Urgency, tc.urgency, d.Reason)
			}
			if diff := cmp.Diff(tc.rows, d.Rows, opts); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestETTPRC(t *testing.T) {
	tests := []struct {
		name     string
		cpuTimes []float64
		k        int
		rate     float64
		want     float64
	}{
		{"nothing skipped", []float64{10, 20, 30}, 0, 2, 30},         // (30+20+10)/2
		{"latest skipped", []float64{10, 20, 30}, 1, 2, 15},          // (20+10)/2
		{"all skipped", []float64{10, 20, 30}, 3, 2, 0},              // nothing left
		{"more skipped than held", []float64{10}, 5, 2, 0},           // nothing left
		{"k = -1 (min_results 0)", []float64{10, 20}, -1, 1, 30},     // skips nothing
		{"no results", nil, 0, 1, 0},                                 // empty sum
		{"rate 0", []float64{10}, 0, 0, inf},                         // never consumed
		{"rate 0, no results", nil, 0, 0, inf},                       // not 0/0
		{"fractional rate", []float64{1500, 2000}, 0, 0.5, 7000},     // 3000+4000
		{"zero estimates", []float64{0, 0, 5}, 1, 0.25, 0},           // 5 is skipped
		{"zero estimate skipped", []float64{4, 0}, 1, 0.5, 8},        // 4/0.5
		{"single result", []float64{3600}, 0, 1.5, 2400},             // 3600/1.5
		{"two of three skipped", []float64{100, 200, 300}, 2, 4, 25}, // 100/4
	}
	for _, tc := range tests {
		if got := ETTPRC(tc.cpuTimes, tc.k, tc.rate); got != tc.want {
			t.Errorf("%s: ETTPRC(%v, %d, %g) = %g, want %g", tc.name, tc.cpuTimes, tc.k, tc.rate, got, tc.want)
		}
	}
}

func TestMinResultsAndRate(t *testing.T) {
	tests := []struct {
		ncpus        int
		share, total float64
		active       float64
		wantMin      int
		wantRate     float64
	}{
		{2, 75, 100, 1, 2, 1.5},    // ceil(1.5) = 2; 0.75 × 2 × 1
		{2, 25, 100, 1, 1, 0.5},    // ceil(0.5) = 1; 0.25 × 2 × 1
		{4, 1, 3, 0.5, 2, 2.0 / 3}, // ceil(1.33) = 2; 1/3 × 4 × 0.5
		{8, 1, 1, 0.9, 8, 7.2},     // ceil(8) = 8; 1 × 8 × 0.9
		{1, 0, 10, 1, 0, 0},        // share 0
		{1, 0, 0, 1, 0, 0},         // total share 0: not 0/0
		{3, 1, 3, 0, 1, 0},         // active 0: min_results still counts CPUs
	}
	for _, tc := range tests {
		if got := MinResults(tc.ncpus, tc.share, tc.total); got != tc.wantMin {
			t.Errorf("MinResults(%d, %g, %g) = %d, want %d", tc.ncpus, tc.share, tc.total, got, tc.wantMin)
		}
		got := AvgProcRate(tc.share, tc.total, tc.ncpus, tc.active)
		if math.Abs(got-tc.wantRate) > 1e-12 {
			t.Errorf("AvgProcRate(%g, %g, %d, %g) = %g, want %g", tc.share, tc.total, tc.ncpus, tc.active, got, tc.wantRate)
		}
	}
}

func TestReasons(t *testing.T) {
	tests := []struct {
		name string
		doc  *state.Document
		want string
		rows []string
	}{{
		name: "starved",
		doc:  newDoc(t, host{1, 1, 0.1}, []state.Project{project("A", 1), project("B", 0)}),
		want: "project A is starved now: ETTPRC 0 with 0 runnable result(s) and min_results 1",
		rows: []string{
			"starved now: 0 runnable result(s), 0 may be left (min_results−1)",
			"takes no CPU time (resource share 0): never starves, asks for nothing",
		},
	}, {
		name: "within T",
		doc: newDoc(t, host{1, 1, 0.1}, []state.Project{project("A", 1)},
			task("a1", "A", state.TaskReady, 5e12, 0, 100)),
		want: "project A will starve within T: ETTPRC 5000 s (83.3 min) < T 8640 s (2.4 h)",
		rows: []string{"starves within T: ETTPRC < T"},
	}, {
		name: "no need",
		doc: newDoc(t, host{1, 1, 0.1}, []state.Project{project("A", 1), project("B", 1)},
			task("a1", "A", state.TaskReady, 5e12, 0, 100),
			task("b1", "B", state.TaskReady, 2e13, 0, 100)),
		// rates 0.5: A's S = 5000/0.5 = 10000 (between T and 2T), B's 20000/0.5 = 40000.
		want: "no project starves within T 8640 s (2.4 h): the shortest ETTPRC is A's, 10000 s (2.78 h)",
		rows: []string{"enough for T, less than 2T: topped up to 2T if work is fetched", "enough work for 2T or more"},
	}, {
		name: "idle host",
		doc:  newDoc(t, host{1, 0, 0.1}, []state.Project{project("A", 1)}),
		want: "no project takes CPU time, so none can starve",
		rows: []string{"takes no CPU time (active fraction 0): never starves, asks for nothing"},
	}}
	for _, tc := range tests {
		d := Compute(tc.doc)
		var rows []string
		for _, r := range d.Rows {
			rows = append(rows, r.Reason)
		}
		if d.Reason != tc.want {
			t.Errorf("%s: reason = %q, want %q", tc.name, d.Reason, tc.want)
		}
		if diff := cmp.Diff(tc.rows, rows); diff != "" {
			t.Errorf("%s: row reasons (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestApply(t *testing.T) {
	doc := newDoc(t, host{1, 1, 0.1}, []state.Project{project("A", 1), project("Z", 0)},
		task("z1", "Z", state.TaskReady, 0, 0, 100))
	doc.Projects[1].WorkRequest = 99 // a stale request is overwritten
	Apply(doc, Compute(doc), 1700000000)
	want := []float64{17280, 0}
	for i, p := range doc.Projects {
		if p.WorkRequest != want[i] {
			t.Errorf("projects[%d].work_request = %g, want %g", i, p.WorkRequest, want[i])
		}
	}
	if diff := cmp.Diff(&state.WorkFetch{Time: 1700000000, Urgency: "need_work_immediately"}, doc.WorkFetch); diff != "" {
		t.Errorf("work_fetch (-want +got):\n%s", diff)
	}
	if err := state.Validate(doc); err != nil {
		t.Errorf("document invalid after Apply: %v", err)
	}
	if _, err := json.Marshal(doc); err != nil {
		t.Errorf("document does not encode as JSON: %v", err)
	}
}

// TestFinite checks on random documents, edge cases included, that every request is
// finite and not negative, that nothing is requested without need, and that the overall
// urgency is the most urgent project's.
func TestFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 500; n++ {
		doc := randomDoc(t, rng, 1+rng.IntN(6), rng.IntN(40))
		if rng.IntN(5) == 0 {
			doc.Host.TimeStats.ActiveFrac = 0
		}
		d := Compute(doc)
		most := DontNeedWork
		for _, r := range d.Rows {
			most = max(most, r.Urgency)
			if math.IsNaN(r.WorkRequest) || math.IsInf(r.WorkRequest, 0) || r.WorkRequest < 0 {
				t.Fatalf("doc %d: project %s: work request %g", n, r.Project, r.WorkRequest)
			}
			if math.IsNaN(r.ETTPRC) || r.ETTPRC < 0 {
				t.Fatalf("doc %d: project %s: ETTPRC %g", n, r.Project, r.ETTPRC)
			}
			if d.Urgency == DontNeedWork && r.WorkRequest != 0 {
				t.Fatalf("doc %d: project %s asks %g without need", n, r.Project, r.WorkRequest)
			}
		}
		if most != d.Urgency {
			t.Fatalf("doc %d: urgency %v, most urgent project %v", n, d.Urgency, most)
		}
		Apply(doc, d, 1)
		if _, err := json.Marshal(doc); err != nil {
			t.Fatalf("doc %d: %v", n, err)
		}
	}
}

// randomDoc makes a valid document with shares (some 0), estimates (some 0, some
// exceeded), deadlines (some equal) and states drawn from rng.
func randomDoc(t testing.TB, rng *rand.Rand, nprojects, ntasks int) *state.Document {
	var projects []state.Project
	for i := range nprojects {
		projects = append(projects, project(fmt.Sprintf("P%03d", i), float64(rng.IntN(4)*25)))
	}
	states := []state.TaskState{state.TaskReady, state.TaskRunning, state.TaskPreempted, state.TaskDone}
	var tasks []state.Task
	for i := range ntasks {
		p := projects[rng.IntN(nprojects)].Name
		est := float64(rng.IntN(10)) * 1e12
		tasks = append(tasks, task(fmt.Sprintf("t%05d", i), p, states[rng.IntN(len(states))],
			est, float64(rng.IntN(5))*1e12, float64(1700000000+rng.IntN(20)*3600)))
	}
	return newDoc(t, host{1 + rng.IntN(8), rng.Float64(), float64(rng.IntN(4)) * 0.25}, projects, tasks...)
}

// BenchmarkCompute is one decision over 100 projects and 10,000 results on 8 CPUs, the
// shared synthetic document (issue 3: at most 5 ms).
func BenchmarkCompute(b *testing.B) {
	doc := state.Synthetic(100, 10_000, 8)
	if err := state.Validate(doc); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Compute(doc)
	}
}

// TestWorkspaceDecideIsCompute: one Workspace deciding again and again, while tasks
// progress, finish and arrive and a project joins, gives Compute's decision to the last
// bit, without the reasons in words.
func TestWorkspaceDecideIsCompute(t *testing.T) {
	doc := state.Synthetic(7, 300, 4)
	var w Workspace
	noReasons := cmp.Transformer("noReasons", func(d Decision) Decision {
		d.Reason = ""
		d.Rows = slices.Clone(d.Rows)
		for i := range d.Rows {
			d.Rows[i].Reason = ""
		}
		return d
	})
	for i := range 60 {
		if i == 30 {
			doc.Projects = append(doc.Projects, state.Project{Name: "late", ResourceShare: 5})
		}
		want := Compute(doc)
		got := *w.Decide(doc)
		if d := cmp.Diff(want, got, noReasons); d != "" {
			t.Fatalf("round %d (-Compute +Decide):\n%s", i, d)
		}
		for k := range doc.Tasks {
			tk := &doc.Tasks[k]
			tk.FlopsDone += float64(k%5) * 3e12
			if (k+i)%41 == 0 {
				tk.State = state.TaskDone
			}
		}
		doc.Tasks = append(doc.Tasks, state.Task{Name: fmt.Sprint("new", i), Project: doc.Projects[i%7].Name,
			AppVersion: doc.Projects[i%7].Name + "_cpu", State: state.TaskReady, EstimatedFlops: 1e13 * float64(i%3), ReportDeadline: 1.7e9 + float64(i)})
	}
}

// TestSecondsIsFmts: Seconds, built with strconv, writes what its fmt formats write,
// around each unit's bounds and over many magnitudes.
func TestSecondsIsFmts(t *testing.T) {
	withFmt := func(s float64) string {
		switch {
		case math.IsInf(s, 1):
			return "never"
		case s >= 2*SecondsPerDay:
			return fmt.Sprintf("%.0f s (%.3g d)", s, s/SecondsPerDay)
		case s >= 7200:
			return fmt.Sprintf("%.0f s (%.3g h)", s, s/3600)
		case s >= 120:
			return fmt.Sprintf("%.0f s (%.3g min)", s, s/60)
		case s >= 10:
			return fmt.Sprintf("%.0f s", s)
		}
		return fmt.Sprintf("%.3g s", s)
	}
	xs := []float64{0, math.Copysign(0, -1), 1e-7, 0.5, 9.9949, 9.9951, 10, 119.5, 120, 7199.5, 7200, 172799.5, 172800, 1e6, 1e21, -5, -1e9, math.Inf(1), math.Inf(-1), math.NaN()}
	for x := 1e-9; x < 1e15; x *= 1.37 {
		xs = append(xs, x, x+0.5)
	}
	for _, x := range xs {
		if got, want := Seconds(x), withFmt(x); got != want {
			t.Errorf("Seconds(%v) = %q, want %q", x, got, want)
		}
	}
}

// BenchmarkDecideEmulator is seed 001's decision as the emulator makes it (a
// Workspace, no words) on a document of its size: 2 projects, 4 CPUs, 13 runnable tasks
// and a done one. Allocations per op must be 0.
func BenchmarkDecideEmulator(b *testing.B) {
	doc := &state.Document{
		Version:     1,
		Host:        state.Host{Resources: []state.Resource{{Type: "cpu", Instances: 4, Flops: 1e9}}, TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1}},
		Preferences: state.Preferences{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5, ConnectionPeriodDays: 0.1, CPUSchedulingPeriod: 3600},
		Projects:    []state.Project{{Name: "A", ResourceShare: 60}, {Name: "B", ResourceShare: 40}},
		AppVersions: []state.AppVersion{{Name: "a", Project: "A", AvgNCPUs: 1}, {Name: "b", Project: "B", AvgNCPUs: 1}},
	}
	for i := range 14 {
		p := i % 2
		st := state.TaskReady
		switch {
		case i < 4:
			st = state.TaskRunning
		case i == 13:
			st = state.TaskDone
		}
		doc.Tasks = append(doc.Tasks, state.Task{
			Name: fmt.Sprintf("t%d", i), Project: doc.Projects[p].Name, AppVersion: doc.AppVersions[p].Name, State: st,
			EstimatedFlops: float64(1+p*5) * 3.6e12, FlopsDone: float64(i%3) * 1e12, ReportDeadline: float64(7200 + i*3600),
		})
	}
	if err := state.Validate(doc); err != nil {
		b.Fatal(err)
	}
	var w Workspace
	b.ReportAllocs()
	for b.Loop() {
		w.Decide(doc)
	}
}

// sums is the total of the CPU times in their order and ETTPRC, to the last bit, for
// lists of every length up to 40 with times of every magnitude, any skip (beyond the
// list too) and rates of 0, small and large.
func TestSumsIsETTPRC(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 41 {
		times := make([]float64, n)
		for i := range times {
			times[i] = rng.ExpFloat64() * math.Pow(10, float64(rng.IntN(12)-3))
		}
		for _, skip := range []int{0, 1, 2, n - 1, n, n + 3} {
			for _, rate := range []float64{0, 1e-3, 0.7, 3, 1e6} {
				total, ettprc := sums(times, skip, rate)
				want := 0.0
				for _, c := range times {
					want += c
				}
				if total != want || ettprc != ETTPRC(times, skip, rate) {
					t.Fatalf("%d times, skip %d, rate %g: sums %v %v, want %v %v", n, skip, rate, total, ettprc, want, ETTPRC(times, skip, rate))
				}
			}
		}
	}
}

// sortByDeadline's order is slices.SortFunc's by byDeadline, the sort skipped or not:
// lists in order, one result out of order, any order, equal deadlines and NaNs.
func TestSortByDeadlineIsSort(t *testing.T) {
	for i := range 200 {
		rs := make([]result, i%40)
		for k := range rs {
			dl := float64(k * 10)
			switch i % 4 {
			case 1:
				if k == i%7 {
					dl = 25
				}
			case 2:
				dl = float64((k*37 + i*11) % 13)
			case 3:
				if k%5 == i%5 {
					dl = math.NaN()
				}
			}
			rs[k] = result{deadline: dl, order: k, cpuTime: float64(k)}
		}
		want := slices.Clone(rs)
		slices.SortFunc(want, byDeadline)
		sortByDeadline(rs)
		if d := cmp.Diff(want, rs, cmp.AllowUnexported(result{}), cmpopts.EquateNaNs()); d != "" {
			t.Fatalf("list %d (-sort +sortByDeadline):\n%s", i, d)
		}
	}
}
