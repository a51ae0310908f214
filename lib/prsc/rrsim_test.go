package prsc

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bkit/bkit/lib/state"
)

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// cpuDoc: 2 CPUs at 1 GFLOPS, a work buffer of 10,000 s, projects A (share 3) and B
// (share 1) with one-CPU app versions.
func cpuDoc() *state.Document {
	return &state.Document{
		Version: 1,
		Host: state.Host{
			Resources: []state.Resource{{Type: "cpu", Instances: 2, Flops: 1e9}, {Type: "NVIDIA", Instances: 1, Flops: 4e9}},
			TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1},
		},
		Preferences: state.Preferences{WorkBufMinDays: 10000.0 / 86400, CPUSchedulingPeriod: 3600},
		Projects:    []state.Project{{Name: "A", ResourceShare: 3}, {Name: "B", ResourceShare: 1}},
		AppVersions: []state.AppVersion{
			{Name: "a", Project: "A", AvgNCPUs: 1},
			{Name: "b", Project: "B", AvgNCPUs: 1},
			{Name: "bg", Project: "B", AvgNCPUs: 0.1, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
		},
	}
}

func task(name, project, av string, st state.TaskState, flops float64) state.Task {
	return state.Task{Name: name, Project: project, AppVersion: av, State: st, EstimatedFlops: flops}
}

// TestSimulateSmall, by hand. Shares of the 2 CPUs: A 2·3/4 = 1.5, B 0.5.
// A has one 3e12 task (3000 s), B a 1e12 and a 2e12 task.
//
//	t=0: A can use only 1 CPU (one task), so B gets the other: used 2, nidle 0.
//	[0,1000]: B's first task ends. A +(1.5−1)·1000 = 500, B +(0.5−1)·1000 = −500.
//	[1000,3000]: A's task and B's second both end. A +1000 → 1500, B −1000 → −1500.
//	[3000,10000]: idle: CPU shortfall 2·7000 = 14000; A +1.5·7000 → 12000,
//	  B +0.5·7000 → 2000.
//
// The GPU has no task: nidle 1, shortfall 10000; B's share of it 0.25 → 2500, A 7500.
func TestSimulateSmall(t *testing.T) {
	doc := cpuDoc()
	doc.Tasks = []state.Task{
		task("b1", "B", "b", state.TaskReady, 1e12),
		task("a1", "A", "a", state.TaskRunning, 3e12),
		task("b2", "B", "b", state.TaskReady, 2e12),
	}
	sim := Simulate(doc, 0)
	cpu, gpu := sim.Resource("cpu"), sim.Resource("NVIDIA")
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"cpu shortfall", cpu.Shortfall, 14000},
		{"cpu nidle", cpu.NIdle, 0},
		{"cpu A share", cpu.Projects[0].Share, 1.5},
		{"cpu A shortfall", cpu.Projects[0].Shortfall, 12000},
		{"cpu B shortfall", cpu.Projects[1].Shortfall, 2000},
		{"gpu shortfall", gpu.Shortfall, 10000},
		{"gpu nidle", gpu.NIdle, 1},
		{"gpu A shortfall", gpu.Projects[0].Shortfall, 7500},
		{"gpu B shortfall", gpu.Projects[1].Shortfall, 2500},
	} {
		if !approx(c.got, c.want) {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
}

// TestSimulateSharing: one CPU shared by two projects of equal share, a 1e12 task each.
// Each gets half the CPU and runs at half speed: both end at 2000 s. Over a 5000 s
// buffer the shortfall is 3000; each project's 0.5·3000 = 1500. A backed-off project
// has no share and no shortfall, but its tasks still run.
func TestSimulateSharing(t *testing.T) {
	doc := cpuDoc()
	doc.Host.Resources[0].Instances = 1
	doc.Preferences.WorkBufMinDays = 5000.0 / 86400
	doc.Projects[1].ResourceShare = 3
	doc.Tasks = []state.Task{task("a1", "A", "a", state.TaskReady, 1e12), task("b1", "B", "b", state.TaskReady, 1e12)}
	cpu := Simulate(doc, 0).Resource("cpu")
	if !approx(cpu.Shortfall, 3000) || cpu.NIdle != 0 || !approx(cpu.Projects[0].Shortfall, 1500) {
		t.Errorf("got shortfall %g, nidle %g, A %g; want 3000, 0, 1500", cpu.Shortfall, cpu.NIdle, cpu.Projects[0].Shortfall)
	}
	doc.Projects[1].ResourceState("cpu").BackoffUntil = 100
	cpu = Simulate(doc, 50).Resource("cpu")
	if !approx(cpu.Shortfall, 3000) || cpu.Projects[1].Shortfall != 0 || cpu.Projects[0].Share != 1 {
		t.Errorf("backed off B: shortfall %g, B %g, A's share %g; want 3000, 0, 1", cpu.Shortfall, cpu.Projects[1].Shortfall, cpu.Projects[0].Share)
	}
}

// TestSimulateFractional: an app version may use a fractional number of CPUs (seed 002:
// "some number (possibly fractional) of CPUs"). One CPU, a buffer of 5,000 s; A's one
// task uses 0.5 CPU at 0.5 GFLOPS (0.5 × the CPU's 1 GFLOPS) and has 1e12 FLOPs: 2,000 s.
// B (equal share) has no task. Shares 0.5 each.
//
//	t=0: A uses 0.5 CPU: nidle 0.5.
//	[0,2000]: shortfall 0.5·2000 = 1000; A (0.5 − 0.5)·2000 = 0, B 0.5·2000 = 1000.
//	[2000,5000]: shortfall 3000 → 4000; A 0.5·3000 = 1500, B 1500 → 2500.
func TestSimulateFractional(t *testing.T) {
	doc := cpuDoc()
	doc.Host.Resources[0].Instances = 1
	doc.Preferences.WorkBufMinDays = 5000.0 / 86400
	doc.Projects[1].ResourceShare = 3
	doc.AppVersions[0].AvgNCPUs = 0.5
	doc.Tasks = []state.Task{task("a1", "A", "a", state.TaskReady, 1e12)}
	cpu := Simulate(doc, 0).Resource("cpu")
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"nidle", cpu.NIdle, 0.5},
		{"shortfall", cpu.Shortfall, 4000},
		{"A share", cpu.Projects[0].Share, 0.5},
		{"A shortfall", cpu.Projects[0].Shortfall, 1500},
		{"B shortfall", cpu.Projects[1].Shortfall, 2500},
	} {
		if !approx(c.got, c.want) {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
}

// TestDecideOrder: the seed's order. With a CPU shortfall and an idle GPU, the GPU goes
// first and the CPU's shortfall is left out of the request (its idle instances stay).
// Only projects that may have a resource's jobs (D(P,R)) are asked for it: A, with CPU
// jobs only, is never asked for the GPU, whatever its debt.
func TestDecideOrder(t *testing.T) {
	doc := cpuDoc()
	doc.Tasks = []state.Task{task("a1", "A", "a", state.TaskRunning, 3e12)}
	doc.Projects[0].ResourceState("cpu").AccumulateDebt = true
	doc.Projects[1].ResourceState("cpu").AccumulateDebt = true
	doc.Projects[1].ResourceState("NVIDIA").AccumulateDebt = true
	doc.Projects[1].ResourceState("cpu").LongTermDebt = 1e6 // B is owed much
	d := Decide(doc, 0)
	r := d.Request
	if r.Project != "B" || r.CPUReqSecs != 0 || r.CPUReqInstances != 1 || len(r.Coprocs) != 1 ||
		!approx(r.Coprocs[0].ReqSecs, 10000) || r.Coprocs[0].ReqInstances != 1 || !approx(r.WorkReqSeconds, 10000) {
		t.Errorf("request %+v", r)
	}
	// A owed more than B: still not asked for the GPU, which it has no jobs for.
	doc.Projects[0].ResourceState("cpu").LongTermDebt = 2e6
	if d = Decide(doc, 0); d.Request.Project != "B" || d.Selections[1].Candidates[0].Eligible {
		t.Errorf("A owed more: %+v", d.Request)
	}
	doc.Projects[0].ResourceState("cpu").LongTermDebt = 0
	// B backed off for the GPU: nobody to ask for it, so the idle CPU's turn: B (the
	// larger debt), and no GPU seconds asked of it.
	doc.Projects[1].ResourceState("NVIDIA").BackoffUntil = 10
	d = Decide(doc, 0)
	r = d.Request
	if r.Project != "B" || r.CPUReqInstances != 1 || !approx(r.CPUReqSecs, 17000) || r.Coprocs[0].ReqSecs != 0 || r.Coprocs[0].ReqInstances != 0 {
		t.Errorf("idle CPU: %+v", r)
	}
	// Nothing needed: no request.
	doc.Preferences.WorkBufMinDays = 0
	doc.Host.Resources = doc.Host.Resources[:1]
	doc.Host.Resources[0].Instances = 1
	doc.AppVersions = doc.AppVersions[:2]
	if d = Decide(doc, 0); d.Request.Project != "" {
		t.Errorf("nothing needed: %+v", d.Request)
	}
}

// benchDoc: 20 projects, 4 resource types, 10,000 queued tasks.
func benchDoc() *state.Document {
	doc := &state.Document{
		Version: 1,
		Host: state.Host{
			Resources: []state.Resource{
				{Type: "cpu", Instances: 16, Flops: 3e9}, {Type: "NVIDIA", Instances: 2, Flops: 5e10},
				{Type: "ATI", Instances: 1, Flops: 3e10}, {Type: "intel_gpu", Instances: 1, Flops: 5e9},
			},
			TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1},
		},
		Preferences: state.Preferences{WorkBufMinDays: 1, WorkBufAdditionalDays: 2, CPUSchedulingPeriod: 3600},
	}
	for p := range 20 {
		name := fmt.Sprintf("P%02d", p)
		doc.Projects = append(doc.Projects, state.Project{Name: name, ResourceShare: float64(10 + p)})
		for _, r := range doc.Host.Resources {
			av := state.AppVersion{Name: name + "_" + r.Type, Project: name, AvgNCPUs: 1}
			if r.Type != "cpu" {
				av.AvgNCPUs = 0.2
				av.Coproc = &state.CoprocUsage{Type: r.Type, Count: 0.5}
			}
			doc.AppVersions = append(doc.AppVersions, av)
		}
	}
	for i := range 10000 {
		p := i % 20
		r := doc.Host.Resources[(i/20)%4]
		st := state.TaskReady
		if i < 40 {
			st = state.TaskRunning
		}
		doc.Tasks = append(doc.Tasks, state.Task{
			Name: fmt.Sprintf("t%05d", i), Project: doc.Projects[p].Name, AppVersion: doc.Projects[p].Name + "_" + r.Type,
			State: st, EstimatedFlops: float64(1+i%7) * 3e12, ReportDeadline: 1e9,
		})
	}
	return doc
}

func BenchmarkSimulate(b *testing.B) {
	doc := benchDoc()
	if err := state.Validate(doc); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Simulate(doc, 0)
	}
}

func BenchmarkDecide(b *testing.B) {
	doc := benchDoc()
	b.ReportAllocs()
	for b.Loop() {
		Decide(doc, 0)
	}
}

// TestCompletionsAndBusyTimes: the small case of TestSimulateSmall run to its end: b1
// ends at 1000 s, a1 and b2 at 3000 s. With deadlines at 2000 s only a1 and b2 are late;
// each occupies the least busy CPU for its remaining run time (3000 s and 2000 s), so
// the delay a request reports is the lesser, 2000 s. The GPU has no task: delay 0.
// Lateness is against the computation deadline, the report deadline less
// work_buf_min_days (0 here, until the last case).
func TestCompletionsAndBusyTimes(t *testing.T) {
	doc := cpuDoc()
	doc.Preferences.WorkBufMinDays = 0
	doc.Tasks = []state.Task{
		task("b1", "B", "b", state.TaskReady, 1e12),
		task("a1", "A", "a", state.TaskRunning, 3e12),
		task("b2", "B", "b", state.TaskReady, 2e12),
		task("done", "B", "b", state.TaskDone, 2e12),
	}
	for i := range doc.Tasks {
		doc.Tasks[i].ReportDeadline = 2000
	}
	fin := Completions(doc, 0)
	for i, want := range []float64{1000, 3000, 3000, math.Inf(1)} {
		if !approx(fin[i], want) && !(math.IsInf(want, 1) && math.IsInf(fin[i], 1)) {
			t.Errorf("%s completes at %g, want %g", doc.Tasks[i].Name, fin[i], want)
		}
	}
	busy := BusyTimes(doc, 0)
	if !approx(busy[0], 2000) || busy[1] != 0 {
		t.Errorf("busy times %v, want [2000 0]", busy)
	}
	// Nothing late: no delay.
	for i := range doc.Tasks {
		doc.Tasks[i].ReportDeadline = 5000
	}
	if busy := BusyTimes(doc, 0); busy[0] != 0 {
		t.Errorf("busy times %v with every deadline met, want 0", busy)
	}
	// Deadlines at 3,500 s and a 1,000-s low-water mark: a1 and b2 end (3,000 s) within
	// the buffer of their deadlines, so they count as late again; b1 (1,000 s) does not.
	for i := range doc.Tasks {
		doc.Tasks[i].ReportDeadline = 3500
	}
	doc.Preferences.WorkBufMinDays = 1000.0 / 86400
	if busy := BusyTimes(doc, 0); !approx(busy[0], 2000) || busy[1] != 0 {
		t.Errorf("busy times %v with the computation deadline at 2,500 s, want [2000 0]", busy)
	}
}

// TestDecideWorkIsDecide: one DecideWork deciding again and again, on documents whose
// tasks run, finish and arrive, whose debts and backoffs move and which grow and lose
// projects and resources, decides exactly as Decide does; a quiet one too, without the
// reason. A BusyWork gives BusyTimes' delays alike, a CompletionsWork Completions' times.
func TestDecideWorkIsDecide(t *testing.T) {
	var w DecideWork
	quiet := DecideWork{Quiet: true}
	var bw BusyWork
	var cw CompletionsWork
	doc := benchDoc()
	doc.Tasks = doc.Tasks[:300]
	for i := range 200 {
		switch {
		case i == 50: // a project more
			doc.Projects = append(doc.Projects, state.Project{Name: "Z", ResourceShare: 5})
			doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "Z_cpu", Project: "Z", AvgNCPUs: 1})
			doc.Tasks = append(doc.Tasks, state.Task{Name: "z1", Project: "Z", AppVersion: "Z_cpu", State: state.TaskReady, EstimatedFlops: 1e12, ReportDeadline: 1e9})
		case i == 100: // a resource less: the tasks and versions of the last one go too
			doc.Host.Resources = doc.Host.Resources[:3]
			doc.Tasks = slices.DeleteFunc(doc.Tasks, func(t state.Task) bool { return strings.HasSuffix(t.AppVersion, "intel_gpu") })
			doc.AppVersions = slices.DeleteFunc(doc.AppVersions, func(av state.AppVersion) bool { return strings.HasSuffix(av.Name, "intel_gpu") })
		case i == 150: // a project less
			doc.Projects = doc.Projects[:len(doc.Projects)-1]
			doc.AppVersions = doc.AppVersions[:len(doc.AppVersions)-1]
			doc.Tasks = slices.DeleteFunc(doc.Tasks, func(t state.Task) bool { return t.Project == "Z" })
		}
		for k := range doc.Tasks {
			tk := &doc.Tasks[k]
			switch (i + k) % 5 {
			case 0:
				tk.FlopsDone = min(tk.EstimatedFlops, tk.FlopsDone+1e11)
			case 1:
				tk.State = state.TaskRunning
			case 2:
				tk.State = state.TaskPreempted
			}
			tk.ReportDeadline = float64((i*31 + k*7) % 20000) // some late: BusyTimes counts them
		}
		p := &doc.Projects[i%len(doc.Projects)]
		p.ResourceState(doc.Host.Resources[i%len(doc.Host.Resources)].Type).AccumulateDebt = i%3 != 0
		p.ResourceState("cpu").LongTermDebt += float64(i%7-3) * 1000
		p.ResourceState(doc.Host.Resources[(i+1)%len(doc.Host.Resources)].Type).BackoffUntil = float64(i % 4 * 100)
		now := float64(i * 60)
		want := Decide(doc, now)
		if diff := cmp.Diff(want, w.Decide(doc, now)); diff != "" {
			t.Fatalf("decision %d (-Decide +DecideWork):\n%s", i, diff)
		}
		if diff := cmp.Diff(BusyTimes(doc, now), bw.BusyTimes(doc, now)); diff != "" {
			t.Fatalf("busy times %d (-BusyTimes +BusyWork):\n%s", i, diff)
		}
		if diff := cmp.Diff(Completions(doc, now), cw.Completions(doc, now)); diff != "" {
			t.Fatalf("completions %d (-Completions +CompletionsWork):\n%s", i, diff)
		}
		// Quiet: the same decision, without the reason.
		want.Request.Reason = ""
		if diff := cmp.Diff(want, quiet.Decide(doc, now)); diff != "" {
			t.Fatalf("decision %d (-Decide without its reason +quiet DecideWork):\n%s", i, diff)
		}
	}
}

// emulatorDoc is a document of bsim's size on one of its steps: 2 projects on 4 CPUs,
// 13 runnable tasks (4 running) and a done one, deadlines some of them miss; the tasks
// hold the very strings of their projects and app versions, as the emulator's do.
func emulatorDoc() *state.Document {
	doc := &state.Document{
		Version: 1,
		Host: state.Host{
			Resources: []state.Resource{{Type: "cpu", Instances: 4, Flops: 1e9}},
			TimeStats: state.TimeStats{OnFrac: 0.95, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1},
		},
		Preferences: state.Preferences{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5, CPUSchedulingPeriod: 3600},
		Projects: []state.Project{
			{Name: "A", ResourceShare: 60, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}}},
			{Name: "B", ResourceShare: 40, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}}},
		},
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
	return doc
}

// BenchmarkBusyTimesEmulator is the round-robin simulation the emulated servers run for
// every request (BusyWork), on the emulator's document. Allocations per op must be 0.
func BenchmarkBusyTimesEmulator(b *testing.B) {
	doc := emulatorDoc()
	if err := state.Validate(doc); err != nil {
		b.Fatal(err)
	}
	var w BusyWork
	b.ReportAllocs()
	for b.Loop() {
		w.BusyTimes(doc, 0)
	}
}

// BenchmarkAccumulateDebtEmulator is seed 002's debt accounting of one emulator step
// (DebtWork), on the emulator's document. Allocations per op must be 0.
func BenchmarkAccumulateDebtEmulator(b *testing.B) {
	doc := emulatorDoc()
	if err := state.Validate(doc); err != nil {
		b.Fatal(err)
	}
	used := [][]float64{{2.5}, {1.5}}
	var w DebtWork
	b.ReportAllocs()
	for b.Loop() {
		w.AccumulateDebt(doc, used, 60, 0)
	}
}

// fullBusyTimes is BusyTimes worked out from Completions, the simulation run to its end:
// what BusyTimes computed before it stopped its simulation early (lateOnly).
func fullBusyTimes(doc *state.Document, now float64) []float64 {
	finish := Completions(doc, now)
	h := &doc.Host
	busy := make([][]float64, len(h.Resources))
	for r, res := range h.Resources {
		busy[r] = make([]float64, res.Instances)
	}
	ts := h.TimeStats
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if math.IsInf(finish[i], 1) || now+finish[i]+doc.Preferences.WorkBufMinDays*86400 <= t.ReportDeadline {
			continue
		}
		av := &doc.AppVersions[slices.IndexFunc(doc.AppVersions, func(av state.AppVersion) bool { return av.Name == t.AppVersion })]
		frac := ts.OnFrac * ts.ActiveFrac
		if av.Coproc != nil {
			frac *= ts.GPUActiveFrac
		}
		speed := av.Speed(h)
		if frac <= 0 || speed <= 0 {
			continue
		}
		dur := t.RemainingWork(doc.ProjectDCF(t.Project)) / speed / frac
		b := busy[slices.IndexFunc(h.Resources, func(r state.Resource) bool { return r.Type == av.ResourceType() })]
		if len(b) == 0 || av.Instances() < 1 {
			continue
		}
		best := 0
		for k := range b {
			if b[k] < b[best] {
				best = k
			}
		}
		for k := range int(av.Instances()) {
			b[(best+k)%len(b)] += dur
		}
	}
	out := make([]float64, len(h.Resources))
	for r, b := range busy {
		if len(b) > 0 {
			out[r] = slices.Min(b)
		}
	}
	return out
}

// TestBusyTimesStopsEarlyAlike: BusyTimes stops its simulation once every task left is
// known to end late or on time; its delays are those of the whole simulation to the
// last bit, on documents whose deadlines fall before, among and after the completions,
// with resources never available, shares of zero and tasks of several instances.
func TestBusyTimesStopsEarlyAlike(t *testing.T) {
	var bw BusyWork
	stopped := 0
	for i := range 400 {
		doc := emulatorDoc()
		if i%2 == 1 {
			doc = cpuDoc()
			doc.Host.Resources[1].Instances = 1 + i%3
			for k := range 12 {
				av := []string{"a", "b", "bg"}[k%3]
				doc.Tasks = append(doc.Tasks, task(fmt.Sprintf("t%d", k), map[string]string{"a": "A", "b": "B", "bg": "B"}[av], av,
					[]state.TaskState{state.TaskReady, state.TaskRunning, state.TaskPreempted, state.TaskDone}[(k+i)%4], float64(1+(k*7+i)%5)*1e12))
			}
		}
		switch i % 7 {
		case 1:
			doc.Projects[1].ResourceShare = 0
		case 2:
			doc.Host.TimeStats.GPUActiveFrac = 0 // coprocessor tasks never end
		case 3:
			doc.AppVersions[0].AvgNCPUs = 2 // two CPUs a task
		case 4:
			doc.AppVersions[1].AvgNCPUs = 0.5
		case 5:
			doc.Host.TimeStats.OnFrac = 0 // nothing ever ends
		}
		doc.Preferences.WorkBufMinDays = float64(i%4) * 0.02 // the computation deadline's margin: 0 to 1.4 h
		now := float64(i * 97)
		for k := range doc.Tasks {
			// From long past to well after every completion.
			doc.Tasks[k].ReportDeadline = now + float64((k*131+i*37)%60)*1000 - 5000
			if i%5 == 0 {
				doc.Tasks[k].ReportDeadline = now + 1e6 // every task on time
			}
		}
		want := fullBusyTimes(doc, now)
		if diff := cmp.Diff(want, bw.BusyTimes(doc, now)); diff != "" {
			t.Fatalf("document %d (-whole simulation +BusyTimes):\n%s", i, diff)
		}
		if want[0] > 0 {
			stopped++
		}
	}
	if stopped == 0 {
		t.Fatal("no document had a delay: the test compares nothing but zeros")
	}
}

// TestLateIsCompletions: Late stops its simulation once every task left is known to
// end late or on time (lateOnly, with a margin), or runs none when every job is
// settled at once (lateAtOnce); its answers are those of the whole simulation
// (Completions) to the last task, on the documents of
// TestBusyTimesStopsEarlyAlike, with margins of 0, a scheduling period and more, one
// Workspace reused throughout.
func TestLateIsCompletions(t *testing.T) {
	var cw CompletionsWork
	late, onTime, atOnce := 0, 0, 0
	for i := range 400 {
		doc := emulatorDoc()
		if i%2 == 1 {
			doc = cpuDoc()
			doc.Host.Resources[1].Instances = 1 + i%3
			for k := range 12 {
				av := []string{"a", "b", "bg"}[k%3]
				doc.Tasks = append(doc.Tasks, task(fmt.Sprintf("t%d", k), map[string]string{"a": "A", "b": "B", "bg": "B"}[av], av,
					[]state.TaskState{state.TaskReady, state.TaskRunning, state.TaskPreempted, state.TaskDone}[(k+i)%4], float64(1+(k*7+i)%5)*1e12))
			}
		}
		switch i % 7 {
		case 1:
			doc.Projects[1].ResourceShare = 0
		case 2:
			doc.Host.TimeStats.GPUActiveFrac = 0 // coprocessor tasks never end
		case 3:
			doc.AppVersions[0].AvgNCPUs = 2 // two CPUs a task
		case 4:
			doc.AppVersions[1].AvgNCPUs = 0.5
		case 5:
			doc.Host.TimeStats.OnFrac = 0 // nothing ever ends
		}
		now := float64(i * 97)
		margin := []float64{0, 3600, 20000, 1e-3}[i%4]
		for k := range doc.Tasks {
			// From long past to well after every completion.
			doc.Tasks[k].ReportDeadline = now + float64((k*131+i*37)%60)*1000 - 5000
			if i%5 == 0 {
				doc.Tasks[k].ReportDeadline = now + 1e6 // every task on time
			}
		}
		finish := Completions(doc, now)
		want := make([]bool, len(doc.Tasks))
		for k := range doc.Tasks {
			want[k] = now+finish[k]+margin > doc.Tasks[k].ReportDeadline
			if want[k] {
				late++
			} else {
				onTime++
			}
		}
		if diff := cmp.Diff(want, cw.Late(doc, now, margin)); diff != "" {
			t.Fatalf("document %d (-whole simulation +Late):\n%s", i, diff)
		}
		if diff := cmp.Diff(want, Late(doc, now, margin)); diff != "" {
			t.Fatalf("document %d (-whole simulation +Late, new workspace):\n%s", i, diff)
		}
		// Without the simulation when every job is settled.
		got := make([]bool, len(doc.Tasks))
		if cw.lateAtOnce(doc, now, margin, got) {
			atOnce++
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("document %d (-whole simulation +lateAtOnce):\n%s", i, diff)
			}
		}
	}
	if late == 0 || onTime == 0 {
		t.Fatalf("%d late, %d on time: the test compares one answer only", late, onTime)
	}
	if atOnce == 0 || atOnce == 400 {
		t.Fatalf("%d of 400 documents answered without the simulation: the test compares one way only", atOnce)
	}
	// Every deadline a little after (all on time: settled at once) or well before (some
	// late: a bound too small would settle them) the last completion.
	for i, c := range []float64{3, 0.6, 1.5, 0.9} {
		doc := emulatorDoc()
		doc.Host.TimeStats.GPUActiveFrac = 1
		now, margin := 1000.0, float64(i*600)
		last := 0.0
		for _, f := range Completions(doc, now) {
			if !math.IsInf(f, 1) {
				last = max(last, f)
			}
		}
		for k := range doc.Tasks {
			doc.Tasks[k].ReportDeadline = now + c*last + margin
		}
		finish := Completions(doc, now)
		want := make([]bool, len(doc.Tasks))
		for k := range doc.Tasks {
			want[k] = now+finish[k]+margin > doc.Tasks[k].ReportDeadline
		}
		if diff := cmp.Diff(want, cw.Late(doc, now, margin)); diff != "" {
			t.Fatalf("deadlines at %g × the last completion (-whole simulation +Late):\n%s", c, diff)
		}
	}
}
