package sim

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/bkit/bkit/lib/cpusched"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
	"github.com/bkit/bkit/lib/workfetch"
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
//   - CPU work fetch: seed 001 (lib/workfetch, bfetch) at every poll: when a project
//     will starve within the connection period, the projects with a work request are
//     asked for it, the nearest to starving first, each at most once per step. Seed
//     001 keeps every project supplied, which is what lets its debts enforce the
//     shares; seed 000's get-work session, which fills the whole buffer from the one
//     project of greatest resource debt, left the other projects dry for hours;
//   - coprocessor work fetch: seed 002 (lib/prsc, bdevices request): the round-robin
//     simulation and select_project by overall long-term debt + shortfall, sending the
//     coprocessor part of its request (seed 001 knows only CPUs);
//   - replies: prsc.ApplyReply (bdevices reply) for the per-resource backoffs and D
//     flags; RPC failures are seed 000's backoff, which the loop applies;
//   - accounting: seed 000's exp_avg_cpu (rpc.UpdateExpAvgCPU) and seed 002's long-term
//     debts (prsc.AccumulateDebt, bdevices debt) after every step.
type seedPolicy struct {
	started bool
	fetch   workfetch.Decision // seed 001's decision at the step's first poll

	// Skips that change no decision, only the time a run takes (the emulator calls
	// these functions about 1,500 times per simulated day):
	//   - cpusched.Due is false until the next pass's time, a new result, or a change
	//     in which tasks are runnable: after a false answer, the fingerprint of the
	//     runnable set (count, running count, latest receipt) must change first;
	//   - seed 001 cannot need work before fetchCheck (see nextFetchCheck) unless a
	//     task has finished since (finished differs from the loop's count).
	dueFP        fingerprint
	dueQuiet     bool
	fetchCheck   float64
	finished     int     // the loop's count at the last Account
	seenFinished int     // the count when seed 001 last decided
	maxRate      float64 // FLOPS the host can give at most, all resources together
}

// fingerprint is what cpusched.Due's answer depends on besides the time.
type fingerprint struct {
	runnable, running int
	lastReceived      float64
}

func fingerprintOf(doc *state.Document) fingerprint {
	var f fingerprint
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.State.Runnable() {
			f.runnable++
			f.lastReceived = max(f.lastReceived, t.ReceivedTime)
		}
		if t.State == state.TaskRunning {
			f.running++
		}
	}
	return f
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
	fp := fingerprintOf(doc)
	if sp.dueQuiet && fp == sp.dueFP && doc.CPUSched != nil && now < doc.CPUSched.NextPass {
		return false // Due would say no again: none of its inputs changed
	}
	if due, _ := cpusched.Due(doc, now); !due {
		sp.dueQuiet, sp.dueFP = true, fp
		return false
	}
	sp.dueQuiet = false
	cpusched.Schedule(doc, now)
	return true
}

func (sp *seedPolicy) NextRPC(doc *state.Document, now float64, asked []int) (RPC, bool) {
	sp.start(doc)
	if len(asked) == 0 {
		// Seed 001 decides once per poll, and every project with a work request is asked
		// for it ("checks if any project has a non-zero work request").
		if now >= sp.fetchCheck || sp.finished != sp.seenFinished {
			sp.fetch = workfetch.Compute(doc)
			workfetch.Apply(doc, sp.fetch, now)
			sp.fetchCheck, sp.seenFinished = sp.nextFetchCheck(doc, now), sp.finished
		}
		if d := sp.poll(doc, now); d.Action == rpc.Report {
			p := projectIndex(doc, d.Project)
			r := RPC{Project: p, Why: "report: " + d.Reason}
			if d.AskWork {
				r.Request, _ = cpuRequest(doc, &sp.fetch, now, nil, p)
			}
			return r, true
		}
	}
	if req, ok := cpuRequest(doc, &sp.fetch, now, asked, -1); ok {
		return RPC{Project: projectIndex(doc, req.Project), Request: req, Why: req.Reason}, true
	}
	return coprocRequest(doc, now, asked)
}

// cpuRequest is seed 001's work fetch (lib/workfetch, bfetch) for the CPU: when some
// project will starve within the connection period (decision d), the project with the
// smallest time to starvation among those with a work request (not asked yet, not in
// RPC backoff nor in seed 002's CPU backoff, with a CPU app version) is asked for its
// request in CPU seconds. With only >= 0, just that project's request is returned.
func cpuRequest(doc *state.Document, d *workfetch.Decision, now float64, asked []int, only int) (state.WorkRequest, bool) {
	if d.Urgency == workfetch.DontNeedWork {
		return state.WorkRequest{}, false
	}
	best := -1
	for i, row := range d.Rows {
		p := &doc.Projects[i]
		if row.WorkRequest <= 0 || (only >= 0 && i != only) || slices.Contains(asked, i) || !rpc.CanContact(p, now) ||
			prsc.BackedOff(p, state.ResourceCPU, now) || !hasVersionFor(doc, p.Name, state.ResourceCPU) {
			continue
		}
		if best < 0 || row.ETTPRC < d.Rows[best].ETTPRC {
			best = i
		}
	}
	if best < 0 {
		return state.WorkRequest{}, false
	}
	row := d.Rows[best]
	return state.WorkRequest{Time: now, Project: row.Project, Reason: "seed 001 (" + d.Urgency.String() + "): " + row.Reason,
		WorkReqSeconds: row.WorkRequest, CPUReqSecs: row.WorkRequest}, true
}

// coprocRequest is seed 002's work fetch (lib/prsc, bdevices request) for the
// coprocessors: the round-robin simulation and select_project by overall long-term
// debt + shortfall. Only its coprocessor part is sent (the CPU is seed 001's), so it
// asks only when a coprocessor has an idle instance or a shortfall. A host without
// coprocessors skips it.
func coprocRequest(doc *state.Document, now float64, asked []int) (RPC, bool) {
	if len(doc.Host.Resources) < 2 {
		return RPC{}, false
	}
	dec := prsc.Decide(doc, now)
	req := dec.Request
	p := projectIndex(doc, req.Project)
	if p < 0 || slices.Contains(asked, p) {
		return RPC{}, false
	}
	req.CPUReqSecs, req.CPUReqInstances, req.WorkReqSeconds = 0, 0, 0
	for _, c := range req.Coprocs {
		req.WorkReqSeconds = max(req.WorkReqSeconds, c.ReqSecs)
	}
	if len(prsc.Requested(&req)) == 0 {
		return RPC{}, false
	}
	doc.Request = &req
	return RPC{Project: p, Request: req, Why: "seed 002: " + req.Reason}, true
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

// poll is rpc.Poll, which bsim asks only for report sessions: those need an overdue
// result (rpc.Overdue), so without one the poll is not run.
func (sp *seedPolicy) poll(doc *state.Document, now float64) rpc.Decision {
	for i := range doc.Tasks {
		if rpc.Overdue(&doc.Tasks[i], now) {
			return rpc.Poll(doc, now)
		}
	}
	return rpc.Decision{Action: rpc.None}
}

// nextFetchCheck is the earliest time seed 001's urgency can rise above dont_need_work
// if no task finishes before: each project's ETTPRC S must fall below T, and with the
// set of runnable results unchanged (new results only add to S) S falls at most as
// fast as the whole host could work off the project's estimates: maxRate ÷ one CPU's
// FLOPS ÷ avg_proc_rate seconds per second. Any other decision means check again at
// the next poll.
func (sp *seedPolicy) nextFetchCheck(doc *state.Document, now float64) float64 {
	d := &sp.fetch
	if d.Urgency != workfetch.DontNeedWork || d.CPUFlops <= 0 {
		return now
	}
	if sp.maxRate == 0 {
		for _, r := range doc.Host.Resources {
			var speed, need float64 = 0, math.Inf(1)
			for _, av := range doc.AppVersions {
				if av.ResourceType() == r.Type {
					speed = max(speed, av.Speed(&doc.Host))
					if n := av.Instances(); n > 0 {
						need = min(need, n)
					}
				}
			}
			if speed > 0 {
				sp.maxRate += float64(r.Instances) / need * speed
			}
		}
	}
	if sp.maxRate <= 0 {
		return math.Inf(1)
	}
	next := math.Inf(1)
	for _, r := range d.Rows {
		if math.IsInf(r.ETTPRC, 1) || r.AvgProcRate <= 0 {
			continue
		}
		next = min(next, now+(r.ETTPRC-d.T)*r.AvgProcRate*d.CPUFlops/sp.maxRate)
	}
	return next
}

func (sp *seedPolicy) Account(doc *state.Document, u *StepUsage) {
	sp.finished = u.Finished
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
