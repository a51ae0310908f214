package boincpolicy

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestReplayAgainstSimulation: on random queues of judgeList's hosts (one project's
// jobs of one CPU, or several projects' under BOINC's emulator: pickListed's), with
// one job's report deadline set so that its computation deadline is its replayed end
// to the bit (or one step of the float off it either way), judgeReplayed's misses are
// the whole simulation's, job by job. The times are not whole seconds, so the list
// schedule's ends (summed in another order) are not the simulation's: it wants many
// trials where a job's list end differs from its replayed one, and fails with those
// ends in place of the replayed ones, with the simulation's cut of a step over 3,600
// seconds left out, and with the test of the end at or past the deadline (>= for >).
func TestReplayAgainstSimulation(t *testing.T) {
	var simMem, qMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 4208))
	var tried, ties, apart int
	for trial := range 20000 {
		doc := randomQueue(rng)
		if rng.IntN(2) == 0 {
			doc.BOINCEmulator = true
		}
		for i := range doc.AppVersions {
			doc.AppVersions[i].AvgNCPUs = 1
		}
		n := doc.Host.CPU().Instances
		comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
		q := renewed(&qMem)
		q.view(doc)
		if len(q.jobs) == 0 || n > maxTop {
			continue
		}
		q.prepareJobs(doc)
		order, ok := q.pickListed(doc, q.relistable())
		if !ok {
			continue
		}
		q.listOrder = append(q.listOrder[:0], order...)
		q.replayEnds(t0, n)
		x := tieDeadline(rng, q, doc, comp)
		// The list schedule's ends, against the replayed ones.
		free := make([]float64, n)
		for k := range q.jobs {
			i := k
			if len(order) > 0 {
				i = order[k]
			}
			if t0+listEnd(free, q.jobs[i].simT) != q.replayEnd[i] {
				apart++
				break
			}
		}

		sim := renewed(&simMem)
		sim.Simulate(doc, t0)
		q = renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		order, _ = q.pickListed(doc, q.relistable())
		q.listOrder = append(q.listOrder[:0], order...)
		if !q.judgeReplayed(doc, t0, n) {
			t.Fatalf("trial %d: judgeReplayed did not decide", trial)
		}
		tried++
		if q.replayEnd[x] == q.jobs[x].deadline-comp {
			ties++
		}
		if !slices.Equal(q.missed, sim.missed) || q.Sim[0].Misses != sim.Sim[0].Misses {
			t.Fatalf("trial %d: misses replayed %v, the simulation's %v", trial, q.missed, sim.missed)
		}
		for i := range q.jobs {
			if q.jobs[i].misses != sim.jobs[i].misses {
				t.Fatalf("trial %d: job %d misses %v, in the simulation %v", trial, i, q.jobs[i].misses, sim.jobs[i].misses)
			}
		}
	}
	if tried < 5000 || ties < 1000 || apart < 1000 {
		t.Errorf("%d queues, %d with a job's end at its computation deadline, %d with list ends not the replayed ones: want more", tried, ties, apart)
	}
	t.Logf("%d queues, %d with a job's end at its computation deadline, %d with list ends not the replayed ones", tried, ties, apart)
}

// TestSimulationReplayedAgainstSimulation: on random queues (randomQueue's, jobs of
// one CPU, BOINC's emulator on half, a coprocessor with no job on a third of the
// hosts, buffers from under an hour to two days, so that the buffer's end falls
// before, among and after the jobs' ends), with one job's report deadline set so
// that its computation deadline is its replayed end to the bit (or one float step off
// either way), simulateReplayed leaves what the whole simulation leaves for its
// readers, to the bit (sameSimulation: each job's misses, the counts, missOrder,
// missStarted, every resource's shortfall, saturated time and idle instances,
// prepare's counts), and Piggyback's request, priorities and reasons for a random
// project on the quiet paths (quietPiggybackNone first, then piggyback with its
// setup where it made one and answered false) are the whole one's. It wants many
// queues replayed (pickListed's hosts), many with the tie exact, many with some
// shortfall, many with a miss and many requests after quietPiggybackNone's setup; it
// fails with the instances idle counted from the CPUs alone (a coprocessor's left
// out), with the tail up to work_buf_total dropped, with >= for > in the test of a
// miss, and with prepare's rest made in the replay (its priorities in place of
// setup's).
func TestSimulationReplayedAgainstSimulation(t *testing.T) {
	var simMem, qMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 4209))
	var replayed, ties, short, missed, asked, kept int
	// Piggyback's request, priorities and reasons for a random project, on the
	// quiet paths (the replay where the host is pickListed's, after
	// quietPiggybackNone's setup where it made one) and whole.
	piggyback := func(doc *state.Document) {
		p := rng.IntN(len(doc.Projects))
		sim := renewed(&simMem)
		whole := sim.Piggyback(doc, p, t0)
		q := renewed(&qMem)
		q.Quiet = true
		none, set := q.quietPiggybackNone(doc, p, t0)
		if none {
			return
		}
		if set {
			kept++
		}
		quiet := q.piggyback(doc, p, t0, set)
		if !reflect.DeepEqual(quiet.Request, whole.Request) || !slices.Equal(quiet.Priority, whole.Priority) ||
			!slices.Equal(quiet.Reasons, whole.Reasons) || !slices.Equal(quiet.ProjectReasons, whole.ProjectReasons) {
			t.Fatalf("Piggyback on the quiet paths %+v, whole %+v", quiet, whole)
		}
		asked++
	}
	for trial := range 20000 {
		doc := replayQueue(rng)
		n := doc.Host.CPU().Instances
		comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
		q := renewed(&qMem)
		q.view(doc)
		if len(q.jobs) == 0 || n > maxTop {
			continue
		}
		q.prepareJobs(doc)
		order, ok := q.pickListed(doc, q.relistable())
		if !ok {
			piggyback(doc) // (whole on both paths)
			continue
		}
		q.listOrder = append(q.listOrder[:0], order...)
		q.replayEnds(t0, n)
		x := tieDeadline(rng, q, doc, comp)

		sim := renewed(&simMem)
		sim.Simulate(doc, t0)
		q = renewed(&qMem)
		if !q.simulateReplayed(doc, t0) {
			t.Fatalf("trial %d: simulateReplayed did not simulate", trial)
		}
		replayed++
		if q.replayEnd[x] == q.jobs[x].deadline-comp {
			ties++
		}
		if sim.Sim[0].Shortfall > 0 {
			short++
		}
		if len(sim.missOrder) > 0 {
			missed++
		}
		if !q.sameSimulation(sim) {
			t.Fatalf("trial %d: replayed %+v misses %v order %v, the simulation's %+v misses %v order %v",
				trial, q.Sim, q.missed, q.missOrder, sim.Sim, sim.missed, sim.missOrder)
		}
		piggyback(doc)
	}
	if replayed < 5000 || ties < 1000 || short < 1000 || missed < 1000 || asked < 1000 || kept < 1000 {
		t.Errorf("%d queues replayed, %d with a job's end at its computation deadline, %d with a shortfall, %d with a miss; %d piggybacked requests, %d after quietPiggybackNone's setup: want more",
			replayed, ties, short, missed, asked, kept)
	}
	t.Logf("%d queues replayed, %d with a job's end at its computation deadline, %d with a shortfall, %d with a miss; %d piggybacked requests, %d after quietPiggybackNone's setup",
		replayed, ties, short, missed, asked, kept)
}

// replayQueue is randomQueue's queue with jobs of one CPU each, BOINC's emulator on
// half, a coprocessor with no job on a third, and work_buf_min 0.01–1 day and
// work_buf_additional 0–1 day: many of them pickListed's hosts.
func replayQueue(rng *rand.Rand) *state.Document {
	doc := randomQueue(rng)
	if rng.IntN(2) == 0 {
		doc.BOINCEmulator = true
	}
	for i := range doc.AppVersions {
		doc.AppVersions[i].AvgNCPUs = 1
	}
	if rng.IntN(3) == 0 {
		doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "nvidia", Instances: 1 + rng.IntN(2), Flops: 1e10})
	}
	doc.Preferences.WorkBufMinDays = []float64{0.01, 0.1, 0.5, 1}[rng.IntN(4)]
	doc.Preferences.WorkBufAdditionalDays = []float64{0, 0.05, 0.5, 1}[rng.IntN(4)]
	return doc
}

// TestQuietFetchReplayedAgainstWhole: on replayQueue's queues, with one job's
// computation deadline at its replayed end to the bit or one float step off (so that
// a miss turns on the simulation's own arithmetic), the work fetch with no report
// due on the quiet paths (quietNoFetch, which on pickListed's hosts replays the
// simulation its bounds leave open, then chooseProject) asks the project and the work
// the whole path's ChooseProject asks (the reason's text aside, which the quiet paths
// do not write), with the same priorities and reasons, and asks nothing where
// quietNoFetch answers none. It wants many requests made after a replay; it fails
// with the replay's tail up to work_buf_total dropped and with the idle instances of
// a coprocessor left out.
func TestQuietFetchReplayedAgainstWhole(t *testing.T) {
	var simMem, qMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 4376))
	var replayed, asked, none int
	for trial := range 20000 {
		doc := replayQueue(rng)
		n := doc.Host.CPU().Instances
		comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
		q := renewed(&qMem)
		q.view(doc)
		if len(q.jobs) == 0 || n > maxTop {
			continue
		}
		q.prepareJobs(doc)
		order, listed := q.pickListed(doc, q.relistable())
		if listed {
			q.listOrder = append(q.listOrder[:0], order...)
			q.replayEnds(t0, n)
			tieDeadline(rng, q, doc, comp)
		}
		whole := renewed(&simMem).ChooseProject(doc, t0)
		q = renewed(&qMem)
		q.Quiet = true
		if q.quietNoFetch(doc, t0) {
			if whole.Project >= 0 {
				t.Fatalf("trial %d: quietNoFetch answered none, the whole path asks %+v", trial, whole.Request)
			}
			none++
			continue
		}
		if listed {
			replayed++
		}
		quiet := q.chooseProject(doc, t0)
		whole.Request.Reason = ""
		if quiet.Project != whole.Project || !reflect.DeepEqual(quiet.Request, whole.Request) || !slices.Equal(quiet.Priority, whole.Priority) ||
			!slices.Equal(quiet.Reasons, whole.Reasons) || !slices.Equal(quiet.ProjectReasons, whole.ProjectReasons) {
			t.Fatalf("trial %d (pickListed's: %v): the quiet work fetch %+v, the whole one %+v", trial, listed, quiet, whole)
		}
		if listed && quiet.Project >= 0 {
			asked++
		}
	}
	if replayed < 2000 || asked < 1000 {
		t.Errorf("%d work fetches after a replay, %d of them asking: want more", replayed, asked)
	}
	t.Logf("%d work fetches after a replay, %d of them asking; %d answered none by quietNoFetch", replayed, asked, none)
}

// tieDeadline sets a random job's deadline so that its computation deadline
// (deadline - comp) is its replayed end to the bit, or one float step either side
// (half the time), and returns the job's index: the ties the margin for rounding
// leaves open.
func tieDeadline(rng *rand.Rand, q *Workspace, doc *state.Document, comp float64) int {
	x := rng.IntN(len(q.jobs))
	end := q.replayEnd[x]
	dl := end + comp
	for range 4 {
		if dl-comp < end {
			dl = math.Nextafter(dl, math.Inf(1))
		} else if dl-comp > end {
			dl = math.Nextafter(dl, math.Inf(-1))
		}
	}
	switch rng.IntN(4) {
	case 0:
		dl = math.Nextafter(dl, math.Inf(1))
	case 1:
		dl = math.Nextafter(dl, math.Inf(-1))
	}
	doc.Tasks[q.jobs[x].task].ReportDeadline = dl
	return x
}

// TestListedShortAgainstPick: on replayQueue's queues of pickListed's hosts, some with
// every project's coprocessor backed off (no project may be asked for it: resAsked),
// listedShort's answer from the list order is pickShort's from the simulation's first
// pick (prepare's rest and pick made). It wants many of each answer; it fails with the
// CPUs in use counted as n where fewer jobs are left, and with the first job of the
// order alone read.
func TestListedShortAgainstPick(t *testing.T) {
	var qMem Workspace // renewed at each use: its memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 4377))
	var short, full int
	for trial := range 20000 {
		doc := replayQueue(rng)
		if len(doc.Host.Resources) > 1 && rng.IntN(2) == 0 {
			for p := range doc.Projects {
				doc.Projects[p].Resources = append(doc.Projects[p].Resources, state.ProjectResource{Type: "nvidia", BackoffUntil: t0 + 3600})
			}
		}
		h := &doc.Host
		n := h.CPU().Instances
		bufMin := WorkBufMin(&doc.Preferences)
		q := renewed(&qMem)
		q.Quiet = true
		q.quietView(doc, t0)
		if len(q.jobs) == 0 || n > maxTop {
			continue
		}
		q.prepareJobs(doc)
		order, ok := q.pickListed(doc, q.relistable())
		if !ok {
			continue
		}
		q.resAsked(doc, t0)
		listed := q.listedShort(h, order, n, bufMin)
		q.pick(doc, q.prepareRest(doc))
		if picked := q.pickShort(h, bufMin); listed != picked {
			t.Fatalf("trial %d: listedShort %v, pickShort %v (%d CPUs, %d jobs, order %v, active %v)", trial, listed, picked, n, len(q.jobs), order, q.active)
		}
		if listed {
			short++
		} else {
			full++
		}
	}
	if short < 2000 || full < 2000 {
		t.Errorf("%d queues short at the first pick, %d not: want more", short, full)
	}
	t.Logf("%d queues short at the first pick, %d not", short, full)
}

// TestQuietFetchBlocksAgainstWhole: on replayQueue's queues under bsim's conventions
// (several projects, their RECs far apart or near, so that pick takes the projects'
// jobs in blocks or interleaves them), with one job's computation deadline at its
// replayed end in pickBlocks' order or a float step off, the work fetch on the quiet
// paths (quietNoFetch, which replays the simulation in pickBlocks' order where it
// holds, then chooseProject) asks the project and the work the whole path's
// ChooseProject asks (the reason's text aside), with the same priorities and reasons,
// and asks nothing where quietNoFetch answers none. It wants many requests made after
// such a replay; it fails with the last project among equal priorities taken first,
// with the bump left out of the merge and with the test that the projects' jobs do
// not interleave dropped (as TestSimulationReplayedInRuns does: c159, c072,
// deadlines-4cpu under bsim's conventions).
func TestQuietFetchBlocksAgainstWhole(t *testing.T) {
	var simMem, qMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 4378))
	var blocks, asked, none, interleaved int
	for trial := range 20000 {
		doc := replayQueue(rng)
		doc.BOINCEmulator = false
		spread := []float64{0.01, 1, 100, 1e4}[rng.IntN(4)]
		for p := range doc.Projects {
			doc.Projects[p].REC = rng.Float64() * spread
			if rng.IntN(4) == 0 {
				doc.Projects[p].REC = doc.Projects[0].REC // ties among the priorities
			}
		}
		n := doc.Host.CPU().Instances
		comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
		q := renewed(&qMem)
		q.view(doc)
		if len(q.jobs) == 0 || n > maxTop {
			continue
		}
		q.prepareJobs(doc)
		_, listed := q.pickListed(doc, q.relistable())
		order, ok := q.pickBlocks(doc, q.prepareRest(doc))
		ok = ok && !listed
		if ok {
			q.listOrder = append(q.listOrder[:0], order...)
			q.replayEnds(t0, n)
			tieDeadline(rng, q, doc, comp)
		} else if !listed && q.oneCPUJobs() {
			interleaved++
		}
		whole := renewed(&simMem).ChooseProject(doc, t0)
		q = renewed(&qMem)
		q.Quiet = true
		if q.quietNoFetch(doc, t0) {
			if whole.Project >= 0 {
				t.Fatalf("trial %d: quietNoFetch answered none, the whole path asks %+v", trial, whole.Request)
			}
			none++
			continue
		}
		if ok {
			blocks++
		}
		quiet := q.chooseProject(doc, t0)
		whole.Request.Reason = ""
		if quiet.Project != whole.Project || !reflect.DeepEqual(quiet.Request, whole.Request) || !slices.Equal(quiet.Priority, whole.Priority) ||
			!slices.Equal(quiet.Reasons, whole.Reasons) || !slices.Equal(quiet.ProjectReasons, whole.ProjectReasons) {
			t.Fatalf("trial %d (pickBlocks': %v): the quiet work fetch %+v, the whole one %+v", trial, ok, quiet, whole)
		}
		if ok && quiet.Project >= 0 {
			asked++
		}
	}
	if blocks < 2000 || asked < 1000 {
		t.Errorf("%d work fetches after a replay in pickBlocks' order, %d of them asking: want more", blocks, asked)
	}
	t.Logf("%d work fetches after a replay in pickBlocks' order, %d of them asking; %d answered none by quietNoFetch; %d queues of one-CPU jobs interleaved", blocks, asked, none, interleaved)
}

// stepRunWhole is replay's step as it was before stepRun: every running place
// stepped but the one that ended, taken out of run with the others' order kept, and
// the fold (the first place of least time, best < 0 at the first) made over them in
// that order.
func stepRunWhole(run []replayJob, ended int, dt float64) ([]replayJob, int, float64) {
	out := []replayJob{}
	best, least := -1, 0.0
	for x := range run {
		if x == ended {
			continue
		}
		p := run[x]
		l := p.left - p.rate*dt
		if l <= 0 {
			l = 0
		}
		t := l / p.rate
		out = append(out, replayJob{l, p.rate, p.job})
		if best < 0 || t < least {
			best, least = len(out)-1, t
		}
	}
	return out, best, least
}

// TestStepRunAgainstWhole: on random runs of 0 to 12 jobs (work and rates drawn from
// a few values, so that times tie often; some rates 0 and some work 0, so that times
// are infinite or NaN; a dt that takes some work below 0), with no job ending or any
// one, stepRun leaves the jobs of the run, their work and rates, and the fold's place
// and time, as the step as it was (stepRunWhole) to the bit, and the run a window
// on the same buffer (the jobs before the one that ends moved on one place). It wants
// many steps with the job that ends first, in the middle and last, and many folds
// that met a tie; it fails with the jobs before the one that ends not moved, and
// with <= for < in stepFold's fold.
func TestStepRunAgainstWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 4210))
	lefts := []float64{0, 1, 2.5, 3, 7e9, 1e10, 1.1e10}
	rates := []float64{0, 1, 2.5, 1e9, 1e9, 3e9}
	var first, middle, last, none, tied int
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	for trial := range 200000 {
		n := rng.IntN(13)
		run := make([]replayJob, n, n+2)
		for i := range run {
			run[i] = replayJob{lefts[rng.IntN(len(lefts))], rates[rng.IntN(len(rates))], rng.IntN(100)}
			if rng.IntN(3) == 0 {
				run[i].left *= 1 + rng.Float64()
			}
		}
		ended := -1
		if n > 0 && rng.IntN(4) != 0 {
			ended = rng.IntN(n)
		}
		dt := []float64{0, 1, 2, 3600, 1e-3 + rng.Float64()*10}[rng.IntN(5)]
		want, wantBest, wantLeast := stepRunWhole(slices.Clone(run), ended, dt)
		got, best, least := stepRun(run, ended, dt)
		switch {
		case ended < 0:
			none++
		case ended == 0:
			first++
		case ended == n-1:
			last++
		default:
			middle++
		}
		if best != wantBest || !same(least, wantLeast) {
			t.Fatalf("trial %d: run %v ended %d dt %v: fold %d %v, want %d %v", trial, run, ended, dt, best, least, wantBest, wantLeast)
		}
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d jobs left, want %d", trial, len(got), len(want))
		}
		for i := range got {
			if !same(got[i].left, want[i].left) || !same(got[i].rate, want[i].rate) || got[i].job != want[i].job {
				t.Fatalf("trial %d: run %v ended %d dt %v: place %d %+v, want %+v", trial, run, ended, dt, i, got[i], want[i])
			}
		}
		if n > 0 && len(got) > 0 && &got[len(got)-1] != &run[n-1] {
			t.Fatalf("trial %d: the run left is not a window ending where the run did", trial)
		}
		// A tie for the fold: some place after the first of least time has it too.
		for i := range want {
			if i != wantBest && want[i].left/want[i].rate == wantLeast {
				tied++
				break
			}
		}
	}
	if first < 10000 || middle < 10000 || last < 10000 || none < 10000 || tied < 10000 {
		t.Errorf("%d steps ending the first job, %d one in the middle, %d the last, %d none; %d folds with a tie: want more", first, middle, last, none, tied)
	}
	t.Logf("%d steps ending the first job, %d one in the middle, %d the last, %d none; %d folds with a tie", first, middle, last, none, tied)
}
