package boincpolicy

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// coCPUsOnce bounds the CPUs the coprocessor jobs take at once in the simulation,
// for the CPU jobs' bounds (missesKnown's per resource, projectServed's CPUs served):
// per coprocessor r, at most k of its jobs run at once, each of at most the most CPUs
// of one (c), so they take at most k × c, and at most every job's CPUs (coprocCPUs,
// the bound before: issue 30, twenty-second round, where a GPU host's CPU jobs were
// served the CPUs less every queued GPU job's, c020's 10 CPUs less 7.33 for its two
// GPUs' nine jobs, and the bounds per job failed at most passes).
//
// Why: pick takes a coprocessor's jobs until the instances in use reach its
// instances N (it stops after the job whose sum reaches N, resUsed's exact sum), and
// a job takes at least m instances (the least of r's jobs), so once k jobs are taken
// with k·m ≥ N their sum reaches N in any order of summing and no more is taken: for
// whole m exactly (a float sum of terms each ≥ m is at least the same sum of m's,
// addition being monotone, and those are exact), else with k·m·(1 − 1e-9) ≥ N (a
// float sum of k positive terms is within (k − 1) ulps of the exact one; k is small). The simulation's later picks have fewer jobs, never more instances. While
// GPU computing is suspended their CPUs are not counted (pick): none, below the bound.
// (m = 0: no such k; every job's CPUs.)
func (w *Workspace) coCPUsOnce(doc *state.Document) float64 {
	if w.coprocCPUs == 0 || noCoCPUsOnce {
		return w.coprocCPUs
	}
	nR := w.nRes
	w.coOnce = scratch.Grow(w.coOnce, 4*nR) // per resource: jobs, least instances, most CPUs, CPUs
	for r := range nR {
		o := w.coOnce[4*r : 4*r+4]
		o[0], o[1], o[2], o[3] = 0, math.Inf(1), 0, 0
	}
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res == w.cpuRes {
			continue
		}
		o := w.coOnce[4*j.res : 4*j.res+4]
		o[0]++
		o[1] = min(o[1], j.inst)
		o[2] = max(o[2], j.cpus)
		if coOnceWrong == 2 {
			o[2] = min(o[2], j.cpus)
			if o[0] == 1 {
				o[2] = j.cpus
			}
		}
		o[3] += j.cpus
	}
	var g float64
	for r := range nR {
		o := w.coOnce[4*r : 4*r+4]
		if r == w.cpuRes || o[0] == 0 {
			continue
		}
		n := float64(doc.Host.Resources[r].Instances)
		k := o[0] // every job of r
		switch m := o[1]; {
		case m >= 1 && m == math.Trunc(m) && m < 1<<20:
			// Whole instances: any float sum of k terms each ≥ m is ≥ k·m exactly
			// (addition is monotone, and sums of whole numbers this small are
			// exact), so the least k with k·m ≥ N.
			k = min(k, math.Max(1, math.Ceil(n/m)))
		case m > 0 && !math.IsInf(m, 0):
			// The least k with k·m·(1 − 1e-9) ≥ N.
			k = min(k, math.Max(1, math.Ceil(n/(m*(1-1e-9)))))
		}
		if coOnceWrong == 1 {
			k = 1
		}
		g += min(o[3], k*o[2])
	}
	// A margin for rounding: pick sums the CPUs in its own order.
	return min(w.coprocCPUs, g*(1+1e-12))
}

// noCoCPUsOnce: the bound before (every coprocessor job's CPUs), a measurement's and a
// test's switch.
var noCoCPUsOnce bool

// coOnceCheck: at every pick of every simulation, the CPUs of the coprocessor jobs
// picked (as pick counts them) are held to coCPUsOnce's bound, and wherever
// missesKnown decides the misses with the bound below every coprocessor job's CPUs
// or after listUpper's exact case beside coprocessor jobs (coExactBlocked),
// the whole simulation on a copy, by a workspace of its own, must count the same
// misses per project and resource; coOnceDiffs counts where either failed (a test's),
// coOnceChecks the answers so checked; coOnceWrong makes the bound wrong for the test
// to catch it: 1 every coprocessor one job at a time, 2 the least CPUs of one for the
// most.
var (
	coOnceCheck  bool
	coOnceDiffs  int
	coOnceChecks int
	coOnceWrong  int
)

// checkCoOnceMisses is coOnceCheck's test of missesKnown's answer at now.
func (w *Workspace) checkCoOnceMisses(doc *state.Document, now float64) {
	if !(w.coCPUsOnce(doc) < w.coprocCPUs) && !w.coExactUsed {
		return
	}
	coOnceChecks++
	whole := checkSpace(w.Overestimate)
	defer checkDone(whole)
	whole.Simulate(whole.checkCopy(doc), now)
	if !slices.Equal(whole.missed, w.missed) {
		coOnceDiffs++
	}
}

func (w *Workspace) checkCoOnce(doc *state.Document) {
	if doc.GPUsSuspended {
		return // none counted
	}
	var used float64
	for _, a := range w.active {
		if j := &w.jobs[a]; j.res != w.cpuRes {
			used += j.cpus
		}
	}
	if used > w.coCPUsOnce(doc) {
		coOnceDiffs++
	}
}

// coExactBlocked takes out of f (the other project's CPUs in listUpper's exact case,
// where the blocker's list schedule leaves them: a heap) as many CPUs as the
// coprocessor jobs may take at once, ⌈coCPUsOnce⌉, the first to free: beside
// coprocessor jobs that project runs at least min(its jobs left, n − G − q's) at
// every pick (pick takes CPU jobs until the CPUs in use, the coprocessor jobs' G among
// them, reach n, or its jobs run out; q the blocker's running, all of which pick
// takes), a whole number, so at least n − ⌈G⌉ − q's; the list schedule on f less its
// first ⌈G⌉ free times (+Inf at the end) runs exactly max(0, that) at every moment,
// never falling, so the other project's ends there bound its ends from above
// (listsched.go's argument). (corpus c117: its CPU jobs beside a project of GPU jobs
// only were served 3 CPUs for the whole bound, where the blocker's jobs free 8 as they
// end, and the bounds per job failed at most passes.)
func (w *Workspace) coExactBlocked(f []float64) {
	b := int(math.Ceil(w.gCoCPUs + 1e-9))
	if coExactWrong {
		b = 0
	}
	if b <= 0 {
		return
	}
	slices.Sort(f)
	b = min(b, len(f))
	copy(f, f[b:])
	for i := len(f) - b; i < len(f); i++ {
		f[i] = math.Inf(1)
	}
}

// noCoExact: listUpper's exact case not beside coprocessor jobs, as before (a
// measurement's switch); coExactWrong: no CPU taken out for them (a test's).
var noCoExact, coExactWrong bool
