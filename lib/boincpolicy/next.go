package boincpolicy

import (
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
)

// Next is the scheduler RPC BOINC's client makes at now, at most one a poll as its
// emulator polls (client/sim.cpp CLIENT_STATE::scheduler_rpc_poll): first a project
// that may be contacted with a result to report by BOINC's rule (OverdueReport:
// find_project_with_overdue_results), with a piggybacked work request (Piggyback);
// else ChooseProject's choice. asked lists the projects already contacted at this
// step: after one RPC there is none. The plan is recorded in doc.Request (rpc.Record) for the server and for the
// reply; its Coprocs are the workspace's.
func (w *Workspace) Next(doc *state.Document, now float64, asked []int) (rpc.Plan, bool) {
	if w.NoneYet(doc, now, asked) {
		return rpc.Plan{}, false
	}
	return w.next(doc, now, asked)
}

// next is Next past NoneYet.
func (w *Workspace) next(doc *state.Document, now float64, asked []int) (rpc.Plan, bool) {
	if len(asked) > 0 {
		return rpc.Plan{}, false
	}
	var c Choice
	p := -1
	if !w.Quiet || !w.reportHold || now >= w.reportHoldUntil {
		var from float64
		p, from, w.reportCounts = overdueReport(doc, now, w.reportCounts, w.namesDistinct(doc))
		if w.Quiet && p < 0 {
			// No report before from while the tasks and the RPC backoffs stay
			// as they are (Reset and TasksChanged end the hold).
			w.reportHold, w.reportHoldUntil = true, from
		}
	}
	switch {
	case p >= 0 && w.Quiet:
		if none, set := w.quietPiggybackNone(doc, p, now); none {
			// Nothing piggybacked, known without the simulation: Piggyback's request.
			c = Choice{Project: p, Request: state.WorkRequest{Time: now, Project: doc.Projects[p].Name, Reason: piggybackReason, Coprocs: w.coprocReq[:0]}}
		} else {
			c = w.piggyback(doc, p, now, set)
		}
	case p >= 0:
		c = w.Piggyback(doc, p, now)
	case w.Quiet && w.quietNoFetch(doc, now):
		return rpc.Plan{}, false // (without a Choice made and copied at every step)
	default:
		if c = w.chooseProject(doc, now); c.Project < 0 {
			return rpc.Plan{}, false
		}
	}
	plan := rpc.Plan{Project: c.Project, Request: c.Request, Why: c.Request.Reason}
	rpc.Record(doc, &plan, now)
	return plan, true
}

// NoneYet reports, reading of the document at most the RECs (fetchHeld's box), that
// Next makes no RPC at now, where Next's first tests show it and change nothing: a
// project already asked, or, on the quiet paths, no report due before reportHoldUntil
// (OverdueReport's hold) and no project askable before askHoldUntil or no resource
// short of work before fetchHoldUntil (quietNoFetch's first tests). Next begins with
// it; a caller may ask it first and spare Next's call and its plan (most of a run's
// steps: issue 30, eighteenth round).
func (w *Workspace) NoneYet(doc *state.Document, now float64, asked []int) bool {
	none := len(asked) > 0 || w.Quiet && w.reportHold && now < w.reportHoldUntil &&
		(w.askHold && now < w.askHoldUntil || w.fetchHeld(doc, now))
	if none && noneYetCheck {
		w.checkNoneYet(doc, now, asked)
	}
	return none
}

// noneYetCheck, noneYetDiffs: with the check on (tests only), NoneYet runs next
// where it answers, and counts where it would have made an RPC or changed the
// holds NoneYet reads.
var (
	noneYetCheck bool
	noneYetDiffs int
)

func (w *Workspace) checkNoneYet(doc *state.Document, now float64, asked []int) {
	holds := [...]any{w.reportHold, w.reportHoldUntil, w.askHold, w.askHoldUntil, w.fetchHold, w.fetchHoldUntil}
	if _, ok := w.next(doc, now, asked); ok || holds != [...]any{w.reportHold, w.reportHoldUntil, w.askHold, w.askHoldUntil, w.fetchHold, w.fetchHoldUntil} {
		noneYetDiffs++
	}
}
