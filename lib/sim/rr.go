package sim

import (
	"cmp"
	"slices"

	"github.com/bkit/bkit/lib/cpusched"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
	"github.com/bkit/bkit/lib/workfetch"
)

func init() { Register("rr", func() Policy { return &rrPolicy{} }) }

// rrPolicy is the baseline: plain round-robin among the projects with work, blind to
// resource shares, deadlines and debts.
//
//   - scheduling: when cpusched.Due says a pass is due (the same triggers as seed 001),
//     each resource's instances are dealt one task at a time to the projects with a
//     runnable task on it, in turn, starting with a project that moves on by one every
//     scheduling period; within a project, its running task, else a preempted one,
//     else its earliest-deadline ready result;
//   - work fetch: when a resource has an instance without work or less than the work
//     buffer's low-water mark of estimated work, the next project in turn that has an
//     app version for it (and is not in RPC backoff, nor backed off for the resource)
//     is asked for enough to reach the high-water mark; one such RPC per step;
//   - replies: seed 002's per-resource backoffs, as for every policy (prsc.ApplyReply):
//     a project that sent no job of the resource asked for is asked again after a
//     backoff that doubles up to a day, not at the next step;
//   - reporting: seed 000's poll decides, as for every policy (it is not what is
//     compared).
type rrPolicy struct {
	jitter replyRand // the replies' random source
	turn   []int     // per host resource: the project the next pass deals to first
	fetch  []int     // per host resource: the project asked next
	// The app versions' and projects' indices, as maps made at the first call would
	// answer (state.Names: a task holding the very string of its app version is found
	// by a pointer check, where hashing its name was a third of a pass).
	avIx, pIx state.Names
	started   bool
	sched     cpusched.Workspace // Due's index and buffers
	reason    []string           // per host resource: its requests' Reason

	// Buffers kept from one call to the next, so that a long run allocates nothing
	// per pass or request: the candidates per resource and project, the tasks chosen,
	// the resources in dealing order, the work held per resource, a request's Coprocs.
	cands        [][][]rrCand
	mixed        [][]bool  // per resource and project: candidates out of rrOrder
	avRes        []int     // per app version: its host resource (at each call)
	avSpeed      []float64 // per app version: its Speed on the host (at each call)
	chosen       []bool
	order        []int
	queued, held []float64
	coprocs      []state.CoprocRequest
}

func (p *rrPolicy) init(doc *state.Document) {
	if p.started {
		return
	}
	p.started = true
	p.turn = make([]int, len(doc.Host.Resources))
	p.fetch = make([]int, len(doc.Host.Resources))
	p.avIx.SetAppVersions(doc.AppVersions)
	p.pIx.SetProjects(doc.Projects)
	nR, nP := len(doc.Host.Resources), len(doc.Projects)
	p.cands = make([][][]rrCand, nR)
	p.mixed = make([][]bool, nR)
	for r := range p.cands {
		p.cands[r] = make([][]rrCand, nP)
		p.mixed[r] = make([]bool, nP)
	}
	p.queued, p.held = make([]float64, nR), make([]float64, nR)
	for _, res := range doc.Host.Resources {
		p.reason = append(p.reason, "round-robin: "+res.Type+" below the low-water mark")
	}
}

// rrCand is a runnable task as the round-robin pass sees it.
type rrCand struct {
	task       int
	need, cpus float64
	rank       int     // 0 running, 1 preempted, 2 ready
	deadline   float64 // its report deadline
}

// rrOrder is the order in which a project offers its candidates: running, preempted,
// then ready by earliest deadline (a stable sort keeps document order among equals).
func rrOrder(a, b rrCand) int {
	if c := cmp.Compare(a.rank, b.rank); c != 0 || a.rank != 2 {
		return c
	}
	return cmp.Compare(a.deadline, b.deadline)
}

// indexAppVersions finds each app version's host resource (-1: none) and speed, for
// the calls' loops over the tasks.
func (p *rrPolicy) indexAppVersions(doc *state.Document) {
	p.avRes, p.avSpeed = p.avRes[:0], p.avSpeed[:0]
	for v := range doc.AppVersions {
		av := &doc.AppVersions[v]
		p.avRes = append(p.avRes, slices.IndexFunc(doc.Host.Resources, func(res state.Resource) bool { return res.Type == av.ResourceType() }))
		p.avSpeed = append(p.avSpeed, av.Speed(&doc.Host))
	}
}

func (p *rrPolicy) Schedule(doc *state.Document, now float64) bool {
	p.init(doc)
	if !p.sched.Due(doc, now) {
		return false
	}
	if doc.CPUSched != nil && now >= doc.CPUSched.NextPass {
		for r := range p.turn {
			p.turn[r]++
		}
	}
	nP := len(doc.Projects)
	// Candidates per resource and project, in the order a project offers them.
	cands := p.cands
	for r := range cands {
		for pr := range cands[r] {
			cands[r][pr] = cands[r][pr][:0]
		}
		clear(p.mixed[r])
	}
	p.indexAppVersions(doc)
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !t.State.Runnable() {
			continue
		}
		v := p.avIx.Index(t.AppVersion)
		av := &doc.AppVersions[v]
		r := p.avRes[v]
		c := rrCand{task: i, need: av.Instances(), deadline: t.ReportDeadline}
		if av.Coproc != nil {
			c.cpus = av.AvgNCPUs
		}
		switch t.State {
		case state.TaskPreempted:
			c.rank = 1
		case state.TaskReady:
			c.rank = 2
		}
		pr := p.pIx.Index(t.Project)
		// Out of order when c goes before the last (rrOrder(last, c) > 0): only such
		// lists need the stable sort, which leaves a list in order as it is. A
		// project's tasks arrive by deadline and its running ones are its earliest, so
		// its list is usually in order.
		if n := len(cands[r][pr]); n > 0 {
			last := &cands[r][pr][n-1]
			if c.rank < last.rank || c.rank == 2 && last.rank == 2 && cmp.Compare(c.deadline, last.deadline) < 0 {
				p.mixed[r][pr] = true
			}
		}
		cands[r][pr] = append(cands[r][pr], c)
	}
	p.chosen = slices.Grow(p.chosen[:0], len(doc.Tasks))[:len(doc.Tasks)]
	chosen := p.chosen
	clear(chosen)
	cpuFree := float64(doc.Host.CPU().Instances)
	order := p.order[:0] // coprocessors first: their tasks take CPUs too
	for r, res := range doc.Host.Resources {
		if res.Type != state.ResourceCPU {
			order = append(order, r)
		}
	}
	order = append(order, slices.IndexFunc(doc.Host.Resources, func(res state.Resource) bool { return res.Type == state.ResourceCPU }))
	p.order = order
	const slack = 1e-9
	for _, r := range order {
		isCPU := doc.Host.Resources[r].Type == state.ResourceCPU
		free := float64(doc.Host.Resources[r].Instances)
		if isCPU {
			free = cpuFree
		}
		for pr := range cands[r] {
			if p.mixed[r][pr] || noSkips {
				slices.SortStableFunc(cands[r][pr], rrOrder)
			}
		}
		for dealt := true; dealt; {
			dealt = false
			for k := range nP {
				pr := (p.turn[r] + k) % nP
				for _, c := range cands[r][pr] {
					// BOINC's overcommit (state.CPUsFit) for the CPUs.
					if chosen[c.task] || isCPU && !state.CPUsFit(cpuFree, c.need, false) ||
						!isCPU && (c.need > free+slack || !state.CPUsFit(cpuFree, c.cpus, true)) {
						continue
					}
					chosen[c.task], dealt = true, true
					free -= c.need
					if isCPU {
						cpuFree -= c.need
					} else {
						cpuFree -= c.cpus
					}
					break
				}
			}
		}
	}
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !t.State.Runnable() {
			continue
		}
		switch {
		case chosen[i]:
			t.State = state.TaskRunning
		case t.State == state.TaskRunning:
			t.State = state.TaskPreempted
		}
		t.CPUTimeAtLastSched, t.ElapsedTimeAtLastSched = t.CPUTime, t.ElapsedTime
	}
	if doc.CPUSched == nil {
		doc.CPUSched = new(state.CPUSched)
	}
	*doc.CPUSched = state.CPUSched{LastPass: now, NextPass: now + doc.Preferences.CPUSchedulingPeriod, NextPassReason: "scheduling period"}
	return true
}

func (p *rrPolicy) NextRPC(doc *state.Document, now float64, asked []int) (RPC, bool) {
	p.init(doc)
	if len(asked) > 0 {
		return RPC{}, false
	}
	// PollIfOverdue: Poll's report sessions need an overdue result, and without one
	// Poll's other answers are not used here. Quiet: no one reads an emulated RPC's
	// reasons, and putting them into words at every step was most of what this policy
	// allocated.
	if d := rpc.PollIfOverdueQuiet(doc, now); d.Action == rpc.Report {
		return RPC{Project: projectIndex(doc, d.Project)}, true
	}
	low, high := rpc.WaterMarks(&doc.Preferences)
	nR := len(doc.Host.Resources)
	queued := p.queued[:nR] // estimated instance-seconds of work held
	held := p.held[:nR]     // instances the runnable tasks would take
	clear(queued)
	clear(held)
	p.indexAppVersions(doc)
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !t.State.Runnable() {
			continue
		}
		v := p.avIx.Index(t.AppVersion)
		av := &doc.AppVersions[v]
		r := p.avRes[v]
		if sp := p.avSpeed[v]; sp > 0 {
			queued[r] += t.RemainingWork(doc.ProjectDCF(t.Project)) / sp * av.Instances()
		}
		held[r] += av.Instances()
	}
	for r, res := range doc.Host.Resources {
		n := float64(res.Instances)
		idle := max(0, n-held[r])
		if idle == 0 && queued[r] >= low*workfetch.SecondsPerDay*n {
			continue
		}
		for k := range len(doc.Projects) {
			pr := (p.fetch[r] + k) % len(doc.Projects)
			proj := &doc.Projects[pr]
			if !rpc.CanContact(proj, now) || prsc.BackedOff(proj, res.Type, now) || !hasVersionFor(doc, proj.Name, res.Type) {
				continue
			}
			p.fetch[r] = pr + 1
			req := state.WorkRequest{Time: now, Project: proj.Name, Reason: p.reason[r]}
			secs := max(0, high*workfetch.SecondsPerDay*n-queued[r])
			if res.Type == state.ResourceCPU {
				req.CPUReqSecs, req.CPUReqInstances = secs, idle
			} else {
				// The RPC is made and done with before the next request.
				p.coprocs = append(p.coprocs[:0], state.CoprocRequest{Type: res.Type, ReqSecs: secs, ReqInstances: idle})
				req.Coprocs = p.coprocs
			}
			req.WorkReqSeconds = secs
			return RPC{Project: pr, Request: req, Why: req.Reason}, true
		}
	}
	return RPC{}, false
}

func (p *rrPolicy) Replied(doc *state.Document, r RPC, rep Reply, now float64) {
	applyReply(doc, r, rep, now, &p.jitter)
}

func (p *rrPolicy) Account(*state.Document, *StepUsage) {}
