package boincpolicy

import (
	"math"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// missesListed is missesKnown at now (prepareJobs done) on a host of relistable's (one
// project, every runnable job a CPU job of one CPU) whose CPUs are at most maxTop, from
// one list schedule of the project's jobs (issue 30, twenty-seventh round). It reports
// whether it decided every job; then it has set what missesKnown sets (each job's
// misses, w.missed, w.Sim's counts, w.anyMiss, w.boundMiss, the slacks, w.recEps,
// and the served CPUs keepMisses keeps for relow), and keepMisses keeps the answer as
// it keeps missesKnown's. Where a job's end is within the rounding margin of its
// deadline, it reports false and missesKnown decides.
//
// Why: on such a host the simulation runs the project's jobs exactly as its list
// schedule on the n CPUs from now in the jobs' order (missesRelist, listsched.go),
// so each job's end there is its simulated end: the jobs that miss are those whose
// computation deadline is past and those that end past it (with missesKnown's margin
// for rounding: the simulation sums the same times in another order). The served
// CPUs read no REC with one project (projectServed: min(its jobs, n)), so the answer
// has no box (recEps +Inf) and no horizon (capSlack +Inf). The slacks are
// missesKnown's arguments with the exact ends in place of its bounds: a job in time
// stays so while the tasks stay as they are (the ends only fall: restSlack, the least
// margin); a job that misses by its end goes on missing until its margin is eaten at
// lowFall's rate (the first n jobs start now on CPUs of their own, each later one is
// placed after the others' falls, shiftAfter), as missBounds' bound from below is this
// schedule there. missesKnown finds the same misses from its bounds (from above, the
// resource's sums and listUpper, at or past these ends, so its slacks for the jobs in
// time are no longer; from below, listLower: the same list schedule), at several list
// schedules, projectStats and projectServed a pass. (Corpus c143 under BOINC's emulator made 3,713 whole
// missesKnown in a 10-day run, 2,503 of them at the first pass after the tasks
// changed, where the kept answer ends: a task done, an RPC's tasks, a pass that
// started or stopped a job.)
func (w *Workspace) missesListed(doc *state.Document, now float64) bool {
	n := doc.Host.CPU().Instances
	if n > maxTop || !w.relistable() {
		return false
	}
	w.relistFree = scratch.Grow(w.relistFree, n)
	free := w.relistFree
	af := availFrac(&doc.Host.TimeStats, false) // a running job's fall ÷ it (lowFall)
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	lj := newListJudge()
	e := 0.0 // how far the CPUs' free times, in order, may have fallen (lowFall's)
	for i := range w.jobs {
		j := &w.jobs[i]
		end := listEnd(free, j.simT)
		d := 0.0
		if j.running {
			d = w.runFall(doc, j) / af
		}
		fall := e + d - 1
		if i < n {
			fall = d - 1 // it starts now on a CPU of its own: its end falls as its time
		}
		e = shiftAfter(e, d, i < n)
		if !w.judgeListed(&lj, i, now, comp, end, fall) {
			return false
		}
	}
	w.anyMiss, w.boundMiss = lj.anyMiss, lj.boundMiss
	w.restSlack, w.lowSlack, w.capSlack = lj.slack, lj.lowSlack, math.Inf(1)
	w.slack, w.recEps = min(lj.slack, lj.lowSlack), math.Inf(1)
	if lj.anyMiss {
		w.markMisses(now, comp)
	}
	// The served CPUs (projectServed's here), which relow's missBounds reads.
	p := w.jobs[0].proj
	w.gServed = scratch.Grow(w.gServed, len(doc.Projects))
	w.gServed[p] = float64(min(len(w.jobs), n))
	w.listedNow = true
	if listedCheck {
		w.checkListed(doc, now)
	}
	return true
}

// listJudge is what missesListed and missesListedCo gather as they judge the jobs,
// in their order, against the list schedule's exact ends.
type listJudge struct {
	slack, lowSlack    float64 // missesKnown's restSlack and lowSlack, from the ends
	anyMiss, boundMiss bool
}

func newListJudge() listJudge { return listJudge{slack: math.Inf(1), lowSlack: math.Inf(1)} }

// judgeListed judges job i, which ends at now+end in the list schedule and whose end
// falls at fall (lowFall's rate: 0 or less, not at all), against its computation
// deadline (deadline - comp), with missesKnown's margin for rounding. It returns false
// where the end is within that margin: the answer is not known, and the jobs judged
// before are unmarked (as prepareJobs left them, for missesKnown).
func (w *Workspace) judgeListed(lj *listJudge, i int, now, comp, end, fall float64) bool {
	j := &w.jobs[i]
	if now > j.deadline-comp { // the simulation's test, at its earliest finish
		lj.anyMiss = true
		return true
	}
	if late := j.deadline - comp - (now + end*(1+1e-9) + 1e-6); late >= 0 {
		lj.slack = min(lj.slack, late)
		return true
	}
	over := now + end*(1-1e-9) - 1e-6 - (j.deadline - comp)
	if !(over > 0) {
		for k := range i {
			w.jobs[k].misses = false
		}
		return false
	}
	lj.anyMiss, lj.boundMiss = true, true
	j.misses = true // certainly: counted by markMisses
	if fall > 0 {
		lj.lowSlack = min(lj.lowSlack, over/fall)
	}
	return true
}

// listedCheck, listedDiffs, listedChecks: the tests' check of missesListed. At every
// answer it gives, and at every answer missesKept gives from one it gave (carried by
// its slack, missesRelist or missesStay), a whole simulation on a copy of the
// document, by a workspace of its own, must find the same jobs missing their
// deadlines (and the same counts per project and resource); listedDiffs counts where
// it did not, listedChecks the answers checked.
var (
	listedCheck               bool
	listedDiffs, listedChecks int
)

// checkListed is listedCheck's test of the answer at now.
func (w *Workspace) checkListed(doc *state.Document, now float64) {
	listedChecks++
	if !w.sameAsSimulation(doc, now) {
		listedDiffs++
	}
}
