package prsc

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// What the round-robin simulation answers beyond work fetch: each task's estimated
// completion, which tasks would miss their deadline, and the busy time a client
// reports to a server.

// Completions runs the round-robin simulation until every runnable task with an
// estimate is done, and returns per task (index in doc.Tasks) the seconds from now to
// its estimated completion: +Inf for a task the simulation never finishes (its
// resource is never available) and for tasks that are not runnable or have no work left.
func Completions(doc *state.Document, now float64) []float64 {
	var w CompletionsWork
	return w.Completions(doc, now)
}

// CompletionsWork keeps Completions' buffers from one call to the next, for a caller
// that asks at every scheduling pass (the emulator's goals policy). The zero value is
// ready; w.Completions and Completions compute alike, to the last bit; the slice
// w.Completions returns is w's, good until the next call.
type CompletionsWork struct {
	sim       simWork
	finish    []float64
	lateOnly  lateOnly // Late's
	late      []bool
	simulated bool      // Late has run the simulation once
	work      []float64 // lateAtOnce's, per resource
	jobs      []bool    // lateAtOnce's, per resource: it has jobs
	res       []int32   // lateAtOnce's, per task: its job's resource, -1 for none
	dur       []float64 // lateAtOnce's, per task: its job's left ÷ rate
}

// Completions is Completions with w's buffers.
func (w *CompletionsWork) Completions(doc *state.Document, now float64) []float64 {
	w.finish = completions(doc, now, &w.sim, w.finish)
	return w.finish
}

// Late reports per task (index in doc.Tasks) whether Completions ends it less than
// margin seconds before its report deadline: now + finish + margin > deadline, in this
// order of the sums (a task Completions never finishes has +Inf for finish).
func Late(doc *state.Document, now, margin float64) []bool {
	var w CompletionsWork
	return w.Late(doc, now, margin)
}

// Late is Late with w's buffers, its answers Late's to the last task; the slice is w's,
// good until the next call. Its simulation stops as soon as every task's answer is
// known (lateOnly), where Completions runs it to the last completion: with thousands
// of short jobs well ahead of their deadlines, that is at once.
func (w *CompletionsWork) Late(doc *state.Document, now, margin float64) []bool {
	late := scratch.Grow(w.late, len(doc.Tasks))
	w.late = late
	// The first call runs the simulation all the same: its buffers are then made as a
	// run starts, not at the first job not settled, which may come days into it (the
	// emulator's step loop allocates nothing).
	if w.simulated && w.lateAtOnce(doc, now, margin, late) {
		return late
	}
	w.simulated = true
	w.lateOnly = lateOnly{now: now, margin: margin, tasks: doc.Tasks}
	w.sim.late = &w.lateOnly
	w.finish = completions(doc, now, &w.sim, w.finish)
	w.sim.late, w.lateOnly.tasks = nil, nil
	for i, f := range w.finish {
		late[i] = now+f+margin > doc.Tasks[i].ReportDeadline
	}
	return late
}

// lateAtOnce answers Late in two passes over the tasks, without the simulation, when
// settled's bound settles every job (none late; a task without a job has finish +Inf,
// as Completions gives it), writing the answers to late; it reports false, late half
// written, when some job is not settled or has no bound (then the simulation decides).
// The bound is settled's, each resource's work W summed in document order rather than
// queue order: the bound holds of Completions' times whatever the order (its 1e-6
// covers the rounding of the sums many times over, and a different order of W's terms
// moves W by about as little), so a job it settles is on time in Completions too. The
// jobs and their rates are simulate's.
func (w *CompletionsWork) lateAtOnce(doc *state.Document, now, margin float64, late []bool) bool {
	sw := &w.sim
	sw.index(doc)
	h := &doc.Host
	nr := len(h.Resources)
	work, jobs := scratch.Grow(w.work, nr), scratch.Grow(w.jobs, nr)
	w.work, w.jobs = work, jobs
	// Each task's job: its resource (-1: no job) and left ÷ rate, for the second pass.
	res, dur := resize(w.res, len(doc.Tasks)), resize(w.dur, len(doc.Tasks))
	w.res, w.dur = res, dur
	avail := h.TimeStats.OnFrac * h.TimeStats.ActiveFrac
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		res[i] = -1
		switch t.State {
		case state.TaskRunning, state.TaskPreempted, state.TaskReady:
		default:
			continue
		}
		left := t.RemainingWork(doc.Projects[sw.projectIndex(t.Project)].DCF())
		if left <= 0 {
			continue
		}
		v := sw.appVersionIndex(t.AppVersion)
		r := sw.avRes[v]
		rate := sw.avSpeed[v] * avail
		if r != sw.cpu {
			rate *= h.TimeStats.GPUActiveFrac
		}
		if inst := sw.avInst[v]; !(rate > 0 && inst > 0) {
			return false // no bound (settled: +Inf)
		}
		res[i], dur[i] = int32(r), left/rate
		work[r] += dur[i] * sw.avInst[v]
		jobs[r] = true
	}
	for r := range work {
		if n := float64(h.Resources[r].Instances); jobs[r] {
			if !(n > 0 && work[r] < math.Inf(1)) {
				return false // no bound
			}
			work[r] /= n // W/n
		}
	}
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		r := res[i]
		if r < 0 {
			late[i] = now+math.Inf(1)+margin > t.ReportDeadline
			continue
		}
		if bound := (work[r] + dur[i]) * (1 + 1e-6); !(now+bound+margin <= t.ReportDeadline) {
			return false // not settled: the simulation decides
		}
		late[i] = false
	}
	return true
}

// completions is Completions in sw's buffers, the result in buf's storage.
func completions(doc *state.Document, now float64, sw *simWork, buf []float64) []float64 {
	finish := scratch.Grow(buf, len(doc.Tasks))
	for i := range finish {
		finish[i] = math.Inf(1)
	}
	simulate(doc, now, math.Inf(1), finish, sw)
	return finish
}

// BusyTimes is, per host resource, the estimated delay a client reports with its
// request (BOINC's BUSY_TIME_ESTIMATOR, filled by its round-robin simulation): each
// runnable task that the simulation (Completions) finishes after its computation
// deadline occupies the least busy instances of its resource for its remaining
// estimated run time ÷ the fraction of time the resource is available, and the delay is
// the busy time of the least busy instance. The computation deadline is BOINC's
// (RESULT::computation_deadline): the report deadline less the work buffer's low-water
// mark (work_buf_min_days; DEADLINE_CUSHION is 0), the time the host may wait before it
// next reports. Tasks on track add nothing, so the delay is 0 unless the host is late or
// close to it; fractional usages below one instance count as none, as in BOINC.
func BusyTimes(doc *state.Document, now float64) []float64 {
	var w BusyWork
	return w.BusyTimes(doc, now)
}

// BusyWork keeps BusyTimes' buffers from one call to the next, for a caller that asks at
// every request (the emulator's servers). The zero value is ready; w.BusyTimes and
// BusyTimes compute alike, to the last bit; the slice w.BusyTimes returns is w's, good
// until the next call.
type BusyWork struct {
	sim    simWork
	late   lateOnly
	finish []float64
	busy   [][]float64
	out    []float64
}

// BusyTimes is BusyTimes with w's buffers.
func (w *BusyWork) BusyTimes(doc *state.Document, now float64) []float64 {
	h := &doc.Host
	margin := doc.Preferences.WorkBufMinDays * 86400
	w.late = lateOnly{now: now, margin: margin, tasks: doc.Tasks}
	w.sim.late = &w.late
	w.finish = completions(doc, now, &w.sim, w.finish)
	w.sim.late, w.late.tasks = nil, nil
	finish := w.finish
	// simulate indexed doc's names in w.sim.
	if len(w.busy) < len(h.Resources) {
		w.busy = append(w.busy, make([][]float64, len(h.Resources)-len(w.busy))...)
	}
	busy := w.busy[:len(h.Resources)]
	for r, res := range h.Resources {
		busy[r] = scratch.Grow(busy[r], res.Instances)
	}
	ts := h.TimeStats
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if math.IsInf(finish[i], 1) || now+finish[i]+margin <= t.ReportDeadline {
			continue
		}
		v := w.sim.appVersionIndex(t.AppVersion)
		av := &doc.AppVersions[v]
		frac := ts.OnFrac * ts.ActiveFrac
		if av.Coproc != nil {
			frac *= ts.GPUActiveFrac
		}
		speed := w.sim.avSpeed[v]
		if frac <= 0 || speed <= 0 {
			continue
		}
		dur := t.RemainingWork(doc.Projects[w.sim.projectIndex(t.Project)].DCF()) / speed / frac
		b := busy[w.sim.avRes[v]]
		if len(b) == 0 || w.sim.avInst[v] < 1 {
			continue
		}
		best := 0
		for k := range b {
			if b[k] < b[best] {
				best = k
			}
		}
		for k := range int(w.sim.avInst[v]) {
			b[(best+k)%len(b)] += dur
		}
	}
	out := scratch.Grow(w.out, len(h.Resources))
	w.out = out
	for r, b := range busy {
		if len(b) > 0 {
			out[r] = slices.Min(b)
		}
	}
	return out
}
