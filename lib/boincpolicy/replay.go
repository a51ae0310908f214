package boincpolicy

import (
	"math"

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
	m := len(w.jobs)
	w.replayEnd = scratch.Grow(w.replayEnd, m)
	w.replayPlace = scratch.Grow(w.replayPlace, 3*m)
	left, t, rate := w.replayPlace[:m], w.replayPlace[m:2*m], w.replayPlace[2*m:]
	order := w.listOrder
	for x := range m {
		i := x
		if len(order) > 0 {
			i = order[x]
		}
		j := &w.jobs[i]
		left[x], t[x], rate[x] = j.simLeft, j.simT, j.simRate
	}
	run := w.replayRun[:0]
	next := 0 // the first place not yet started
	simNow := now
	for {
		for len(run) < n && next < m {
			run = append(run, next)
			next++
		}
		if len(run) == 0 {
			break
		}
		best, dt := 0, t[run[0]] // best: its place in run
		for k := 1; k < len(run); k++ {
			if t[run[k]] < dt {
				best, dt = k, t[run[k]]
			}
		}
		ended := -1
		if dt > 3600 {
			if dt > 36000 {
				dt /= 10
			} else {
				dt = 3600
			}
		} else {
			ended = run[best]
			i := ended
			if len(order) > 0 {
				i = order[ended]
			}
			w.replayEnd[i] = simNow + dt
		}
		for _, x := range run {
			l := left[x] - rate[x]*dt
			if l <= 0 { // stepJob's
				l = 0
			}
			left[x] = l
			t[x] = l / rate[x]
		}
		if ended >= 0 {
			// Out of the running places, the others' order kept (a loop: at most
			// maxTop places, where copy's call cost more than the move).
			for k := best + 1; k < len(run); k++ {
				run[k-1] = run[k]
			}
			run = run[:len(run)-1]
		}
		simNow += dt
	}
	w.replayRun = run
}
