package goals

import (
	"cmp"
	"math"
	"slices"

	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// The scheduling pass (Schedule): deadline mode, then overall debt; the package
// comment gives the rules.

// rankOf is a runnable task's rank in a pass: running, preempted, then ready.
func rankOf(s state.TaskState) int {
	switch s {
	case state.TaskRunning:
		return 0
	case state.TaskPreempted:
		return 1
	}
	return 2
}

// byDeadline orders tasks by report deadline (cmp.Compare's order: NaN first).
func byDeadline(a, b taskInfo) int { return cmp.Compare(a.dl, b.dl) }

// sortStableByDeadline is slices.SortStableFunc(ts, byDeadline), without the sort
// when ts is in that order already (no task's deadline before the one ahead of it's):
// a stable sort leaves such a list as it is. The emulator's tasks arrive by deadline.
func sortStableByDeadline(ts []taskInfo) {
	for i := 1; i < len(ts); i++ {
		if byDeadline(ts[i], ts[i-1]) < 0 {
			slices.SortStableFunc(ts, byDeadline)
			return
		}
	}
}

// Schedule runs one scheduling pass at now (see the package comment) and reports the
// tasks it abandoned. It sets doc.CPUSched as bsched does.
func Schedule(doc *state.Document, now float64) (abandoned []int) {
	var w Workspace
	return w.Schedule(doc, now)
}

// exhaustive, set by tests, makes a pass sort and search as it did before its
// shortcuts (the ranks apart, least, present): every task sorted and looked at.
var exhaustive bool

// Schedule is Schedule with w's index and buffers.
func (w *Workspace) Schedule(doc *state.Document, now float64) (abandoned []int) {
	h := &doc.Host
	ts := w.runnable(doc)
	// Abandon tasks that cannot meet their deadline even if run from now on without a
	// break (BOINC's client gives up only on a job it never started; one the host's
	// availability makes doubtful may still make it: hosts are not off on average but
	// in spells).
	abandoned = w.abandoned[:0]
	keep := ts[:0]
	for _, t := range ts {
		task := &doc.Tasks[t.i]
		unstarted := task.State == state.TaskReady && task.FlopsDone == 0
		// The run time without a correction factor above 1: the factor jumps to the
		// ratio of one job whose estimate was far too low (BOINC's rule), and tested
		// with it every new job would be abandoned, none would finish, and the factor
		// would never come down (c197: A's factor 41, the host a quarter idle).
		rt := t.runtime
		if dcf := doc.Projects[t.p].DCF(); dcf > 1 {
			rt /= dcf
		}
		// A started task too: one that cannot be done by its deadline even run
		// without a break from now on holds an instance another task could use, and
		// the time it ran is wasted either way (c017: A's 1.6-hour GPU jobs with
		// 2.4-hour deadlines, run to their end hours late while other tasks waited;
		// wf 0.28 -> 0.22). BOINC's client runs such a job to its end.
		started := task.FlopsDone > 0
		if started {
			rt = progressRuntime(task, t, rt)
		}
		if (unstarted || started) && now+rt > task.ReportDeadline {
			task.State = state.TaskDone
			abandoned = append(abandoned, t.i)
			continue
		}
		keep = append(keep, t)
	}
	w.abandoned = abandoned
	ts = keep
	// A task is late when the simulation ends it after its computation deadline, its
	// report deadline less the work buffer's low-water mark (BOINC's
	// RESULT::computation_deadline: the host may wait that long before it reports).
	margin := doc.Preferences.WorkBufMinDays * 86400
	isLate := w.finish.Late(doc, now, margin)
	overall := scratch.Grow(w.overall, len(doc.Projects))
	w.overall = overall
	for p := range doc.Projects {
		overall[p] = prsc.OverallDebt(h, &doc.Projects[p])
	}
	chosen := scratch.Grow(w.chosen, len(doc.Tasks))
	w.chosen = chosen
	cpu := -1
	for r, res := range h.Resources {
		if res.Type == state.ResourceCPU {
			cpu = r
		}
	}
	cpuFree := float64(h.Resources[cpu].Instances)
	order := w.order[:0]
	for r := range h.Resources {
		if r != cpu {
			order = append(order, r)
		}
	}
	order = append(order, cpu)
	w.order = order
	for _, r := range order {
		free := float64(h.Resources[r].Instances)
		if r == cpu {
			free = cpuFree
		} else if doc.GPUsSuspended {
			// GPU computing is suspended: no coprocessor task runs, so none holds
			// CPUs the CPU tasks could use (BOINC's client, cpu_sched.cpp
			// can_schedule). Run, they computed nothing and their CPU fractions
			// left CPUs idle beside whole-CPU tasks while the GPUs were off.
			continue
		}
		// BOINC's overcommit (state.CPUsFit): a CPU task starts while a CPU is
		// uncommitted, a coprocessor task may overcommit the CPUs by up to one.
		fits := func(t taskInfo) bool {
			if chosen[t.i] {
				return false
			}
			if r == cpu {
				return state.CPUsFit(cpuFree, t.inst, false)
			}
			return t.inst <= free+fitSlack && state.CPUsFit(cpuFree, t.cpus, true)
		}
		take := func(t taskInfo) {
			chosen[t.i] = true
			free -= t.inst
			if r == cpu {
				cpuFree -= t.inst
			} else {
				cpuFree -= t.cpus
			}
		}
		// This resource's tasks by rank (running, preempted, ready), each rank in
		// document order, and the late ones (below) in document order too. least is
		// the fewest instances one takes: with fewer free, none fits (fits) and the
		// search below would find none (a NaN need may fit: -Inf). present counts the
		// projects with tasks here (seen); ready says whether the ready ones are by
		// deadline already.
		byRank := &w.byRank
		for k := range byRank {
			byRank[k] = byRank[k][:0]
		}
		mine := w.mine[:0] // all of them, in document order, for the exhaustive sort
		late := w.late[:0]
		least := math.Inf(1)
		seen := scratch.Grow(w.seen, len(doc.Projects))
		w.seen = seen
		present := 0
		ready := true
		for _, t := range ts {
			if t.r != r {
				continue
			}
			if !seen[t.p] {
				seen[t.p] = true
				present++
			}
			if t.inst < least {
				least = t.inst
			} else if t.inst != t.inst {
				least = math.Inf(-1)
			}
			if isLate[t.i] {
				late = append(late, t)
			}
			if exhaustive {
				mine = append(mine, t)
				continue
			}
			list := byRank[t.rank]
			if t.rank == 2 && len(list) > 0 && byDeadline(t, list[len(list)-1]) < 0 {
				ready = false
			}
			byRank[t.rank] = append(list, t)
		}
		// A started task that a late one of later deadline would push past its own
		// computation deadline, were the late one run first, runs with the late ones
		// in deadline order: run later it is wasted with all the time it has had (c101:
		// B's 16-hour job, 10 minutes from its end, waited behind B's later-deadline
		// short jobs, late in the simulation, and missed its deadline by 80 s).
		if n := len(late); n > 0 {
			for _, t := range ts {
				if t.r == r && !isLate[t.i] && doc.Tasks[t.i].FlopsDone > 0 && squeezed(late[:n], t, now, margin) {
					late = append(late, t)
				}
			}
		}
		w.mine, w.late = mine, late
		// Deadline mode: the tasks the round-robin simulation sees late, earliest
		// deadline first.
		sortStableByDeadline(late)
		// Without a per-project cap, as BOINC's (cpu_sched.cpp, earliest_deadline_result):
		// a late task runs whatever its project's share; the debts it runs up are paid
		// back after, and work fetch asks the projects owed (Request, by overall debt).
		for _, t := range late {
			if fits(t) {
				take(t)
			}
		}
		// Then by anticipated overall debt; within a project running, preempted, then
		// ready by earliest deadline: the tasks stably sorted by rank, then deadline.
		// That is each rank's tasks in document order stably sorted by deadline, one
		// rank after the other (lists): the few running and preempted ones sorted, the
		// thousands of ready ones only when out of order.
		lists := [3][]taskInfo{mine}
		if exhaustive {
			slices.SortStableFunc(mine, func(a, b taskInfo) int {
				if c := cmp.Compare(a.rank, b.rank); c != 0 {
					return c
				}
				return byDeadline(a, b)
			})
		} else {
			sortStableByDeadline(byRank[0])
			sortStableByDeadline(byRank[1])
			if !ready {
				slices.SortStableFunc(byRank[2], byDeadline)
			}
			lists = *byRank
		}
		anticipated := append(w.anticipated[:0], overall...)
		w.anticipated = anticipated
		payoff := doc.Preferences.CPUSchedulingPeriod * prsc.RelativeSpeed(h, h.Resources[r])
		for _, t := range late {
			if chosen[t.i] {
				anticipated[t.p] -= payoff * t.inst
			}
		}
		// The search may stop once it has met a fitting task of every project with
		// tasks here (present): no later task can be best. A project's first fitting
		// task became best when met, or the best then had at least its anticipated
		// debt, and best changes only to a strictly greater one.
		for {
			if (r == cpu && !state.CPUsFit(cpuFree, 0, false) || r != cpu && free+fitSlack < least) && !exhaustive {
				break // nothing fits (see least)
			}
			var best taskInfo
			found := false
			clear(seen)
			met := 0
		search:
			for _, list := range lists {
				for _, t := range list {
					if !fits(t) {
						continue
					}
					if !found || anticipated[t.p] > anticipated[best.p] {
						best, found = t, true
					}
					if !seen[t.p] {
						seen[t.p] = true
						if met++; met == present && !exhaustive {
							break search
						}
					}
				}
			}
			if !found {
				break
			}
			take(best)
			anticipated[best.p] -= payoff * best.inst
		}
	}
	next := now + doc.Preferences.CPUSchedulingPeriod
	for _, t := range ts {
		task := &doc.Tasks[t.i]
		switch {
		case chosen[t.i]:
			task.State = state.TaskRunning
			if t.runtime > 0 {
				next = math.Min(next, now+t.runtime)
			}
		case task.State == state.TaskRunning:
			task.State = state.TaskPreempted
		}
		task.CPUTimeAtLastSched, task.ElapsedTimeAtLastSched = task.CPUTime, task.ElapsedTime
	}
	// In place when there is one, as cpusched records its passes: the emulator passes
	// every few steps.
	if doc.CPUSched == nil {
		doc.CPUSched = new(state.CPUSched)
	}
	*doc.CPUSched = state.CPUSched{LastPass: now, NextPass: next, NextPassReason: "goals: scheduling period or a task's expected end"}
	return abandoned
}

// squeezed reports whether task t, not late, would miss its computation deadline (its
// report deadline less margin) were one of the late tasks of later deadline run before
// it on its instance.
func squeezed(late []taskInfo, t taskInfo, now, margin float64) bool {
	for _, l := range late {
		if l.dl > t.dl && now+l.runtime+t.runtime+margin > t.dl {
			return true
		}
	}
	return false
}

// progressRuntime is the run time a started task still needs as its progress tells it
// (the work done ÷ the fraction done, less the work done, at its version's speed), for
// the test that abandons it; rt, the estimate's, when the app reports no progress. The
// estimate's remaining time leans on the estimate until the task is done (RemainingWork:
// (1 − progress) × the corrected estimate), and a correction factor above 1 is left out
// of the test, so a task whose estimate is low read as nearly on time until late in
// its run: c160's B jobs, twice their estimate with deadlines 1.3 of their length, were
// given up 60-90 % done (wf 0.254 against BOINC's 0.067, seeds 1-5). The progress says
// at once how long the task really takes, so one that cannot make its deadline is
// given up before it has wasted most of its run, and one whose estimate was high is
// kept. BOINC's client also estimates a started job's duration from its progress
// (work_fetch.cpp, ACTIVE_TASK::est_dur).
func progressRuntime(task *state.Task, t taskInfo, rt float64) float64 {
	fd := task.FractionDone
	if fd <= 0 || fd >= 1 || t.speed <= 0 {
		return rt
	}
	return task.FlopsDone * (1 - fd) / fd / t.speed
}
