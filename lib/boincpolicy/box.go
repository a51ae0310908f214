package boincpolicy

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// A hold good while the RECs stay in a box (issue 30, ninth round). A pass reads the
// REC only through each project's fraction of the REC sum over the projects with jobs
// (Priority: minus that fraction over the share's; SchedBump raises a temporary REC by
// a fraction of the sum, so a job taken moves its project's fraction by the same
// amount whatever the sum). Every comparison of two priorities a pass or the bounds
// make is then a comparison of two expressions each linear in one project's fraction
// (slope prioSlope), so it keeps its outcome while every fraction stays within eps of
// where it was, eps being its margin over the two slopes (boxMargin); with every
// comparison's outcome kept, the same code path gives the same answer. The holds
// that rested on the REC found the served CPUs for any REC a horizon allowed
// (recRange: every instance busy for one project, twice over); part-time-4cpu's RECs
// sit where its projects' priorities meet, and every horizon failed there (the slack
// none, 1,757 of 2,898 quiet passes). The box asks instead, at each held moment, where
// the RECs are (inBox): a few operations a project.

// prioSlope is how much Priority moves for a unit of its project's REC fraction.
func prioSlope(share, shareFrac float64) float64 {
	if share != 0 && shareFrac > 0 {
		return 1 / shareFrac
	}
	return 1
}

// boxMargin is the half-width of the box of REC fractions within which priorities a
// and b (of slopes ca and cb, each its own project's) compare as they do now: none
// when they are equal, or within a margin for rounding (they are sums and quotients
// of fractions of order one, to about 1e-15).
func boxMargin(a, b, ca, cb float64) float64 {
	d := math.Abs(a-b) - 1e-9
	if !(d > 0) {
		return 0
	}
	return d / (ca + cb)
}

// setBox makes the hold just set good only while every project with jobs keeps its
// fraction of their REC sum within eps of its fraction now (+Inf: wherever the RECs
// go).
func (w *Workspace) setBox(doc *state.Document, eps float64) {
	w.boxEps = eps
	if math.IsInf(eps, 1) {
		return
	}
	w.boxF = scratch.Grow(w.boxF, len(doc.Projects))
	recFractions(doc, w.jobs, w.boxF)
}

// recFractions sets f[p] to project p's fraction of the REC sum over the projects
// with jobs, as Priorities takes it (a sum of 0 counts as 1), and NaN for a project
// without jobs.
func recFractions(doc *state.Document, jobs []job, f []float64) {
	for p := range f {
		f[p] = math.NaN()
	}
	for i := range jobs {
		f[jobs[i].proj] = 0
	}
	var sum float64
	for p := range f {
		if f[p] == 0 {
			sum += doc.Projects[p].REC
		}
	}
	if sum == 0 {
		sum = 1
	}
	for p := range f {
		if f[p] == 0 {
			f[p] = doc.Projects[p].REC / sum
		}
	}
}

// inBox reports whether the RECs are within the hold's box (setBox): the tasks have
// stayed as they are (a change ends the hold), so the projects with jobs are the same.
func (w *Workspace) inBox(doc *state.Document) bool {
	if math.IsInf(w.boxEps, 1) {
		return true
	}
	return recDrift(doc, w.boxF) <= w.boxEps // false when NaN
}

// recDrift is how far the projects' REC fractions have moved from f, the fractions a
// hold was made at (recFractions; NaN for a project left out): the greatest change of
// one, each taken of the sum over the projects f keeps (1 when that is 0). NaN when a
// project's REC is not a number.
func recDrift(doc *state.Document, f []float64) float64 {
	var sum float64
	for p, fp := range f {
		if !math.IsNaN(fp) {
			sum += doc.Projects[p].REC
		}
	}
	if sum == 0 {
		sum = 1
	}
	var far float64
	for p, fp := range f {
		if !math.IsNaN(fp) {
			far = max(far, math.Abs(doc.Projects[p].REC/sum-fp))
		}
	}
	return far
}

// pickMargin is the half-width of the box of REC fractions within which
// bestCPUByPriority's choice of project bp (just made) stands against every other
// project with a CPU job left to offer (rankCPUJobs' lists).
func (w *Workspace) pickMargin(doc *state.Document, bp int) float64 {
	eps := math.Inf(1)
	for q := 0; 3*q < len(w.rankNext); q++ {
		if q == bp || !w.offers(q) {
			continue
		}
		eps = min(eps, boxMargin(w.prio[bp], w.prio[q],
			prioSlope(doc.Projects[bp].ResourceShare, w.shareFrac[bp]), prioSlope(doc.Projects[q].ResourceShare, w.shareFrac[q])))
	}
	return eps
}

// coPickMargin is pickMargin for bestByPriority's choice of project bp (just made) on
// coprocessor r: the half-width of the box within which bp's priority stays above
// that of every other project with a job of r not chosen yet. (Its ties of priority
// are broken by a started job first: a margin of none, as boxMargin gives them.)
func (w *Workspace) coPickMargin(doc *state.Document, r, bp int) float64 {
	eps := math.Inf(1)
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != r || w.chosen[i] || j.proj == bp {
			continue
		}
		eps = min(eps, boxMargin(w.prio[bp], w.prio[j.proj],
			prioSlope(doc.Projects[bp].ResourceShare, w.shareFrac[bp]), prioSlope(doc.Projects[j.proj].ResourceShare, w.shareFrac[j.proj])))
	}
	return eps
}

// offers reports whether project q has a CPU job not chosen yet (rankCPUJobs' lists).
func (w *Workspace) offers(q int) bool {
	for k := 3 * q; k < 3*q+3; k++ {
		for x := w.rankNext[k]; x < w.rankAt[k+1]; x++ {
			if !w.chosen[w.ranked[x]] {
				return true
			}
		}
	}
	return false
}

// setKeepHold is setHold and setEDFHold for a quiet pass at now that edfKeeps or
// keepsMore cut short (it kept the jobs running) with some running job past its time
// slice, which they refuse: such a job runs on by priority, from the REC (keepsMore),
// and part-time-4cpu's passes were so at 2,626 of 2,809 whole passes, every one of
// them made. While the tasks stay as they are (a change ends the hold), until now +
// missesKnown's slack and the first time slice of a running job within one ends, and
// while the RECs stay in the box (w.listEps, the priority listing's, and w.recEps,
// missesKnown's), every pass makes the same listing and keeps the jobs running:
//
//   - the misses are the same (setHold's and setEDFHold's slack), so the same jobs
//     are listed for them, in the same order (setEDFHold's ties, edfListingSure);
//   - the running jobs within their slice stay so (until), and listed first after
//     the misses; those past their slice stay past it;
//   - the jobs listed by priority come in the same order: each pick's project is the
//     one of highest priority, and within the box each comparison keeps its outcome
//     (box.go); within a project the order is its jobs' ranks (running, preempted,
//     the others), which the tasks keep;
//   - so edfKeeps and keepsMore see the same entries and keep the jobs running,
//     whether they found the CPUs filled or the listing over with some CPU free
//     (schedule's keepsRunning at its end: the running jobs fill the CPUs in the
//     first case, and need not in the second).
//
// On a host whose CPU jobs all take the same CPUs (keepsMore's), none of a project
// whose correction factor puts its jobs in EDF; under BOINC's emulator every running
// job has run (its remaining work is its true one: setHold). On a host with
// coprocessor jobs (issue 30, twenty-first round) the coprocessors' listings come
// first and are in the list edfKeeps reads whole: their picks by priority are kept by
// the box too (coPickMargin), their misses' listing by coEDFSure, and a running
// coprocessor job's time slice bounds the hold as a CPU job's does (its entry's
// place in the run list and enforce_run_list's entry for it depend on it); under
// BOINC's emulator a coprocessor task's slice (sliceRun) counts to the end of the
// last step it computed in, which may jump ahead by the steps it did not compute in,
// so its end is taken no later than its start + the period.
func (w *Workspace) setKeepHold(doc *state.Document, now float64) {
	w.hold, w.holdMiss = false, false
	if w.changed || !w.kept {
		return
	}
	eps := min(w.recEps, w.listEps)
	if !(eps > 0) {
		return
	}
	period := doc.Preferences.CPUSchedulingPeriod
	nR := w.nRes
	ends := math.Inf(1)   // the first time slice's end
	first := -1           // the first CPU job
	free := w.sliceFree() // the slices' ends bound nothing
	coMiss := false       // a coprocessor job misses (coEDFSure)
	for i := range w.jobs {
		j := &w.jobs[i]
		if doc.Projects[j.proj].DCF() > EDFDCF {
			return
		}
		if co := j.res != w.cpuRes; !co {
			if first < 0 {
				first = i
			} else if j.cpus != w.jobs[first].cpus {
				return
			}
		} else if w.missed[j.proj*nR+j.res] > 0 {
			coMiss = true
		}
		if !j.running {
			continue
		}
		t := &doc.Tasks[j.task]
		if doc.BOINCEmulator && !(t.EmulatorFlopsLeft > 0) {
			return
		}
		if run := sliceRun(doc, t); run <= period {
			ends = min(ends, w.sliceBound(free, min(now+period-run, now+period-(t.ElapsedTime-t.ElapsedTimeAtLastSched))))
			if j.res != w.cpuRes && doc.BOINCEmulator && t.EmulatorRunStart > 0 {
				// A coprocessor task computes only while the GPUs are active, and
				// its slice's run (sliceRun) then jumps to the step's end: it
				// passes the period at its slice's start + the period at the
				// earliest.
				ends = min(ends, t.EmulatorRunStart+period)
			}
		}
	}
	if coMiss && !w.coEDFSure(doc) {
		return
	}
	rise := w.noRiseUntil(doc, now)
	until := min(now+w.slack, ends, rise)
	if !(until > now) {
		return
	}
	sure := math.Inf(1)
	if w.anyMiss {
		var ok bool
		sure, ok = w.edfListingSure(doc, now)
		if until = min(until, sure); !ok || !(until > now) {
			return
		}
	}
	w.hold, w.holdUntil, w.holdMiss = true, until, w.anyMiss
	w.setBox(doc, eps)
	w.carryHold(doc, min(ends, sure, rise), w.listEps)
}

// carryHold keeps, for rehold, what the hold just set at a pass (setKeepHold's or
// setEDFHold's) rests on besides its misses' slack and box: until, the first of its
// slices' ends, its ties' order's and a rise; eps, its listing by priority's box
// about the fractions now (+Inf: none); the misses.
func (w *Workspace) carryHold(doc *state.Document, until, eps float64) {
	w.khCarry, w.khAny, w.khBound = true, w.anyMiss, w.boundMiss
	w.khUntil, w.khEps = until, eps
	w.khMissed = append(w.khMissed[:0], w.missed...)
	// The listing's jobs listed for their misses: one fewer left for each (schedule).
	w.khPicks = scratch.Grow(w.khPicks, len(w.missed))
	for k := range w.khPicks {
		w.khPicks[k] = w.missed[k] - w.missedCopy[k]
	}
	if alikeCheck {
		alikeKh = edfTasks(alikeKh[:0], w.list)
	}
	if !math.IsInf(w.khEps, 1) {
		w.khF = scratch.Grow(w.khF, len(doc.Projects))
		recFractions(doc, w.jobs, w.khF)
	}
}

// noRiseUntil is the first moment a running job's estimated remaining work may grow
// (+Inf: none): state.Task.RemainingWork takes (1 − fraction done) × estimate ×
// correction factor while the work done is below estimate × correction factor, and
// the true remaining work (work done × (1 − fraction done) ÷ fraction done) past it,
// which is more when the estimate so corrected is below the true work: part of a
// job's remaining work is then found at that moment, and a job may come to miss its
// deadline. The holds (setHold, setEDFHold, setKeepHold) rest on remaining work that
// only falls, so they end by then: the work done grows by at most the job's speed a
// second (lib/sim runs a task at its app version's speed, less when the CPUs are
// overcommitted). Found on corpus c174 (D's jobs estimated at 0.74 × their work):
// a job's remaining time 2,826 s became 5,184 s in a step, and an A job came to miss
// behind it 60 s into a hold whose slack was 1,064 s. Under BOINC's emulator a started
// job's remaining work is its true one (EmulatorFlopsLeft), which only falls.
//
// It is kept for the moment (w.riseAt, w.riseUntil) until the jobs or the tasks may
// change (view, refresh, TasksChanged, TaskFinished): a listing pass asks it two to
// four times at one moment (keepMisses, setHold, setKeepHold or setEDFHold, rehold),
// about half of its calls in part-time-4cpu, noisy and down-2cpu (issue 30,
// eighteenth round). riseCheck (the tests') computes it at every call and counts
// where a kept one differs (riseDiffs).
func (w *Workspace) noRiseUntil(doc *state.Document, now float64) float64 {
	kept := w.riseKept && w.riseAt == now
	if kept && !riseCheck {
		return w.riseUntil
	}
	until := w.noRiseFrom(doc, now)
	if kept && math.Float64bits(until) != math.Float64bits(w.riseUntil) {
		riseDiffs++
	}
	w.riseKept, w.riseAt, w.riseUntil = true, now, until
	return until
}

// riseCheck, riseDiffs: noRiseUntil's check (tests only).
var (
	riseCheck bool
	riseDiffs int
)

// noRiseFrom is noRiseUntil computed.
func (w *Workspace) noRiseFrom(doc *state.Document, now float64) float64 {
	until := math.Inf(1)
	for i := range w.jobs {
		if j := &w.jobs[i]; j.running {
			until = min(until, riseFrom(doc, j, &doc.Tasks[j.task], now))
		}
	}
	return until
}

// riseFrom is noRiseUntil's bound for job j (task t) running from now: the first
// moment its estimated remaining work may grow (+Inf: never; now: it may at once).
// setHold reads it for the jobs a pass started, which noRiseUntil, reading the jobs
// running before the pass, leaves out.
func riseFrom(doc *state.Document, j *job, t *state.Task, now float64) float64 {
	if doc.BOINCEmulator && t.EmulatorFlopsLeft > 0 {
		return math.Inf(1)
	}
	e := t.EstimatedFlops * doc.Projects[j.proj].DCF()
	if !(t.FlopsDone < e) {
		return math.Inf(1) // past it already: the true remaining work
	}
	if t.FractionDone > 0 && t.FlopsDone/t.FractionDone <= e {
		return math.Inf(1) // its true work within the corrected estimate: it ends first
	}
	if !(j.speed > 0) {
		return now
	}
	return now + (e-t.FlopsDone)/j.speed
}

// recRange bounds the REC of every project with runnable jobs at any moment until
// until, from its REC now, while the tasks stay as they are (so that the projects
// with runnable jobs, whose RECs are summed, stay the same): at least decay × REC, at
// most REC + grow, and their sum R at least decay × R and at most R + grow (in
// Priority's terms, a project's fraction of the sum at least decay × R × REC ÷ (R +
// grow) ÷ R and at most (REC + grow) ÷ decay ÷ R). Why: REC is brought up to date only
// by credit.Decay.Average from its time (RECTime), as avg × w + (1 − w) × the credit
// per day of the interval, w = e^(−ln 2 × interval ÷ RECHalfLife) at least decay (the
// oldest RECTime to until), the credit per day of all projects together at most the
// host's every instance busy (twice that, for margin). It reports false when a
// project's REC was never brought up to date (its first credit is not so averaged) or
// the sum is not positive.
func (w *Workspace) recRange(doc *state.Document, recSum, until float64) (decay, grow float64, ok bool) {
	oldest := math.Inf(1)
	for p := range doc.Projects {
		if !w.eligible[p] {
			continue
		}
		if !(doc.Projects[p].RECTime > 0) {
			return 0, 0, false
		}
		oldest = min(oldest, doc.Projects[p].RECTime)
	}
	if !(recSum > 0) || !(until >= oldest) {
		return 0, 0, false
	}
	var perDay float64 // the host's credit per day, every instance busy
	cpu := doc.Host.CPU().Flops
	for r, res := range doc.Host.Resources {
		perDay += float64(res.Instances) * cpu * w.relSpeed[r]
	}
	perDay *= 2 * 86400 * CobblestoneScale
	decay = math.Exp(-(until - oldest) * math.Ln2 / RECHalfLife)
	// A margin for rounding: the REC's own arithmetic.
	decay *= 1 - 1e-9
	return decay, (1 - decay) * perDay * (1 + 1e-9), true
}

// recHorizon is how far missesKnown's bounds per job (projectBounds) look: the longest
// its slack may then be.
const recHorizon = 3600

// recHorizons are the horizons missesKnown tries in turn for the served CPUs, where a
// longer one leaves a job open (the REC moves less in a shorter one), the last at now
// only.
var recHorizons = [...]float64{recHorizon, 600, 0}

// rehold is setKeepHold's or setEDFHold's hold carried past its end (issue 30,
// fourteenth round): a quiet pass at now whose misses (missesKept or missesKnown,
// just found: w.missed, w.anyMiss, w.boundMiss, their slack and box) are those of the
// last such hold's listing (carryHold; or counts that list the same jobs for their
// misses, missesAlike), with the tasks as they were then (a change, a simulation or a listing
// since ends the carry), before the first of that listing's running jobs' time slices
// ended, its ties' order may change (edfListingSure) or a running job's remaining
// work may grow since (noRiseUntil then and now), and with the RECs within its
// listing's box about the fractions then (khEps, khF), makes that listing again:
// the hold's argument, from that pass's moment, with these misses. It sets the
// hold (until the first of those and now + the misses' slack; in the box of the
// misses' about now and what is left of the listing's about then) and reports
// whether it did; then the pass is not made. (part-time-4cpu's keep holds ended at
// their misses' slack before 376 of its 781 whole listings a 10-day run; rehold
// makes 282 of those passes, leaving 529 listings; setEDFHold's too, noisy's whole
// listings 854 → 533: issue 30, fourteenth round.)
func (w *Workspace) rehold(doc *state.Document, now float64) bool {
	if !w.khCarry || !(now < w.khUntil) || w.anyMiss != w.khAny || w.boundMiss != w.khBound ||
		!w.missesAlike() {
		return false
	}
	eps := w.recEps
	if !math.IsInf(w.khEps, 1) {
		eps = min(eps, w.khEps-recDrift(doc, w.khF)) // false when NaN
	}
	if !(eps > 0) {
		return false
	}
	if doc.BOINCEmulator {
		for i := range w.jobs {
			if t := &doc.Tasks[w.jobs[i].task]; w.jobs[i].running && !(t.EmulatorFlopsLeft > 0) {
				return false
			}
		}
	}
	until := min(now+w.slack, w.khUntil, w.noRiseUntil(doc, now))
	if !(until > now) {
		return false
	}
	w.hold, w.holdUntil, w.holdMiss = true, until, w.anyMiss
	w.setBox(doc, eps)
	w.reheld++
	if alikeCheck && !slices.Equal(w.missed, w.khMissed) {
		w.checkAlike(doc, now)
	}
	return true
}
