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

// randomQueue is a CPU host of 1–8 CPUs with 2–4 projects of random shares and RECs
// and up to 30 jobs of random lengths and deadlines, many near their computation
// deadline (now + 8640 s + their place in the queue), some of fractional CPUs; a
// quarter under BOINC's emulator (pick's order by address).
func randomQueue(rng *rand.Rand) *state.Document {
	doc := host(1 + rng.IntN(8))
	doc.BOINCEmulator = rng.IntN(4) == 0
	doc.Host.TimeStats.OnFrac = []float64{1, 0.9, 0.4}[rng.IntN(3)]
	for _, n := range []string{"C", "D"}[:rng.IntN(3)] {
		doc.Projects = append(doc.Projects, state.Project{Name: n, ResourceShare: 100})
		doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: n + "/v", Project: n, AvgNCPUs: 1, Flops: 1e9})
	}
	for p := range doc.Projects {
		pr := &doc.Projects[p]
		pr.ResourceShare = []float64{100, 50, 30, 0}[rng.IntN(4)]
		pr.REC = rng.Float64() * 100
		pr.RECTime = t0
		if rng.IntN(10) == 0 {
			doc.AppVersions[p].AvgNCPUs = 0.5
		}
	}
	var work float64
	for i := range rng.IntN(31) {
		p := rng.IntN(len(doc.Projects))
		secs := 600 + rng.Float64()*20000
		work += secs
		dl := t0 + 8640 + work/float64(doc.Host.CPU().Instances)*(0.3+rng.Float64()*1.5)
		tk := task(fmt.Sprint("t", i), doc.Projects[p].Name, secs, dl)
		if rng.IntN(3) == 0 {
			tk.State = state.TaskRunning
		}
		doc.Tasks = append(doc.Tasks, tk)
	}
	return doc
}

// TestBoundsAgainstSimulation: on random queues, whenever missesKnown decides the
// misses without the simulation (now with projectBounds' and missBounds' bounds per
// job), they are the simulation's, job by job; whenever workBound (now with
// saturatedBound's) puts every resource's saturated time past work_buf_min, the
// simulation's is.
func TestBoundsAgainstSimulation(t *testing.T) {
	var simMem, qMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 6))
	var known, unknown, full, notFull int
	for trial := range 20000 {
		doc := randomQueue(rng)
		sim := renewed(&simMem)
		sim.Simulate(doc, t0)
		q := renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		if q.missesKnown(doc, t0) {
			known++
			if !slices.Equal(q.missed, sim.missed) || q.Sim[0].Misses != sim.Sim[0].Misses {
				t.Fatalf("trial %d: misses known %v, the simulation's %v", trial, q.missed, sim.missed)
			}
			for i := range q.jobs {
				if q.jobs[i].misses != sim.jobs[i].misses {
					t.Fatalf("trial %d: job %d misses %v, in the simulation %v", trial, i, q.jobs[i].misses, sim.jobs[i].misses)
				}
			}
		} else {
			unknown++
		}
		q.prepareJobs(doc)
		if bufMin := WorkBufMin(&doc.Preferences); q.workBound(&doc.Host, bufMin) {
			full++
			if !(sim.Sim[0].Saturated >= bufMin) {
				t.Fatalf("trial %d: saturated %v by the bound, the simulation's %v", trial, bufMin, sim.Sim[0].Saturated)
			}
		} else {
			notFull++
		}
	}
	if known == 0 || unknown == 0 || full == 0 {
		t.Errorf("misses known %d, unknown %d; full by the bound %d, not %d: want some of each", known, unknown, full, notFull)
	}
	t.Logf("misses known %d, unknown %d; full by the bound %d, not %d", known, unknown, full, notFull)
}

// TestBoundsHoldAsRECMoves: whenever missesKnown decides the misses with a slack
// (projectBounds good until recHorizon), the simulation finds the same misses at any
// moment within it, the RECs brought up to date meanwhile step by step with any use
// of the CPUs (AccountDecay), the jobs' remaining work as it was (it may only fall).
func TestBoundsHoldAsRECMoves(t *testing.T) {
	var qMem, rMem, simMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 7))
	var held, tried int
	for trial := range 20000 {
		doc := randomQueue(rng)
		doc.BOINCEmulator = false
		// RECs near one another, where the order of the picks turns on them.
		base := 20 + rng.Float64()*100
		for p := range doc.Projects {
			doc.Projects[p].REC = base * (1 + 0.1*rng.NormFloat64())
		}
		q := renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		// Deadlines just past the bounds per job at t0 (exact), where the REC moving
		// may break them.
		if q.projectBounds(doc, t0, 0) {
			comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
			for i := range q.jobs {
				doc.Tasks[q.jobs[i].task].ReportDeadline = t0 + comp + q.cum[i]*(1+0.01*rng.Float64()) + 1
			}
			q.view(doc)
			q.prepareJobs(doc)
		}
		if !q.missesKnown(doc, t0) || !(q.slack > 0) || !q.perJobUsed(doc, t0) {
			continue
		}
		tried++
		favoured := rng.IntN(len(doc.Projects))
		q.projectBounds(doc, t0, recHorizon)
		served := slices.Clone(q.gServed)
		missed := slices.Clone(q.missed)
		// Steps of 60 s with random use until a moment within the slack.
		later := t0 + recHorizon*rng.Float64()
		if rng.IntN(2) == 0 {
			later = t0 + min(q.slack, recHorizon)*rng.Float64()
		}
		var d credit.Decay
		rel := RelativeSpeeds(&doc.Host, nil)
		used := make([][]float64, len(doc.Projects))
		now := t0
		for now+60 <= later {
			// Every CPU to one project: the RECs move apart the fastest.
			for p := range used {
				used[p] = []float64{0}
			}
			used[favoured][0] = float64(doc.Host.CPU().Instances)
			now += 60
			AccountDecay(doc, used, 60, now, rel, &d)
		}
		// The CPUs each project is served at the later moment are at least those
		// found at t0 for the horizon.
		r := renewed(&rMem)
		r.view(doc)
		r.prepareJobs(doc)
		if r.projectBounds(doc, now, 0) {
			for p := range doc.Projects {
				if r.gServed[p] < served[p] {
					t.Fatalf("trial %d: project %d served %v CPUs %.0f s later, %v at t0 for the horizon", trial, p, r.gServed[p], now-t0, served[p])
				}
			}
		}
		sim := renewed(&simMem)
		sim.Simulate(doc, now)
		if now <= t0+q.slack && !slices.Equal(missed, sim.missed) {
			t.Fatalf("trial %d: misses %v at t0 (slack %.0f s), the simulation's %v %.0f s later", trial, missed, q.slack, sim.missed, now-t0)
		}
		if now > t0 && now <= t0+q.slack {
			held++
		}
	}
	if held == 0 {
		t.Errorf("no slack tried (%d)", tried)
	}
	t.Logf("%d with a slack, %d of them a moment later", tried, held)
}

// perJobUsed reports whether missesKnown at now needed the bounds per job (some job
// not decided by its resource's).
func (w *Workspace) perJobUsed(doc *state.Document, now float64) bool {
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	for i := range w.jobs {
		j := &w.jobs[i]
		if !(now > j.deadline-comp) && j.deadline-comp-(now+w.bound[3*j.res]*(1+1e-9)+1e-6) < 0 {
			return true
		}
	}
	return false
}

// TestSaturatedKth: on random queues of several projects' jobs of one CPU each (their
// RECs and shares at random, some started, the host often part-time), saturatedBound's
// n-th longest time is never past the simulation's saturated time; with work_buf_min
// just below it (or halfway to it from the other bounds), workBound says "past work_buf_min" (where its other bounds often do
// not), and at up to 20 moments within the work fetch's hold it sets, the running jobs'
// work done at their speed (at most one a CPU), the simulation's saturated time
// stays past work_buf_min, and so do the bounds.
func TestSaturatedKth(t *testing.T) {
	var simMem, qMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 12))
	checked, onlyKth, held := 0, 0, 0
	for trial := range 10000 {
		doc := randomQueue(rng)
		for p := range doc.AppVersions {
			doc.AppVersions[p].AvgNCPUs = 1
		}
		sim := renewed(&simMem)
		sim.Simulate(doc, t0)
		q := renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		sum, kth, ok := q.saturatedBound(&doc.Host, 0)
		if !ok {
			continue
		}
		want := sim.Sim[0].Saturated
		if !(kth <= want*(1+1e-9)+1e-6) {
			t.Fatalf("trial %d: the n-th longest time %v past the simulation's saturated time %v", trial, kth, want)
		}
		checked++
		// work_buf_min just below the n-th longest time, or halfway from the other
		// bounds to it (its hold then the bounds').
		n := float64(doc.Host.CPU().Instances)
		other := max(sum, (q.sums[sumW]-n*q.sums[sumMaxT])/(n+q.sums[sumMaxU]))
		doc.Preferences.WorkBufMinDays = kth * (1 - 1e-6) / 86400
		if trial%2 == 0 && other < kth {
			doc.Preferences.WorkBufMinDays = (other + kth) / 2 / 86400
		}
		bufMin := WorkBufMin(&doc.Preferences)
		x := bufMin*(1+1e-9) + 1e-6
		q.prepareJobs(doc)
		q.boundAt = t0
		if !q.workBound(&doc.Host, bufMin) {
			if kth-x >= 0 {
				t.Fatalf("trial %d: the n-th longest time %v past %v, the bound not", trial, kth, bufMin)
			}
			continue
		}
		if !(want >= bufMin) {
			t.Fatalf("trial %d: saturated past %v by the bound, the simulation's %v", trial, bufMin, want)
		}
		if !((q.sums[sumW]-n*q.sums[sumMaxT])/(n+q.sums[sumMaxU]) >= x || sum >= x) {
			onlyKth++
		}
		step := *doc
		step.Tasks = slices.Clone(doc.Tasks)
		stride := max(60, math.Ceil((q.fetchHoldUntil-t0)/20/60)*60)
		for now := t0 + stride; q.fetchHold && now < q.fetchHoldUntil; now += stride {
			runs := 0
			for i := range step.Tasks {
				if tk := &step.Tasks[i]; tk.State == state.TaskRunning && float64(runs) < n {
					tk.FlopsDone = min(tk.EstimatedFlops, tk.FlopsDone+stride*1e9) // at full speed
					runs++
				}
			}
			var later, bound Workspace
			later.Simulate(&step, now)
			if !(later.Sim[0].Saturated >= bufMin) {
				t.Fatalf("trial %d: %.0f s into the fetch hold (until %.0f s), saturated %v, work_buf_min %v", trial, now-t0, q.fetchHoldUntil-t0, later.Sim[0].Saturated, bufMin)
			}
			// The hold's reason: the bounds themselves stay past work_buf_min.
			bound.view(&step)
			bound.prepareJobs(&step)
			if !bound.workBound(&step.Host, bufMin) {
				t.Fatalf("trial %d: %.0f s into the fetch hold (until %.0f s), the bounds no longer past work_buf_min", trial, now-t0, q.fetchHoldUntil-t0)
			}
			held++
		}
	}
	if checked < 5000 || onlyKth < 500 || held < 5000 {
		t.Errorf("%d queues checked, %d past work_buf_min by the n-th longest time alone, %d moments held: want more", checked, onlyKth, held)
	}
	t.Logf("%d queues checked, %d past work_buf_min by the n-th longest time alone, %d moments held", checked, onlyKth, held)
}
