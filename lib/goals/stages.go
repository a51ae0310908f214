package goals

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
	"github.com/bkit/bkit/lib/workfetch"
)

// The policy's stages as the programs run them, so that a shell loop of programs runs
// the policy bsim runs (scripts/client-loop.sh --policy goals): bfetch --policy goals
// (Fetch, Apply), bdevices request --policy goals (Request), brpc poll --policy goals
// (Next), bsched --policy goals (Schedule) and bsim advance (Account).

// Fetch is the policy's work-fetch position at now, as bfetch --policy goals shows it:
// every (project, resource) position (Needs), the idle instances of each resource, and
// what each project would be asked for on the CPU if it were asked.
type Fetch struct {
	Needs []Need
	Idle  []float64 // per host resource: instances no runnable task takes
	// CPURequest per project: the CPU seconds Request would ask it for if it were the
	// project chosen (0 for a project that needs nothing: at or above its low-water mark
	// with no CPU idle, or backed off for the CPU or for RPCs).
	CPURequest []float64
	Urgency    workfetch.Urgency
	Reason     string
}

// Decide is the policy's work-fetch position at now. The urgency is seed 001's words
// for the policy's triggers: need_work_immediately when a resource has an idle instance
// that a project that may be contacted has an app version for, need_work when a
// project is below its low-water mark on some resource, else dont_need_work.
func Decide(doc *state.Document, now float64) Fetch {
	h := &doc.Host
	var w Workspace
	ts := w.runnable(doc)
	f := Fetch{Needs: w.needsOf(doc, ts), Idle: w.idleInstances(doc, ts), CPURequest: make([]float64, len(doc.Projects))}
	f.Reason = "every project holds at least its low-water mark and no instance is idle"
	for _, nd := range f.Needs {
		p := &doc.Projects[nd.Project]
		res := h.Resources[nd.Resource].Type
		if !eligible(doc, nd, now, nil) {
			continue
		}
		idle := f.Idle[nd.Resource] > fitSlack
		switch {
		case idle && f.Urgency < workfetch.NeedWorkImmediately:
			f.Urgency, f.Reason = workfetch.NeedWorkImmediately, res+" has an idle instance "+p.Name+" can fill"
		case nd.Queued < nd.Low && f.Urgency < workfetch.NeedWork:
			f.Urgency, f.Reason = workfetch.NeedWork, p.Name+" is below its low-water mark on "+res
		}
		if res == state.ResourceCPU && (idle || nd.Queued < nd.Low) {
			f.CPURequest[nd.Project] = math.Max(0, nd.Want-nd.Queued)
		}
	}
	return f
}

// Apply records f in doc as bfetch records seed 001's decision: each project's
// work_request (its CPURequest) and work_fetch (now, the urgency).
func Apply(doc *state.Document, f Fetch, now float64) {
	for p := range doc.Projects {
		doc.Projects[p].WorkRequest = f.CPURequest[p]
	}
	doc.WorkFetch = &state.WorkFetch{Time: now, Urgency: f.Urgency.String()}
}

// Next is the policy's next scheduler RPC at now, not to the projects in asked (brpc
// poll --policy goals, and bsim's loop): Request's choice (the RPC reports that
// project's done results too); when no project needs asking, a report-only RPC to the
// project with the overdue result (seed 000's rpc.Overdue) of earliest deadline, among
// those whose last RPC did not fail, else among all when that deadline is within a
// scheduling period; on a host with one project that report asks for the work the
// project lacks below its want (loneTopUp). The RPC's request is recorded in
// doc.Request.
//
// Reports do not wait on the buffer. seed 000's Poll starts a get-work session instead
// of a report when the host's estimated work is below its low-water mark, and the
// project holding the result may then not be the one asked for work; on a host that is
// off much of the time the next chance may come only after the deadline (part-time-4cpu,
// seed 2: an A result done 16 hours before its deadline, 22 minutes before the host
// went off for 22 hours, was reported 6 hours late; seeds 1 to 10 had 15 such results).
// Request's choice goes first so that a report does not take the place of the project
// of largest debt in filling an idle instance. A project whose last RPC failed gets no
// report-only RPC: its server is likely down, each failure lengthens seed 000's backoff,
// and the work request it will soon need would wait behind it (down-2cpu, seed 1: P
// reached ten failures in a row, sv 0.024 against 0.0003); its results go with that
// request, unless one is due within a scheduling period: that project may not need
// work before the deadline (a project whose buffer is full, or one ahead of its share,
// waits), and a result not reported by then is lost whatever the backoff (c025: D's
// results, its server up half the time, reported up to 29 hours late; the corpus under
// --emulate boinc, seeds 1-5: at least as good as BOINC on 93 -> 104 of 199).
func Next(doc *state.Document, now float64, asked []int) (rpc.Plan, bool) {
	var w Workspace
	return w.Next(doc, now, asked)
}

// Next is Next with w's index and buffers; the plan's Coprocs are w's (doc.Request's
// are its own).
func (w *Workspace) Next(doc *state.Document, now float64, asked []int) (rpc.Plan, bool) {
	req, p, ok := w.request(doc, now, asked)
	if !ok {
		skip := append(w.skip[:0], asked...)
		for i := range doc.Projects {
			if doc.Projects[i].NRPCFailures > 0 {
				skip = append(skip, i)
			}
		}
		w.skip = skip
		var deadline float64
		if p, deadline = rpc.OverdueReport(doc, now, skip); p < 0 {
			// A result due within a scheduling period goes even to a project whose
			// last RPC failed: a report that fails costs a backoff, one not tried
			// loses the result for sure (the project may not be asked for work before
			// its deadline: c025, D's results reported up to 29 hours late).
			if p, deadline = rpc.OverdueReport(doc, now, asked); p < 0 || deadline-now > doc.Preferences.CPUSchedulingPeriod {
				return rpc.Plan{}, false
			}
		}
		req = state.WorkRequest{Time: now, Project: doc.Projects[p].Name}
		topUp := w.loneTopUp(doc, &req)
		if !w.Quiet {
			req.Reason = fmt.Sprintf("report: project %q has a result overdue for reporting (deadline %g)", doc.Projects[p].Name, deadline)
			if topUp {
				req.Reason += "; work piggybacked: the host's one project holds less than it wants"
			}
		}
	}
	plan := rpc.Plan{Project: p, Request: req, Why: req.Reason}
	rpc.Record(doc, &plan, now)
	return plan, true
}

// loneTopUp adds to req, a report-only RPC's request, a request for work on
// each resource where the host's one project holds less than it wants (its want less
// what it holds, and the idle instances), whatever its backoff for the resource, and
// reports whether it added any: BOINC's client piggybacks a work request on every RPC
// that reports results (work_fetch.cpp WORK_FETCH::piggyback_work_request, for each
// resource whose buffer is below work_buf_total), so its queue stands near the top of
// the buffer when the server goes down, where goals' waited for the low-water mark (c027:
// one project, 6 CPUs and a GPU, its server up a third of the time; at seed 4 goals let
// its queue fall from 128 to 29 CPU-hours before asking, the server went down, and the
// CPUs ran dry for hours, where policy boinc asked at each report and held 110-120). Only
// on a host with one project, whose latency is known (its want then fits within the
// latency cap, aloneWant): with projects sharing a resource a request at each report
// spends the shares and the short deadlines (docs/decisions.md, issue 29's eighth round:
// deadlines-4cpu's waste 0.0025 -> 0.177), and for a project alone on only one
// resource of several it moved c012's share violation by +0.14 at seeds 6-10 (the
// tenth round).
func (w *Workspace) loneTopUp(doc *state.Document, req *state.WorkRequest) bool {
	if len(doc.Projects) != 1 {
		return false
	}
	h := &doc.Host
	ts := w.runnable(doc)
	needs := w.needsOf(doc, ts)
	idle := w.idleInstances(doc, ts)
	coprocs := w.coprocs[:0]
	any := false
	for _, nd := range needs {
		secs := nd.Want - nd.Queued
		if nd.Latency <= 0 || !(secs > 0) {
			continue
		}
		inst := max(0, idle[nd.Resource])
		if t := h.Resources[nd.Resource].Type; t == state.ResourceCPU {
			req.CPUReqSecs, req.CPUReqInstances = secs, inst
		} else {
			coprocs = append(coprocs, state.CoprocRequest{Type: t, ReqSecs: secs, ReqInstances: inst})
		}
		req.WorkReqSeconds = max(req.WorkReqSeconds, secs)
		any = true
	}
	if w.coprocs = coprocs; len(coprocs) > 0 {
		req.Coprocs = coprocs
	}
	return any
}

// ApplyReply takes in a scheduler reply as goals does (bdevices reply --policy goals,
// and bsim's loop): seed 002's rules (prsc.ApplyReply: D(P,R) set for the types jobs
// came for, backoffs) but a reply without jobs read as the seed's proposed three-state
// reply, "no job now, the resource supported": D(P,R) stays set, so the project's debt
// keeps accruing, and only the types the reply names unsupported lose it. A BOINC
// server that sends nothing has most often refused the jobs it has, each one's estimate
// not fitting its latency behind the busy time the client reported (BOINC's emulator's
// servers always have work and refuse only so, client/sim.cpp
// CLIENT_STATE::simulate_rpc); read as "no work", the refusal also
// wiped out what the project was owed, so the projects whose jobs filled the queue were
// owed it instead and asked first when it ran dry, and the refused project got work only
// when no other was up (c185: B, 41 % of the share, refused while A's 8-hour jobs, late
// on arrival on a host on a quarter of the time, were queued, its debt 0 at every
// request; used 14 %). BOINC's client does not forget either: a project's priority is
// its share less the credit it recently had (cpu_sched.cpp
// PROJECT::compute_sched_priority), whatever its server sent. A project that really has
// no work for a resource is asked no more for it than before (the resource's backoff,
// prsc.BackOff, grows at each empty reply), and its debt is clamped at DebtLimit.
func ApplyReply(doc *state.Document, requested map[string]bool, rep prsc.Reply, now float64, rng *rand.Rand) error {
	return prsc.ApplyReply(doc, requested, rep, true, now, rng)
}
