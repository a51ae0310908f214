package boincpolicy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestMissesKnownWithoutSimulation: jobs whose computation deadline (report deadline
// − work_buf_min, 8640 s) is already past miss whatever the simulation does; with the
// others far from theirs, the misses are known without it and are the simulation's,
// and the quiet pass runs what the full one runs. One job whose deadline is near but
// not past leaves them unknown.
func TestMissesKnownWithoutSimulation(t *testing.T) {
	mk := func() *state.Document {
		doc := host(2)
		doc.Tasks = []state.Task{
			task("a0", "A", 3600, t0+7200), // latency below work_buf_min: a miss
			task("b0", "B", 3600, t0+1e6),
			task("a1", "A", 3600, t0+8000),
			task("b1", "B", 3600, t0+1e6),
			task("a2", "A", 3600, t0+1e6),
		}
		return doc
	}
	var full Workspace
	fdoc := mk()
	full.Simulate(fdoc, t0)
	var quiet Workspace
	qdoc := mk()
	quiet.view(qdoc)
	quiet.prepare(qdoc)
	if !quiet.missesKnown(qdoc, t0) || !quiet.anyMiss {
		t.Fatalf("misses unknown (any %v) without the simulation", quiet.anyMiss)
	}
	if !slices.Equal(quiet.missed, full.missed) || quiet.Sim[0].Misses != full.Sim[0].Misses || quiet.Sim[0].Misses != 2 {
		t.Errorf("missed %v (%d on the CPUs), the simulation's %v (%d), want 2", quiet.missed, quiet.Sim[0].Misses, full.missed, full.Sim[0].Misses)
	}
	if got, want := quiet.Misses(), full.Misses(); !slices.Equal(got, want) {
		t.Errorf("misses %v, the simulation's %v", got, want)
	}
	// The quiet pass (no simulation) and the full one run the same jobs, EDF first.
	quiet = Workspace{Quiet: true}
	full = Workspace{}
	ql := quiet.Schedule(qdoc, t0)
	fl := full.Schedule(fdoc, t0)
	if quiet.simDone || quiet.hold {
		t.Errorf("quiet pass: simulated %v, held %v; want neither", quiet.simDone, quiet.hold)
	}
	if fmt.Sprint(ql) != fmt.Sprint(fl) || fmt.Sprint(qdoc.Tasks) != fmt.Sprint(fdoc.Tasks) {
		t.Errorf("quiet pass %+v, full %+v", ql, fl)
	}
	if fl[0].Why != WhyEDF {
		t.Errorf("first of the list %+v, want a deadline miss", fl[0])
	}
	// A job 2 hours from its computation deadline behind 4 hours of work: unknown.
	doc := mk()
	doc.Tasks[4].ReportDeadline = t0 + 8640 + 7200
	var w Workspace
	w.view(doc)
	w.prepare(doc)
	if w.missesKnown(doc, t0) {
		t.Errorf("a job near its deadline: misses known without the simulation")
	}
}

// TestNoneAskable: when every project is in RPC backoff or backed off for every
// resource it has apps for, the quiet work fetch asks nobody without a view or a
// simulation, as the full one, and holds that until the first backoff ends; then it
// asks the project whose backoff ended, as the full one does.
func TestNoneAskable(t *testing.T) {
	mk := func() *state.Document {
		doc := host(2)
		doc.Projects[0].MinRPCTime = t0 + 600
		doc.Projects[1].ResourceState("cpu").BackoffUntil = t0 + 300
		return doc
	}
	quiet := Workspace{Quiet: true}
	var full Workspace
	qdoc, fdoc := mk(), mk()
	for _, now := range []float64{t0, t0 + 299} {
		q, f := quiet.ChooseProject(qdoc, now), full.ChooseProject(fdoc, now)
		full.Reset()
		if q.Project != -1 || f.Project != -1 {
			t.Errorf("at %g: quiet asks %d, full %d; want nobody", now-t0, q.Project, f.Project)
		}
	}
	if !quiet.askHold || quiet.askHoldUntil != t0+300 || quiet.viewDone {
		t.Errorf("hold %v until %g (view built %v), want until 300 s, no view", quiet.askHold, quiet.askHoldUntil-t0, quiet.viewDone)
	}
	q, f := quiet.ChooseProject(qdoc, t0+300), full.ChooseProject(fdoc, t0+300)
	if q.Project != 1 || f.Project != 1 || q.Request.CPUReqSecs != f.Request.CPUReqSecs {
		t.Errorf("at 300 s: quiet asks %d for %g s, full %d for %g s; want B", q.Project, q.Request.CPUReqSecs, f.Project, f.Request.CPUReqSecs)
	}
	// A project with no app version for the CPU (bsim's convention) is never asked
	// for it: with B backed off, nobody is, until B's backoff ends.
	doc := mk()
	doc.Projects[0].MinRPCTime = 0
	doc.AppVersions[0].Coproc = &state.CoprocUsage{Type: "NVIDIA", Count: 1}
	quiet = Workspace{Quiet: true}
	if c := quiet.ChooseProject(doc, t0); c.Project != -1 || quiet.askHoldUntil != t0+300 {
		t.Errorf("A without CPU apps, B backed off: asks %d, hold until %g; want nobody until 300 s", c.Project, quiet.askHoldUntil-t0)
	}
	quiet.Reset()
	doc.BOINCEmulator = true // BOINC's emulator's client asks every project for every resource
	if c := quiet.ChooseProject(doc, t0); c.Project != 0 {
		t.Errorf("under BOINC's emulator: asks %d, want A", c.Project)
	}
}

// TestHoldBeforePass: two jobs running on two CPUs within their time slices, none near
// its deadline: the pass would run exactly them, so the quiet pass is not made and
// holds, and the tasks are as a full pass leaves them. A job that has not run yet
// under BOINC's emulator (its true remaining work unknown, EmulatorFlopsLeft 0) leaves
// the slack unsure before the pass: the pass is only recorded (passKeeps), and then
// holds as a pass made that changed nothing.
func TestHoldBeforePass(t *testing.T) {
	mk := func() *state.Document {
		doc := host(2)
		doc.Tasks = []state.Task{
			task("a0", "A", 3600, t0+1e6), task("b0", "B", 3600, t0+1e6),
			task("a1", "A", 3600, t0+1e6), task("b1", "B", 3600, t0+1e6),
		}
		// B's REC is low: a pass by priority alone would run B's jobs.
		doc.Projects[0].REC = 100
		for i := range 2 {
			tk := &doc.Tasks[2*i]
			tk.State, tk.ElapsedTime, tk.ElapsedTimeAtLastSched = state.TaskRunning, 600, 0
			tk.FlopsDone, tk.FractionDone = 6e11, 1.0/6
		}
		return doc
	}
	qdoc, fdoc := mk(), mk()
	quiet, full := Workspace{Quiet: true}, Workspace{}
	ql := quiet.Schedule(qdoc, t0)
	full.Schedule(fdoc, t0)
	if len(ql) != 0 || !quiet.hold || quiet.Changed() || full.Changed() {
		t.Errorf("quiet pass listed %v, held %v, changed %v (full pass changed %v); want no pass, held, nothing changed", ql, quiet.hold, quiet.Changed(), full.Changed())
	}
	if fmt.Sprint(qdoc.Tasks) != fmt.Sprint(fdoc.Tasks) || *qdoc.CPUSched != *fdoc.CPUSched {
		t.Errorf("quiet pass left\n%+v %+v\nfull pass\n%+v %+v", qdoc.Tasks, *qdoc.CPUSched, fdoc.Tasks, *fdoc.CPUSched)
	}
	// The slice of the first job ends at 3600 s of elapsed time: held until then.
	if want := t0 + 3000; quiet.holdUntil != want {
		t.Errorf("held until %g, want %g", quiet.holdUntil-t0, want-t0)
	}
	edoc, efull := mk(), mk()
	for _, d := range []*state.Document{edoc, efull} {
		d.BOINCEmulator = true
		d.Tasks[0].EmulatorFlopsLeft = 3e12
	}
	quiet, full = Workspace{Quiet: true}, Workspace{}
	quiet.Schedule(edoc, t0)
	full.Schedule(efull, t0)
	// The pass is recorded only (passKeeps: it would run exactly the jobs running),
	// and then holds as a pass made that changed nothing.
	if quiet.Changed() || fmt.Sprint(edoc.Tasks) != fmt.Sprint(efull.Tasks) || *edoc.CPUSched != *efull.CPUSched {
		t.Errorf("under BOINC's emulator, a running job not yet run: changed %v, left\n%+v\nfull pass\n%+v", quiet.Changed(), edoc.Tasks, efull.Tasks)
	}
	if want := t0 + 3000; !quiet.hold || quiet.holdUntil != want {
		t.Errorf("under BOINC's emulator: held %v until %g, want until %g", quiet.hold, quiet.holdUntil-t0, want-t0)
	}
}

// TestRefreshDropsSettled: after TasksChanged the quiet view drops the jobs of the
// tasks marked done and brings the others up to date, as view builds them; after the
// done task is dropped and two received at the end, it keeps the others and builds
// the new ones, as view does.
func TestRefreshDropsSettled(t *testing.T) {
	var freshMem Workspace // renewed at each use: their memory reused
	doc := host(2)
	doc.Tasks = []state.Task{
		task("a0", "A", 3600, t0+1e6), task("b0", "B", 3600, t0+1e6),
		task("a1", "A", 3600, t0+1e6), task("b1", "B", 3600, t0+1e6),
	}
	w := Workspace{Quiet: true}
	w.quietView(doc, t0)
	same := func(when string) {
		t.Helper()
		fresh := renewed(&freshMem)
		fresh.view(doc)
		if fmt.Sprint(w.jobs) != fmt.Sprint(fresh.jobs) {
			t.Errorf("%s: refreshed jobs\n%+v\nview's\n%+v", when, w.jobs, fresh.jobs)
		}
	}
	doc.Tasks[1].State = state.TaskDone
	doc.Tasks[2].State, doc.Tasks[2].FlopsDone, doc.Tasks[2].FractionDone = state.TaskRunning, 1.8e12, 0.5
	w.TasksChanged()
	w.quietView(doc, t0)
	same("b0 done")
	if len(w.jobs) != 3 {
		t.Errorf("b0 done: %d jobs, want 3", len(w.jobs))
	}
	doc.Tasks = append(doc.Tasks[:1], doc.Tasks[2:]...)
	doc.Tasks = append(doc.Tasks, task("b2", "B", 7200, t0+2e6), task("a2", "A", 3600, t0+2e6))
	w.TasksReceived()
	w.quietView(doc, t0+60)
	same("b0 reported, b2 and a2 received")
	if len(w.jobs) != 5 {
		t.Errorf("b0 reported, b2 and a2 received: %d jobs, want 5", len(w.jobs))
	}
}

// TestPassHoldsFetch: a quiet pass on a host with 12 hours of work queued on 2 CPUs
// (work_buf_min 2.4 hours) sets the work fetch's hold from the jobs it readied, so the
// work fetch that follows asks nobody without a view or a simulation; under BOINC's
// emulator a running job that has not run yet leaves it unset.
func TestPassHoldsFetch(t *testing.T) {
	mk := func() *state.Document {
		doc := host(2)
		for i := range 12 {
			doc.Tasks = append(doc.Tasks, task(fmt.Sprint("t", i), []string{"A", "B"}[i%2], 3600, t0+1e6))
		}
		for i := range 2 {
			tk := &doc.Tasks[i]
			tk.State, tk.ElapsedTime, tk.FlopsDone, tk.FractionDone = state.TaskRunning, 60, 6e10, 1.0/60
		}
		return doc
	}
	doc := mk()
	w := Workspace{Quiet: true}
	w.Schedule(doc, t0)
	if !w.fetchHold || w.fetchHoldUntil <= t0 {
		t.Fatalf("after the pass: fetch hold %v until %g, want held", w.fetchHold, w.fetchHoldUntil-t0)
	}
	if c := w.ChooseProject(doc, t0+60); c.Project >= 0 || w.simDone || w.viewAt != t0 {
		t.Errorf("work fetch: project %d, simulated %v, view at %g; want none, from the hold", c.Project, w.simDone, w.viewAt-t0)
	}
	var full Workspace
	if c := full.ChooseProject(mk(), t0+60); c.Project >= 0 {
		t.Errorf("the full work fetch asks project %d", c.Project)
	}
	edoc := mk()
	edoc.BOINCEmulator = true
	edoc.Tasks[1].EmulatorFlopsLeft = 3e12
	w = Workspace{Quiet: true}
	w.Schedule(edoc, t0)
	if w.fetchHold {
		t.Errorf("under BOINC's emulator, a running job not yet run: fetch held")
	}
}

// TestBestCPUByPriority: the ranked lists give the jobs bestByPriority gives, one
// after another as they are chosen, on random sets of jobs (projects of equal and
// unequal priorities, running, preempted and waiting jobs, some chosen already, a
// coprocessor's jobs among them).
func TestBestCPUByPriority(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for c := range 500 {
		nP := 1 + rng.IntN(4)
		w := Workspace{cpuRes: 0}
		w.prio = make([]float64, nP)
		for p := range w.prio {
			w.prio[p] = -float64(rng.IntN(3)) // ties are common
		}
		for range rng.IntN(12) {
			st := rng.IntN(3)
			w.jobs = append(w.jobs, job{proj: rng.IntN(nP), res: rng.IntN(4) / 3, running: st == 0, started: st < 2})
		}
		w.chosen = make([]bool, len(w.jobs))
		for i := range w.chosen {
			w.chosen[i] = rng.IntN(5) == 0
		}
		w.rankCPUJobs(nP)
		for {
			got, want := w.bestCPUByPriority(), w.bestByPriority(0)
			if got != want {
				t.Fatalf("case %d: %d, bestByPriority %d (jobs %+v, prio %v, chosen %v)", c, got, want, w.jobs, w.prio, w.chosen)
			}
			if want < 0 {
				break
			}
			w.chosen[want] = true
			w.prio[w.jobs[want].proj] -= float64(rng.IntN(2)) // as a bump may
		}
	}
}

// TestPiggybackNoneKnown: on random hosts and queues (projects backed off or not, in
// RPC backoff or not, of equal and unequal REC, a zero share now and then), whenever
// quietPiggybackNone says nothing would be piggybacked, the full Piggyback asks for
// nothing; and it says so on some of the cases where that is true (a queue past
// work_buf_total, a project of higher priority askable), without a simulation.
func TestPiggybackNoneKnown(t *testing.T) {
	var fullMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 4))
	var known, empty, asked int
	for trial := range 2000 {
		doc := host(1 + rng.IntN(4))
		doc.BOINCEmulator = rng.IntN(4) == 0
		for p := range doc.Projects {
			pr := &doc.Projects[p]
			pr.REC = rng.Float64() * 1e5
			if rng.IntN(20) == 0 {
				pr.ResourceShare = 0
			}
			if rng.IntN(3) == 0 {
				pr.MinRPCTime = t0 + 600
			}
			if rng.IntN(3) == 0 {
				pr.ResourceState("cpu").BackoffUntil = t0 + 300
			}
		}
		for i := range rng.IntN(16) {
			doc.Tasks = append(doc.Tasks, task(fmt.Sprint("t", i), []string{"A", "B"}[rng.IntN(2)], 600+rng.Float64()*20000, t0+1e6))
		}
		p := rng.IntN(2)
		q := Workspace{Quiet: true}
		none, _ := q.quietPiggybackNone(doc, p, t0)
		full := renewed(&fullMem)
		c := full.Piggyback(doc, p, t0)
		nothing := c.Request.CPUReqSecs == 0 && len(c.Request.Coprocs) == 0
		switch {
		case none && !nothing:
			t.Fatalf("trial %d: known to piggyback nothing, but Piggyback asks %+v", trial, c.Request)
		case none && q.simDone:
			t.Fatalf("trial %d: simulated", trial)
		case none:
			known++
		case nothing:
			empty++
		default:
			asked++
		}
	}
	if known == 0 || asked == 0 {
		t.Errorf("known %d, empty but not known %d, asked %d: want some known and some asked", known, empty, asked)
	}
	t.Logf("known %d, empty but not known %d, asked %d", known, empty, asked)
}

// TestEDFHold: two jobs of A past their computation deadline run on two CPUs within
// their time slices; B's REC is low, so a pass by priority alone would run B's job.
// Earliest deadline first runs A's: the quiet pass is made (some job misses), changes
// nothing, leaves the tasks as a full pass does, and holds until the first slice ends;
// the held pass lists nothing and keeps the misses' counts for Arrived. On one CPU,
// where the listing stops at two jobs, a running job and two preempted ones of the same
// deadline (their order read from the estimated remaining time, which may grow for
// the running one) leave no hold: the listing may take the other two; with one
// preempted, both are listed whatever their order and it holds (issue 30's eighth
// round: before, any such tie left no hold), and with distinct deadlines too. These
// are setEDFHold's, runHold off; with it on (issue 30, thirty-sixth round: several
// projects), the first pass on three CPUs holds as long without its listing.
func TestEDFHold(t *testing.T) {
	noRunHold = true
	defer func() { noRunHold = false }()
	mk := func(cpus int, deadlines ...float64) *state.Document {
		doc := host(cpus)
		for i, d := range deadlines {
			doc.Tasks = append(doc.Tasks, task(fmt.Sprint("a", i), "A", 3600, d))
		}
		doc.Tasks = append(doc.Tasks, task("b0", "B", 3600, t0+1e6))
		doc.Projects[0].REC = 100
		for i := range doc.Tasks[:len(deadlines)] {
			tk := &doc.Tasks[i]
			tk.State, tk.ElapsedTime, tk.ElapsedTimeAtLastSched = state.TaskPreempted, 600, 0
			tk.FlopsDone, tk.FractionDone = 6e11, 1.0/6
			if i < cpus {
				tk.State = state.TaskRunning
			}
		}
		return doc
	}
	qdoc, fdoc := mk(2, t0+5000, t0+6000), mk(2, t0+5000, t0+6000)
	quiet, full := Workspace{Quiet: true}, Workspace{}
	ql := quiet.Schedule(qdoc, t0)
	full.Schedule(fdoc, t0)
	if len(ql) == 0 || quiet.Changed() || full.Changed() || !quiet.hold || !quiet.holdMiss {
		t.Errorf("quiet pass listed %v, changed %v (full %v), held %v (for misses %v); want a pass, nothing changed, held for misses", ql, quiet.Changed(), full.Changed(), quiet.hold, quiet.holdMiss)
	}
	if fmt.Sprint(qdoc.Tasks) != fmt.Sprint(fdoc.Tasks) {
		t.Errorf("quiet pass left\n%+v\nfull pass\n%+v", qdoc.Tasks, fdoc.Tasks)
	}
	if want := t0 + 3000; quiet.holdUntil != want {
		t.Errorf("held until %g, want %g", quiet.holdUntil-t0, want-t0)
	}
	if ql := quiet.Schedule(qdoc, t0+60); len(ql) != 0 || fmt.Sprint(quiet.passMissed) != "[2 0]" {
		t.Errorf("held pass listed %v, misses %v; want nothing listed, A's 2 misses", ql, quiet.passMissed)
	}
	for _, c := range []struct {
		second, third float64
		hold          bool
	}{{t0 + 5000, t0 + 5000, true}, {t0 + 5000, t0 + 6000, true}, {t0 + 5500, t0 + 6000, true}} {
		// (Three of one deadline: the running one listed, its remaining time only
		// falls within the hold, so it stays ahead of the preempted ones, which keep
		// their order: tieListed. Until issue 30's ninth round, not held.)
		doc := mk(1, t0+5000, c.second, c.third)
		quiet = Workspace{Quiet: true}
		quiet.Schedule(doc, t0)
		if quiet.Changed() || quiet.hold != c.hold {
			t.Errorf("one CPU, second and third deadlines %g, %g: changed %v, held %v; want unchanged, held %v", c.second-t0, c.third-t0, quiet.Changed(), quiet.hold, c.hold)
		}
	}
	noRunHold = false // (on three CPUs: on two runHold leaves hosts of several projects to the listing)
	qdoc, quiet = mk(3, t0+5000, t0+6000, t0+7000), Workspace{Quiet: true}
	fdoc, full = mk(3, t0+5000, t0+6000, t0+7000), Workspace{}
	full.Schedule(fdoc, t0)
	if ql := quiet.Schedule(qdoc, t0); len(ql) != 0 || quiet.Changed() || full.Changed() || !quiet.hold || !quiet.holdMiss || quiet.holdUntil != t0+3000 ||
		fmt.Sprint(qdoc.Tasks) != fmt.Sprint(fdoc.Tasks) {
		t.Errorf("runHold: quiet pass listed %v, changed %v, held %v (for misses %v) until %g; want nothing listed or changed, held for misses until 3000",
			ql, quiet.Changed(), quiet.hold, quiet.holdMiss, quiet.holdUntil-t0)
	}
}

// TestPassKeeps: after a simulation with no miss, two jobs running on two CPUs within
// their time slices keep them (a pass would run exactly them: the full pass changes
// nothing); not when one's slice is over, one CPU is free, or a job misses.
func TestPassKeeps(t *testing.T) {
	var wMem Workspace // renewed at each use: their memory reused
	mk := func() *state.Document {
		doc := host(2)
		doc.Tasks = []state.Task{
			task("a0", "A", 3600, t0+1e6), task("b0", "B", 3600, t0+1e6), task("b1", "B", 3600, t0+1e6),
		}
		doc.Projects[0].REC = 100 // a pass by priority alone would run B's jobs
		for i := range 2 {
			tk := &doc.Tasks[i]
			tk.State, tk.ElapsedTime, tk.ElapsedTimeAtLastSched = state.TaskRunning, 600, 0
		}
		return doc
	}
	for _, c := range []struct {
		name string
		edit func(*state.Document)
		want bool
	}{
		{"running within slices", func(*state.Document) {}, true},
		{"a slice over", func(d *state.Document) { d.Tasks[0].ElapsedTime = 3660 }, false}, // past the period: BOINC's finished_time_slice
		{"a CPU free", func(d *state.Document) { d.Tasks[1].State = state.TaskPreempted }, false},
		{"a job misses", func(d *state.Document) { d.Tasks[2].ReportDeadline = t0 + 9000 }, false},
	} {
		doc := mk()
		c.edit(doc)
		w := renewed(&wMem)
		w.Simulate(doc, t0)
		got := w.passKeeps(doc)
		if got != c.want {
			t.Errorf("%s: keeps %v, want %v", c.name, got, c.want)
		}
		if got {
			before := fmt.Sprint(doc.Tasks)
			if w.Schedule(doc, t0); w.Changed() || fmt.Sprint(doc.Tasks) != before {
				t.Errorf("%s: a full pass changed the tasks:\n%v\n%+v", c.name, before, doc.Tasks)
			}
		}
	}
}

// TestEDFKeeps: on random queues (many jobs near their computation deadline, some
// running, some past their time slice), a quiet pass that edfKeeps or keepsMore cuts
// short leaves the tasks, the pass's record and its deadline misses as the whole pass
// does, and its list the whole pass's deadline-miss entries and runs the same tasks
// (what setEDFHold reads); each queue is passed three times, each pass starting from
// the last's run, the running jobs' elapsed times grown in between (so that slices
// run out).
func TestEDFKeeps(t *testing.T) {
	if !Alone(t) {
		return
	}
	rng := rand.New(rand.NewPCG(30, 8))
	hits := 0
	for trial := range 20000 {
		doc := randomQueue(rng)
		for i := range doc.Tasks {
			if tk := &doc.Tasks[i]; tk.State == state.TaskRunning {
				tk.ElapsedTime = rng.Float64() * 2 * doc.Preferences.CPUSchedulingPeriod
				if doc.BOINCEmulator && rng.IntN(2) == 0 {
					// The slice by the wall clock (sliceRun).
					tk.EmulatorRunStart = t0 - rng.Float64()*2*doc.Preferences.CPUSchedulingPeriod
					tk.EmulatorCheckpoint = t0
				}
			}
		}
		var a, b Workspace
		a.Quiet, b.Quiet = true, true
		da, db := *doc, *doc
		db.Tasks = slices.Clone(doc.Tasks)
		da.CPUSched, db.CPUSched = nil, nil
		for pass := range 3 {
			now := t0 + float64(pass)*60
			if pass > 0 {
				// Time slices run out: the running jobs then run by priority.
				for i := range da.Tasks {
					if da.Tasks[i].State == state.TaskRunning {
						x := rng.Float64() * 1.5 * doc.Preferences.CPUSchedulingPeriod
						da.Tasks[i].ElapsedTime += x
						db.Tasks[i].ElapsedTime += x
						if da.Tasks[i].EmulatorRunStart > 0 {
							da.Tasks[i].EmulatorCheckpoint = now
							db.Tasks[i].EmulatorCheckpoint = now
						}
					}
				}
			}
			noEDFKeeps = true
			a.Reset()
			a.Simulate(&da, now)
			la := a.schedule(&da, now, nil)
			noEDFKeeps = false
			b.Reset()
			b.Simulate(&db, now)
			lb := b.schedule(&db, now, nil)
			// Tasks are plain values: == compares them exactly, without formatting them
			// (fmt.Sprint was a fifth of the package's CPU time).
			if !slices.Equal(da.Tasks, db.Tasks) || *da.CPUSched != *db.CPUSched || a.changed != b.changed ||
				!slices.Equal(a.passMissed, b.passMissed) {
				t.Fatalf("trial %d pass %d: the whole pass\n%v %+v\nedfKeeps\n%v %+v", trial, pass, da.Tasks, la, db.Tasks, lb)
			}
			// The deadline misses' entries alike, and the same tasks run.
			edf := func(l []RunEntry) (miss []RunEntry, runs []int) {
				for _, e := range l {
					if e.Why == WhyEDF {
						miss = append(miss, e)
					}
					if e.Runs {
						runs = append(runs, e.Task)
					}
				}
				slices.Sort(runs)
				return miss, runs
			}
			ma, ra := edf(la)
			mb, rb := edf(lb)
			if len(lb) < len(la) {
				hits++
			}
			if !slices.Equal(ma, mb) || !slices.Equal(ra, rb) {
				t.Fatalf("trial %d pass %d: the whole pass's list %+v, edfKeeps' %+v", trial, pass, la, lb)
			}
		}
	}
	if hits < 1000 {
		t.Errorf("edfKeeps cut %d passes short only", hits)
	}
	t.Logf("edfKeeps cut %d of 60000 passes short", hits)
}
