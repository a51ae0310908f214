package boincpolicy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/state"
)

// TestListBoundsAgainstSimulation: on random queues (a third of them one project's),
// every job's bounds per job at now (projectServed's from above, missBounds' from
// below, with the list schedules') hold in the simulation: each job's computation
// deadline set just before its bound from below, it misses; just after its bound from
// above, it does not. (Its deadline is read only by the miss test, so the simulation
// is the same whatever it is.)
func TestListBoundsAgainstSimulation(t *testing.T) {
	var qMem, simMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 8))
	comp := WorkBufMin(&host(1).Preferences) + DeadlineCushion
	exact := 0
	for trial := range 20000 {
		doc := randomQueue(rng)
		if rng.IntN(3) == 0 {
			for i := range doc.Tasks {
				doc.Tasks[i].Project, doc.Tasks[i].AppVersion = "A", "A/v"
			}
		}
		q := renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		if len(q.jobs) == 0 || !q.projectBounds(doc, t0, 0) {
			continue
		}
		q.missBounds(doc)
		for _, below := range []bool{true, false} {
			for i := range q.jobs {
				at := q.cum[i]*(1+1e-9) + 1e-3
				if below {
					at = q.low[i]*(1-1e-9) - 1e-3
				}
				doc.Tasks[q.jobs[i].task].ReportDeadline = t0 + comp + at
			}
			sim := renewed(&simMem)
			sim.Simulate(doc, t0)
			for i := range sim.jobs {
				if sim.jobs[i].misses != below {
					t.Fatalf("trial %d: job %d (project %d of %v served) misses %v with its computation deadline just %s its bound (%.3f from below, %.3f from above)",
						trial, i, q.jobs[i].proj, q.gServed, sim.jobs[i].misses, map[bool]string{true: "before", false: "after"}[below], q.low[i], q.cum[i])
				}
			}
		}
		for i := range q.jobs {
			if q.low[i] >= q.cum[i]*(1-1e-9) {
				exact++
			}
		}
	}
	if exact < 20000 {
		t.Errorf("the bounds met on %d jobs only", exact)
	}
	t.Logf("the bounds met on %d jobs", exact)
}

// TestListBoundsBehindABlocker: down-2cpu's queue: P, of the lower REC, served both
// CPUs, has its 7 jobs (two of 840 s) ahead of Q's 24 jobs of an hour; P's last two
// jobs end at 8,040 and 11,640 s, and Q's then run two at a time from there. The sums'
// bounds put Q's fourth job at 13,440 s from below and left the jobs whose computation
// deadline fell between open (the simulation ran at almost every pass); the list
// schedules put every one of Q's jobs exactly, and the misses are known.
func TestListBoundsBehindABlocker(t *testing.T) {
	doc := host(2)
	doc.Projects[0].REC, doc.Projects[1].REC = 10, 40
	doc.Projects[0].RECTime, doc.Projects[1].RECTime = t0, t0
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	for i := range 7 {
		secs := 3600.0
		if i < 2 {
			secs = 840
		}
		doc.Tasks = append(doc.Tasks, task(fmt.Sprint("P", i), "A", secs, t0+comp+80000))
	}
	for i := range 24 {
		// Q's i-th ends at 11,640 s + an hour for every two before it; the even ones'
		// computation deadlines 1,380 s before their end (past the sums' bound from
		// below from the fourth on), the odd ones' 420 s after it.
		end := float64(11640 + 3600*((i+1)/2))
		if i%2 == 0 {
			end -= 1380
		} else {
			end += 420
		}
		doc.Tasks = append(doc.Tasks, task(fmt.Sprint("Q", i), "B", 3600, t0+comp+end))
	}
	var sim Workspace
	sim.Simulate(doc, t0)
	var q Workspace
	q.view(doc)
	q.prepareJobs(doc)
	if !q.missesKnown(doc, t0) {
		t.Fatalf("misses not known without the simulation (it finds %v)", sim.missed)
	}
	want := []int{0, 12}
	for k := range want {
		if q.missed[k] != sim.missed[k] || sim.missed[k] != want[k] {
			t.Fatalf("misses %v, the simulation's %v, want %v", q.missed, sim.missed, want)
		}
	}
	for i := range q.jobs {
		if q.jobs[i].misses != sim.jobs[i].misses {
			t.Errorf("job %d misses %v, in the simulation %v", i, q.jobs[i].misses, sim.jobs[i].misses)
		}
	}
}

// TestListBoundsBesideAServedProject: part-time-4cpu's queue: B, of the higher
// priority, has three 5-hour jobs, all of which pick takes at every pick (served 3, as
// many as it has), and A's six 2-hour jobs run on the one CPU B leaves until B's end at
// 18,000 s, then on the four (A2 ends at 21,600 s, A3 to A5 at 25,200). A's last three
// computation deadlines are 300 s after their ends: A's bound from above on the one
// CPU it is served ended them at 28,800 s and later, so they were open and the
// simulation ran (part-time-4cpu: 303 simulations in a 10-day run); B's jobs each run
// from now on a CPU of its own, so A's list schedule on the CPUs they leave is exact
// from above too (listUpper), and the misses are known: none.
func TestListBoundsBesideAServedProject(t *testing.T) {
	for _, emulator := range []bool{false, true} {
		listBoundsBesideAServedProject(t, emulator)
	}
}

// listBoundsBesideAServedProject is TestListBoundsBesideAServedProject under bsim's
// conventions or BOINC's emulator's, where pick takes B first for its place in the
// document (the last), not its priority: the same picks. Under the emulator B was
// served one CPU alone, its jobs' bound from above their sum, and the simulation ran
// (part-time-4cpu under --emulate boinc: 5,523 of 6,106 passes of a 10-day run; issue
// 30, nineteenth round).
func listBoundsBesideAServedProject(t *testing.T, emulator bool) {
	doc := host(4)
	doc.BOINCEmulator = emulator
	doc.Projects[0].ResourceShare, doc.Projects[1].ResourceShare = 70, 30
	doc.Projects[0].REC, doc.Projects[1].REC = 28, 2
	doc.Projects[0].RECTime, doc.Projects[1].RECTime = t0, t0
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	for i, end := range []float64{7200, 14400, 21600, 25200, 25200, 25200} {
		doc.Tasks = append(doc.Tasks, task(fmt.Sprint("A", i), "A", 7200, t0+comp+end+300))
	}
	for i := range 3 {
		tk := task(fmt.Sprint("B", i), "B", 18000, t0+comp+86400)
		tk.State = state.TaskRunning
		doc.Tasks = append(doc.Tasks, tk)
	}
	var sim Workspace
	sim.Simulate(doc, t0)
	var q Workspace
	q.view(doc)
	q.prepareJobs(doc)
	if !q.missesKnown(doc, t0) {
		t.Fatalf("emulator %v: misses not known without the simulation (it finds %v; served %v)", emulator, sim.missed, q.gServed)
	}
	if !slices.Equal(q.gServed, []float64{1, 3}) {
		t.Errorf("emulator %v: served %v, want [1 3]", emulator, q.gServed)
	}
	for i := range q.jobs {
		if q.jobs[i].misses || sim.jobs[i].misses {
			t.Errorf("emulator %v: job %d misses %v, in the simulation %v; want neither", emulator, i, q.jobs[i].misses, sim.jobs[i].misses)
		}
	}
	// 600 s earlier, A3 to A5 miss, and the bound from below says so.
	for i := 3; i < 6; i++ {
		doc.Tasks[i].ReportDeadline -= 600
	}
	sim, q = Workspace{}, Workspace{}
	sim.Simulate(doc, t0)
	q.view(doc)
	q.prepareJobs(doc)
	if !q.missesKnown(doc, t0) || q.missed[0] != 3 || sim.missed[0] != 3 {
		t.Errorf("emulator %v: deadlines 300 s before the ends: misses %v, the simulation's %v, want 3 of A's", emulator, q.missed, sim.missed)
	}
}

// TestEDFHoldOnBoundMisses: on random queues, passed until a quiet pass holds for its
// deadline misses (setEDFHold), every moment of 60 s within the hold (the running
// jobs' work done at any rate up to their speed, their elapsed times grown, the RECs
// brought up to date with any use of the CPUs) has a whole pass (the simulation,
// every entry listed) that changes nothing and counts the misses the hold keeps. It
// wants many holds with some miss found by missBounds' bound, and many where a
// running job runs for its time slice, not listed for a miss.
func TestEDFHoldOnBoundMisses(t *testing.T) {
	t.Parallel()
	var ws wholeSpace // the whole passes' memory
	rng := rand.New(rand.NewPCG(30, 9))
	held, bound, slice, moments := 0, 0, 0, 0
	for trial := range 20000 {
		doc := randomQueue(rng)
		doc.BOINCEmulator = false
		if rng.IntN(2) == 0 {
			// down-2cpu's shape: A of the lower REC with jobs queued, B's jobs
			// running, to miss behind A's.
			doc.Projects[0].REC, doc.Projects[1].REC = 5*rng.Float64(), 50+50*rng.Float64()
		}
		for p := range doc.Projects {
			doc.Projects[p].RECTime = t0
		}
		// Deadlines shared (jobs of one reply), and jobs started and preempted, their
		// remaining times apart: the ties of earliest_deadline_result.
		for i := range doc.Tasks {
			tk := &doc.Tasks[i]
			if i > 0 && rng.IntN(2) == 0 {
				tk.ReportDeadline = doc.Tasks[i-1].ReportDeadline
			}
			if tk.State != state.TaskRunning && rng.IntN(3) == 0 {
				tk.State = state.TaskPreempted
			}
			if tk.State != state.TaskReady {
				tk.FlopsDone = tk.EstimatedFlops * 0.5 * rng.Float64()
				tk.FractionDone = tk.FlopsDone / (tk.EstimatedFlops * 1.6)
			}
		}
		quiet, now := firstHold(doc, t0)
		if !quiet.hold || !quiet.holdMiss {
			continue
		}
		held++
		if quiet.boundMiss {
			bound++
		}
		edf := 0
		for _, e := range quiet.list {
			if e.Why == WhyEDF && e.Runs {
				edf++
			}
		}
		for i := range doc.Tasks {
			if doc.Tasks[i].State == state.TaskRunning {
				edf--
			}
		}
		if edf < 0 {
			slice++
		}
		missed := slices.Clone(quiet.passMissed)
		rel := RelativeSpeeds(&doc.Host, nil)
		used := make([][]float64, len(doc.Projects))
		favoured := rng.IntN(len(doc.Projects))
		var d credit.Decay
		for now+60 < quiet.holdUntil {
			now += 60
			for i := range doc.Tasks {
				tk := &doc.Tasks[i]
				if tk.State != state.TaskRunning {
					continue
				}
				tk.ElapsedTime += 60
				tk.FlopsDone = min(tk.EstimatedFlops*1.5, tk.FlopsDone+60e9*rng.Float64())
				tk.FractionDone = tk.FlopsDone / (tk.EstimatedFlops * 1.6)
			}
			for p := range used {
				used[p] = []float64{0}
			}
			used[favoured][0] = float64(doc.Host.CPU().Instances)
			AccountDecay(doc, used, 60, now, rel, &d)
			if !quiet.inBox(doc) {
				break // the RECs left the hold's box (setBox): the hold ends
			}
			if l := quiet.Schedule(doc, now); len(l) != 0 || !quiet.hold {
				t.Fatalf("trial %d: the quiet pass %.0f s in not held", trial, now-t0)
			}
			w := ws.pass(doc, now)
			if w.Changed() || !slices.Equal(w.passMissed, missed) {
				t.Fatalf("trial %d: %.0f s into a hold until %.0f s, the whole pass changed %v, misses %v, the hold's %v\n%+v",
					trial, now-t0, quiet.holdUntil-t0, w.Changed(), w.passMissed, missed, doc.Tasks)
			}
			moments++
		}
	}
	if bound < 3000 || slice < 150 {
		t.Errorf("%d holds for misses, %d with misses found by the bound, %d with a job running for its slice: want more", held, bound, slice)
	}
	t.Logf("%d holds for misses, %d with misses found by the bound, %d with a job running for its slice; %d moments within them", held, bound, slice, moments)
}

// TestEDFHoldTiesListed: on one CPU, A (of the lower REC) served it with three hours
// of jobs queued, B's three started jobs of one deadline all miss behind them (by
// missBounds' bound), and the listing stops at two: B's running job and the preempted
// one of the lesser remaining time, not the third. The running job's estimated
// remaining time may grow (its work done passes its estimate: state.Task.RemainingWork
// then reads the fraction done), past the third's, which the listing then takes
// instead of it, and a pass preempts it: no hold past that moment (noRiseUntil). With
// two CPUs, the listing takes all three, whatever their order, and the pass holds.
func TestEDFHoldTiesListed(t *testing.T) {
	mk := func(cpus int) *state.Document {
		doc := host(cpus)
		doc.Projects[0].REC, doc.Projects[1].REC = 1, 100
		doc.Projects[0].RECTime, doc.Projects[1].RECTime = t0, t0
		comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
		for i := range 3 * cpus {
			doc.Tasks = append(doc.Tasks, task(fmt.Sprint("a", i), "A", 3600, t0+1e6))
		}
		// B's true work three times its estimate; the running one near its estimate.
		for i, done := range []float64{3590e9, 1e9, 0.5e9} {
			tk := task(fmt.Sprint("b", i), "B", 3600, t0+comp+5000)
			tk.State, tk.FlopsDone = state.TaskPreempted, done
			tk.FractionDone = done / (3 * tk.EstimatedFlops)
			if i < cpus {
				tk.State = state.TaskRunning
				tk.ElapsedTime = 60
			}
			doc.Tasks = append(doc.Tasks, tk)
		}
		return doc
	}
	doc := mk(1)
	quiet := Workspace{Quiet: true}
	quiet.Schedule(doc, t0)
	// Held, if at all, only until b0's work done reaches its estimate, 10 s on
	// (noRiseUntil; tieListed takes the running one listed as ahead until then).
	if quiet.Changed() || !quiet.boundMiss || quiet.hold && quiet.holdUntil > t0+10 {
		t.Errorf("one CPU: changed %v, misses by the bound %v, held %v until %g; want unchanged, by the bound, not held past 10 s", quiet.Changed(), quiet.boundMiss, quiet.hold, quiet.holdUntil-t0)
	}
	// Why: 60 s later the running job's work done has passed its estimate.
	b0 := &doc.Tasks[len(doc.Tasks)-3]
	b0.FlopsDone, b0.ElapsedTime = 3650e9, 120
	b0.FractionDone = b0.FlopsDone / (3 * b0.EstimatedFlops)
	var full Workspace
	full.Schedule(doc, t0+60)
	if !full.Changed() || b0.State == state.TaskRunning {
		t.Errorf("one CPU, 60 s later: the whole pass changed %v, b0 %v; want b0 preempted", full.Changed(), b0.State)
	}
	doc = mk(2)
	quiet = Workspace{Quiet: true}
	quiet.Schedule(doc, t0)
	if quiet.Changed() || !quiet.boundMiss || !quiet.hold || !quiet.holdMiss {
		t.Errorf("two CPUs: changed %v, misses by the bound %v, held %v (for misses %v); want unchanged, by the bound, held for misses",
			quiet.Changed(), quiet.boundMiss, quiet.hold, quiet.holdMiss)
	}
}

// TestSaturatedListIsSimulation: on random queues of one project's jobs of one CPU
// each (some of them started, the host often part-time), saturatedList is the
// simulation's saturated time to rounding; and on queues of one project's whose
// saturated time is near work_buf_min, workBound's verdict (now with saturatedList
// after the sums' bounds) never says "past work_buf_min" where the simulation does
// not, and says it where only saturatedList shows it; within the work fetch's hold it
// sets, the running jobs' work done, the simulation's saturated time stays past it.
func TestSaturatedListIsSimulation(t *testing.T) {
	var simMem, qMem, laterMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 11))
	exact, onlyList, held := 0, 0, 0
	for trial := range 10000 {
		doc := randomQueue(rng)
		for i := range doc.Tasks {
			doc.Tasks[i].Project, doc.Tasks[i].AppVersion = "A", "A/v"
			doc.AppVersions[0].AvgNCPUs = 1
			if doc.Tasks[i].State == state.TaskReady && rng.IntN(4) == 0 {
				doc.Tasks[i].State = state.TaskPreempted
				doc.Tasks[i].FlopsDone = doc.Tasks[i].EstimatedFlops * rng.Float64()
			}
		}
		sim := renewed(&simMem)
		sim.Simulate(doc, t0)
		q := renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		got, ok := q.saturatedList(&doc.Host, 0)
		if !ok {
			if len(q.jobs) >= doc.Host.CPU().Instances {
				t.Fatalf("trial %d: %d jobs on %d CPUs, not known", trial, len(q.jobs), doc.Host.CPU().Instances)
			}
			continue
		}
		want := sim.Sim[0].Saturated
		if math.Abs(got-want) > 1e-9*want+1e-6 {
			t.Fatalf("trial %d: saturated %v by the list schedule, the simulation's %v", trial, got, want)
		}
		exact++
		// work_buf_min just below and just above the simulation's saturated time, and well below.
		for _, f := range []float64{1 - 1e-6, 1 + 1e-6, 0.9, 0.5} {
			doc.Preferences.WorkBufMinDays = want * f / 86400
			bufMin := WorkBufMin(&doc.Preferences)
			q.prepareJobs(doc)
			n, x := float64(doc.Host.CPU().Instances), bufMin*(1+1e-9)+1e-6
			sb, kth, sok := q.saturatedBound(&doc.Host, 0)
			sums := (q.sums[sumW]-n*q.sums[sumMaxT])/(n+q.sums[sumMaxU]) >= x || sok && (sb >= x || kth >= x)
			q.boundAt = t0
			if !q.workBound(&doc.Host, bufMin) {
				continue
			}
			if !(want >= bufMin) {
				t.Fatalf("trial %d: saturated past %v by the bound, the simulation's %v", trial, bufMin, want)
			}
			if !sums {
				onlyList++
			}
			// Within the work fetch's hold the running jobs' work is done (up to
			// their speed) and the simulation's saturated time stays past it.
			step := *doc
			step.Tasks = slices.Clone(doc.Tasks)
			stride := max(60, math.Ceil((q.fetchHoldUntil-t0)/20/60)*60) // 20 moments at most
			for now := t0 + stride; q.fetchHold && now < q.fetchHoldUntil; now += stride {
				runs := 0 // at most the CPUs' count of jobs run (CPUsFit)
				for i := range step.Tasks {
					if tk := &step.Tasks[i]; tk.State == state.TaskRunning && float64(runs) < n {
						tk.FlopsDone = min(tk.EstimatedFlops, tk.FlopsDone+stride*1e9*rng.Float64())
						runs++
					}
				}
				later := renewed(&laterMem)
				later.Simulate(&step, now)
				if !(later.Sim[0].Saturated >= bufMin) {
					t.Fatalf("trial %d: %.0f s into the fetch hold (until %.0f s), saturated %v, work_buf_min %v", trial, now-t0, q.fetchHoldUntil-t0, later.Sim[0].Saturated, bufMin)
				}
				held++
			}
		}
	}
	if exact < 5000 || onlyList < 1000 || held < 10000 {
		t.Errorf("%d queues known exactly, %d past work_buf_min by saturatedList alone, %d moments held: want more", exact, onlyList, held)
	}
	t.Logf("%d queues known exactly, %d past work_buf_min by saturatedList alone, %d moments held", exact, onlyList, held)
}

// TestSaturatedLow: on random queues of several projects' one-CPU jobs (RECs and
// shares at random), saturatedLowAt's bound is never past the simulation's saturated
// time, and with work_buf_min just below it saturatedLow says "past" where workBound
// often does not.
func TestSaturatedLow(t *testing.T) {
	var simMem, qMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 13))
	checked, beyond := 0, 0
	for trial := range 20000 {
		doc := randomQueue(rng)
		for p := range doc.AppVersions {
			doc.AppVersions[p].AvgNCPUs = 1
		}
		sim := renewed(&simMem)
		sim.Simulate(doc, t0)
		q := renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		low, ok := q.saturatedLowAt(doc, t0)
		if !ok {
			continue
		}
		want := sim.Sim[0].Saturated
		if !(low <= want*(1+1e-9)+1e-6) {
			t.Fatalf("trial %d: the bound %v past the simulation's saturated time %v (served %v)", trial, low, want, q.gServed)
		}
		checked++
		doc.Preferences.WorkBufMinDays = low * (1 - 1e-6) / 86400
		bufMin := WorkBufMin(&doc.Preferences)
		q.prepareJobs(doc)
		if !q.workBound(&doc.Host, bufMin) && q.saturatedLow(doc, t0, bufMin) {
			beyond++
		}
	}
	if checked < 5000 || beyond < 500 {
		t.Errorf("%d queues checked, %d past work_buf_min by the bound where workBound's are not: want more", checked, beyond)
	}
	t.Logf("%d queues checked, %d past work_buf_min by the bound where workBound's are not", checked, beyond)
}
