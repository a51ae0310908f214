package boincpolicy

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// keepMisses keeps missesKnown's answer at now (it returned true), for the passes
// that follow within its slack (missesKept), and reports true. (part-time-4cpu made
// 186 of its 866 passes of a 10-day run within the slack of an earlier one, its
// hold ended by a time slice or the REC box of the listing: issue 30, eleventh
// round.)
func (w *Workspace) keepMisses(doc *state.Document, now float64) bool {
	// The slack rests on remaining work that only falls: it ends by the first
	// moment a running job's may grow (noRiseUntil), as the holds do.
	rise := w.noRiseUntil(doc, now)
	w.mkUntil, w.mkRest, w.mkEps = min(now+w.slack, rise), min(now+w.restSlack, rise), w.recEps
	w.mkStayed, w.mkRebound = false, false
	w.mkListed, w.listedNow = w.listedNow, false
	if w.mkKept = w.mkUntil > now; !w.mkKept {
		return true
	}
	w.mkAny, w.mkBound = w.anyMiss, w.boundMiss
	w.mkMissed = append(w.mkMissed[:0], w.missed...)
	w.mkMisses = scratch.Grow(w.mkMisses, len(w.jobs))
	for i := range w.jobs {
		w.mkMisses[i] = w.jobs[i].misses
	}
	if !math.IsInf(w.mkEps, 1) {
		w.mkF = scratch.Grow(w.mkF, len(doc.Projects))
		recFractions(doc, w.jobs, w.mkF)
	}
	// The last horizon's served CPUs missesKnown tried (the box's, when it has one).
	w.mkServed = append(w.mkServed[:0], w.gServed...)
	// For missesRelist and missesRebound: the rest's cap (its horizons') and the rise.
	w.mkRelist = w.relistable()
	w.mkCapAt, w.mkRiseAt = now+w.capSlack, rise
	return true
}

// missesStay reports whether every job the answer kept misses its deadline by (its
// computation deadline not yet past) still misses it at every moment until the
// answer's rest (mkRest), on a host of pickListed's whose CPUs are at most maxTop
// (issue 30, twenty-sixth round): then missesKept carries the misses by missBounds'
// bound to the rest without relow (and the pass's hold, rehold's or setEDFHold's,
// lasts as long). It is tried only where the misses' own slack has run out: tried
// when the answer is kept too, it cost more than it saved on corpus c150 (1,525
// tries for 110 relows saved in a 10-day run under BOINC's emulator).
//
// Why: on such a host the simulation is exactly the jobs' list schedule on the n
// CPUs from now in pick's order (pickListed, missesRelist), and a job's end in it
// only falls, by no more than the times fall (a job's time lowered by d moves each CPU's
// free time, in order, by d at most). While the answer holds (the tasks as they
// are, no pass starting or stopping a job, no running job's work growing before the
// rest) only the running jobs' times fall, each by per a second at most (lowFall's
// rate). So with H the rest from now, the ends e of the schedule with every running
// job's time lowered by per × H are at most the ends at any moment t in [now, now +
// H]: t + e_t ≥ now + e, and a job with now + e past its computation deadline
// misses it at every such t. (Corpus c143, 35 jobs of one deadline on 7 CPUs: the
// misses' own slack, their margins eaten at the running jobs' falls summed, ran out
// within minutes, so nearly every answer missesRelist carried went on to relow and
// setEDFHold's holds were as short.)
func (w *Workspace) missesStay(doc *state.Document, now float64) bool {
	n := doc.Host.CPU().Instances
	if n > maxTop || len(w.mkMisses) != len(w.jobs) {
		return false
	}
	order, ok := w.pickListed(doc, w.mkRelist)
	if !ok {
		return false
	}
	h := w.mkRest - now
	if !(h > 0) || math.IsInf(h, 1) {
		return false
	}
	cut := h * w.fall / availFrac(&doc.Host.TimeStats, false)
	w.relistFree = scratch.Grow(w.relistFree, n)
	free := w.relistFree
	clear(free)
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	for x := range w.jobs {
		i := x // the x-th job in pick's order (pickListed's)
		if order != nil {
			i = order[x]
		}
		j := &w.jobs[i]
		t := j.simT
		if j.running {
			t = max(t-cut, 0)
		}
		end := listEnd(free, t)
		if !w.mkMisses[i] || now > j.deadline-comp {
			continue // in time (the rest's), or missing whatever the simulation does
		}
		// A margin for rounding, as missesKnown's.
		if over := now + end*(1-1e-9) - 1e-6 - (j.deadline - comp); !(over > 0) {
			return false
		}
	}
	w.mkStayed = true
	return true
}

// relistable reports whether the simulation is the project's list schedule: a host
// whose runnable jobs are all CPU jobs of one CPU, of one project (pickListed's
// first case). It reads the jobs alone (their projects, resources and CPUs), so its
// answer is kept while they are (jobsGen, as emulatorOrder's): runHold and keepMisses
// ask at nearly every pass not held, and the walk of every job at each ask was about
// 2 % of corpus c143's run in both conventions (issue 30, forty-second round).
func (w *Workspace) relistable() bool {
	if w.relKept && w.relGen == w.jobsGen {
		if relistableCheck {
			relistableChecks++
			if w.relistWalk() != w.relOK {
				relistableDiffs++
			}
		}
		return w.relOK
	}
	w.relKept, w.relGen, w.relOK = true, w.jobsGen, w.relistWalk()
	return w.relOK
}

// relistWalk is relistable's answer from the jobs.
func (w *Workspace) relistWalk() bool {
	if len(w.jobs) == 0 {
		return false
	}
	p := w.jobs[0].proj
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != w.cpuRes || j.cpus != 1 || j.proj != p {
			return false
		}
	}
	return true
}

// relistableCheck: every answer relistable keeps is held to the walk (tests only),
// relistableChecks counting them and relistableDiffs those that differ.
var (
	relistableCheck                   bool
	relistableChecks, relistableDiffs int
)

// missesRelist carries the answer keepMisses kept past the end of its rest (the jobs'
// margins to their bounds from above, restSlack) at now, by each job's end in the
// jobs' list schedule in pick's order now (issue 30, twenty-fourth round; several
// projects under BOINC's emulator, fortieth): it reports whether
// every job the answer has in time still ends in time by it, and then sets the rest
// (mkRest and, with no miss by missBounds' bound, mkUntil) to the least margin so
// found, but not past the answer's horizons' cap nor the first moment a running job's
// work may grow (noRiseUntil at the answer's moment).
//
// Why: on a host of pickListed's the simulation runs the jobs exactly as their list
// schedule on the n CPUs from now in pick's order (pick takes the first min(n, jobs
// left) of that order at every pick: pickListed, listsched.go), whose ends
// listUpper's bound reads with one project (on maxTop CPUs at most: fewer CPUs,
// later ends); a job that misses its deadline still takes its CPU. So a job in time by
// it (with missesKnown's margin for rounding) is in time in the simulation, and the
// least margin is how long from now none can come to miss (the times only fall while
// the tasks stay as they are: a change ends the answer). The misses are the
// answer's: a job whose computation deadline is past stays so, and a miss by
// missBounds' bound is found again by relow past mkUntil. One list schedule costs a
// listEnd a job where missesKnown's whole answer costs its sums, projectStats,
// projectServed, listUpper's and listLower's list schedules and lowFall. (Corpus
// c143, one project with 35 jobs of one deadline per RPC: the rest of its answers
// ran out within two minutes at 4,395 of its 7,302 missesKnown of a 10-day run under
// BOINC's emulator, the margins kept by the running jobs' work.)
func (w *Workspace) missesRelist(doc *state.Document, now float64) bool {
	rest := min(w.mkCapAt, w.mkRiseAt)
	if len(w.mkMisses) != len(w.jobs) || !(rest > now) {
		return false
	}
	order, ok := w.pickListed(doc, w.mkRelist)
	if !ok {
		return false
	}
	n := min(doc.Host.CPU().Instances, maxTop)
	w.relistFree = scratch.Grow(w.relistFree, n)
	free := w.relistFree
	clear(free)
	// On every CPU (listUpper's own: as many jobs as CPUs, at most maxTop), the
	// schedule is the one listLower places first: its ends are kept for it (relow's
	// missBounds at this moment) as listUpper keeps its own.
	// (One project's: pickListed's order is then the jobs'.)
	own := n == doc.Host.CPU().Instances && len(w.jobs) >= n && order == nil
	if own {
		w.ownEnd = growJobs(w.ownEnd, len(w.jobs))
	}
	w.ownOK = false
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	for x := range w.jobs {
		i := x // the x-th job in pick's order (pickListed's)
		if order != nil {
			i = order[x]
		}
		j := &w.jobs[i]
		end := listEnd(free, j.simT)
		if own {
			w.ownEnd[i] = end
		}
		if w.mkMisses[i] {
			continue
		}
		// A margin for rounding: the simulation sums the same times in another
		// order (missesKnown's).
		late := j.deadline - comp - (now + end*(1+1e-9) + 1e-6)
		if !(late >= 0) {
			return false
		}
		rest = min(rest, now+late)
	}
	if !w.carryRest(rest, now) {
		return false
	}
	w.ownOK, w.ownP, w.ownGen = own, w.jobs[0].proj, w.simGen
	return true
}

// carryRest ends missesRelist and missesRebound once every in-time job was found
// still in time, rest the least margin: false when none is left; else the kept
// answer's rest is rest (and mkUntil too, with no miss by missBounds' bound).
func (w *Workspace) carryRest(rest, now float64) bool {
	if !(rest > now) {
		return false
	}
	if !w.mkBound {
		w.mkUntil = rest
	}
	w.mkRest, w.mkRelisted = rest, true
	return true
}

// missesRebound is missesRelist for the hosts pickListed leaves out under BOINC's
// emulator (a CPU job of several CPUs: no scenario has one, so since the fortieth
// round it runs in its test alone, SetNoPickOrder), where the served CPUs read no REC
// (gRECFree: pick takes the projects by address, so what each project is served
// follows from the jobs alone), when every job is a CPU job: it carries the answer
// keepMisses kept past the end of its rest at now by each job's bound from above at
// now (projectServed's and listUpper's, on the CPUs the answer
// found each project served), and reports whether every job the answer has in time
// still ends in time by it; then it sets the rest (mkRest and, with no miss by
// missBounds' bound, mkUntil) to the least margin so found, but not past the answer's
// horizons' cap nor the first moment a running job's work may grow (missesRelist's).
//
// Why: these are the bounds missesKnown itself would take for those jobs at now
// (the per-job bounds hold at any moment for the served CPUs found with the jobs as
// they are; the jobs are the answer's, the tasks unchanged since, so the served CPUs
// found now are the answer's, which is checked); a job in time by them is in time in
// the simulation, and the least margin is how long none can come to miss, the times
// only falling. The misses are the answer's: a job whose computation deadline is past
// stays so, and a miss by missBounds' bound is found again by relow past mkUntil
// (both as in missesRelist). It costs projectStats' sums kept for the jobs
// (statsTimes), projectServed's sums and, where they leave a job late, listUpper;
// missesKnown's whole answer adds the bounds per resource, missBounds' listLower and
// lowFall. (down-2cpu under BOINC's emulator, two projects on two CPUs: the rest of
// 780 of the 1,550 answers of a 10-day run ran out, each then a whole missesKnown:
// issue 30, thirty-ninth round.)
func (w *Workspace) missesRebound(doc *state.Document, now float64) bool {
	rest := min(w.mkCapAt, w.mkRiseAt)
	// (Under bsim's conventions the served CPUs of several projects read the REC,
	// and a host of one project is relistable's but for jobs of several CPUs, which
	// no scenario has: trying there cost more than it saved, down-2cpu +0.6 %.)
	if w.mkRelist || !doc.BOINCEmulator || len(w.mkMisses) != len(w.jobs) || len(w.jobs) == 0 || !(rest > now) {
		return false
	}
	if _, ok := w.pickListed(doc, false); ok {
		return false // missesRelist's host: its exact ends left a job late, or no rest
	}
	for i := range w.jobs {
		if w.jobs[i].res != w.cpuRes {
			return false
		}
	}
	if !w.projectStats(doc) || !w.gRECFree || !w.projectServed(doc, now, 0) || !slices.Equal(w.gServed, w.mkServed) {
		return false
	}
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	for i := range w.jobs {
		if w.mkMisses[i] {
			continue
		}
		// cumLate's test in place (missesKnown's margin for rounding): the call cost
		// more than the test at every job, and listUpper is needed at few.
		d := w.jobs[i].deadline - comp
		late := d - (now + w.cum[i]*(1+1e-9) + 1e-6)
		if late < 0 && !w.listUp {
			w.listUpper(doc, len(doc.Projects))
			late = d - (now + w.cum[i]*(1+1e-9) + 1e-6)
		}
		if !(late >= 0) {
			return false
		}
		rest = min(rest, now+late)
	}
	if !w.carryRest(rest, now) {
		return false
	}
	w.mkRebound = true
	return true
}

// relistCheck, relistDiffs, relistChecks: the tests' check of missesRelist. Wherever
// missesKept gives an answer missesRelist carried (at this pass or an earlier one), a
// whole simulation on a copy of the document, by a workspace of its own, must find
// the same jobs missing their deadlines (and the same counts per project and
// resource); relistDiffs counts where it did not, relistChecks the answers checked.
var (
	relistCheck               bool
	relistDiffs, relistChecks int
	stayDiffs, stayChecks     int // of those, the answers missesStay carried
	boundDiffs, boundChecks   int // of those, the answers missesRebound carried
)

// checkRelist is relistCheck's test of missesKept's answer at now.
func (w *Workspace) checkRelist(doc *state.Document, now float64) {
	relistChecks++
	same := w.sameAsSimulation(doc, now)
	if !same {
		relistDiffs++
	}
	if w.mkStayed {
		stayChecks++
		if !same {
			stayDiffs++
		}
	}
	if w.mkRebound {
		boundChecks++
		if !same {
			boundDiffs++
		}
	}
}

// sameAsSimulation reports whether a whole simulation at now on a copy of the
// document, by a workspace of its own, finds the jobs missing their deadlines that
// the answer has (and the same counts per project and resource): the tests' checks.
func (w *Workspace) sameAsSimulation(doc *state.Document, now float64) bool {
	whole := checkSpace(w.Overestimate)
	defer checkDone(whole)
	whole.Simulate(whole.checkCopy(doc), now)
	same := len(whole.jobs) == len(w.jobs) && slices.Equal(whole.missed, w.missed)
	for i := 0; same && i < len(w.jobs); i++ {
		same = whole.jobs[i].task == w.jobs[i].task && whole.jobs[i].misses == w.jobs[i].misses
	}
	return same
}

// missesKept is missesKnown at now from the answer keepMisses kept at an earlier pass
// (prepareJobs done), when it still holds: missesKnown's slack is how long from its
// moment no job that does not miss its deadline can come to, nor one that misses
// come not to, while the tasks stay as they are (a change of the tasks, or a pass that
// started or stopped one, ends it: the running jobs are those whose times fall), the
// RECs in the box of its served CPUs (recEps), and no running job's remaining work
// may grow (noRiseUntil, which the holds end by too: found on corpus c174 and
// others, whose decisions changed without it). So until then every job misses as
// it did; the slack left is what remains of it, and the box what remains of its box
// about the fractions now. It reports whether it set them (w.missed, each job's
// misses, w.Sim's counts, w.anyMiss, w.boundMiss, w.slack, w.recEps).
func (w *Workspace) missesKept(doc *state.Document, now float64) bool {
	if !w.mkKept || len(w.mkMisses) != len(w.jobs) {
		return false
	}
	if !(now < w.mkRest) && !w.missesRelist(doc, now) && !w.missesRebound(doc, now) || !(now < w.mkUntil) && !(w.mkBound && now < w.mkRest) {
		return false
	}
	eps := math.Inf(1)
	if !math.IsInf(w.mkEps, 1) {
		far := recDrift(doc, w.mkF) // how far the fractions moved
		if eps = w.mkEps - far; !(eps > 0) {
			if eps = w.reserve(doc, now); !(eps > 0) {
				return false
			}
		}
	}
	if !(now < w.mkUntil) && w.mkBound && w.missesStay(doc, now) {
		w.mkUntil = w.mkRest
	}
	if !(now < w.mkUntil) {
		low, ok := w.relow(doc, now)
		if !ok {
			return false
		}
		w.mkUntil = min(now+low, w.mkRest)
	}
	w.slack, w.recEps = w.mkUntil-now, eps
	w.anyMiss, w.boundMiss = w.mkAny, w.mkBound
	copy(w.missed, w.mkMissed)
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.misses = w.mkMisses[i]; j.misses {
			w.Sim[j.res].Misses++
		}
	}
	if relistCheck && (w.mkRelisted || w.mkStayed) {
		w.checkRelist(doc, now)
	}
	if listedCheck && w.mkListed {
		w.checkListed(doc, now)
	}
	return true
}

// reserve is missesKept's answer carried past its box (issue 30, thirteenth round):
// the bounds read the RECs only through the CPUs each project is served
// (projectServed, at now for an answer with a box), so when the served CPUs at now
// are those the answer was found with, every bound at now is one the answer's slack
// covers (the times only fell since, and a list schedule's ends with them: the same
// argument as within the box). It reports the new box's half-width (0: not carried),
// the box then now's. (part-time-4cpu's answers met their box's edge at 167 passes
// of a 10-day run, each then a whole missesKnown.)
func (w *Workspace) reserve(doc *state.Document, now float64) float64 {
	if !w.projectStats(doc) || !w.projectServed(doc, now, 0) || !slices.Equal(w.gServed, w.mkServed) {
		return 0
	}
	recFractions(doc, w.jobs, w.mkF)
	w.mkEps = w.servedEps
	return w.servedEps
}

// relow is missesKept's answer carried past the slack its misses by missBounds'
// bound gave (issue 30, thirteenth round), the rest of its slack not yet run out: the
// served CPUs it was found with hold now (the box or the horizon, within the rest),
// so missBounds' bound and lowFall's rates at now with them are sound, and where each
// job that missed by the bound still does, the answer stands, those jobs' slack
// found afresh (reported, with whether they all still miss). (part-time-4cpu's
// answers ended at that slack at 193 passes of a 10-day run, each then a whole
// missesKnown: projectStats, projectServed and listUpper, which the rest's slack
// still covers.)
func (w *Workspace) relow(doc *state.Document, now float64) (float64, bool) {
	copy(w.gServed, w.mkServed)
	clear(w.eligible)
	for i := range w.jobs {
		w.eligible[w.jobs[i].proj] = true
	}
	w.missBounds(doc)
	w.lowFall(doc)
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	slack := math.Inf(1)
	coDone := false // coprocBounds done
	for i := range w.jobs {
		j := &w.jobs[i]
		if !w.mkMisses[i] || now > j.deadline-comp {
			continue // missing whatever the simulation does
		}
		low, fall := w.low[i], w.lowK[i]
		if j.res != w.cpuRes {
			// A coprocessor job missed by coprocBounds' bound (missesKnown).
			if !coDone {
				w.coprocBounds(doc)
				coDone = true
			}
			if !w.coWhole[j.res] {
				return 0, false
			}
			low, fall = w.coLow[i], w.coFall(doc, coRelowCPUFall)
		}
		over := now + low*(1-1e-9) - 1e-6 - (j.deadline - comp)
		if !(over > 0) {
			return 0, false
		}
		if fall > 0 {
			slack = min(slack, over/fall)
		}
	}
	return slack, true
}
