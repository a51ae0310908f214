package boincpolicy

import (
	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// The hosts whose round-robin simulation runs the jobs as one list schedule in pick's
// order (pickListed), and that order: what missesRelist, missesStay, missesListed and
// missesListedPick read the misses from.

// pickListed reports whether the simulation runs the jobs exactly as one list
// schedule on the n CPUs from now in pick's order (missesRelist and missesStay, for
// the answer kept; missesListed and missesListedPick at the pass), and returns that
// order: on a host of relistable's (one, when known), the project's jobs in their
// order (nil); under BOINC's emulator, on a host whose runnable jobs are all CPU
// jobs of one CPU, of several projects, the projects' jobs by address, the last
// first, each project's in its order (emulatorOrder's, the jobs' indices).
func (w *Workspace) pickListed(doc *state.Document, one bool) ([]int, bool) {
	if one {
		return nil, true
	}
	if w.emulatorOrder(doc) {
		return w.emuOrder, true
	}
	return nil, false
}

// emulatorOrder reports whether pickListed's second case holds, and sets w.emuOrder
// to its order; both read the jobs alone (their projects, resources and CPUs), so
// they are kept while the jobs are (jobsGen: statsTimes'). Only where an answer is
// carried or the bounds failed is it asked for (on example-2cpu-2to1 under BOINC's
// emulator, asked at every answer kept, it cost 2 % of the run for nothing).
//
// Why (several projects, under BOINC's emulator): pick takes the projects by
// address, the last in the document first, each's jobs in its list's order until the
// CPUs are used, and reads no REC; so at every pick the jobs that run are the first
// min(n, jobs left) of that one sequence. So are they at every moment of its list
// schedule on n CPUs from now (the jobs started are the sequence's first, and one
// waits only while n run): each job runs over the same moments in both, and ends at
// the same moment (the sums in another order: missesKnown's margin for rounding).
// What each project is served then follows from the jobs alone (listServed).
// (Corpus c159 under BOINC's emulator, 13 CPUs, C of share 235 taking them first:
// missesKnown's bounds per job left A's and B's jobs open behind C's at every pass
// that tried them, and the simulation ran 1,905 times in a 10-day run: issue 30,
// fortieth round.)
func (w *Workspace) emulatorOrder(doc *state.Document) bool {
	if !doc.BOINCEmulator || len(w.jobs) == 0 || noPickOrder {
		return false
	}
	if w.emuKept && w.emuGen == w.jobsGen && (!w.emuOK || len(w.emuOrder) == len(w.jobs)) {
		return w.emuOK
	}
	w.emuKept, w.emuGen, w.emuOK = true, w.jobsGen, false
	w.emuOrder = w.emuOrder[:0]
	if !w.oneCPUJobs() {
		return false
	}
	for p := len(doc.Projects) - 1; p >= 0; p-- {
		w.emuOrder = w.appendJobsOf(w.emuOrder, p)
	}
	w.emuOK = true
	return true
}

// oneCPUJobs reports whether every runnable job is a CPU job of one CPU (the hosts
// of emulatorOrder and priorityBlocks).
func (w *Workspace) oneCPUJobs() bool {
	for i := range w.jobs {
		if j := &w.jobs[i]; j.res != w.cpuRes || j.cpus != 1 {
			return false
		}
	}
	return true
}

// appendJobsOf appends to order the indices of project p's jobs, in the jobs' order
// (a block of a list order: emulatorOrder's, priorityBlocks').
func (w *Workspace) appendJobsOf(order []int, p int) []int {
	for i := range w.jobs {
		if w.jobs[i].proj == p {
			order = append(order, i)
		}
	}
	return order
}

// noPickOrder: pickListed takes hosts of one project only, as before its second case
// (a test's: missesRebound's hosts of several projects whose jobs are all of one CPU
// are otherwise pickListed's, and no scenario has a CPU job of more).
var noPickOrder bool

// listServed sets w.gServed, the CPUs each project is served at now, on a host of n
// CPUs whose jobs run as their list schedule in w.listOrder (empty: the jobs' own;
// emulatorOrder's, priorityBlocks'): its jobs among the first n of that order, which
// pick takes at every pick while they are left. Each project's jobs are together in the order, so
// p is served min(its jobs, n less the jobs of the projects before it): under BOINC's
// emulator projectServed's rule; with one project, min(its jobs, n). relow's
// missBounds reads them.
func (w *Workspace) listServed(doc *state.Document, n int) {
	w.gServed = scratch.Grow(w.gServed, len(doc.Projects))
	for x := range min(n, len(w.jobs)) {
		i := x
		if len(w.listOrder) > 0 {
			i = w.listOrder[x]
		}
		w.gServed[w.jobs[i].proj]++
	}
}

// priorityBlocks reports whether pick, under bsim's conventions, takes every
// project's jobs before the next project's at every pick while the RECs are as they
// are now, on a host whose runnable jobs are all CPU jobs of one CPU, each project's
// of one bump; then it sets w.listOrder to the jobs in that order (each project's in
// its order), whose list schedule on the n CPUs from now the simulation then is
// (pickListed's argument).
//
// Why: pick starts every pick from the same priorities (prepare's, from the RECs at
// now) and lowers a project's at each job it takes by its bump, so a project's k-th
// job left comes with the same priority whichever of its jobs have ended; merged as
// pick merges them (the highest first, the first project among equals), the
// projects' whole lists come one project after another here, and a list shortened at
// its end (a job ended) keeps each comparison the merge made, so they do so at every
// pick of the simulation, whose first min(n, jobs left) of that order run.
func (w *Workspace) priorityBlocks(doc *state.Document) bool {
	w.listOrder = w.listOrder[:0]
	if len(w.jobs) == 0 || !w.oneCPUJobs() || !w.projectStats(doc) {
		return false
	}
	nP := len(doc.Projects)
	left, prio, rec, bump := w.blockScratch(nP)
	blocks := 0
	for p := range nP {
		if !w.eligible[p] {
			continue
		}
		if w.gBump[2*p] != w.gBump[2*p+1] {
			return false // jobs of several bumps: the k-th job's priority depends on which are left
		}
		left[p], rec[p], bump[p] = int(w.gCPUs[4*p]), w.rec[p], w.gBump[2*p]
		prio[p] = Priority(rec[p], w.gRecSum, doc.Projects[p].ResourceShare, w.gShare[p])
		blocks++
	}
	if blocks < 2 {
		return false // one project: relistable's
	}
	if !w.mergeBlocks(doc.Projects, w.gRecSum, w.gShare) {
		return false
	}
	for _, p := range w.blockOrder {
		w.listOrder = w.appendJobsOf(w.listOrder, p)
	}
	return true
}

// pickBlocks is priorityBlocks for the work fetch's simulation, from prepare's own
// figures (prepareRest done, recSum its REC sum): under bsim's conventions, on a host
// whose runnable jobs are all CPU jobs of one CPU, each project's of one bump
// (pickSame), it reports whether pick takes every project's jobs before the next
// project's, merging them as pick does (from prioBase, each job taken adding its bump
// to the project's REC, the highest priority first, the first project among equals),
// and returns that order, each project's jobs in its pending list's order. Then at
// every pick of the simulation the jobs running are the first min(n, jobs left) of
// it (priorityBlocks' argument), so the simulation is its list schedule on the n CPUs
// and its replay (replayFetch) leaves what the simulation leaves. pick's own figures
// are read, not projectStats' (which the pass keeps), so nothing the pass reads is
// written. (Corpus c072 under bsim's conventions, 9 CPUs, A of share 905 beside three
// small projects: 4,233 of the 5,373 work fetches at seed 1 that ran the whole
// simulation after the bounds: issue 30, forty-third round.)
func (w *Workspace) pickBlocks(doc *state.Document, recSum float64) ([]int, bool) {
	if doc.BOINCEmulator || len(w.jobs) == 0 || !w.pickSame || !w.oneCPUJobs() {
		return nil, false
	}
	nP, nR, cpuRes := len(doc.Projects), w.nRes, w.cpuRes
	left, prio, rec, bump := w.blockScratch(nP)
	for p := range nP {
		pend := w.pending[p*nR+cpuRes]
		left[p] = len(pend)
		prio[p], rec[p] = w.prioBase[p], w.rec[p]
		if len(pend) > 0 {
			bump[p] = w.jobs[pend[0]].bump
		}
	}
	if !w.mergeBlocks(doc.Projects, recSum, w.shareFrac) {
		return nil, false
	}
	w.fetchOrder = w.fetchOrder[:0]
	for _, p := range w.blockOrder {
		w.fetchOrder = append(w.fetchOrder, w.pending[p*nR+cpuRes]...)
	}
	return w.fetchOrder, true
}

// blockScratch is mergeBlocks' arguments for nP projects, zeroed: each project's jobs
// left, priority, REC and bump.
func (w *Workspace) blockScratch(nP int) (left []int, prio, rec, bump []float64) {
	w.blockPrio = scratch.Grow(w.blockPrio, 3*nP)
	w.blockLeft = scratch.Grow(w.blockLeft, nP)
	return w.blockLeft, w.blockPrio[:nP], w.blockPrio[nP : 2*nP], w.blockPrio[2*nP:]
}

// mergeBlocks merges the projects' jobs as pick does, from blockScratch's figures
// (each project's jobs left, priority and REC before its first, and the bump each job
// taken adds to its REC): the highest priority first, the first project among
// equals, the priority found again after each job (Priority of the REC, recSum and
// shareFrac). It reports whether each project's jobs come in one block, and sets
// w.blockOrder to the projects in their blocks' order (priorityBlocks' and
// pickBlocks' merge).
func (w *Workspace) mergeBlocks(projects []state.Project, recSum float64, shareFrac []float64) bool {
	nP := len(projects)
	left, prio, rec, bump := w.blockLeft, w.blockPrio[:nP], w.blockPrio[nP:2*nP], w.blockPrio[2*nP:]
	w.blockOrder = w.blockOrder[:0]
	cur := -1
	for range len(w.jobs) {
		b := -1
		for p := range nP {
			if left[p] > 0 && (b < 0 || prio[p] > prio[b]) {
				b = p
			}
		}
		if b != cur {
			if cur >= 0 && left[cur] > 0 {
				return false // the projects' jobs interleave
			}
			w.blockOrder = append(w.blockOrder, b)
			cur = b
		}
		left[b]--
		rec[b] += bump[b]
		prio[b] = Priority(rec[b], recSum, projects[b].ResourceShare, shareFrac[b])
	}
	return true
}
