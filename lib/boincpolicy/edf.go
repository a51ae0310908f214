package boincpolicy

import (
	"cmp"
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// earliestMiss is earliest_deadline_result for resource r: the unchosen job with the
// earliest deadline among the projects with misses left on r (ties: a started job,
// then the least remaining time, then the first in the jobs' order).
//
// A pass lists its deadline misses one call at a time, and going through every job
// at each call was 8 % of corpus c143's run under BOINC's emulator (about 35 jobs,
// 13 calls a pass: issue 30, twenty-first round). So the first call of a pass on r
// puts r's jobs in order by deadline (edfOrder: the jobs' order is arrival's, most
// often already the deadlines'), and each call walks on from where the last stopped:
// within a pass the jobs passed over stay out, as a job chosen stays chosen and a
// project whose misses on r are used up has none again (missedCopy only falls, the
// correction factors do not change). Each call then looks only at the first deadline's
// jobs left, whose ties it settles as edfScan would in the jobs' order.
func (w *Workspace) earliestMiss(doc *state.Document, r int) int {
	// Per project, whether its jobs are looked at (its correction factor puts them
	// all in EDF, or it has misses left on r), once a call rather than once a job:
	// all of them at the pass's first call on r (edfOrder not made for r yet), then
	// only the project of the job returned last, which the caller chose since (its
	// misses on r alone may have fallen, and no factor changes within a pass). Every
	// project's factor at every call was 15 M instructions of corpus c105's run under
	// bsim's conventions (issue 30, forty-third round).
	if w.edfRes != r {
		w.edfProj = scratch.Grow(w.edfProj, len(doc.Projects))
		w.edfProjN = 0 // the projects looked at
		for p := range doc.Projects {
			if doc.Projects[p].DCF() > EDFDCF || w.missedCopy[p*w.nRes+r] > 0 {
				w.edfProj[p] = true
				w.edfProjN++
			}
		}
	} else if p := w.edfLast; p >= 0 {
		was := w.edfProj[p]
		w.edfProj[p] = doc.Projects[p].DCF() > EDFDCF || w.missedCopy[p*w.nRes+r] > 0
		if was && !w.edfProj[p] {
			w.edfProjN--
		} else if !was && w.edfProj[p] {
			w.edfProjN++
		}
	}
	w.edfLast = -1
	if edfCheck {
		w.checkEDFProj(doc, r)
	}
	if w.edfProjN == 0 {
		return -1 // no project with misses left on r: no job to look at
	}
	if w.edfRes != r {
		w.edfOrder(r)
	}
	best := -1
	if w.edfFull {
		best = w.edfScan(r)
	} else {
		ord := w.edfOrd
		for w.edfAt < len(ord) && (w.chosen[ord[w.edfAt]] || !w.edfProj[w.jobs[ord[w.edfAt]].proj]) {
			w.edfAt++
		}
		switch {
		case w.edfAt < w.edfTieEnd:
			best = w.edfTied()
			if edfCheck {
				edfTiedChecks++
			}
		case w.edfAt < len(ord):
			best = ord[w.edfAt]
			d := w.jobs[best].deadline
			end := w.edfAt + 1 // the end of the run of deadline d (in order: every job after is later)
			for end < len(ord) && w.jobs[ord[end]].deadline == d {
				end++
			}
			if end-w.edfAt >= edfTiesMin && w.edfTies(end) {
				best = w.edfTied()
				if edfCheck {
					edfTiedChecks++
				}
				break
			}
			for _, i := range ord[w.edfAt+1 : end] {
				if j := &w.jobs[i]; !w.chosen[i] && w.edfProj[j.proj] && edfBefore(j, &w.jobs[best]) {
					best = i
				}
			}
		}
	}
	if edfCheck {
		if b := w.edfScan(r); b != best {
			edfDiffs++
		}
	}
	if best >= 0 {
		w.edfLast = w.jobs[best].proj
	}
	return best
}

// edfTiesMin is the shortest run of one deadline edfTies orders: below it the walk
// of the run at each call costs no more than the order.
const edfTiesMin = 4

// edfTies puts the jobs of edfOrd from edfAt to end, all of one deadline, in
// earliest_deadline_result's order among them (edfTie): a started job before an
// unstarted one, then the least remaining time, equals in edfOrd's order. The later
// calls of the pass then take the first of them not chosen of a project looked at,
// the one the walk of the run finds (edfTied): edfBefore is that order's "strictly
// before", and within a pass a job chosen stays chosen, a project passed over stays
// so, and no job's remaining time or start changes. With a remaining time that is not
// a number edfBefore is no order, and the run is walked at every call as before.
// (Corpus c143 under BOINC's emulator: the jobs of an RPC share their deadline, a
// pass lists its misses about 16 calls at a time, and the walks of the runs were 2 %
// of a 10-day run: issue 30, forty-third round.)
func (w *Workspace) edfTies(end int) bool {
	tie := append(w.edfTie[:0], w.edfOrd[w.edfAt:end]...)
	w.edfTie = tie
	for _, i := range tie {
		if j := &w.jobs[i]; math.IsNaN(j.est / j.speed) {
			return false
		}
	}
	// By insertion: stable, and a job moves past only those it is strictly before.
	for a := 1; a < len(tie); a++ {
		x := tie[a]
		b := a
		for ; b > 0 && edfBefore(&w.jobs[x], &w.jobs[tie[b-1]]); b-- {
			tie[b] = tie[b-1]
		}
		tie[b] = x
	}
	w.edfTieAt, w.edfTieEnd = 0, end
	return true
}

// edfTied is earliestMiss's answer from edfTie (edfAt within its run, at a job to
// look at): the first of them not chosen of a project looked at, the ones before it
// passed over for the rest of the pass.
func (w *Workspace) edfTied() int {
	tie := w.edfTie
	for w.edfTieAt < len(tie) {
		if i := tie[w.edfTieAt]; !w.chosen[i] && w.edfProj[w.jobs[i].proj] {
			return i
		}
		w.edfTieAt++
	}
	return -1 // (not reached: edfAt's job is one of them)
}

// checkEDFProj counts in edfDiffs where earliestMiss's projects looked at differ from
// the ones worked out afresh (edfCheck's).
func (w *Workspace) checkEDFProj(doc *state.Document, r int) {
	n := 0
	for p := range doc.Projects {
		look := doc.Projects[p].DCF() > EDFDCF || w.missedCopy[p*w.nRes+r] > 0
		if look {
			n++
		}
		if look != w.edfProj[p] {
			edfDiffs++
		}
	}
	if n != w.edfProjN {
		edfDiffs++
	}
}

// edfBefore is whether job j of the same deadline as b, after b in the jobs' order,
// comes before it in earliest_deadline_result: a started job before an unstarted one,
// else the least remaining time (equals: the first).
func edfBefore(j, b *job) bool {
	if b.started && !j.started {
		return false
	}
	return j.est/j.speed < b.est/b.speed || !b.started && j.started
}

// edfOrder readies earliestMiss's walk on resource r (w.edfOrd): r's jobs by
// deadline, equals in the jobs' order. The order is kept per resource from pass to
// pass and made again only when it is not the jobs' (a job received or gone): it is
// theirs when it holds as many entries as r has jobs, each one of r's, each strictly
// after the one before it by (deadline, index), which makes them distinct, so all of
// r's jobs in order. (Sorted at every pass, c150's two apps' jobs, whose deadlines
// come out of arrival order, cost more than the walk saved.) With a deadline that is
// not a number the order would not be earliestMiss's, which then goes through every
// job (edfFull).
func (w *Workspace) edfOrder(r int) {
	w.edfRes, w.edfAt, w.edfFull, w.edfTieEnd = r, 0, false, 0
	for len(w.edfOrds) <= r {
		w.edfOrds = append(w.edfOrds, nil)
	}
	ord := w.edfOrds[r]
	n := 0
	for i := range w.jobs {
		if w.jobs[i].res == r {
			n++
		}
	}
	kept := len(ord) == n
	for k := 0; kept && k < len(ord); k++ {
		i := ord[k]
		if kept = i < len(w.jobs) && w.jobs[i].res == r; kept && k > 0 {
			a, b := w.jobs[ord[k-1]].deadline, w.jobs[i].deadline
			kept = a < b || a == b && ord[k-1] < i
		}
	}
	if !kept {
		ord = ord[:0]
		sorted := true
		for i := range w.jobs {
			j := &w.jobs[i]
			if j.res != r {
				continue
			}
			if math.IsNaN(j.deadline) {
				w.edfOrds[r], w.edfFull = ord[:0], true
				return
			}
			if n := len(ord); n > 0 && w.jobs[ord[n-1]].deadline > j.deadline {
				sorted = false
			}
			ord = append(ord, i)
		}
		if !sorted && !edfNoSort {
			sortByDeadline(w.jobs, ord)
		}
		w.edfOrds[r] = ord
	}
	w.edfOrd = ord
}

// edfScan is earliestMiss going through every job (w.edfProj set): the unchosen job
// of r, of a project looked at, first in earliest_deadline_result's order.
func (w *Workspace) edfScan(r int) int {
	best := -1
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != r || w.chosen[i] || !w.edfProj[j.proj] {
			continue
		}
		if best < 0 || j.deadline < w.jobs[best].deadline {
			best = i
			continue
		}
		b := &w.jobs[best]
		if j.deadline > b.deadline || b.started && !j.started {
			continue
		}
		if j.est/j.speed < b.est/b.speed || !b.started && j.started {
			best = i
		}
	}
	return best
}

// edfCheck: earliestMiss's every answer is checked against edfScan, the differences
// counted in edfDiffs (a test's), the answers edfTied gave in edfTiedChecks;
// edfNoSort: edfOrder leaves the jobs in their order (a test's, to show the check
// catches it).
var (
	edfCheck, edfNoSort     bool
	edfDiffs, edfTiedChecks int
)

// sortByDeadline sorts ord (indices in jobs, in increasing order) by the jobs'
// deadlines, equals in ord's order: by insertion, as each app's jobs come in the
// order of their deadlines and the moves are few, else (past a budget of moves that
// makes it no cheaper) by slices.SortFunc, which gives the same order: (deadline,
// index) has no equals.
func sortByDeadline(jobs []job, ord []int) {
	budget := 8 * len(ord)
	for a := 1; a < len(ord); a++ {
		x := ord[a]
		d := jobs[x].deadline
		b := a
		for ; b > 0 && jobs[ord[b-1]].deadline > d; b-- {
			ord[b] = ord[b-1]
		}
		ord[b] = x
		if budget -= a - b; budget < 0 {
			slices.SortFunc(ord, func(a, b int) int {
				if c := cmp.Compare(jobs[a].deadline, jobs[b].deadline); c != 0 {
					return c
				}
				return cmp.Compare(a, b)
			})
			return
		}
	}
}
