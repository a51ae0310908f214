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
			w.coSums[j.res*nP+j.proj] += j.simLeft / j.simRate
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
	clear(w.coSums)
	for i := range w.jobs {
		j := &w.jobs[i]
		if !w.coWhole[j.res] {
			continue
		}
		k := j.res*nP + j.proj
		t := j.simLeft / j.simRate
		w.coLow[i] = w.coSums[k] + t
		w.coUp[i] = w.coOthers[k] + w.coLow[i]
		if coUpNoOthers {
			w.coUp[i] = w.coLow[i]
		}
		if coLowOthers {
			w.coLow[i] = w.coUp[i]
		}
		w.coSums[k] += t
	}
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
