package boincpolicy

import (
	"cmp"
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// missesListedCo is missesListed on a host of one project with coprocessor jobs
// (issue 30, twenty-ninth round): every job of one project, every CPU job of one CPU,
// and on each coprocessor every job takes all its instances and the same CPUs. It
// reports whether it decided every job, and then has set what missesListed sets (but
// the served CPUs: see restSlack below). (Corpus c020, one project with CPU and GPU
// jobs on 10 CPUs and two GPUs, ran the whole simulation for 8,867 of its passes of a
// 10-day run under BOINC's emulator: the bounds per job, the CPUs served n less the
// GPU jobs' CPUs from above and n from below, left its last CPU jobs open.)
//
// Why: with one project, pick takes each resource's jobs in the jobs' order (no
// priority is compared). A coprocessor's first job takes all its instances, so pick
// stops there: its jobs run one at a time in order, the q-th ending at the sum of the
// first q times, the last at T_r. The CPU jobs come after the coprocessors (pick's
// resources in resOrder), from the CPUs the running coprocessor jobs take (none
// while GPU computing is suspended), a job taken before the test: with x those CPUs
// summed in resOrder, pick takes k CPU jobs, the least k with x + 1 + … + 1 ≥ n as
// it sums (kOf sums the same floats in the same order). Those are the first k
// unfinished CPU jobs, at every pick; x depends only on which coprocessors still
// have jobs (each coprocessor's jobs take the same CPUs), a set that only shrinks,
// and k does not fall as it shrinks (a float sum of fewer terms ≥ 0 is no more). So
// the CPU jobs run as the list schedule, in the jobs' order, on k₀ CPUs free from now
// and k' − k more from each T_r at which k grows to k' (a CPU job starts at once on a
// CPU freed, and at T_r the next ones start): each job's end there is its simulated
// end, with missesKnown's margins for rounding (the simulation sums the times in
// another order, and cuts its steps at an hour).
//
// The slacks: while the tasks stay as they are only the running jobs' times fall
// (lowFall's rate d each, the coprocessors' at their availability). A coprocessor
// job's end falls by at most its running predecessors' d and its own; the CPUs'
// slots free from T_r move by at most e₀ (the most a coprocessor's running jobs' d
// sum to: a slot's moment is where the count of coprocessors left first allows it,
// and those counts move with the T_r), so the CPU jobs' ends fall as shiftAfter
// carries them from e₀ (the first k₀ start now on CPUs of their own). In time: the
// ends only fall (a list schedule's ends fall with its times and its CPUs' free
// times; the T_r only fall, so k at every moment only grows), restSlack. The misses
// go on until their margin is eaten at those rates. The answer carries no box (the
// RECs are not read with one project) and no relow: restSlack is the slack itself,
// so missesKept drops it once the slack is out (relow's missBounds reads served CPUs
// this answer does not set).
func (w *Workspace) missesListedCo(doc *state.Document, now float64) bool {
	n := doc.Host.CPU().Instances
	nR := w.nRes
	if n > maxTop || len(w.jobs) == 0 || nR == 1 {
		return false
	}
	p := w.jobs[0].proj
	w.coqT = scratch.Grow(w.coqT, 3*nR) // per resource: T_r, its jobs' CPUs, e of its running jobs
	w.coqN = scratch.Grow(w.coqN, nR)   // per resource: its jobs
	clear(w.coqT)
	clear(w.coqN)
	per := w.fall / availFrac(&doc.Host.TimeStats, false)  // a running CPU job's fall (lowFall)
	perCo := w.fall / availFrac(&doc.Host.TimeStats, true) // a running coprocessor job's
	co := false
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.proj != p {
			return false
		}
		if j.res == w.cpuRes {
			if j.cpus != 1 {
				return false
			}
			continue
		}
		co = true
		q := w.coqT[3*j.res : 3*j.res+3]
		if j.inst < float64(doc.Host.Resources[j.res].Instances) || w.coqN[j.res] > 0 && j.cpus != q[1] {
			return false
		}
		w.coqN[j.res]++
		q[0] += j.simT
		q[1] = j.cpus
		if j.running {
			q[2] += perCo
		}
	}
	if !co {
		return false // missesListed's hosts
	}
	// The CPUs' free times: k₀ from now, then the rest at the T_r, in order.
	w.coqLeft = scratch.Grow(w.coqLeft, nR)
	left := w.coqLeft
	w.coqOrd = w.coqOrd[:0]
	e0 := 0.0
	for r := range nR {
		left[r] = w.coqN[r] > 0
		if left[r] {
			w.coqOrd = append(w.coqOrd, r)
			e0 = max(e0, w.coqT[3*r+2])
		}
	}
	slices.SortStableFunc(w.coqOrd, func(a, b int) int { return cmp.Compare(w.coqT[3*a], w.coqT[3*b]) })
	w.relistFree = scratch.Grow(w.relistFree, n)
	free := w.relistFree[:0]
	k := w.kOf(doc, left)
	k0 := k
	for range k {
		free = append(free, 0)
	}
	for _, r := range w.coqOrd {
		left[r] = false
		k2 := w.kOf(doc, left)
		if k2 < k {
			return false // (not so: kOf does not fall as coprocessors run out)
		}
		for range k2 - k {
			free = append(free, w.coqT[3*r]) // in order: a heap
		}
		k = k2
	}
	if k != n || len(free) != n {
		return false // (not so: with no coprocessor job left, pick takes n)
	}
	// Each coprocessor's jobs' ends and running falls so far.
	for r := range nR {
		q := w.coqT[3*r : 3*r+3]
		q[0], q[2] = 0, 0
	}
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	lj := newListJudge()
	e := e0    // how far the CPUs' free times, in order, may have fallen
	cpuAt := 0 // the CPU jobs placed
	for i := range w.jobs {
		j := &w.jobs[i]
		var end, fall float64
		if j.res == w.cpuRes {
			end = listEnd(free, j.simT)
			d := 0.0
			if j.running {
				d = per
			}
			fresh := cpuAt < k0 // it starts now on a CPU of its own
			fall = e + d - 1
			if fresh {
				fall = d - 1
			}
			e = shiftAfter(e, d, fresh)
			cpuAt++
		} else {
			q := w.coqT[3*j.res : 3*j.res+3]
			q[0] += j.simT
			if j.running {
				q[2] += perCo
			}
			end, fall = q[0], q[2]-1
		}
		if !w.judgeListed(&lj, i, now, comp, end, fall) {
			return false
		}
	}
	w.anyMiss, w.boundMiss = lj.anyMiss, lj.boundMiss
	w.slack, w.recEps = min(lj.slack, lj.lowSlack), math.Inf(1)
	w.restSlack, w.lowSlack, w.capSlack = w.slack, lj.lowSlack, math.Inf(1)
	if lj.anyMiss {
		w.markMisses(now, comp)
	}
	w.listedNow = true // the tests' check (listedCheck), as missesListed's
	if listedCheck {
		coListedChecks++
		w.checkListed(doc, now)
	}
	return true
}

// coListedChecks: how many of missesListedCo's answers listedCheck held to a whole
// simulation (the tests' count; their differences are listedDiffs', with the answers
// missesKept carried from them).
var coListedChecks int

// kOf is how many CPU jobs pick takes (at least one) while the coprocessors left
// (left[r]) each run a job: their CPUs summed in resOrder (none while GPU computing is
// suspended), then one CPU a job until the sum reaches the CPUs, as pick sums them.
func (w *Workspace) kOf(doc *state.Document, left []bool) int {
	n := float64(doc.Host.CPU().Instances)
	x := 0.0
	if !doc.GPUsSuspended {
		for _, r := range w.resOrder {
			if r != w.cpuRes && left[r] {
				x += w.coqT[3*r+1]
			}
		}
	}
	k := 0
	for {
		x += 1
		k++
		if x >= n {
			return k
		}
	}
}
