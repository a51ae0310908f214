package boincpolicy

import (
	"github.com/bkit/bkit/lib/scratch"
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

// servedPrios starts projectServed's sequences of priorities for the call: each
// eligible project's first REC (its REC, or at the horizon's bound when ranged: the
// decay and growth of recRange), none worked out yet, and its slope for the box's
// margins.
func (w *Workspace) servedPrios(doc *state.Document, recSum float64, ranged bool, decay, grow float64) {
	nP := len(doc.Projects)
	w.sPrioN = scratch.Grow(w.sPrioN, 2*nP)
	w.sPrioY = scratch.Grow(w.sPrioY, 2*nP)
	at := 0
	for q := range nP {
		w.sPrioN[q], w.sPrioN[nP+q] = 0, at // worked out; where q's start in w.sPrio
		if !w.eligible[q] {
			continue
		}
		y := w.rec[q]
		if ranged {
			y = decay * recSum * y / (recSum + grow)
		}
		w.sPrioY[q] = y
		w.sPrioY[nP+q] = prioSlope(doc.Projects[q].ResourceShare, w.gShare[q])
		at += int(w.gCPUs[4*q])
	}
	w.sPrio = growJobs(w.sPrio, at)
}

// servedREC is projectServed's CPUs served to project p (eligible, not under BOINC's
// emulator) from x, p's REC before its first job at most: w.gServed[p], and the box's
// margins of the comparisons made when track.
func (w *Workspace) servedREC(doc *state.Document, p int, x, recSum, limit float64, track bool) {
	nP := len(doc.Projects)
	g := w.gCPUs[4*p : 4*p+4]
	share, shareP, slopeP := doc.Projects[p].ResourceShare, w.gShare[p], w.sPrioY[nP+p]
	for k := 1.0; k <= g[0]; k++ {
		base := Priority(x, recSum, share, shareP)
		ahead := (k - 1) * g[2]
		for q := 0; q < nP && ahead < limit; q++ {
			if q == p || !w.eligible[q] {
				continue
			}
			n, most, at, slopeQ := int(w.gCPUs[4*q]), w.gCPUs[4*q+2], w.sPrioN[nP+q], w.sPrioY[nP+q]
			for c := 0; c < n && ahead < limit; c++ {
				if c == w.sPrioN[q] {
					// q's priority before its c-th job, its REC raised by its least
					// bump at each job before.
					w.sPrio[at+c] = Priority(w.sPrioY[q], recSum, doc.Projects[q].ResourceShare, w.gShare[q])
					w.sPrioN[q]++
					w.sPrioY[q] += w.gBump[2*q]
				}
				pq := w.sPrio[at+c]
				if track {
					w.servedEps = min(w.servedEps, boxMargin(pq, base, slopeQ, slopeP))
				}
				if pq < base {
					break
				}
				ahead += most
			}
		}
		if !(ahead < limit) {
			break
		}
		w.gServed[p] = k
		x += w.gBump[2*p+1]
	}
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
