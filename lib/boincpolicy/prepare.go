package boincpolicy

import (
	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// prepareJobs is the part of prepare the bounds of the skips read (missesKnown,
// workBound): each job's simulated remaining work and rate, no miss yet, and the
// projects' correction factors; the pending lists, counts and priorities are pick's
// and setup's, which come after a whole prepare.
//
// And w.fall, how much faster than its work is done a job's remaining work may fall
// (the holds' bounds: workBound, lowFall, coFall, tieLead): an estimated remaining
// work ((1 − fraction done) × estimate × correction factor) falls up to Overestimate ×
// the factor times as fast; a true one (state.Task.EmulatorFlopsLeft, which remaining
// reads under BOINC's emulator, every task's from its arrival) exactly as fast, so
// such a job counts 1. (Under BOINC's emulator the estimates differ from the true
// work, and fall was Overestimate × the factor there too, 1.5 and more at nearly every
// pass of part-time-4cpu, down-2cpu and noisy, which shortened every hold: issue 30,
// nineteenth round.) fallCheck's test holds it to the runs (TestFallBound).
func (w *Workspace) prepareJobs(doc *state.Document) {
	gen := w.simGen
	w.simGen++ // the jobs' simulated times afresh (listUpper's kept ends)
	h := &doc.Host
	for r := range w.Sim {
		w.Sim[r] = ResourceSim{Type: h.Resources[r].Type}
	}
	clear(w.missed)
	cpuF, gpuF := availFrac(&h.TimeStats, false), availFrac(&h.TimeStats, true)
	if w.prepSame(doc, gen, cpuF, gpuF) {
		// Nothing prepareJobs reads changed since its last call, and of what it
		// sets only the misses' marks were written since (prepSame): those
		// cleared, its work stands.
		for i := range w.jobs {
			w.jobs[i].misses = false
		}
		if w.lowGen == gen {
			w.lowGen = w.simGen // the same times: missBounds' work stands too (lowSame)
		}
		w.prepGen = w.simGen
		if prepCheck {
			w.checkPrep(doc, cpuF, gpuF)
		}
		return
	}
	w.prepareWhole(doc, cpuF, gpuF)
	w.prepOK, w.prepGen, w.prepCPU, w.prepGPU = true, w.simGen, cpuF, gpuF
}

// prepSame reports whether prepareJobs' last work stands at a call with simGen gen
// before it and availabilities cpuF and gpuF: the jobs and their simulated times not
// changed since (simGen: the view, refresh and the simulation each count one; nothing
// else writes a job's inputs or simulated times), the availabilities and the
// projects' correction factors those it read. Under BOINC's emulator a task's true
// remaining work, which prepareJobs reads for fall, changes only where it computes,
// at a later moment, where the view is brought up to date (refresh) before the jobs
// are prepared (each caller's quietView or view). What else prepareJobs sets (the
// bounds' sums, fall, the coprocessor jobs' CPUs, dcfOf) only it writes; the jobs'
// misses, w.missed and w.Sim it clears at every call. (c182 prepared the same jobs
// again at 11,506 of its 28,418 calls of a 10-day run under BOINC's emulator: issue
// 30, thirty-first round; kept since the thirty-second.) prepCheck's test holds every
// answer to the whole work (TestPrepSame).
func (w *Workspace) prepSame(doc *state.Document, gen int, cpuF, gpuF float64) bool {
	if !w.prepOK || gen != w.prepGen && !prepBreak || cpuF != w.prepCPU || gpuF != w.prepGPU || len(w.dcfOf) != len(doc.Projects) {
		return false
	}
	for p := range doc.Projects {
		if w.dcfOf[p] != doc.Projects[p].DCF() {
			return false
		}
	}
	return true
}

// prepareWhole is prepareJobs' work, at availabilities cpuF and gpuF, the misses
// and counts cleared.
func (w *Workspace) prepareWhole(doc *state.Document, cpuF, gpuF float64) {
	w.dcfOf = scratch.Grow(w.dcfOf, len(doc.Projects))
	for p := range doc.Projects {
		w.dcfOf[p] = doc.Projects[p].DCF()
	}
	w.sums = scratch.Grow(w.sums, sumsPer*w.nRes)
	// The sums in locals, in the jobs' order as in memory (the same operations in
	// the same order: the same bits), and one resource's in locals too: a loop whose
	// sums went through memory at every job cost a tenth of a run of the public
	// example. (maxMore) A largest so far is raised by max only where the job's figure
	// is not at most it: max(m, x) is m where x <= m but for m = -0 and x = +0, and m
	// starts at +0 and max never makes it -0; a NaN on either side fails the test and
	// goes to max as before. The test is a comparison, the builtin max several
	// instructions for NaNs and zeros' signs (issue 30, thirty-second round).
	//
	// A job counts 1 in fall where its remaining work is true (j.known, as its view
	// found it: a task's EmulatorFlopsLeft changes only where it computes, at a later
	// moment, where the view is brought up to date before the jobs are prepared, as
	// prepSame says; knownCheck holds it). The task read from the document at every
	// job was the loop's largest line on c143 under BOINC's emulator (issue 30,
	// thirty-eighth round).
	if knownCheck {
		w.checkKnown(doc)
	}
	coprocCPUs, fall := 0.0, 1.0
	if w.nRes == 1 && w.cpuRes == 0 {
		var serial, work, maxT, maxU float64
		// (The slices in locals too: the stores to the jobs made the loop read them
		// through w at every job.)
		jobs, dcfOf, over := w.jobs, w.dcfOf, w.Overestimate
		for i := range jobs {
			j := &jobs[i]
			j.simLeft, j.simDone, j.misses = j.left, false, false
			j.simRate = j.speed * cpuF
			if j.simRate == 0 {
				j.simRate = 1e6 // BOINC's "just in case"
			}
			t := j.simLeft / j.simRate
			j.simT = t
			serial += t
			work += j.inst * t
			if !(t <= maxT) { // (maxMore)
				maxT = max(maxT, t)
			}
			if !(j.inst <= maxU) {
				maxU = max(maxU, j.inst)
			}
			if !j.known {
				// (maxMore: fall starts at 1, never a zero)
				if x := over * dcfOf[j.proj]; !(x <= fall) {
					fall = max(fall, x)
				}
			}
		}
		w.sums[sumSerial], w.sums[sumW], w.sums[sumMaxT], w.sums[sumMaxU] = serial, work, maxT, maxU
		w.coprocCPUs, w.fall = coprocCPUs, fall
		return
	}
	for i := range w.jobs {
		j := &w.jobs[i]
		j.simLeft, j.simDone, j.misses = j.left, false, false
		f := cpuF
		if j.res != w.cpuRes {
			f = gpuF
		}
		j.simRate = j.speed * f
		if j.simRate == 0 {
			j.simRate = 1e6 // BOINC's "just in case"
		}
		// The bounds' sums (missesKnown, workBound), in the jobs' order.
		t := j.simLeft / j.simRate
		j.simT = t
		s := w.sums[sumsPer*j.res : sumsPer*j.res+sumsPer]
		s[sumSerial] += t
		s[sumW] += j.inst * t
		if !(t <= s[sumMaxT]) { // (maxMore: the sums start at +0, Grow's)
			s[sumMaxT] = max(s[sumMaxT], t)
		}
		if !(j.inst <= s[sumMaxU]) {
			s[sumMaxU] = max(s[sumMaxU], j.inst)
		}
		if j.res != w.cpuRes {
			coprocCPUs += j.cpus
		}
		if !j.known {
			if x := w.Overestimate * w.dcfOf[j.proj]; !(x <= fall) {
				fall = max(fall, x)
			}
		}
	}
	w.coprocCPUs, w.fall = coprocCPUs, fall
}
