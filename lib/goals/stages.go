package goals

import (
	"math"
	"slices"

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
	f := Fetch{Needs: Needs(doc), Idle: idleInstances(doc, tasks(doc)), CPURequest: make([]float64, len(doc.Projects))}
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
// poll --policy goals, and bsim's loop): at a step's first poll (asked empty), seed
// 000's report-result session for a project with an overdue result, asking it for what
// Request would ask it for; otherwise Request's choice. The RPC's request is recorded
// in doc.Request.
func Next(doc *state.Document, now float64, asked []int) (rpc.Plan, bool) {
	if len(asked) == 0 {
		if d := rpc.PollIfOverdue(doc, now); d.Action == rpc.Report {
			p := slices.IndexFunc(doc.Projects, func(pr state.Project) bool { return pr.Name == d.Project })
			req, _ := Request(doc, now, othersThan(len(doc.Projects), p))
			req.Project, req.Time = d.Project, now
			req.Reason = "report: " + d.Reason
			doc.Request = &req
			return rpc.Plan{Project: p, Request: req, Why: req.Reason}, true
		}
	}
	req, ok := Request(doc, now, asked)
	if !ok {
		return rpc.Plan{}, false
	}
	doc.Request = &req
	p := slices.IndexFunc(doc.Projects, func(pr state.Project) bool { return pr.Name == req.Project })
	return rpc.Plan{Project: p, Request: req, Why: req.Reason}, true
}

// othersThan lists every project index but p: asking only p.
func othersThan(n, p int) []int {
	out := make([]int, 0, n)
	for i := range n {
		if i != p {
			out = append(out, i)
		}
	}
	return out
}
