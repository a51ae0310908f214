package boincpolicy

import (
	"math"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// A miss where the served CPUs tie (issue 30, forty-first round; speed59's rule of
// the fortieth, re-derived): missesKnown's bounds per job leave a job open where its
// bound from below (missBounds) is in time and its bound from above (listUpper) late.
// On down-2cpu under bsim's conventions (P and Q of equal shares, each served one of
// the two CPUs) that was Q's waiting jobs behind P at most of the whole simulations a
// run made after missesKnown, and the simulation then ended the job exactly at
// listUpper's end.
//
// Why: on a host whose runnable jobs are all CPU jobs of one CPU, where the CPUs the
// projects with jobs are served (projectServed) sum to the host's n exactly, each
// project p served g has at least min(g, its jobs left) taken at every pick, and
// pick takes at most n; so while every served project has g or more jobs left, all
// n taken are theirs, g each, its first g left: what its list schedule on its g CPUs
// from now runs (a project served none runs nothing). By induction over the ends the
// simulation and those list schedules agree until T, the first moment one of them
// has fewer jobs left than it is served (the least of its CPUs' free times once its
// jobs are placed); a job that starts before T is then among its project's first g
// left until it ends (those before it end first), so it is taken at every pick and
// ends where its list schedule ends it. A miss so found counts as one by missBounds'
// bound (w.boundMiss, w.lowSlack), found again past its slack by a whole missesKnown
// (relow knows missBounds' bound only).
//
// Its slack: while the tasks stay as they are only the running jobs' times fall,
// each by at most its d a second (lowFall's: runFall ÷ the availability), and the
// served CPUs are the horizon's (or the box's). A list schedule's free times, in
// order, fall by at most e carried job by job (shiftAfter), so job i's end falls by
// at most F = its project's e before it + its own d a second, and its margin lasts
// over ÷ (F − 1); its start only falls, and T by at most the greatest e of the
// served projects' schedules, so the start stays before T for the gap ÷ that e.

// tiedEnds readies tiedMiss at the CPUs each project is served (w.gServed), and
// reports whether they tie: every runnable job a CPU job of one CPU, at most maxTop
// CPUs, the served CPUs of the projects with jobs summing to the host's. Per job of
// a served project w.tied holds its start and end in its project's list schedule on
// its served CPUs from now and its end's fall F − 1 (+Inf, 0, 0 for a job of a
// project served none); w.tiedT is T, w.tiedE the greatest e.
func (w *Workspace) tiedEnds(doc *state.Document) bool {
	n := doc.Host.CPU().Instances
	nP := len(doc.Projects)
	if n > maxTop || !w.oneCPUJobs() {
		return false
	}
	sum := 0.0
	for p := range nP {
		if w.eligible[p] {
			sum += w.gServed[p]
		}
	}
	if sum != float64(n) {
		return false
	}
	w.jobFalls(doc)
	w.tiedFree = scratch.Grow(w.tiedFree, nP*n)
	w.tiedRun = scratch.Grow(w.tiedRun, 2*nP)
	e, placed := w.tiedRun[:nP], w.tiedRun[nP:] // per project: its e, its jobs placed
	w.tied = growJobs(w.tied, 3*len(w.jobs))
	for i := range w.jobs {
		j := &w.jobs[i]
		t := w.tied[3*i : 3*i+3]
		g := min(int(w.gServed[j.proj]), n)
		if g < 1 {
			t[0], t[1], t[2] = math.Inf(1), 0, 0
			continue
		}
		free := w.tiedFree[j.proj*n : j.proj*n+g]
		d := w.lowD[i]
		fresh := placed[j.proj] < float64(g)
		fall := d - 1 // it starts now on a CPU of its own: its end falls as its time
		if !fresh {
			fall = e[j.proj] + d - 1
		}
		t[0], t[1], t[2] = free[0], listEnd(free, j.simT), fall
		e[j.proj], placed[j.proj] = shiftAfter(e[j.proj], d, fresh), placed[j.proj]+1
	}
	w.tiedT, w.tiedE = math.Inf(1), 0
	for p := range nP {
		if g := min(int(w.gServed[p]), n); w.eligible[p] && g >= 1 {
			// Its least free time once its jobs are placed (a heap's first; from
			// now where it has fewer jobs than CPUs).
			w.tiedT, w.tiedE = min(w.tiedT, w.tiedFree[p*n]), max(w.tiedE, e[p])
		}
	}
	return true
}

// tiedMissAt is tiedMiss for missesKnown, tiedEnds done first at the level's served
// CPUs (done: whether it was).
func (w *Workspace) tiedMissAt(doc *state.Document, i int, now, comp float64, done *bool) (float64, bool) {
	if !*done {
		w.tiedOK, *done = w.tiedEnds(doc), true
	}
	if !w.tiedOK {
		return 0, false
	}
	return w.tiedMiss(i, now, comp)
}

// tiedMiss reports whether job i (tiedEnds done, the served CPUs tied) starts before T and ends past its
// computation deadline (now, comp: missesKnown's; its margins for rounding, the
// simulation summing the same times in another order), and then its slack.
func (w *Workspace) tiedMiss(i int, now, comp float64) (float64, bool) {
	t := w.tied[3*i : 3*i+3]
	gap := w.tiedT*(1-1e-9) - 1e-6 - (t[0]*(1+1e-9) + 1e-6)
	over := now + t[1]*(1-1e-9) - 1e-6 - (w.jobs[i].deadline - comp)
	if !(gap > 0) || !(over > 0) {
		return 0, false
	}
	slack := math.Inf(1)
	if t[2] > 0 {
		slack = over / t[2]
	}
	if w.tiedE > 0 {
		slack = min(slack, gap/w.tiedE)
	}
	return slack, true
}
