package boincpolicy

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// projectStats is projectBounds' first part, whatever the horizon: per project its
// CPU jobs, their CPUs, the most CPUs of one, their CPU-seconds and its least and
// largest bump; the REC sum and every CPU job's CPU-seconds; the coprocessor jobs'
// CPUs (gCoCPUs: at most those taken at once, coCPUsOnce) and CPU-seconds (gCoSecs: each
// takes its CPUs only while it runs, its time falling a second a second). It reports
// true (the bounds per job are the CPU jobs'). (The corpus's GPU hosts ran the
// simulation at almost every pass, for CPU jobs the bound per resource left open:
// issue 30, twelfth round.)
func (w *Workspace) projectStats(doc *state.Document) bool {
	nP := len(doc.Projects)
	w.gCPUs = scratch.Grow(w.gCPUs, 4*nP) // per project: jobs, their CPUs, the most CPUs of one, CPU-seconds
	w.gBump = scratch.Grow(w.gBump, 2*nP) // per project: the least and largest bump of its jobs
	var coSecs, cpuSecs float64           // the coprocessor jobs' CPUs × time; every CPU job's
	if w.statsKept && w.statsGen == w.jobsGen && len(w.statsJobs) == 6*nP && len(w.statsElig) == len(w.eligible) {
		coSecs, cpuSecs = w.statsTimes(nP)
		if statsCheck {
			w.checkStats(nP, coSecs, cpuSecs)
		}
	} else {
		coSecs, cpuSecs = w.statsWalk(nP)
		// What the walk found of the jobs alone, kept while they stay (statsTimes).
		w.statsJobs = append(append(w.statsJobs[:0], w.gCPUs...), w.gBump...)
		for p := range nP {
			w.statsJobs[4*p+3] = 0
		}
		w.statsElig = append(w.statsElig[:0], w.eligible...)
		w.statsKept, w.statsGen = true, w.jobsGen
	}
	w.gCoCPUs, w.gCoSecs = w.coCPUsOnce(doc), coSecs
	w.gPrio = scratch.Grow(w.gPrio, nP)
	w.gShare = scratch.Grow(w.gShare, nP)
	recSum := Priorities(doc, w.rec, w.eligible, w.gPrio, w.gShare)
	for p := range nP {
		if w.eligible[p] {
			w.gBump[2*p] = SchedBump(w.gBump[2*p], w.totalPeak, recSum)
			w.gBump[2*p+1] = SchedBump(w.gBump[2*p+1], w.totalPeak, recSum)
		}
	}
	w.gRecSum, w.gCPUSecs = recSum, cpuSecs
	// The served CPUs read no REC under BOINC's emulator (pick's order by address)
	// nor with one project: then the horizon's are now's.
	w.gRECFree = doc.BOINCEmulator
	if !w.gRECFree {
		n := 0
		for p := range nP {
			if w.eligible[p] {
				n++
			}
		}
		w.gRECFree = n <= 1
	}
	return true
}

// statsWalk is projectStats' walk of the jobs: w.eligible, and per project (gCPUs)
// its CPU jobs, their CPUs, the most CPUs of one and their CPU-seconds, and (gBump) the
// least and largest peak FLOPS of its CPU jobs; it returns the coprocessor jobs' and
// the CPU jobs' CPU-seconds. One walk, each sum in the jobs' order.
func (w *Workspace) statsWalk(nP int) (coSecs, cpuSecs float64) {
	clear(w.gCPUs)
	clear(w.eligible)
	for p := range nP {
		w.gBump[2*p], w.gBump[2*p+1] = math.Inf(1), 0
	}
	// (The workspace's slices in locals: the loop read them through w at every job.)
	eligible, gCPUs, gBump, cpuRes := w.eligible, w.gCPUs, w.gBump, w.cpuRes
	for i := range w.jobs {
		j := &w.jobs[i]
		p := j.proj
		eligible[p] = true // as prepare's: every project with a runnable job
		if j.res != cpuRes {
			coSecs += j.cpus * j.simT
			continue
		}
		g := gCPUs[4*p : 4*p+4 : 4*p+4]
		g[0]++
		g[1] += j.cpus
		g[2] = max(g[2], j.cpus)
		x := j.cpus * j.simT
		g[3] += x
		cpuSecs += x
		// The least and largest peak FLOPS (SchedBump grows with the peak).
		b := gBump[2*p : 2*p+2 : 2*p+2]
		b[0] = min(b[0], j.peak)
		b[1] = max(b[1], j.peak)
	}
	return coSecs, cpuSecs
}

// statsTimes is statsWalk where the jobs are those of the last walk (jobsGen the
// same): of the walk's figures only the CPU-seconds read the jobs' simulated times,
// which move from pass to pass; the projects with jobs, their jobs' counts, CPUs,
// most CPUs of one and peak FLOPS read what a job keeps from the view that built it
// (its project, resource, CPUs and peak), which changes only where the jobs do (view,
// and refresh where a job is dropped or a task received: jobsGen). So those are the
// kept ones (statsJobs, statsElig), and the CPU-seconds are summed afresh, in the
// jobs' order from +0 as the walk sums them: the same bits. (The emulator's views of
// down-2cpu walked the same jobs at most passes: issue 30, thirty-second round.)
func (w *Workspace) statsTimes(nP int) (coSecs, cpuSecs float64) {
	copy(w.gCPUs, w.statsJobs[:4*nP])
	copy(w.gBump, w.statsJobs[4*nP:])
	copy(w.eligible, w.statsElig)
	gCPUs, cpuRes := w.gCPUs, w.cpuRes
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != cpuRes {
			coSecs += j.cpus * j.simT
			continue
		}
		x := j.cpus * j.simT
		gCPUs[4*j.proj+3] += x
		cpuSecs += x
	}
	return coSecs, cpuSecs
}

// statsCheck, statsDiffs, statsChecks: with the check on (tests only), every
// statsTimes is held to the walk afresh (statsWalk): statsDiffs counts the answers
// that differ in any figure's bits, statsChecks those checked.
var (
	statsCheck              bool
	statsDiffs, statsChecks int
)

// checkStats is statsTimes under statsCheck's test (its answers in place: the walk's
// are left, the same where the check passes).
func (w *Workspace) checkStats(nP int, coSecs, cpuSecs float64) {
	kept := append(append([]float64(nil), w.gCPUs...), w.gBump...)
	keptElig := append([]bool(nil), w.eligible...)
	co, cpu := w.statsWalk(nP)
	statsChecks++
	same := math.Float64bits(co) == math.Float64bits(coSecs) && math.Float64bits(cpu) == math.Float64bits(cpuSecs) &&
		slices.Equal(keptElig, w.eligible)
	for k, x := range append(append([]float64(nil), w.gCPUs...), w.gBump...) {
		same = same && math.Float64bits(x) == math.Float64bits(kept[k])
	}
	if !same {
		statsDiffs++
	}
}
