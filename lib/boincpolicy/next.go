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
	if len(asked) > 0 {
		return rpc.Plan{}, false
	}
	var c Choice
	p := -1
	if !w.Quiet || !w.reportHold || now >= w.reportHoldUntil {
		p, w.reportCounts = OverdueReport(doc, now, w.reportCounts)
		if w.Quiet && p < 0 {
			// No report before overdueFrom while the tasks and the RPC backoffs
			// stay as they are (Reset and TasksChanged end the hold).
			w.reportHold, w.reportHoldUntil = true, overdueFrom(doc, now)
		}
	}
	switch {
	case p >= 0 && w.Quiet && w.quietPiggybackNone(doc, p, now):
		// Nothing piggybacked, known without the simulation: Piggyback's request.
		c = Choice{Project: p, Request: state.WorkRequest{Time: now, Project: doc.Projects[p].Name, Reason: piggybackReason, Coprocs: w.coprocReq[:0]}}
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
