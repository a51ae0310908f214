package boincpolicy

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// judgeReplayed is judgeList's answer where a job's end in the list schedule is within
// missesKnown's margin for rounding of its computation deadline (judgeListed's false),
// at now alone: the jobs' ends as the simulation computes them (replayEnds), each
// judged by the simulation's own test, so every job misses exactly where the
// simulation finds it missing. It always decides; every slack is none (a job at its
// deadline to the bit may come to miss at any later moment), as missesListedPick's
// under bsim's conventions. (down-2cpu under BOINC's emulator at seed 3: all 371
// passes that ran the whole simulation in a 10-day run had a job whose list end was
// its computation deadline exactly, jobs of whole hours and deadlines of whole
// minutes; the margin left each open: issue 30, forty-second round.)
func (w *Workspace) judgeReplayed(doc *state.Document, now float64, n int) bool {
	w.replayEnds(now, n)
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	anyMiss, boundMiss := false, false
	for i := range w.jobs {
		j := &w.jobs[i]
		if w.replayEnd[i] > j.deadline-comp { // the simulation's test
			j.misses, anyMiss = true, true
			if !(now > j.deadline-comp) {
				boundMiss = true // by its end, as judgeListed's
			}
		}
	}
	w.anyMiss, w.boundMiss = anyMiss, boundMiss
	w.restSlack, w.lowSlack, w.capSlack, w.slack = 0, 0, 0, 0
	w.recEps = math.Inf(1) // judgeList's: the served CPUs read no REC
	if anyMiss {
		w.markMisses(now, comp)
	}
	w.listServed(doc, n)
	w.listedNow = true
	if listedCheck {
		replayChecks++
		w.checkListed(doc, now)
	}
	return true
}

// replayEnds sets w.replayEnd to each job's end in the simulation from now, on a host
// of n CPUs whose simulation runs the jobs as their list schedule in w.listOrder
// (empty: the jobs' own; judgeList's hosts: pickListed's, priorityBlocks'), with
// the simulation's own arithmetic (simulateFrom): at every pick the jobs running are
// the first min(n, jobs left) of the order, in that order (pick takes them so, and a
// pick that stands keeps the others in their order and adds the next); the step is
// the time of the first running job whose time is least (the first among equals), or
// the simulation's cut of a step over 3,600 seconds, in which no job ends; a job
// ends at the moment summed so far plus the step; every running job's work and time
// are stepped as stepJob steps them. Each job's work, time and rate evolve by the
// same operations on the same values, and the moment by the same sums, so each end
// is the simulation's to the bit. The jobs' own simulated times are left as they
// are (listUpper and the pass read them).
func (w *Workspace) replayEnds(now float64, n int) {
	w.replay(nil, now, n, w.listOrder)
}

// replayJob is a running job (its index) and that job's simulated work left and its
// rate, as replay steps them (together: one load of the place a step).
type replayJob struct {
	left, rate float64
	job        int
}

// replay is replayEnds in the given order; with doc, it also does what the
// simulation does at each job's end and step (simulateFrom; prepare done): the job
// marked and counted where it misses its computation deadline, its task in missOrder
// in the order of the ends, and each resource's shortfall and saturated time summed
// step by step (updateStats, the instances idle those the jobs running leave: on
// these hosts the CPUs' the simulation's pick uses, min(n, jobs left) jobs of one CPU
// each, summed exactly; a coprocessor's all of its own, with no job for it), then the
// tail up to work_buf_total.
//
// The jobs running are kept in w.replayRun in their order (the order they started
// in, an ended one taken out), each with its work and rate (stepRun steps them).
func (w *Workspace) replay(doc *state.Document, now float64, n int, order []int) {
	m := len(w.jobs)
	w.replayEnd = scratch.Grow(w.replayEnd, m)
	if cap(w.replayRun) < m {
		w.replayRun = make([]replayJob, 0, m)
	}
	// run is a window on w.replayRun: a job that ends first in it (the common
	// case) leaves by the window's start moving on, and each job joins at its end,
	// m jobs in all, so the window never passes the buffer's end.
	run := w.replayRun[:0]
	next := 0 // the first job of the order not yet started
	simNow := now
	var bufEnd, comp float64
	if doc != nil {
		bufEnd = now + WorkBufTotal(&doc.Preferences)
		comp = WorkBufMin(&doc.Preferences) + DeadlineCushion
	}
	// best, least: the running job whose time is least (the first among equals:
	// its place in run) and that time, folded as the jobs are stepped and
	// added (simulateFrom's nextBest): the fold over run in its order.
	best, least := -1, 0.0
	for {
		for len(run) < n && next < m {
			i := next
			if len(order) > 0 {
				i = order[next]
			}
			j := &w.jobs[i]
			if t := j.simT; best < 0 || t < least {
				best, least = len(run), t
			}
			run = append(run, replayJob{j.simLeft, j.simRate, i})
			next++
		}
		if len(run) == 0 {
			break
		}
		dt := least
		ended := -1 // the place in run of the job that ends in the step (none: -1)
		if dt > 3600 {
			if dt > 36000 {
				dt /= 10
			} else {
				dt = 3600
			}
		} else {
			ended = best
			i := run[ended].job
			w.replayEnd[i] = simNow + dt
			if j := &w.jobs[i]; doc != nil && simNow+dt > j.deadline-comp {
				j.misses = true
				w.missOrder = append(w.missOrder, j.task)
				w.missStarted = append(w.missStarted, j.started)
				w.missed[j.proj*w.nRes+j.res]++
				w.Sim[j.res].Misses++
			}
		}
		if doc != nil {
			for r := range w.Sim {
				idle := float64(doc.Host.Resources[r].Instances)
				if r == w.cpuRes {
					idle -= float64(len(run)) // (the simulation's pick's)
				}
				w.updateStats(r, idle, simNow, dt, now, bufEnd)
			}
		}
		run, best, least = stepRun(run, ended, dt)
		simNow += dt
	}
	if doc != nil && simNow < bufEnd {
		for r := range w.Sim {
			w.updateStats(r, float64(doc.Host.Resources[r].Instances), simNow, bufEnd-simNow, now, bufEnd)
		}
	}
}

// stepRun steps every running job of run by dt as stepJob steps it, but the one at
// ended (-1: none), which ends in the step (nothing reads it again) and is taken out
// of run, the others' order kept (those before it move one place on, so that run
// starts a place later); it returns run so and the fold over it in that order
// (simulateFrom's nextBest): the first place whose time is least, and that time (-1
// and 0 for an empty run). The job that ends is most often the first (on c143 under
// the emulator at seed 1, 65,878 of 70,314 steps, a queue of jobs of one size run in
// order), and then nothing moves. (Apart from replay, so that its few values stay in
// registers: in replay's body the fold's place and the count spilled to the stack at
// every job, about 45 instructions a job stepped, now about 20; and the places no
// longer moved up one at each end: issue 30, forty-fourth round.)
func stepRun(run []replayJob, ended int, dt float64) ([]replayJob, int, float64) {
	// The fold's first place is taken as it is; the rest fold on it (stepFold), so
	// that no step asks whether one is taken yet.
	if ended < 0 {
		if len(run) == 0 {
			return run, -1, 0
		}
		best, least := stepFold(run[1:], dt, 1, 0, stepPlace(&run[0], dt))
		return run, best, least
	}
	head, tail := run[:ended], run[ended+1:]
	if ended == 0 {
		if len(tail) == 0 {
			return tail, -1, 0
		}
		best, least := stepFold(tail[1:], dt, 1, 0, stepPlace(&tail[0], dt))
		return tail, best, least
	}
	best, least := stepFold(head[1:], dt, 1, 0, stepPlace(&head[0], dt))
	best, least = stepFold(tail, dt, ended, best, least)
	copy(run[1:ended+1], head)
	return run[1:], best, least
}

// stepPlace steps p by dt as stepJob steps a job, and returns its time left.
func stepPlace(p *replayJob, dt float64) float64 {
	l := p.left - p.rate*dt
	if l <= 0 { // stepJob's
		l = 0
	}
	p.left = l
	return l / p.rate
}

// stepFold steps each place of ps (stepPlace) and folds its time into best, least
// (the first place whose time is least), the place of ps[i] being at+i.
func stepFold(ps []replayJob, dt float64, at, best int, least float64) (int, float64) {
	for i := range ps {
		p := &ps[i]
		l := p.left - p.rate*dt
		if l <= 0 { // stepJob's
			l = 0
		}
		p.left = l
		if t := l / p.rate; t < least {
			best, least = at+i, t
		}
	}
	return best, least
}

// simulateReplayed is Simulate at now on the quiet paths where the host is
// pickListed's (the simulation the list schedule in pick's order, at most maxTop
// CPUs): the simulation's work replayed (replay) in place of its picks and steps, what
// it leaves for its readers the same to the bit (each job's misses, the counts,
// missOrder and missStarted, each resource's shortfall, saturated time and idle
// instances, prepare's counts), the moment's simulation then done. It reports whether
// it replayed; elsewhere (or with the moment's simulation done) Simulate is left to
// run. The jobs' simulated times stay as prepareJobs set them (the simulation steps
// them, and counts a change of them: simGen; nothing reads them after it but
// prepareJobs, which then finds its work standing). Of prepare's work only the counts
// are made: its pending lists, priorities and bumps are the picks' alone, and setup's
// outputs (the work fetch's priorities, reasons and shares) are left as they were.
// (down-2cpu under BOINC's emulator at seed 3: 331 whole simulations in a 10-day run
// were Piggyback's, whose request reads the shortfall and saturated time, and the
// RPC's busy-time estimator missOrder, after a quiet pass that ran none: issue 30,
// forty-second round.)
func (w *Workspace) simulateReplayed(doc *state.Document, now float64) bool {
	n := doc.Host.CPU().Instances
	if w.simDone && w.simAt == now || n > maxTop || noSimReplay {
		return false
	}
	w.quietView(doc, now)
	w.prepareJobs(doc)
	order, ok := w.pickListed(doc, w.relistable())
	if !ok || len(w.jobs) == 0 {
		return false // (Simulate's prepareJobs then finds its work standing)
	}
	w.replayFetch(doc, now, n, order)
	return true
}

// replayFetch is simulateReplayed's work on a host of n CPUs whose simulation runs
// the jobs as their list schedule in order (empty: the jobs' own), prepareJobs done,
// the moment's simulation then done.
func (w *Workspace) replayFetch(doc *state.Document, now float64, n int, order []int) {
	// prepareRest's counts (the same sums in the same order).
	clear(w.nusedTotal)
	clear(w.nRunnable)
	for i := range w.jobs {
		j := &w.jobs[i]
		w.nRunnable[j.proj*w.nRes+j.res]++
		w.nusedTotal[j.proj*w.nRes+w.cpuRes] += j.cpus
	}
	w.missOrder = w.missOrder[:0]
	w.missStarted = w.missStarted[:0]
	for r := range w.Sim {
		idle := float64(doc.Host.Resources[r].Instances)
		if r == w.cpuRes {
			idle -= float64(min(n, len(w.jobs))) // the first pick's
		}
		w.Sim[r].IdleNow = max(0, idle)
	}
	w.replay(doc, now, n, order)
	if simReplayCheck {
		w.checkSimReplay(doc, now)
	}
	w.simDone, w.simAt = true, now
}

// noSimReplay turns simulateReplayed off (a test's switch). With simReplayCheck on
// (tests only), at each simulation simulateReplayed gives, the whole simulation on
// the same jobs (the workspace's view: a fresh one may differ, a job's started
// flag read before the moment's pass started it) must leave the same to the bit
// (sameSimulation); simReplayDiffs counts where it did not, simReplayChecks the
// simulations checked.
var (
	noSimReplay, simReplayCheck     bool
	simReplayDiffs, simReplayChecks int
)

// checkSimReplay is simReplayCheck's test of simulateReplayed's work at now: the
// whole simulation run in the workspace from prepareJobs' work, then the replay's
// work put back (the jobs, their simulated times and marks, the counts, the
// simulation's generation), so that the run goes on as without the check.
func (w *Workspace) checkSimReplay(doc *state.Document, now float64) {
	simReplayChecks++
	whole := checkSpace(w.Overestimate)
	defer checkDone(whole)
	// The replay's work, kept in whole.
	whole.jobs = append(whole.jobs[:0], w.jobs...)
	whole.Sim = append(whole.Sim[:0], w.Sim...)
	whole.missed = append(whole.missed[:0], w.missed...)
	whole.missOrder = append(whole.missOrder[:0], w.missOrder...)
	whole.missStarted = append(whole.missStarted[:0], w.missStarted...)
	whole.nusedTotal = append(whole.nusedTotal[:0], w.nusedTotal...)
	whole.nRunnable = append(whole.nRunnable[:0], w.nRunnable...)
	gen := w.simGen
	// The simulation from prepareJobs' state (its misses and counts cleared).
	for i := range w.jobs {
		w.jobs[i].misses = false
	}
	clear(w.missed)
	for r := range w.Sim {
		w.Sim[r] = ResourceSim{Type: w.Sim[r].Type}
	}
	w.simulateFrom(doc, now, w.prepareRest(doc))
	if !whole.sameSimulation(w) {
		simReplayDiffs++
	}
	copy(w.jobs, whole.jobs)
	copy(w.Sim, whole.Sim)
	copy(w.missed, whole.missed)
	w.missOrder = append(w.missOrder[:0], whole.missOrder...)
	w.missStarted = append(w.missStarted[:0], whole.missStarted...)
	copy(w.nusedTotal, whole.nusedTotal)
	copy(w.nRunnable, whole.nRunnable)
	w.simGen = gen
}

// sameSimulation reports whether w and whole left the same for the simulation's
// readers: each job's misses, the counts, missOrder and missStarted, w.Sim (every
// figure to the bit), prepare's counts.
func (w *Workspace) sameSimulation(whole *Workspace) bool {
	if len(w.jobs) != len(whole.jobs) || !slices.Equal(w.missed, whole.missed) || !slices.Equal(w.Sim, whole.Sim) ||
		!slices.Equal(w.missOrder, whole.missOrder) || !slices.Equal(w.missStarted, whole.missStarted) ||
		!slices.Equal(w.nusedTotal, whole.nusedTotal) || !slices.Equal(w.nRunnable, whole.nRunnable) {
		return false
	}
	for i := range w.jobs {
		if w.jobs[i].misses != whole.jobs[i].misses {
			return false
		}
	}
	return true
}
