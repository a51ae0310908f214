package boincpolicy

import (
	"math"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// missesListed is missesKnown at now (prepareJobs done) on a host of relistable's (one
// project, every runnable job a CPU job of one CPU) whose CPUs are at most maxTop, from
// one list schedule of the jobs in pick's order (issue 30, twenty-seventh round; on
// several projects missesListedPick, fortieth: judgeList, its second part). It reports
// whether it decided every job; then it has set what missesKnown sets (each job's
// misses, w.missed, w.Sim's counts, w.anyMiss, w.boundMiss, the slacks, w.recEps,
// and the served CPUs keepMisses keeps for relow), and keepMisses keeps the answer as
// it keeps missesKnown's. Where a job's end is within the rounding margin of its
// deadline, the answer is judgeReplayed's, at now alone.
//
// Why: on such a host the simulation runs the jobs exactly as their list schedule on
// the n CPUs from now in pick's order (pickListed, missesRelist, listsched.go),
// so each job's end there is its simulated end: the jobs that miss are those whose
// computation deadline is past and those that end past it (with missesKnown's margin
// for rounding: the simulation sums the same times in another order). The served
// CPUs read no REC with one project (projectServed: min(its jobs, n)) nor, on
// several projects, under BOINC's emulator (listServed), so the answer has no box
// (recEps +Inf) and no horizon (capSlack +Inf). The slacks are missesKnown's
// arguments with the exact ends in place of its bounds: a job in time
// stays so while the tasks stay as they are (the ends only fall: restSlack, the least
// margin); a job that misses by its end goes on missing until its margin is eaten at
// lowFall's rate (the first n jobs start now on CPUs of their own, each later one is
// placed after the others' falls, shiftAfter), as missBounds' bound from below is this
// schedule with one project. missesKnown finds the same misses from its bounds (from
// above, the resource's sums and listUpper, at or past these ends, so its slacks for the jobs in
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
	w.listOrder = w.listOrder[:0]
	return w.judgeList(doc, now, n, false)
}

// missesListedPick is missesListed on the hosts of several projects whose jobs run as
// their list schedule in pick's order: under BOINC's emulator pickListed's (the
// answer's slacks as missesListed's), under bsim's conventions priorityBlocks' (at
// now alone: the order reads the RECs, which move from moment to moment, so every
// slack is none). It is tried after missesKnown (but for pickFirst's passes under
// BOINC's emulator), whose answer costs less where its bounds per resource decide
// and may last (missesListedPick's under bsim's conventions never does); the marks missesKnown left (the jobs it found certain to
// miss) are cleared first, as for the simulation (simulateAfterJobs). (Corpus c159,
// 13 CPUs, C of share 235 taking them first: missesKnown's bounds per job left A's
// and B's jobs open behind C's at every pass that tried them, and the simulation ran
// 1,905 times in a 10-day run under BOINC's emulator at seed 1, 1,322 times under
// bsim's conventions at seed 2: issue 30, fortieth round.)
func (w *Workspace) missesListedPick(doc *state.Document, now float64) bool {
	n := doc.Host.CPU().Instances
	if n > maxTop {
		return false
	}
	nowOnly := !doc.BOINCEmulator
	if nowOnly {
		// Where the projects' jobs interleave at every pass tried of late (their
		// shares near), not tried for a while (perJobFailed's rule: down-2cpu and
		// part-time-4cpu under bsim's conventions, 0.7-0.8 % more instructions a run
		// trying at every pass). It changes no answer, only its cost.
		if w.blockSkip > 0 {
			w.blockSkip--
			return false
		}
		if !w.priorityBlocks(doc) {
			if w.blockFails++; w.blockFails >= perJobTries {
				w.blockFails, w.blockSkip = 0, perJobRest
			}
			return false
		}
		w.blockFails = 0
	} else if order, ok := w.pickListed(doc, false); ok {
		w.listOrder = append(w.listOrder[:0], order...)
	} else {
		return false
	}
	for i := range w.jobs {
		w.jobs[i].misses = false
	}
	return w.judgeList(doc, now, n, nowOnly)
}

// judgeList is missesListed's answer from the jobs' list schedule on the n CPUs from
// now in pick's order (w.listOrder; empty, the jobs'), at now alone where nowOnly
// (every slack none).
func (w *Workspace) judgeList(doc *state.Document, now float64, n int, nowOnly bool) bool {
	w.relistFree = scratch.Grow(w.relistFree, n)
	free := w.relistFree
	af := availFrac(&doc.Host.TimeStats, false) // a running job's fall ÷ it (lowFall)
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	lj := newListJudge()
	e := 0.0 // how far the CPUs' free times, in order, may have fallen (lowFall's)
	order := w.listOrder
	for x := range w.jobs {
		i := x // the x-th job in pick's order
		if len(order) > 0 {
			i = order[x]
		}
		j := &w.jobs[i]
		end := listEnd(free, j.simT)
		d := 0.0
		if j.running {
			d = w.runFall(doc, j) / af
		}
		fall := e + d - 1
		if x < n {
			fall = d - 1 // it starts now on a CPU of its own: its end falls as its time
		}
		e = shiftAfter(e, d, x < n)
		if !w.judgeListed(&lj, i, now, comp, end, fall) {
			return w.judgeReplayed(doc, now, n)
		}
	}
	w.anyMiss, w.boundMiss = lj.anyMiss, lj.boundMiss
	w.restSlack, w.lowSlack, w.capSlack = lj.slack, lj.lowSlack, math.Inf(1)
	w.slack, w.recEps = min(lj.slack, lj.lowSlack), math.Inf(1)
	if nowOnly {
		w.restSlack, w.lowSlack, w.capSlack, w.slack = 0, 0, 0, 0
	}
	if lj.anyMiss {
		w.markMisses(now, comp)
	}
	w.listServed(doc, n)
	w.listedNow = true
	if listedCheck && nowOnly {
		nowChecks++ // missesListedPick's under bsim's conventions
	}
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
// where the end is within that margin: the answer is not known from the end, and the
// jobs are unmarked (as prepareJobs left them, for judgeReplayed and missesKnown;
// those judged before may come in any order: pickListed's).
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
		for k := range w.jobs {
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
	orderDiffs, orderChecks   int // of those, the answers in pick's order of several projects
	nowChecks                 int // of those, missesListedPick's under bsim's conventions
	replayChecks              int // of those, judgeReplayed's
)

// checkListed is listedCheck's test of the answer at now.
func (w *Workspace) checkListed(doc *state.Document, now float64) {
	listedChecks++
	same := w.sameAsSimulation(doc, now)
	if !same {
		listedDiffs++
	}
	if !w.relistable() { // (several projects)
		orderChecks++
		if !same {
			orderDiffs++
		}
	}
}
