package rpc

import (
	"fmt"
	"slices"

	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/state"
	"github.com/bkit/bkit/lib/workfetch"
)

// Plan is the next scheduler RPC the client is to make: to Project (index in
// doc.Projects) with the per-resource work Request (zero: report only). Every RPC
// reports all of the project's done tasks, as BOINC's client does.
type Plan struct {
	Project int
	Request state.WorkRequest
	Why     string
}

// Next is the client's choice of the next scheduler RPC at now (brpc poll, and bsim's
// loop), given the projects already contacted at this step (asked, indices in
// doc.Projects), from what the document records:
//
//   - reporting, at a step's first poll: seed 000's poll (Poll): a report-result
//     session for a project with overdue results, asking for work too when Poll says
//     so and seed 001 has a work request for that project;
//   - CPU work: seed 001's decision as bfetch recorded it (projects[].work_request,
//     zero unless a project will starve within the connection period): the project
//     with the largest request among those not asked yet, not in RPC backoff nor in
//     seed 002's CPU backoff and with a CPU app version, or no app version yet (ties:
//     document order). Seed 001 keeps every project supplied, which is what lets its
//     debts enforce the shares; seed 000's get-work session, which fills the whole
//     buffer from the one project of greatest resource debt, left the other projects
//     dry for hours;
//   - coprocessor work: seed 002's request (coproc: bdevices request, lib/prsc), of
//     which only the coprocessor part is sent (the CPU is seed 001's), so only when a
//     coprocessor has an idle instance or a shortfall: in the CPU RPC above when seed
//     002 chose the same project (withCoprocs), else in an RPC of its own to the
//     project seed 002 chose. A host without coprocessors does not ask.
//
// The chosen RPC's request is recorded in doc.Request, for the server and for
// bdevices reply. Without seed 001's decision in the document, see NextSeed000.
func Next(doc *state.Document, now float64, asked []int, coproc func() state.WorkRequest) (Plan, bool) {
	return nextRecorded(doc, now, asked, coproc, true)
}

// NextQuiet is Next without its words: the plan's Why and its request's Reason are
// empty; every choice and number is Next's. The emulator plans about 1,500 times a
// simulated day and shows none of them: putting them into words was most of a long
// run's allocations.
func NextQuiet(doc *state.Document, now float64, asked []int, coproc func() state.WorkRequest) (Plan, bool) {
	return nextRecorded(doc, now, asked, coproc, false)
}

func nextRecorded(doc *state.Document, now float64, asked []int, coproc func() state.WorkRequest, explain bool) (Plan, bool) {
	r, ok := next(doc, now, asked, coproc, explain)
	if ok {
		Record(doc, &r, now)
	}
	return r, ok
}

// Record records plan r, chosen at now, in doc.Request (for the server and for bdevices
// reply): its request, with the time and the project's name.
func Record(doc *state.Document, r *Plan, now float64) {
	r.Request.Time, r.Request.Project = now, doc.Projects[r.Project].Name
	// In place when there is one: the emulator makes an RPC every few steps, and a new
	// record each time was most of a long run's allocations.
	if doc.Request == nil {
		doc.Request = new(state.WorkRequest)
	}
	// The record's Coprocs are its own, in the storage of the last record's: the
	// plan's may be a buffer of the caller's (prsc.DecideWork's, goals.Workspace's),
	// good until its next decision.
	coprocs := doc.Request.Coprocs[:0]
	*doc.Request = r.Request
	doc.Request.Coprocs = append(coprocs, r.Request.Coprocs...)
}

// next is Next's choice; explain puts it into words.
func next(doc *state.Document, now float64, asked []int, coproc func() state.WorkRequest, explain bool) (Plan, bool) {
	coprocs := len(doc.Host.Resources) > 1
	if len(asked) == 0 {
		if d := pollIfOverdue(doc, now, explain); d.Action == Report {
			p := projectIndex(doc, d.Project)
			r := Plan{Project: p}
			if explain {
				r.Why = "report: " + d.Reason
			}
			if d.AskWork {
				r.Request, _ = cpuRequest(doc, now, nil, p, explain)
				if coprocs {
					withCoprocs(&r.Request, doc.Projects[p].Name, coproc(), explain)
				}
			}
			r.Request.Reason = r.Why
			return r, true
		}
	}
	if req, ok := cpuRequest(doc, now, asked, -1, explain); ok {
		if coprocs {
			withCoprocs(&req, req.Project, coproc(), explain)
		}
		return Plan{Project: projectIndex(doc, req.Project), Request: req, Why: req.Reason}, true
	}
	if !coprocs {
		return Plan{}, false
	}
	return coprocRequest(doc, coproc(), asked, explain)
}

// withCoprocs adds to req, a CPU request to project, the coprocessor part of seed
// 002's request c when c is to the same project: seed 002's send_req puts every
// resource's shortfall in the one request, so a project asked for CPU work is asked
// for the coprocessors' work it was chosen for too. Without this, a host whose one
// project has CPU and GPU jobs asked it for CPU work at every step (seed 001 keeps it
// supplied) and, the project being contacted already, never for GPU work: its GPU
// stood idle.
func withCoprocs(req *state.WorkRequest, project string, c state.WorkRequest, explain bool) {
	if c.Project != project {
		return
	}
	asked := 0
	for _, cr := range c.Coprocs {
		if cr.ReqSecs > 0 || cr.ReqInstances > 0 {
			asked++
			req.WorkReqSeconds = max(req.WorkReqSeconds, cr.ReqSecs)
		}
	}
	switch {
	case asked == 0:
	case asked == len(c.Coprocs) && len(req.Coprocs) == 0:
		// c's as they are, unchanged (the emulator plans at every step: no copy).
		req.Coprocs = c.Coprocs
	default:
		for _, cr := range c.Coprocs {
			if cr.ReqSecs > 0 || cr.ReqInstances > 0 {
				req.Coprocs = append(req.Coprocs, cr)
			}
		}
	}
	if len(req.Coprocs) > 0 && explain {
		req.Reason += "; seed 002: " + c.Reason
	}
}

// NextSeed000 is the choice of the next RPC from seed 000 alone, for a document without
// seed 001's decision at now: Poll's session (at a step's first poll, asked empty), or
// within a get-work session the project of greatest debt not asked yet, while
// estimated work is below the high-water mark. A get-work RPC, and a report RPC that
// Poll lets ask for work, ask for WorkRequestSeconds (the high-water mark's shortfall)
// of CPU time. The request is recorded in doc.Request.
func NextSeed000(doc *state.Document, now float64, asked []int) (Plan, bool) {
	var r Plan
	if len(asked) == 0 {
		d := Poll(doc, now)
		switch d.Action {
		case None:
			return Plan{}, false
		case Report:
			r = Plan{Project: projectIndex(doc, d.Project), Why: "report: " + d.Reason}
			if d.AskWork {
				r.Request = seed000Request(doc)
			}
			r.Request.Reason = r.Why
			Record(doc, &r, now)
			return r, true
		}
		r.Why = "get work: " + d.Reason
	} else {
		if _, high := WaterMarks(&doc.Preferences); EstimatedWorkDays(doc) >= high {
			return Plan{}, false
		}
		r.Why = "get work: estimated work is below the high-water mark"
	}
	skip := func(p *state.Project) bool { return slices.Contains(asked, projectIndex(doc, p.Name)) }
	if r.Project = GreatestDebt(doc, now, skip); r.Project < 0 {
		return Plan{}, false
	}
	r.Why += fmt.Sprintf("; %q has the greatest resource debt", doc.Projects[r.Project].Name)
	r.Request = seed000Request(doc)
	r.Request.Reason = r.Why
	Record(doc, &r, now)
	return r, true
}

// seed000Request asks for enough CPU time to bring the buffer up to the high-water mark.
func seed000Request(doc *state.Document) state.WorkRequest {
	s := WorkRequestSeconds(doc)
	return state.WorkRequest{WorkReqSeconds: s, CPUReqSecs: s}
}

// cpuRequest is seed 001's CPU request, as bfetch recorded it: see Next. With only
// >= 0, just that project's request is returned; explain puts it into words.
func cpuRequest(doc *state.Document, now float64, asked []int, only int, explain bool) (state.WorkRequest, bool) {
	if doc.WorkFetch == nil {
		return state.WorkRequest{}, false
	}
	best := -1
	for i := range doc.Projects {
		p := &doc.Projects[i]
		if p.WorkRequest <= 0 || (only >= 0 && i != only) || slices.Contains(asked, i) || !CanContact(p, now) ||
			prsc.BackedOff(p, state.ResourceCPU, now) || !hasVersionFor(doc, p.Name, state.ResourceCPU) {
			continue
		}
		if best < 0 || p.WorkRequest > doc.Projects[best].WorkRequest {
			best = i
		}
	}
	if best < 0 {
		return state.WorkRequest{}, false
	}
	p := &doc.Projects[best]
	req := state.WorkRequest{Time: now, Project: p.Name, WorkReqSeconds: p.WorkRequest, CPUReqSecs: p.WorkRequest}
	if explain {
		req.Reason = fmt.Sprintf("seed 001 (%s): work request %s", doc.WorkFetch.Urgency, workfetch.Seconds(p.WorkRequest))
	}
	return req, true
}

// coprocRequest sends the coprocessor part of seed 002's request req (see Next).
func coprocRequest(doc *state.Document, req state.WorkRequest, asked []int, explain bool) (Plan, bool) {
	p := projectIndex(doc, req.Project)
	if p < 0 || slices.Contains(asked, p) {
		return Plan{}, false
	}
	req.CPUReqSecs, req.CPUReqInstances, req.WorkReqSeconds = 0, 0, 0
	for _, c := range req.Coprocs {
		req.WorkReqSeconds = max(req.WorkReqSeconds, c.ReqSecs)
	}
	if len(prsc.Requested(&req)) == 0 {
		return Plan{}, false
	}
	if explain {
		req.Reason = "seed 002: " + req.Reason
	} else {
		req.Reason = ""
	}
	return Plan{Project: p, Request: req, Why: req.Reason}, true
}

// PollIfOverdue is Poll, asked only for report sessions: those need an overdue result
// (Overdue), so without one Poll is not run (the emulator polls ~1,500 times a day).
// Only a Report decision has its Reason: the others are not what the caller asked
// for, and putting their figures into words was most of a step of the emulator while
// a project with overdue results could not be contacted.
func PollIfOverdue(doc *state.Document, now float64) Decision {
	return pollIfOverdue(doc, now, true)
}

// PollIfOverdueQuiet is PollIfOverdue without its words: a Report's Reason is empty
// too (the emulator's round-robin policy polls at every step and shows none).
func PollIfOverdueQuiet(doc *state.Document, now float64) Decision {
	return pollIfOverdue(doc, now, false)
}

// pollIfOverdue is PollIfOverdue; explain false leaves a report's Reason empty too.
func pollIfOverdue(doc *state.Document, now float64, explain bool) Decision {
	for i := range doc.Tasks {
		if Overdue(&doc.Tasks[i], now) {
			return poll(doc, now, false, explain)
		}
	}
	return Decision{Action: None}
}

// hasVersionFor reports whether project has an app version for resource type t, or
// none at all: a project just attached (brpc attach) is asked for work before the
// client knows its apps, as BOINC's client asks a new project; its first reply sends
// the app versions.
func hasVersionFor(doc *state.Document, project, t string) bool {
	known := false
	for i := range doc.AppVersions {
		if av := &doc.AppVersions[i]; av.Project == project {
			if av.ResourceType() == t {
				return true
			}
			known = true
		}
	}
	return !known
}

// projectIndex is the index of the project named name, or -1.
func projectIndex(doc *state.Document, name string) int {
	// A loop, not slices.IndexFunc: its func takes each Project by value, a copy of
	// the whole record per look-up (the emulator looks up at every RPC).
	for i := range doc.Projects {
		if doc.Projects[i].Name == name {
			return i
		}
	}
	return -1
}
