package boincpolicy

import (
	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// coprocBounds readies missesKnown's bounds per job for the coprocessor jobs (issue
// 30, sixteenth round: the corpus's GPU hosts ran the simulation at almost every pass
// for a GPU job the bound per resource left open, a quarter of its policy boinc
// time): on a coprocessor whose every job takes all its instances (w.coWhole[r]),
// coprocessor job i ends in the simulation at now + a time within [w.coLow[i],
// w.coUp[i]]: its project's jobs of the resource before it, and its own, at least;
// at most those and every other project's jobs of the resource.
//
// Why: pick takes a resource's jobs until the instances in use reach its instances, so
// there exactly one job of such a resource runs at every moment of the simulation
// while it has jobs left, at its full rate (its simulated time falling a second a
// second); a project's jobs are taken in its pending list's order (the jobs'), its
// first left at every pick, so job i of project p starts only once p's jobs before it
// have ended, and none of p's after it runs before it ends. These read no REC: which
// project pick takes (by priority, or by address under BOINC's emulator) moves only
// the other projects' jobs, counted whole in the bound from above and not at all in
// the one from below. Both are sums of times, which only fall while the tasks stay as
// they are: as the bound per resource, a job ends in time for the slack, and one that
// misses by coLow goes on missing it while its margin lasts at the pace coFall gives.
// Where they leave a job open, pick's order of the projects gives its end exactly
// (coAheads, w.coEx): under BOINC's emulator for the slack too (both bounds are then
// that end), elsewhere at now only.
func (w *Workspace) coprocBounds(doc *state.Document) {
	nR, nP := w.nRes, len(doc.Projects)
	w.coWhole = scratch.Grow(w.coWhole, nR)
	for r := range nR {
		w.coWhole[r] = r != w.cpuRes && !noCoprocBounds
	}
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != w.cpuRes && !(j.inst >= float64(doc.Host.Resources[j.res].Instances)) && !coAnyWhole {
			w.coWhole[j.res] = false
		}
	}
	// Per resource and project: the sum of its jobs' times, then (reused) of those
	// before the job at hand.
	w.coSums = scratch.Grow(w.coSums, nR*nP)
	clear(w.coSums)
	for i := range w.jobs {
		if j := &w.jobs[i]; w.coWhole[j.res] {
			w.coSums[j.res*nP+j.proj] += j.simT
		}
	}
	w.coUp, w.coLow = growJobs(w.coUp, len(w.jobs)), growJobs(w.coLow, len(w.jobs))
	w.coOthers = scratch.Grow(w.coOthers, nR*nP)
	for r := range nR {
		if !w.coWhole[r] {
			continue
		}
		for p := range nP {
			var o float64 // every other project's jobs of r
			for q := range nP {
				if q != p {
					o += w.coSums[r*nP+q]
				}
			}
			w.coOthers[r*nP+p] = o
		}
	}
	w.coAhead = scratch.Grow(w.coAhead, nR*nP)
	w.coOrdered = !noCoprocOrder && w.coAheads(doc)
	clear(w.coSums)
	w.coEx = growJobs(w.coEx, len(w.jobs))
	for i := range w.jobs {
		j := &w.jobs[i]
		if !w.coWhole[j.res] {
			continue
		}
		k := j.res*nP + j.proj
		t := j.simT
		w.coLow[i] = w.coSums[k] + t
		w.coUp[i] = w.coOthers[k] + w.coLow[i]
		if coUpNoOthers {
			w.coUp[i] = w.coLow[i]
		}
		if coLowOthers {
			w.coLow[i] = w.coUp[i]
		}
		if w.coOrdered {
			w.coEx[i] = w.coAhead[k] + w.coLow[i]
			if doc.BOINCEmulator {
				// The order reads no REC: both bounds.
				w.coLow[i], w.coUp[i] = w.coEx[i], w.coEx[i]
			}
		}
		w.coSums[k] += t
	}
}

// coAheads sets w.coAhead, per coprocessor whose every job takes all its instances and
// project, the times of the resource's jobs of the projects pick takes before it, and
// reports whether it did (not when a priority is NaN). With one job at a time, pick's
// loop for the resource stops at its first pick, which takes the first project in its
// heap of the highest priority, the one pick starts every loop from (prioBase, from
// the REC at the simulation's start), or under BOINC's emulator the last project in
// the document: the same project at every pick until its jobs of the resource are
// all done, so the resource runs the projects' jobs one project after another in that
// order, each project's in its list's. A job's end is then exactly the times of the
// projects' before its project and of its project's jobs before it, and its own
// (w.coEx). Under the emulator the order reads no REC; elsewhere it holds at now
// only (missesKnown's slack is then none).
func (w *Workspace) coAheads(doc *state.Document) bool {
	nR, nP := w.nRes, len(doc.Projects)
	w.coPrio = scratch.Grow(w.coPrio, 2*nP)
	prio, frac := w.coPrio[:nP], w.coPrio[nP:]
	if !doc.BOINCEmulator {
		// prepareRest's: the priorities from the RECs over every project with a job.
		clear(w.eligible)
		for i := range w.jobs {
			w.eligible[w.jobs[i].proj] = true
		}
		recSum := Priorities(doc, w.rec, w.eligible, prio, frac)
		for p := range nP {
			prio[p] = Priority(w.rec[p], recSum, doc.Projects[p].ResourceShare, frac[p])
			if prio[p] != prio[p] {
				return false
			}
		}
	}
	for r := range nR {
		if !w.coWhole[r] {
			continue
		}
		// The projects in pick's order, each taken once: the first of the highest
		// priority among those not yet taken (or the last, under the emulator).
		var ahead float64
		taken := w.coAhead[r*nP : r*nP+nP]
		for p := range nP {
			taken[p] = -1
		}
		for {
			best := -1
			for p := range nP {
				if taken[p] >= 0 {
					continue // (a project without jobs of r adds none)
				}
				switch {
				case best < 0:
					best = p
				case doc.BOINCEmulator != coEmuOrder:
					best = p // the last
				case prio[p] > prio[best] || coTieLast && prio[p] == prio[best]:
					best = p
				}
			}
			if best < 0 {
				break
			}
			taken[best] = ahead
			ahead += w.coSums[r*nP+best]
		}
		for p := range nP {
			taken[p] = max(taken[p], 0)
		}
	}
	return true
}

// coFall is how much faster than time a coprocessor job's simulated end by coLow,
// now + w.coLow[i], may come nearer while the tasks stay as they are: of the jobs it
// sums, at most one runs at a time (each takes all the resource's instances), its
// time falling by at most workBound's fall ÷ the availability the simulation runs
// coprocessor jobs at a second; and now grows a second a second.
// (cpu: the CPUs' availability instead, a test's wrong pace.)
func (w *Workspace) coFall(doc *state.Document, cpu bool) float64 {
	return w.fall/availFrac(&doc.Host.TimeStats, !cpu) - 1
}

// A test's switches: noCoprocBounds, missesKnown gives up at a coprocessor job its
// resource's bound leaves open, as before coprocBounds (and a measurement's); the
// others make coprocBounds wrong, for TestCoprocBoundsAgainstSimulation to catch: the
// bound from above without the other projects' jobs (coUpNoOthers), the one from
// below with them (coLowOthers), every coprocessor taken as if its jobs took all its
// instances (coAnyWhole), the misses' pace at the CPUs' availability in missesKnown
// (coCPUFall) and in relow (coRelowCPUFall).
var noCoprocBounds, coUpNoOthers, coLowOthers, coAnyWhole, coCPUFall, coRelowCPUFall bool

// More of them: noCoprocOrder, no bound by pick's order of the projects (coAheads);
// the order wrong: equal priorities the last first (coTieLast), the emulator's order
// and the others' exchanged (coEmuOrder); the order's bound at now kept for a slack
// (coNowSlack).
var noCoprocOrder, coTieLast, coEmuOrder, coNowSlack bool
