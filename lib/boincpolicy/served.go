package boincpolicy

import (
	"math"

	"github.com/bkit/bkit/lib/state"
)

// projectServed's walk by priority (issue 30, thirty-first round). For each project p
// and each k it compares p's priority before its k-th job with every other project
// q's before each of q's jobs in turn; q's sequence (its REC at the horizon's bound,
// raised by its least bump at each job: Priority of each) is the same for every p and
// every k, so it is worked out once a call, as far as the walks read it, and kept
// (w.sPrio): the same sums in the same order, the same bits. The walks worked each
// priority out afresh, two divisions each, at every p and k (projectServed was 3.6 %
// of policy boinc's runs of the scenarios furthest above seed's time, docs/decisions.md).

// servedQ is projectServed's figures of a project q for the walks, kept together for
// the call (servedPrios): its CPU jobs, the most CPUs of one, where its priorities
// start in w.sPrio and how many are worked out, its REC before the next, its share and
// share fraction, its slope for the box's margins; and servedREC's count of its jobs
// before p's last k-th job. (Read from the workspace's slices, each with its bounds
// check, they were most of the walk's cost per project: issue 30, forty-fourth round.)
type servedQ struct {
	n, at, done, count          int
	most, y, share, frac, slope float64
}

// servedPrios starts projectServed's sequences of priorities for the call: each
// eligible project's first REC (its REC, or at the horizon's bound when ranged: the
// decay and growth of recRange), none worked out yet, and its slope for the box's
// margins.
func (w *Workspace) servedPrios(doc *state.Document, recSum float64, ranged bool, decay, grow float64) {
	nP := len(doc.Projects)
	if cap(w.sQ) < nP {
		w.sQ = make([]servedQ, nP)
	}
	w.sQ = w.sQ[:nP]
	at := 0
	for q := range nP {
		s := &w.sQ[q]
		// A project not eligible is left with n 0: no walk looks at it.
		*s = servedQ{at: at}
		if !w.eligible[q] {
			continue
		}
		y := w.rec[q]
		if ranged {
			y = decay * recSum * y / (recSum + grow)
		}
		s.n, s.most, s.y = int(w.gCPUs[4*q]), w.gCPUs[4*q+2], y
		s.share, s.frac = doc.Projects[q].ResourceShare, w.gShare[q]
		s.slope = prioSlope(s.share, s.frac)
		at += s.n
	}
	w.sPrio = growJobs(w.sPrio, at)
}

// servedREC is projectServed's CPUs served to project p (eligible, not under BOINC's
// emulator) from x, p's REC before its first job at most: w.gServed[p], and the box's
// margins of the comparisons made when track.
//
// Each k's walk resumes the last k's (issue 30, forty-fourth round). p's REC before
// its k-th job only grows with k (its bump is at least 0), so its priority, base, only
// falls (Priority falls as the REC grows; floating-point sums and quotients are
// monotone): a job of q that came before p's (k − 1)-th job, its priority not below
// that base (or NaN), is not below this one either, and comes before p's k-th. So each
// q's first count jobs (those counted at the last k) are counted again without being
// compared, their CPUs added to ahead one by one in the same order as the walk adds
// them (the same bits, and the same stop where ahead reaches limit), and the
// comparisons start at the first job not counted. Those skipped would not lower the
// box's margin: each one's was taken at the last k, against a base no lower, and is
// no larger now (|pq − base| only grows as base falls below pq; rounding is
// monotone). Where base is not at most the last k's (NaN, or a bump below 0), the
// counts start again from none.
func (w *Workspace) servedREC(doc *state.Document, p int, x, recSum, limit float64, track bool) {
	g := w.gCPUs[4*p : 4*p+4]
	qs := w.sQ
	sp := &qs[p]
	share, shareP, slopeP := sp.share, sp.frac, sp.slope
	for q := range qs {
		qs[q].count = 0
	}
	// (The workspace's slices and the margin in locals: the walk read them through
	// w at every job.)
	sPrio, gBump, eps := w.sPrio, w.gBump, w.servedEps
	prev := math.Inf(1)
	for k := 1.0; k <= g[0]; k++ {
		base := Priority(x, recSum, share, shareP)
		if !(base <= prev) {
			for q := range qs {
				qs[q].count = 0
			}
		}
		prev = base
		ahead := (k - 1) * g[2]
		for q := 0; q < len(qs) && ahead < limit; q++ {
			if q == p {
				continue
			}
			s := &qs[q]
			n, most := s.n, s.most
			c := 0
			for m := s.count; c < m && ahead < limit; c++ {
				ahead += most
			}
			for ; c < n && ahead < limit; c++ {
				if c == s.done {
					// q's priority before its c-th job, its REC raised by its least
					// bump at each job before.
					sPrio[s.at+c] = Priority(s.y, recSum, s.share, s.frac)
					s.done++
					s.y += gBump[2*q]
				}
				pq := sPrio[s.at+c]
				if track {
					eps = min(eps, boxMargin(pq, base, s.slope, slopeP))
				}
				if pq < base {
					break
				}
				ahead += most
			}
			s.count = c
		}
		if !(ahead < limit) {
			break
		}
		w.gServed[p] = k
		x += gBump[2*p+1]
	}
	w.servedEps = eps
}

// servedCheck, servedDiffs, servedChecks: with the check on (tests only), every
// servedREC is held to the walk that works every priority out afresh (servedWhole):
// servedDiffs counts the projects whose CPUs served or box margin differ,
// servedChecks those checked.
var (
	servedCheck               bool
	servedDiffs, servedChecks int
)

// checkServed is servedREC under servedCheck's test.
func (w *Workspace) checkServed(doc *state.Document, p int, x, recSum, limit float64, track bool, horizon, decay, grow float64) {
	served, eps := w.servedWhole(doc, p, x, recSum, limit, track, horizon, decay, grow)
	w.servedREC(doc, p, x, recSum, limit, track)
	servedChecks++
	if w.gServed[p] != served || w.servedEps != eps {
		servedDiffs++
	}
}

// servedWhole is servedREC's answer (the CPUs served, the box's margin so far) with
// every priority worked out afresh at each comparison, w left as it was.
func (w *Workspace) servedWhole(doc *state.Document, p int, x, recSum, limit float64, track bool, horizon, decay, grow float64) (served, eps float64) {
	nP := len(doc.Projects)
	eps = w.servedEps
	g := w.gCPUs[4*p : 4*p+4]
	slopeP := prioSlope(doc.Projects[p].ResourceShare, w.gShare[p])
	for k := 1.0; k <= g[0]; k++ {
		base := Priority(x, recSum, doc.Projects[p].ResourceShare, w.gShare[p])
		ahead := (k - 1) * g[2]
		for q := 0; q < nP && ahead < limit; q++ {
			if q == p || !w.eligible[q] {
				continue
			}
			gq := w.gCPUs[4*q : 4*q+4]
			y := w.rec[q]
			if horizon > 0 && !w.gRECFree {
				y = decay * recSum * y / (recSum + grow)
			}
			slopeQ := prioSlope(doc.Projects[q].ResourceShare, w.gShare[q])
			for c := 0.0; c < gq[0] && ahead < limit; c++ {
				pq := Priority(y, recSum, doc.Projects[q].ResourceShare, w.gShare[q])
				if track {
					eps = min(eps, boxMargin(pq, base, slopeQ, slopeP))
				}
				if pq < base {
					break
				}
				ahead += gq[2]
				y += w.gBump[2*q]
			}
		}
		if !(ahead < limit) {
			break
		}
		served = k
		x += w.gBump[2*p+1]
	}
	return served, eps
}
