package boincpolicy

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// Simulate is BOINC's round-robin simulation (rr_sim.cpp RR_SIM::simulate) of the
// runnable jobs of doc from now: it marks the jobs projected to miss their deadline
// (counted per project and resource), and finds each resource's shortfall, saturated
// time and idle instances (w.Sim). Like BOINC's rr_simulation it runs once a moment:
// a second call at the same now keeps the first's answer (the caller calls Reset
// when the document changed in a way that must be seen at once).
//
//   - Each job runs at its speed × the host's availability (set_rrsim_flops: on ×
//     active, or on × GPU active, within [0.01, 1]) until its estimated remaining work
//     (state.Task.RemainingWork, with the project's correction factor) is done.
//   - Which jobs run (pick_jobs_to_run): coprocessors first, then CPUs; per resource
//     the projects with jobs for it in order of priority from their REC, each job
//     taken lowering its project's priority by SchedBump, a project's jobs in
//     arrival order, until the resource's instances are used (the last job may
//     overcommit them). A coprocessor job's CPUs count against the CPUs.
//   - Time moves to the next job's finish; when that is more than an hour away, by an
//     hour, or by a tenth of the way when it is more than ten hours away.
//   - A job misses its deadline when its simulated finish passes its report deadline
//     − work_buf_min − DeadlineCushion (RESULT::computation_deadline).
//   - Shortfall (RSC_WORK_FETCH::update_stats): the idle instances × time, up to
//     now + work_buf_total, the tail after the last job included; saturated time: the
//     end of the last interval in which no instance was idle.
//
// BOINC orders its project heap in pick_jobs_to_run with std::make_heap over PROJECT
// pointers and no comparator (by address, not priority); bkit follows the comment's
// intent, the highest priority first (docs/decisions.md).
func (w *Workspace) Simulate(doc *state.Document, now float64) {
	if w.simDone && w.simAt == now {
		return
	}
	w.view(doc)
	w.simulate(doc, now)
	w.simDone, w.simAt = true, now
}

// Reset makes the next Simulate run afresh at the same moment.
func (w *Workspace) Reset() {
	w.simDone, w.viewDone, w.hold, w.fetchHold = false, false, false, false
}

// prepare is the simulation's start (init_pending_lists, project_priority_init): the
// pending lists, the projects with runnable jobs and their priorities, the counts; no
// job misses yet. It returns the REC sum.
func (w *Workspace) prepare(doc *state.Document) float64 {
	h := &doc.Host
	nR := w.nRes
	for r := range w.Sim {
		w.Sim[r] = ResourceSim{Type: h.Resources[r].Type}
	}
	clear(w.nusedTotal)
	clear(w.missed)
	clear(w.nRunnable)
	for k := range w.pending {
		w.pending[k] = w.pending[k][:0]
	}
	// project_priority_init(false): the projects with a runnable job.
	clear(w.eligible)
	cpuF, gpuF := availFrac(&h.TimeStats, false), availFrac(&h.TimeStats, true)
	for i := range w.jobs {
		j := &w.jobs[i]
		w.eligible[j.proj] = true
		j.simLeft, j.simDone, j.misses = j.left, false, false
		f := cpuF
		if j.res != w.cpuRes {
			f = gpuF
		}
		j.simRate = j.speed * f
		if j.simRate == 0 {
			j.simRate = 1e6 // BOINC's "just in case"
		}
		k := j.proj*nR + j.res
		w.pending[k] = append(w.pending[k], i)
		w.nRunnable[k]++
		w.nusedTotal[j.proj*nR+w.cpuRes] += j.cpus
		if j.res != w.cpuRes {
			w.nusedTotal[k] += j.inst
		}
	}
	return Priorities(doc, w.rec, w.eligible, w.prio, w.shareFrac)
}

func (w *Workspace) simulate(doc *state.Document, now float64) {
	h := &doc.Host
	nR := w.nRes
	recSum := w.prepare(doc)

	bufEnd := now + WorkBufTotal(&doc.Preferences)
	compDeadline := WorkBufMin(&doc.Preferences) + DeadlineCushion
	simNow := now
	first := true
	for {
		w.pick(doc, recSum)
		if first {
			for r := range w.Sim {
				w.Sim[r].IdleNow = max(0, float64(h.Resources[r].Instances)-w.resUsed(r))
			}
			first = false
		}
		if len(w.active) == 0 {
			break
		}
		best := -1
		for _, a := range w.active {
			j := &w.jobs[a]
			j.finishAt = j.simLeft / j.simRate
			if best < 0 || j.finishAt < w.jobs[best].finishAt {
				best = a
			}
		}
		dt := w.jobs[best].finishAt
		if dt > 3600 {
			best = -1
			if dt > 36000 {
				dt /= 10
			} else {
				dt = 3600
			}
		} else {
			j := &w.jobs[best]
			j.simDone = true
			// Out of its pending list at once (pick reads only the jobs left), the
			// list's order kept.
			k := j.proj*nR + j.res
			if x := slices.Index(w.pending[k], best); x >= 0 {
				w.pending[k] = slices.Delete(w.pending[k], x, x+1)
			}
			if simNow+dt > j.deadline-compDeadline {
				j.misses = true
				w.missed[j.proj*nR+j.res]++
				w.Sim[j.res].Misses++
			}
		}
		for _, a := range w.active {
			j := &w.jobs[a]
			j.simLeft = max(0, j.simLeft-j.simRate*dt)
		}
		for r := range w.Sim {
			w.updateStats(r, float64(h.Resources[r].Instances)-w.resUsed(r), simNow, dt, now, bufEnd)
		}
		simNow += dt
	}
	if simNow < bufEnd {
		for r := range w.Sim {
			w.updateStats(r, float64(h.Resources[r].Instances), simNow, bufEnd-simNow, now, bufEnd)
		}
	}
}

// resUsed is the instances of resource r the active jobs use (sim_nused).
func (w *Workspace) resUsed(r int) float64 {
	var n float64
	for p := 0; p*w.nRes < len(w.simNused); p++ {
		n += w.simNused[p*w.nRes+r]
	}
	return n
}

// updateStats is RSC_WORK_FETCH::update_stats for resource r over [simNow, simNow+dt].
func (w *Workspace) updateStats(r int, idle, simNow, dt, now, bufEnd float64) {
	s := &w.Sim[r]
	if idle > 1e-6 && simNow < bufEnd {
		s.Shortfall += idle * min(dt, bufEnd-simNow)
	}
	if idle < 1e-6 {
		s.Saturated = simNow + dt - now
	}
}

// pick is pick_jobs_to_run: the jobs that run in the simulation now (w.active).
func (w *Workspace) pick(doc *state.Document, recSum float64) {
	nR := w.nRes
	w.active = w.active[:0]
	clear(w.simNused)
	copy(w.recTemp, w.rec)
	cpus := float64(doc.Host.CPU().Instances)
	for _, r := range w.resourceOrder() {
		limit := float64(doc.Host.Resources[r].Instances)
		// The projects with jobs left for r (the simulation takes a job out of its
		// list when it finishes).
		w.heap = w.heap[:0]
		for p := range doc.Projects {
			k := p*nR + r
			q := w.pending[k]
			w.pendingAt[k] = 0
			if len(q) > 0 {
				w.recTemp[p] = w.rec[p]
				w.prio[p] = Priority(w.recTemp[p], recSum, doc.Projects[p].ResourceShare, w.shareFrac[p])
				w.heap = append(w.heap, p)
			}
		}
		for len(w.heap) > 0 {
			// The highest-priority project (the first among equals).
			bi := 0
			for x := 1; x < len(w.heap); x++ {
				if w.prio[w.heap[x]] > w.prio[w.heap[bi]] {
					bi = x
				}
			}
			p := w.heap[bi]
			k := p*nR + r
			j := &w.jobs[w.pending[k][w.pendingAt[k]]]
			w.active = append(w.active, w.pending[k][w.pendingAt[k]])
			w.simNused[p*nR+w.cpuRes] += j.cpus
			if r != w.cpuRes {
				w.simNused[k] += j.inst
			}
			w.recTemp[p] += SchedBump(j.peak, w.totalPeak, recSum)
			w.prio[p] = Priority(w.recTemp[p], recSum, doc.Projects[p].ResourceShare, w.shareFrac[p])
			used := w.resUsed(r)
			if r == w.cpuRes && used >= cpus || r != w.cpuRes && used >= limit {
				break
			}
			w.pendingAt[k]++
			if w.pendingAt[k] == len(w.pending[k]) {
				w.heap = slices.Delete(w.heap, bi, bi+1)
			}
		}
	}
}

// resourceOrder is the host resources coprocessors first (in reverse document order,
// as BOINC loops from the last type down), then the CPU.
func (w *Workspace) resourceOrder() []int {
	w.order = w.order[:0]
	for r := w.nRes - 1; r >= 0; r-- {
		if r != w.cpuRes {
			w.order = append(w.order, r)
		}
	}
	return append(w.order, w.cpuRes)
}

// noMissPossible reports whether no job can miss its deadline in the simulation, from
// a bound (prepare done): at every moment of the simulation at least one job of each
// resource with jobs left runs at its full rate (pick takes a project's job before it
// checks saturation), so the sum over a resource's jobs of their remaining time ÷
// rate bounds when its last job finishes. When every job's computation deadline is at
// or after that bound, the simulation would mark no miss.
//
// A second bound holds for a resource of n instances: while some of its jobs wait,
// those running use at least n instances (pick takes jobs until they do), of which
// the coprocessor jobs' CPUs take at most G on the CPUs (G: the CPUs of every
// coprocessor job), so its jobs' instance-seconds W are done at n − G a second at
// least; once none waits, each running job ends within t, the longest time ÷ rate
// any of them has left. Its last job therefore ends by W ÷ (n − G) + t. The
// smaller of the two bounds is taken.
func (w *Workspace) noMissPossible(doc *state.Document, now float64) bool {
	nR := w.nRes
	w.bound = scratch.Grow(w.bound, 3*nR) // per resource: the serial sum, W, t
	var coprocCPUs float64
	for i := range w.jobs {
		j := &w.jobs[i]
		t := j.simLeft / j.simRate
		b := w.bound[3*j.res : 3*j.res+3]
		b[0] += t
		b[1] += j.inst * t
		b[2] = max(b[2], t)
		if j.res != w.cpuRes {
			coprocCPUs += j.cpus
		}
	}
	for r := range nR {
		b := w.bound[3*r : 3*r+3]
		n := float64(doc.Host.Resources[r].Instances)
		if r == w.cpuRes {
			n -= coprocCPUs
		}
		if n > 0 {
			b[0] = min(b[0], b[1]/n+b[2])
		}
	}
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	w.slack = math.Inf(1)
	for i := range w.jobs {
		j := &w.jobs[i]
		// A margin for rounding: the simulation sums the same times in another order.
		late := j.deadline - comp - (now + w.bound[3*j.res]*(1+1e-9) + 1e-6)
		if late < 0 {
			return false
		}
		w.slack = min(w.slack, late)
	}
	return true
}

// noFetchPossible reports whether ChooseProject would find no resource to ask for,
// from the simulation's first pick alone (prepare done): a resource whose instances
// are all busy at the start stays so until the first active job finishes (the pick
// does not change before), so its saturated time is at least that job's finish. When
// every resource is saturated at the start and no active job finishes before
// work_buf_min, no resource's saturated time is below work_buf_min.
//
// Failing that, a bound from the work queued: while a resource of n instances is
// saturated, its jobs do at most n + u instance-seconds a second (u the largest
// usage of one of its jobs: the last job picked may overcommit it), and once it is
// not, its unfinished jobs use less than n instances, each with at most t (the
// longest time ÷ rate any of its jobs has left), so at most n × t instance-seconds
// are left. Its saturated time is thus at least (W − n × t) ÷ (n + u), W being its
// jobs' instance-seconds. (The CPUs' count of a coprocessor job's CPUs only makes
// them saturated longer; the bound leaves them out.) When that is at least
// work_buf_min for every resource, no resource's saturated time is below it either.
func (w *Workspace) noFetchPossible(doc *state.Document, recSum float64) bool {
	h := &doc.Host
	bufMin := WorkBufMin(&doc.Preferences)
	if w.workBound(h, bufMin) {
		return true
	}
	w.fetchHold = false
	w.pick(doc, recSum)
	for r := range h.Resources {
		if float64(h.Resources[r].Instances)-w.resUsed(r) > 1e-6 {
			return false
		}
	}
	for _, a := range w.active {
		j := &w.jobs[a]
		if j.simLeft/j.simRate < bufMin {
			return false
		}
	}
	return true
}

// workBound reports whether the work bound of noFetchPossible puts every resource's
// saturated time at or past bufMin (prepare done).
func (w *Workspace) workBound(h *state.Host, bufMin float64) bool {
	w.bound = scratch.Grow(w.bound, 3*w.nRes) // per resource: W, t, u
	for i := range w.jobs {
		j := &w.jobs[i]
		t := j.simLeft / j.simRate
		b := w.bound[3*j.res : 3*j.res+3]
		b[0] += j.inst * t
		b[1] = max(b[1], t)
		b[2] = max(b[2], j.inst)
	}
	hold := math.Inf(1)
	for r := range h.Resources {
		n := float64(h.Resources[r].Instances)
		b := w.bound[3*r : 3*r+3]
		// A margin for rounding: the simulation sums the same times in another order.
		over := (b[0]-n*b[1])/(n+b[2]) - (bufMin*(1+1e-9) + 1e-6)
		if !(over >= 0) {
			return false
		}
		// How long the bound stays past bufMin: while the tasks stay as they are,
		// W falls only by the work the running jobs do, which use at most n + u
		// instances (CPUsFit), each at most a simulated second ÷ the availability
		// the simulation runs it at (availFrac) a second, and t only falls.
		hold = min(hold, over*availFrac(&h.TimeStats, r != w.cpuRes))
	}
	w.fetchHold, w.fetchHoldUntil = hold > 0, w.boundAt+hold
	return true
}
