package cpusched

import (
	"cmp"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// expectedPayOff is what a task chosen in step 3 is expected to be worth per instance:
// the work done since the last pass spread over the resource's instances, or the
// scheduling period when no work was done (the first pass).
func expectedPayOff(totalWorkDone float64, instances int, period float64) float64 {
	if totalWorkDone > 0 && instances > 0 {
		return totalWorkDone / float64(instances)
	}
	return period
}

// choose is step 3 on one resource: anticipated[p] starts at project p's debt; while
// an instance of rp's capacity (rp.Instances) is free, the project with the largest
// anticipated debt and a candidate that fits gets its first such candidate (running,
// then preempted, then ready by earliest deadline), marked in w.chosen, and its
// anticipated debt falls by the expected pay-off times the instances the task takes.
// It adds the instances given to rp.Used, the tasks to the apps' running counts, and
// with why != nil the reason of each chosen task; it returns the CPUs left free.
//
// least is at most the need of every candidate (-Inf: not known): once fewer instances
// are free, no candidate fits and the search for one is over without looking at each
// (with thousands of ready tasks, most of a pass's time went to that last look).
func (w *Workspace) choose(byProject [][]candidate, mixed []bool, least float64, anticipated []float64, rp *ResourcePass, cpuFree float64, apps *appLimits, why []TaskDecision) float64 {
	sortCandidates(byProject, mixed)
	chosen, capacity := w.chosen, rp.Instances
	next := scratch.Grow(w.next, len(byProject)) // first candidate not yet taken
	w.next = next
	for {
		left := capacity - rp.Used
		if rp.Type == state.ResourceCPU && !state.CPUsFit(left, 0, false) || rp.Type != state.ResourceCPU && left+fitSlack < least {
			break // no candidate fits: firstFit would find none
		}
		best, bestTask := -1, -1
		for p := range byProject {
			if best >= 0 && anticipated[p] <= anticipated[best] {
				continue
			}
			if k := firstFit(byProject[p], next[p], chosen, capacity-rp.Used, cpuFree, apps, rp.Type); k >= 0 {
				best, bestTask = p, k
			}
		}
		if best < 0 {
			break
		}
		c := byProject[best][bestTask]
		chosen[c.task] = true
		if why != nil {
			why[c.task] = TaskDecision{Why: Why(c.rank), Anticipated: anticipated[best]}
		}
		rp.Used += c.need
		if rp.Type == state.ResourceCPU {
			cpuFree -= c.need
		} else {
			cpuFree -= c.ncpus
		}
		if c.app >= 0 {
			apps.running[c.app]++
		}
		anticipated[best] -= rp.ExpectedPayOff * c.need
		for next[best] < len(byProject[best]) && chosen[byProject[best][next[best]].task] {
			next[best]++
		}
	}
	return cpuFree
}

// sortCandidates puts each project's candidates in the order the seed prefers them:
// running, preempted, then ready by earliest deadline; document order breaks ties.
// mixed[p] says whether project p's are out of that order (nil: not known).
func sortCandidates(byProject [][]candidate, mixed []bool) {
	byDeadline := func(a, b candidate) int {
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		if a.rank == 2 {
			if c := cmp.Compare(a.deadline, b.deadline); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.task, b.task)
	}
	for p := range byProject {
		cands := byProject[p]
		if len(cands) > 12 {
			// Most often in order already (group takes the tasks in document order, in
			// which a project's results arrive by deadline, its running ones first), as
			// group saw comparing each candidate with the one before it: the keys are
			// unique, so a list without such an inversion is sorted.
			if mixed == nil || mixed[p] {
				slices.SortFunc(cands, byDeadline)
			}
			continue
		}
		// An insertion sort, the comparison inline: a project holds a few candidates,
		// mostly in order already. The keys are unique (task index last), so any sort
		// gives this order.
		for i := 1; i < len(cands); i++ {
			for j := i; j > 0 && before(cands[j], cands[j-1]); j-- {
				cands[j], cands[j-1] = cands[j-1], cands[j]
			}
		}
	}
}

// before is byDeadline(a, b) < 0: running, preempted, then ready by earliest
// deadline; document order last. (cmp.Compare's order: a NaN deadline first.)
func before(a, b candidate) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if a.rank == 2 {
		if c := cmp.Compare(a.deadline, b.deadline); c != 0 {
			return c < 0
		}
	}
	return a.task < b.task
}

// explain completes the record of one resource after step 3: each project's
// anticipated debt at the end, and why each candidate not chosen waits.
func explain(ix *names, byProject [][]candidate, anticipated []float64, rp *ResourcePass, cpuFree float64, apps *appLimits, chosen []bool, why []TaskDecision) {
	for i := range rp.Projects {
		rp.Projects[i].AnticipatedEnd = anticipated[ix.project(rp.Projects[i].Project)]
	}
	for p, cands := range byProject {
		for _, c := range cands {
			if chosen[c.task] {
				continue
			}
			why[c.task] = waiting(c, anticipated[p], rp.Instances-rp.Used, cpuFree, rp.Type, apps)
		}
	}
}

// firstFit returns the index of the first candidate from k on that is not yet chosen and
// fits in the free instances (and free CPUs, for a coprocessor task), or -1.
func firstFit(cands []candidate, k int, chosen []bool, free, cpuFree float64, apps *appLimits, resource string) int {
	for ; k < len(cands); k++ {
		c := cands[k]
		if chosen[c.task] || !fits(c, free, cpuFree, resource) {
			continue
		}
		if apps.full(c.app) {
			continue
		}
		return k
	}
	return -1
}

// fits reports whether candidate c fits in the free instances of its resource and, for a
// coprocessor task, beside the CPUs committed (state.CPUsFit: a CPU task starts while a
// CPU is uncommitted, a coprocessor task may overcommit them by up to one).
func fits(c candidate, free, cpuFree float64, resource string) bool {
	if resource == state.ResourceCPU {
		return state.CPUsFit(free, c.need, false)
	}
	return c.need <= free+fitSlack && state.CPUsFit(cpuFree, c.ncpus, true)
}

// waiting says why an unchosen candidate waits.
func waiting(c candidate, anticipated, free, cpuFree float64, resource string, apps *appLimits) TaskDecision {
	d := TaskDecision{Why: WhyOtherTasks, Anticipated: anticipated, Free: free}
	switch {
	case resource == state.ResourceCPU && !state.CPUsFit(free, c.need, false) || resource != state.ResourceCPU && c.need > free+fitSlack:
		d.Why = WhyNoRoom
	case resource != state.ResourceCPU && !state.CPUsFit(cpuFree, c.ncpus, true):
		d.Why = WhyNoCPUs
	case apps.full(c.app):
		d.Why = WhyAppLimit
	}
	return d
}
