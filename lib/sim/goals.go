package sim

import (
	"github.com/bkit/bkit/lib/cpusched"
	"github.com/bkit/bkit/lib/goals"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/state"
)

func init() {
	Register(goals.Name, func() Policy { return &goalsPolicy{work: goals.Workspace{Quiet: true}} })
}

// goalsPolicy is lib/goals in the loop: seed 001's goals where its algorithm falls
// short (the package comment of lib/goals gives the rules). Reporting is seed 000's, as
// for every policy; replies are seed 002's backoffs and D flags (prsc.ApplyReply).
type goalsPolicy struct {
	jitter replyRand // the replies' random source
	// The passes', requests' and accounting's buffers and index, and Due's, kept from
	// one step to the next so that a long run allocates nothing per step; quiet, for no
	// one reads an emulated RPC's reasons.
	work  goals.Workspace
	sched cpusched.Workspace
	due   dueSkip
	// gpusSuspended is doc.GPUsSuspended as the last pass saw it: on a host with a
	// coprocessor a pass is made whenever it changes (Due does not read it), so that no
	// coprocessor task runs while GPU computing is suspended and none waits once it
	// resumes. (The emulator flips it on CPU-only hosts too, with the host's activity;
	// a pass there would be one Due did not call for.)
	gpusSuspended bool
}

func (*goalsPolicy) Begin(doc *state.Document) { prsc.SetDFromAppVersions(doc, true) }

func (gp *goalsPolicy) Schedule(doc *state.Document, now float64) bool {
	if (doc.GPUsSuspended == gp.gpusSuspended || len(doc.Host.Resources) < 2) && !gp.due.due(&gp.sched, doc, now) {
		return false
	}
	gp.work.Schedule(doc, now)
	gp.gpusSuspended = doc.GPUsSuspended
	return true
}

func (gp *goalsPolicy) NextRPC(doc *state.Document, now float64, asked []int) (RPC, bool) {
	r, ok := gp.work.Next(doc, now, asked)
	return RPC{Project: r.Project, Request: r.Request, Why: r.Why}, ok
}

func (gp *goalsPolicy) Replied(doc *state.Document, r RPC, rep Reply, now float64) {
	gp.applyReply(doc, r, rep, now)
	gp.due.changed()
}

// tasksChanged is the loop's word that it changed the tasks (watcher): Due is asked
// again.
func (gp *goalsPolicy) tasksChanged() { gp.due.changed() }

func (gp *goalsPolicy) Account(doc *state.Document, u *StepUsage) {
	gp.work.Account(doc, u.Used, u.DT, u.Now)
	doc.DebtTime = u.Now
}

// applyReply is applyReply (seed.go) with goals' reading of a reply (goals.ApplyReply:
// a reply without jobs keeps D(P,R)).
func (gp *goalsPolicy) applyReply(doc *state.Document, r RPC, rep Reply, now float64) {
	if rep.Failed {
		return
	}
	req := prsc.Requested(&r.Request)
	if len(req) == 0 {
		return
	}
	// The only error is an unknown project or resource, which the loop cannot produce.
	_ = goals.ApplyReply(doc, req, prsc.Reply{Project: doc.Projects[r.Project].Name, Jobs: rep.Jobs, InstancesOnly: prsc.InstancesOnly(&r.Request)}, now, gp.jitter.seeded(rep.Seed))
}
