package sim

import (
	"github.com/bkit/bkit/lib/cpusched"
	"github.com/bkit/bkit/lib/goals"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
)

func init() { Register(goals.Name, func() Policy { return &goalsPolicy{} }) }

// goalsPolicy is lib/goals in the loop: seed 001's goals where its algorithm falls
// short (the package comment of lib/goals gives the rules). Reporting is seed 000's, as
// for every policy; replies are seed 002's backoffs and D flags (prsc.ApplyReply).
type goalsPolicy struct{}

func (*goalsPolicy) Begin(doc *state.Document) { prsc.SetDFromAppVersions(doc, true) }

func (*goalsPolicy) Schedule(doc *state.Document, now float64) bool {
	if due, _ := cpusched.Due(doc, now); !due {
		return false
	}
	goals.Schedule(doc, now)
	return true
}

func (*goalsPolicy) NextRPC(doc *state.Document, now float64, asked []int) (RPC, bool) {
	if len(asked) == 0 {
		if d := rpc.PollIfOverdue(doc, now); d.Action == rpc.Report {
			p := projectIndex(doc, d.Project)
			req, _ := goals.Request(doc, now, othersThan(len(doc.Projects), p))
			req.Project, req.Time = d.Project, now
			req.Reason = "report: " + d.Reason
			doc.Request = &req
			return RPC{Project: p, Request: req, Why: req.Reason}, true
		}
	}
	req, ok := goals.Request(doc, now, asked)
	if !ok {
		return RPC{}, false
	}
	doc.Request = &req
	return RPC{Project: projectIndex(doc, req.Project), Request: req, Why: req.Reason}, true
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

func (*goalsPolicy) Replied(doc *state.Document, r RPC, rep Reply, now float64) {
	if rep.Failed {
		return
	}
	req := prsc.Requested(&r.Request)
	if len(req) == 0 {
		return
	}
	_ = prsc.ApplyReply(doc, req, prsc.Reply{Project: doc.Projects[r.Project].Name, Jobs: rep.Jobs, InstancesOnly: prsc.InstancesOnly(&r.Request)}, false, now, prsc.NewRand(rep.Seed))
}

func (*goalsPolicy) Account(doc *state.Document, u *StepUsage) {
	goals.Account(doc, u.Used, u.DT)
	doc.DebtTime = u.Now
}
