package boincpolicy

import (
	"math"

	"github.com/bkit/bkit/lib/state"
)

// quietPiggybackNone reports whether Piggyback would ask project p for nothing at now,
// from what the view and the jobs' counts give, without the simulation: then its
// request is known (no resource asked for) and the simulation is not run. (At a
// moment whose simulation is done it is not looked at: Piggyback then costs little.)
//
// Piggyback reads of the simulation only each resource's saturated time (whether it
// is below work_buf_total) and, for a resource it asks for, its shortfall and idle
// instances; setup reads the saturated time only for a project of zero share (its
// ReasonZeroShare), and of prepare only the runnable jobs' counts, so when no project
// has a zero share setup gives without the simulation exactly what it gives after it.
// A resource is then left out as Piggyback leaves it out: p has no app version for
// it (bsim's convention), its saturated time is at or past work_buf_total by
// workBound's bound ((W − n × t) ÷ (n + u), noFetchPossible), or (setup done) p's
// reason for it or a project of higher priority that may be asked for it, or its
// saturated time is at or past work_buf_total by workBound's other bounds
// (saturatedPast). When every resource is left out, or p has too many runnable tasks,
// nothing is asked for. The first two need no setup, which is made only when some
// resource is left after them; the other bounds, dearer, come last. set reports
// whether it made setup (for piggyback, where it answers false).
func (w *Workspace) quietPiggybackNone(doc *state.Document, p int, now float64) (none, set bool) {
	if w.simDone && w.simAt == now {
		return false, false
	}
	for q := range doc.Projects {
		if doc.Projects[q].ResourceShare == 0 {
			return false, false
		}
	}
	w.quietView(doc, now)
	w.prepareJobs(doc)
	nR := w.nRes
	open := false // some resource not left out without setup
	for r := 0; r < nR && !open; r++ {
		open = !w.fullPast(doc, p, r)
	}
	if !open {
		return true, false
	}
	// setup's counts (prepare's).
	clear(w.nRunnable)
	for i := range w.jobs {
		j := &w.jobs[i]
		w.nRunnable[j.proj*nR+j.res]++
	}
	w.setup(doc, now)
	if x := w.projReason[p]; x != "" && x != ProjectMinRPCTime {
		return true, true
	}
	sat := false // some resource left out by saturatedPast (piggybackCheck's)
	for r := 0; r < nR; r++ {
		if x := w.reason[p*nR+r]; x != "" && x != ReasonBackedOff {
			continue
		}
		if w.betterAskable(p, r) || w.fullPast(doc, p, r) {
			continue
		}
		if w.saturatedPast(doc, r) {
			sat = true
			continue
		}
		return false, true
	}
	if sat && piggybackCheck {
		w.checkPiggybackNone(doc, p, now)
	}
	return true, true
}

// fullPast reports whether p is never asked for resource r (no app version for it,
// bsim's convention: setup's ReasonNoApps) or r's saturated time is at or past
// work_buf_total by workBound's bound (prepareJobs done: its sums).
func (w *Workspace) fullPast(doc *state.Document, p, r int) bool {
	res := &doc.Host.Resources[r]
	if !doc.BOINCEmulator && !w.hasVersion(doc, p, r) {
		return true
	}
	n := float64(res.Instances)
	s := w.sums[sumsPer*r : sumsPer*r+sumsPer]
	// A margin for rounding, as workBound's.
	return (s[sumW]-n*s[sumMaxT])/(n+s[sumMaxU])-(WorkBufTotal(&doc.Preferences)*(1+1e-9)+1e-6) >= 0
}

// saturatedPast reports whether resource r's saturated time in the simulation is at or
// past work_buf_total by the bounds from below workBound reads past its sum
// (prepareJobs done): saturatedBound's (the sum of r's jobs' times but the n − 1
// longest ÷ n, and the n-th longest time) and saturatedList's (r's list schedule,
// where one project's jobs of one instance each fill it). Each bounds the
// simulation's saturated time whatever the threshold it is held to (workBound's
// work_buf_min), so with work_buf_total in its place, and the same margins for
// rounding, it shows that Piggyback leaves r out (its test !(saturated <
// work_buf_total)). (Issue 30, twenty-seventh round: workBound's sum alone left open
// 104 of corpus c198's 110 piggybacked requests of a 10-day run under bsim's
// conventions that asked for nothing, each then a whole simulation. saturatedLowAt's
// bound, noFetchPossible's last, was tried here too: it carried 25 more of c159's
// 77, but on hosts where it fails, c150's 423 tries for 60, it cost more than it saved.)
func (w *Workspace) saturatedPast(doc *state.Document, r int) bool {
	h := &doc.Host
	x := WorkBufTotal(&doc.Preferences)*(1+1e-9) + 1e-6
	if satBelow && w.saturatedBelow(h, r, x) {
		return false
	}
	if sat, kth, ok := w.saturatedBound(h, r); ok && (sat >= x || kth >= x) {
		return true
	}
	sat, ok := w.saturatedList(h, r)
	return ok && sat >= x
}

// saturatedBelow reports whether saturatedBound's sum and n-th longest time and
// saturatedList's time are all below x (x > 0), from prepareJobs' sums without their
// walks over the jobs: then neither bound reaches x. Each is at most
// max(t, S ÷ n) for resource r of n instances, t the longest of its jobs' times and S
// their sum (sumMaxT, sumSerial: the same times, S summed in the jobs' order as
// saturatedBound sums them). The n-th longest is at most the longest (and, the times
// at or above 0, at most S ÷ n: t is there for a time below 0, which no run has). The
// sum but the n − 1 longest is at most S where those are at or above 0; where one is
// below 0 so are the n-th longest and all after it, and that sum ÷ n is below 0 < x (a
// job's time is its remaining work, at least 0, ÷ its rate). The list schedule's least free time
// is at most the mean of the n free times, whose sum is S. The margin (relative 1e-6
// and 1e-6 s) covers the sums' rounding, in another order for the list schedule. A
// NaN fails the test (not below). (Issue 30, thirty-seventh round: corpus c143's 1,165
// piggybacked requests of a 10-day run under BOINC's emulator each tried both bounds
// and each asked for work; resourceOver tried saturatedList 2,563 times, 754 past.)
func (w *Workspace) saturatedBelow(h *state.Host, r int, x float64) bool {
	n := float64(h.Resources[r].Instances)
	if !(n >= 1) {
		return true // neither bound is known (both return not ok)
	}
	s := w.sums[sumsPer*r : sumsPer*r+sumsPer]
	u := max(s[sumMaxT], s[sumSerial]/n)
	top := u + 1e-6*math.Abs(u) + 1e-6
	if satBelowCheck {
		w.checkSatBelow(h, r, top)
	}
	return top < x
}

// satBelow turns saturatedBelow on (a test's switch: off, both bounds are walked).
// With satBelowCheck on (tests only), at each call both bounds are walked and each
// that is known and at or above 0 must be at most saturatedBelow's top (whatever x):
// satBelowDiffs counts the calls where one was not, satBelowChecks the calls.
var (
	satBelow                      = true
	satBelowCheck                 bool
	satBelowDiffs, satBelowChecks int
)

// checkSatBelow is satBelowCheck's test of saturatedBelow's top for resource r.
func (w *Workspace) checkSatBelow(h *state.Host, r int, top float64) {
	satBelowChecks++
	sat, kth, ok := w.saturatedBound(h, r)
	list, lok := w.saturatedList(h, r)
	if ok && (sat >= 0 && !(sat <= top) || !(kth <= top)) || lok && !(list <= top) {
		satBelowDiffs++
	}
}

// piggybackCheck, piggybackDiffs, piggybackChecks: with the check on (tests only),
// wherever quietPiggybackNone left a resource out by saturatedPast and answered that
// nothing is piggybacked, a whole Piggyback on a copy of the document, by a workspace
// of its own, must ask for nothing; piggybackDiffs counts where it did not,
// piggybackChecks the answers checked.
var (
	piggybackCheck                  bool
	piggybackDiffs, piggybackChecks int
)

// checkPiggybackNone is piggybackCheck's test of quietPiggybackNone's answer at now.
func (w *Workspace) checkPiggybackNone(doc *state.Document, p int, now float64) {
	piggybackChecks++
	whole := checkSpace(w.Overestimate)
	defer checkDone(whole)
	c := whole.Piggyback(whole.checkCopy(doc), p, now)
	if q := &c.Request; q.CPUReqSecs != 0 || q.CPUReqInstances != 0 || q.WorkReqSeconds != 0 || len(q.Coprocs) != 0 {
		piggybackDiffs++
	}
}
