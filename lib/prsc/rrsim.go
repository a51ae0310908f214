package prsc

import (
	"math"

	"github.com/bkit/bkit/lib/state"
)

// Sim is the outcome of the round-robin simulation over the work-buffer period.
type Sim struct {
	Period    float64       // seconds simulated: the work buffer, min + additional days
	Resources []ResourceSim // in host order
}

// ResourceSim is one resource's part of the simulation (the seed's PRSC_WORK_FETCH).
type ResourceSim struct {
	Type      string
	Instances int
	Shortfall float64      // idle instance-seconds over the period
	NIdle     float64      // instances idle at the start, after the initial assignment
	Projects  []ProjectSim // in document order
}

// ProjectSim is one project's part of a resource's simulation (PRSC_PROJECT_DATA).
type ProjectSim struct {
	Project   string
	BackedOff bool    // backed off for this resource: no share, no shortfall
	Share     float64 // instances it should get by resource share among projects not backed off
	Shortfall float64 // sum of dt·(share − instances used) over the period
}

// Resource returns the simulation of resource type t, or nil.
func (s *Sim) Resource(t string) *ResourceSim {
	for i := range s.Resources {
		if s.Resources[i].Type == t {
			return &s.Resources[i]
		}
	}
	return nil
}

// WorkBufPeriod is the period the simulation covers: the work buffer's low-water mark
// plus the additional days, in seconds.
func WorkBufPeriod(p *state.Preferences) float64 {
	return (p.WorkBufMinDays + p.WorkBufAdditionalDays) * 86400
}

type simJob struct {
	task int     // index in doc.Tasks
	inst float64 // instances the task occupies
	rate float64 // FLOPS when it has all of them
	left float64 // FLOPs still to do
	eff  float64 // FLOPS it runs at until the next event, while in the running window
}

type simProj struct {
	rs      float64
	jobs    []simJob
	head    int     // jobs[:head] are done
	end     int     // jobs[head:end] run until the next event
	remInst float64 // instances of the jobs not done: the most the project can use
	alloc   float64 // instances it is given now
	capped  bool
}

// Simulate runs seed 002's round-robin simulation for every resource of the host, as of
// time now (which only decides who is backed off).
//
// The model (the seed leaves it open): each resource is simulated on its own, since a
// task uses one resource type (its app version's ResourceType). Runnable tasks with work
// left queue per project: running first, then preempted, then ready, each group in
// document order (the order the client got them). At every moment the resource's
// instances are divided among the projects that still have work in proportion to their
// resource shares, a project never getting more than its queued tasks can occupy and
// the rest going to the others (weighted round-robin by processor sharing; projects of
// share 0 only get what the others cannot use). A project's instances go to its tasks in
// queue order, each task taking up to the instances it uses; a task given part of its
// instances runs that much slower. A task's speed is its app version's Speed on the host
// times the fraction of time the resource is available (on_frac × active_frac, and
// gpu_active_frac too for coprocessors). The simulation jumps from one task completion
// to the next, accumulating over each interval dt the resource's shortfall
// dt·(instances − instances used) and each project's dt·(share − instances used).
func Simulate(doc *state.Document, now float64) *Sim {
	return simulate(doc, now, WorkBufPeriod(&doc.Preferences), nil, new(simWork))
}

// simWork is the simulation's buffers, kept from one call to the next by a DecideWork:
// the name indices, the per-resource project queues (and their job lists) and the Sim.
type simWork struct {
	projects, appVersions state.Names
	avRes                 []int     // each app version's host resource
	avSpeed, avInst       []float64 // each app version's Speed on the host and Instances
	cpu                   int       // the CPU's index
	queues                [][]simProj
	sim                   Sim
	late                  *lateOnly // BusyTimes' simulations: see lateOnly
	byState               [3][]int  // runnable tasks: running, preempted, ready
}

// index fills w's name indices from doc, reusing their storage (state.Names: a name
// or type that is not there has index 0, as a map's look-up gives; of two alike, the
// later counts).
func (w *simWork) index(doc *state.Document) {
	w.projects.SetProjects(doc.Projects)
	w.appVersions.SetAppVersions(doc.AppVersions)
	resource := func(t string) int {
		r := 0
		for i := range doc.Host.Resources {
			if doc.Host.Resources[i].Type == t {
				r = i
			}
		}
		return r
	}
	w.cpu = resource(state.ResourceCPU)
	w.avRes, w.avSpeed, w.avInst = w.avRes[:0], w.avSpeed[:0], w.avInst[:0]
	for i := range doc.AppVersions {
		av := &doc.AppVersions[i]
		w.avRes = append(w.avRes, resource(av.ResourceType()))
		w.avSpeed = append(w.avSpeed, av.Speed(&doc.Host))
		w.avInst = append(w.avInst, av.Instances())
	}
}

func (w *simWork) projectIndex(name string) int    { return w.projects.Index(name) }
func (w *simWork) appVersionIndex(name string) int { return w.appVersions.Index(name) }

// simulate is Simulate over period seconds, in w's buffers (the Sim returned is w's);
// with finish non-nil it records instead when (seconds from now) each simulated task
// completes, by task index, and the Sim holds only the resources' types, instances
// and idle instances (no shortfalls, no projects' parts: Completions' callers read the
// completion times alone).
func simulate(doc *state.Document, now, period float64, finish []float64, w *simWork) *Sim {
	h := &doc.Host
	w.index(doc)
	np, nr := len(doc.Projects), len(h.Resources)
	avail := doc.Host.TimeStats.OnFrac * doc.Host.TimeStats.ActiveFrac

	// queues[r][p], each queue in state order (running, preempted, ready), each state
	// in document order.
	if cap(w.queues) < nr {
		w.queues = append(w.queues[:cap(w.queues)], make([][]simProj, nr-cap(w.queues))...)
	}
	queues := w.queues[:nr]
	for r := range queues {
		if cap(queues[r]) < np {
			queues[r] = append(queues[r][:cap(queues[r])], make([]simProj, np-cap(queues[r]))...)
		}
		queues[r] = queues[r][:np]
		for p := range queues[r] {
			queues[r][p] = simProj{rs: doc.Projects[p].ResourceShare, jobs: queues[r][p].jobs[:0]}
		}
	}
	// The runnable tasks by state, each list in document order (one pass, the states
	// compared with constants).
	byState := &w.byState
	for k := range byState {
		byState[k] = byState[k][:0]
	}
	for i := range doc.Tasks {
		switch doc.Tasks[i].State {
		case state.TaskRunning:
			byState[0] = append(byState[0], i)
		case state.TaskPreempted:
			byState[1] = append(byState[1], i)
		case state.TaskReady:
			byState[2] = append(byState[2], i)
		}
	}
	for _, list := range byState {
		for _, i := range list {
			t := &doc.Tasks[i]
			p := w.projectIndex(t.Project)
			left := t.RemainingWork(doc.Projects[p].DCF())
			if left <= 0 {
				continue // no work left or no estimate: nothing to simulate
			}
			v := w.appVersionIndex(t.AppVersion)
			r := w.avRes[v]
			rate := w.avSpeed[v] * avail
			if r != w.cpu {
				rate *= doc.Host.TimeStats.GPUActiveFrac
			}
			q := &queues[r][p]
			q.jobs = append(q.jobs, simJob{task: i, inst: w.avInst[v], rate: rate, left: left})
			q.remInst += w.avInst[v]
		}
	}

	sim := &w.sim
	if cap(sim.Resources) < nr {
		sim.Resources = append(sim.Resources[:cap(sim.Resources)], make([]ResourceSim, nr-cap(sim.Resources))...)
	}
	*sim = Sim{Period: period, Resources: sim.Resources[:nr]}
	for r, res := range h.Resources {
		rs := &sim.Resources[r]
		projects := rs.Projects
		if cap(projects) < np {
			projects = make([]ProjectSim, np)
		}
		*rs = ResourceSim{Type: res.Type, Instances: res.Instances, Projects: projects[:np]}
		clear(rs.Projects)
		if finish != nil {
			// Only the completion times are wanted (Completions, BusyTimes, at every
			// request of the emulator's servers): no shortfalls, no project's part.
			simulateResource(queues[r], float64(res.Instances), period, rs, finish, w.late)
			continue
		}
		total, n := 0.0, 0
		for p := range doc.Projects {
			rs.Projects[p].Project = doc.Projects[p].Name
			rs.Projects[p].BackedOff = BackedOff(&doc.Projects[p], res.Type, now)
			if !rs.Projects[p].BackedOff {
				total += doc.Projects[p].ResourceShare
				n++
			}
		}
		for p := range doc.Projects {
			if !rs.Projects[p].BackedOff {
				rs.Projects[p].Share = float64(res.Instances) * frac(doc.Projects[p].ResourceShare, total, n)
			}
		}
		simulateResource(queues[r], float64(res.Instances), period, rs, finish, nil)
	}
	return sim
}

// simulateResource runs one resource's simulation over [0, period], recording each
// task's completion time in finish when it is not nil.
func simulateResource(projs []simProj, n, period float64, rs *ResourceSim, finish []float64, late *lateOnly) {
	t := 0.0
	first := true
	lastDeadline := math.Inf(1) // no stop before the end
	if late != nil {
		lastDeadline = late.settled(projs, n, finish)
	}
	for t < period {
		if late != nil && late.now+t+late.margin > lastDeadline {
			// Every task left would end after its deadline (each ends at t or later), and
			// at a finite time (settled's bound): t says as much to BusyTimes.
			for i := range projs {
				for _, j := range projs[i].jobs[projs[i].head:] {
					if math.IsInf(finish[j.task], 1) {
						finish[j.task] = t
					}
				}
			}
			return
		}
		allocate(projs, n)
		used := 0.0
		for i := range projs {
			used += projs[i].alloc
		}
		if first {
			rs.NIdle = max(0, n-used)
			first = false
		}
		// The next event: the first completion, or the end of the period.
		dt := period - t
		last := true
		for i := range projs {
			p := &projs[i]
			k := p.head
			for a := p.alloc; k < len(p.jobs) && a > 1e-12; k++ {
				j := &p.jobs[k]
				j.eff = running(j, &a)
				if j.eff > 0 && j.left/j.eff < dt {
					dt, last = j.left/j.eff, false
				}
			}
			p.end = k // the running window: p.jobs[p.head:p.end]
		}
		for i := range projs {
			p := &projs[i]
			// Each task of the window runs at the FLOPS found above for dt. A finished one
			// is retired at once: swapped to the head, behind the tasks retired before
			// it (jobs[:head] done, jobs[head:k] running on), as a pass of its own over
			// the window after every update would do, in the same order.
			for k := p.head; k < p.end; k++ {
				j := &p.jobs[k]
				// The task that set dt, and any due within rounding, is done.
				if j.eff*dt*(1+1e-9) >= j.left {
					j.left = 0
				} else {
					j.left -= j.eff * dt
				}
				if j.left > 0 {
					continue
				}
				if finish != nil {
					finish[j.task] = t + dt
				}
				p.remInst -= j.inst
				p.jobs[k], p.jobs[p.head] = p.jobs[p.head], p.jobs[k]
				p.head++
			}
			if p.head == len(p.jobs) {
				p.remInst = 0
			}
		}
		if finish == nil { // (Completions wants the completion times alone)
			rs.Shortfall += dt * max(0, n-used)
			for i := range projs {
				if ps := &rs.Projects[i]; !ps.BackedOff {
					ps.Shortfall += dt * (ps.Share - projs[i].alloc)
				}
			}
		}
		if last {
			break
		}
		t += dt
	}
}

// running is the FLOPS task j runs at now, taking its instances out of a, what its
// project's allocation has left. A project's tasks that have instances are the first
// of its queue (p.jobs[p.head:]) while a stays above 1e-12: p.alloc is at most the
// instances of the tasks left. (The builtin min is math.Min, inline.)
func running(j *simJob, a *float64) float64 {
	g := min(j.inst, *a)
	*a -= g
	return j.rate * g / j.inst
}

// lateOnly is what BusyTimes' and Late's simulations need besides the jobs: they read
// of a task's completion time only whether it is finite and whether it comes later
// than margin before the task's deadline (now + finish + margin > deadline; BusyTimes'
// margin is 0), so the simulation may stop as soon as that is known for every task
// left.
type lateOnly struct {
	now, margin float64
	tasks       []state.Task
}

// settled decides up front, for the jobs of one resource's simulation, which end by
// their deadline (less the margin) whatever happens (their finish is set to a bound of
// their completion, which now + bound + margin does not take past their deadline), and
// returns the latest deadline of the others
// (+Inf when some job's completion cannot be bounded: the simulation then runs to its
// end, as Completions' does; -Inf when every job is settled).
//
// The bound: at any moment of the simulation either all n instances are in use, or
// every project is given the instances its tasks occupy (allocate is work-conserving:
// it caps a project only at remInst) and so every task runs at its full rate. A job
// therefore ends at the latest after W/n seconds of the first kind, W being every
// job's instance-seconds of work (left ÷ rate × instances), plus left ÷ rate of the
// second. The simulation computes in floating point (rounding of the order of 1e-16
// per operation, allocations cut off at 1e-12 instances, tasks completed up to 1e-9 of
// their work early, which only brings completions forward): 1e-6 more covers that many
// times over. A job not settled is late once now + t + margin passes its deadline (t
// only grows, and its completion time is t plus a positive interval at some later
// event); the bound also says that it ends, so its completion time is finite. The sums
// are those the callers test, in their order: floating-point addition is monotonic, so
// finish <= bound (or t <= finish) carries over to now + finish + margin.
func (l *lateOnly) settled(projs []simProj, n float64, finish []float64) float64 {
	work := 0.0
	for i := range projs {
		for _, j := range projs[i].jobs {
			if !(j.rate > 0 && j.inst > 0) {
				return math.Inf(1)
			}
			work += j.left / j.rate * j.inst
		}
	}
	if !(n > 0 && work < math.Inf(1)) {
		return math.Inf(1)
	}
	last := math.Inf(-1)
	for i := range projs {
		for _, j := range projs[i].jobs {
			deadline := l.tasks[j.task].ReportDeadline
			if bound := (work/n + j.left/j.rate) * (1 + 1e-6); l.now+bound+l.margin <= deadline {
				finish[j.task] = bound
			} else {
				last = max(last, deadline) // (a NaN deadline: never stop early)
			}
		}
	}
	return last
}

// allocate divides n instances among the projects with work left, by resource share,
// none getting more than its tasks can occupy (water-filling); projects of share 0
// share equally what is left after that.
func allocate(projs []simProj, n float64) {
	for i := range projs {
		projs[i].alloc = 0
		projs[i].capped = projs[i].head == len(projs[i].jobs)
	}
	rem := fill(projs, n, false)
	if rem > 1e-12 {
		fill(projs, rem, true)
	}
}

// weight is a project's weight in fill: its resource share, or with zeroShares 1 for a
// project of share 0 and 0 for the others.
func weight(p *simProj, zeroShares bool) float64 {
	if !zeroShares {
		return p.rs
	}
	if p.rs == 0 {
		return 1
	}
	return 0
}

// fill gives n instances to the uncapped projects of positive weight in proportion to
// weight, capping each at remInst; it returns what nobody could use.
func fill(projs []simProj, n float64, zeroShares bool) float64 {
	for {
		w := 0.0
		for i := range projs {
			if !projs[i].capped {
				w += weight(&projs[i], zeroShares)
			}
		}
		if w == 0 || n <= 1e-12 {
			return n
		}
		capped := false
		start := n
		for i := range projs {
			p := &projs[i]
			if pw := weight(p, zeroShares); !p.capped && pw > 0 && p.remInst <= start*pw/w {
				p.alloc, p.capped = p.remInst, true
				n -= p.remInst
				capped = true
			}
		}
		if capped {
			continue
		}
		for i := range projs {
			p := &projs[i]
			if pw := weight(p, zeroShares); !p.capped && pw > 0 {
				p.alloc = start * pw / w
				p.capped = true
			}
		}
		return 0
	}
}
