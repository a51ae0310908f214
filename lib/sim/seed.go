package sim

import (
	"math/rand/v2"
	"slices"

	"github.com/bkit/bkit/lib/cpusched"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
)

func init() { Register("seed", func() Policy { return &seedPolicy{} }) }

// seedPolicy is the seeds together, each stage through the very functions its program
// calls:
//
//   - scheduling: seed 001's pass (lib/cpusched, bsched) whenever cpusched.Due says one
//     is due; coprocessors by their per-resource scheduling debts;
//   - reporting: seed 000's poll (lib/rpc): a report-result session for a project with
//     overdue results, asking for work too when rpc.Poll says so and seed 002 would
//     ask that project;
//   - work fetch: when seed 000's poll starts a get-work session (estimated work below
//     the low-water mark), or at once when an instance of some resource has no task
//     (seed 002: the CPU-only water marks cannot see an idle GPU), seed 002 decides
//     whom to ask for what (lib/prsc, bdevices request): the round-robin simulation,
//     the project by overall long-term debt + shortfall, the request per resource.
//     The session goes on, each project at most once, while estimated work is below
//     the high-water mark (or an instance is idle) and prsc.Decide finds a project;
//   - replies: prsc.ApplyReply (bdevices reply) for the per-resource backoffs and D
//     flags; RPC failures are seed 000's backoff, which the loop applies;
//   - accounting: seed 000's exp_avg_cpu (rpc.UpdateExpAvgCPU) and seed 002's long-term
//     debts (prsc.AccumulateDebt, bdevices debt) after every step.
type seedPolicy struct {
	started bool
}

// start sets D(P,R) for every resource a project has app versions for, unless the
// document already says anything about it. Seed 002 defines D(P,R) as "P would likely
// supply a job for R if we asked it", which an app version of P for R shows (a real
// client has one only because P sent such a job). Starting from false, as the seed's
// text does for a project never heard from, a project would never take part in the
// debt accounting, so never be ranked above one that did, and never be asked: on the
// public example the smaller-share project got no work at all.
func (sp *seedPolicy) start(doc *state.Document) {
	if sp.started {
		return
	}
	sp.started = true
	for i := range doc.Projects {
		p := &doc.Projects[i]
		for _, r := range doc.Host.Resources {
			if len(p.Resources) == 0 || !slices.ContainsFunc(p.Resources, func(pr state.ProjectResource) bool { return pr.Type == r.Type }) {
				if hasVersionFor(doc, p.Name, r.Type) {
					p.ResourceState(r.Type).AccumulateDebt = true
				}
			}
		}
	}
}

func (sp *seedPolicy) Schedule(doc *state.Document, now float64) bool {
	sp.start(doc)
	if due, _ := cpusched.Due(doc, now); !due {
		return false
	}
	cpusched.Schedule(doc, now)
	return true
}

func (sp *seedPolicy) NextRPC(doc *state.Document, now float64, asked []int) (RPC, bool) {
	sp.start(doc)
	idle := idleInstance(doc)
	if len(asked) == 0 {
		d := rpc.Poll(doc, now)
		if d.Action == rpc.Report {
			r := RPC{Project: projectIndex(doc, d.Project), Why: "report: " + d.Reason}
			if d.AskWork {
				if dec := prsc.Decide(doc, now); dec.Request.Project == d.Project {
					r.Request = dec.Request
				}
			}
			return r, true
		}
		if d.Action != rpc.GetWork && !idle {
			return RPC{}, false
		}
	} else if _, high := rpc.WaterMarks(&doc.Preferences); rpc.EstimatedWorkDays(doc) >= high && !idle {
		return RPC{}, false // the get-work session's loop: until the high-water mark
	}
	dec := prsc.Decide(doc, now)
	if dec.Request.Project == "" {
		return RPC{}, false
	}
	p := projectIndex(doc, dec.Request.Project)
	if slices.Contains(asked, p) {
		return RPC{}, false
	}
	return RPC{Project: p, Request: dec.Request, Why: dec.Request.Reason}, true
}

// idleInstance reports whether some resource that a project has app versions for has
// an instance that no runnable task would take: seed 002's reason to fetch work at once,
// whatever the CPU-only water marks of seed 000 say.
func idleInstance(doc *state.Document) bool {
	held := make(map[string]float64, len(doc.Host.Resources))
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !t.State.Runnable() {
			continue
		}
		for v := range doc.AppVersions {
			if av := &doc.AppVersions[v]; av.Name == t.AppVersion {
				held[av.ResourceType()] += av.Instances()
				break
			}
		}
	}
	for _, r := range doc.Host.Resources {
		if held[r.Type] < float64(r.Instances)-1e-9 && slices.ContainsFunc(doc.Projects, func(p state.Project) bool {
			return hasVersionFor(doc, p.Name, r.Type)
		}) {
			return true
		}
	}
	return false
}

func (*seedPolicy) Replied(doc *state.Document, r RPC, rep Reply, now float64, rng *rand.Rand) {
	if rep.Failed {
		return
	}
	req := prsc.Requested(&r.Request)
	if len(req) == 0 {
		return
	}
	// The only error is an unknown project or resource, which the loop cannot produce.
	_ = prsc.ApplyReply(doc, req, prsc.Reply{Project: doc.Projects[r.Project].Name, Jobs: rep.Jobs}, false, now, rng)
}

func (*seedPolicy) Account(doc *state.Document, u *StepUsage) {
	for p := range doc.Projects {
		rpc.UpdateExpAvgCPU(&doc.Projects[p], u.CPUTime[p], u.Now)
	}
	prsc.AccumulateDebt(doc, u.Used, u.DT)
	doc.DebtTime = u.Now
}

// projectIndex is the index of the project named name, or -1.
func projectIndex(doc *state.Document, name string) int {
	return slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == name })
}
