package boincpolicy

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// The skips' bounds on the simulation's deadline misses (missesKnown), and tighter
// ones (issue 30, sixth round): where missesKnown's and workBound's bounds per
// resource leave the simulation's answer open, these look at the pick's order (a
// project sure of CPUs at every pick) and at how the CPUs empty (each job one
// instance), and often decide it without the simulation.

// missesKnown reports whether the simulation's deadline misses are known without it
// (prepareJobs done: its sums), and if so counts them as the simulation would
// (w.missed, each job's misses, w.Sim's): every job either certainly misses or
// certainly does not.
//
// A job whose computation deadline (its report deadline − work_buf_min −
// DeadlineCushion) is already past at now misses whatever the simulation does: its
// simulated finish is now plus times ≥ 0. (A host whose jobs' latency is below
// work_buf_min has every job so; BOINC's client then runs them earliest deadline
// first.)
//
// A job misses no deadline when its computation deadline is at or after a bound on
// when its resource's last job finishes: at every moment of the simulation at least
// one job of each resource with jobs left runs at its full rate (pick takes a
// project's job before it checks saturation), so the sum over a resource's jobs of
// their remaining time ÷ rate bounds it.
//
// A second bound holds for a resource of n instances: while some of its jobs wait,
// those running use at least n instances (pick takes jobs until they do), of which
// the coprocessor jobs' CPUs take at most G on the CPUs (G: those at once,
// coCPUsOnce), so its jobs' instance-seconds W are done at n − G a second at
// least; once none waits, each running job ends within t, the longest time ÷ rate
// any of them has left. Its last job therefore ends by W ÷ (n − G) + t. The
// smaller of the two bounds is taken.
//
// Where its resource's bound leaves a job open, the bounds per job of
// projectBounds (the jobs of a project sure of some CPUs at every pick of the
// simulation) may show it ends in time, and missBounds' that it certainly misses; the
// first are good until recHorizon when they hold for any REC the projects may have
// by then, else at now only (the slack is then none); missBounds' likewise, and a
// miss it finds holds while its margin lasts at the pace lowFall gives (issue 30,
// eighth round: down-2cpu's misses behind P had a whole pass at every step). A
// coprocessor job its resource's bound leaves open is decided by coprocBounds' bounds
// (which read no REC) when every job of its resource takes all its instances; a miss
// so found counts as one by missBounds' bound below (w.boundMiss, w.lowSlack), as does
// one found where the served CPUs tie (tiedMiss: tied.go), tried where missBounds'
// bound leaves a CPU job open.
//
// w.slack is then how long from now no job that does not miss can come to miss (the
// least margin to the bound), nor a job that misses by missBounds' bound come not to;
// w.anyMiss whether some job misses, w.boundMiss whether one by missBounds' bound.
func (w *Workspace) missesKnown(doc *state.Document, now float64) bool {
	nR := w.nRes
	w.bound = scratch.Grow(w.bound, 3*nR) // per resource: the bound on its last finish
	coCPUs := w.coCPUsOnce(doc)
	for r := range nR {
		s := w.sums[sumsPer*r : sumsPer*r+sumsPer]
		b := w.bound[3*r : 3*r+3]
		b[0] = s[sumSerial]
		n := float64(doc.Host.Resources[r].Instances)
		if r == w.cpuRes {
			n -= coCPUs
		}
		if n > 0 {
			b[0] = min(b[0], s[sumW]/n+s[sumMaxT])
		}
	}
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	w.slack, w.lowSlack, w.capSlack = math.Inf(1), math.Inf(1), math.Inf(1)
	w.anyMiss, w.boundMiss = false, false
	// The bounds per job (projectBounds), when the resource's do not decide: first
	// good until recHorizon, then at now only (now2); and missBounds'.
	perJob, lower, now2 := false, false, false
	// The served CPUs' horizon (recHorizons[level], the last at now only), and
	// missBounds': its level, and lowFall's; tiedEnds done at the level.
	level, lowLevel, lowK, tiedDone := 0, 0, false, false
	start := 0       // the first level tried (firstLevel)
	coDone := false  // coprocBounds done
	coNow := false   // a coprocessor job decided by pick's order at now (coAheads)
	sameTry := false // sameCheck's: the level is one servedSame passes over
	last := len(recHorizons) - 1
	for i := range w.jobs {
		j := &w.jobs[i]
		if now > j.deadline-comp { // the simulation's test, at its earliest finish
			w.anyMiss = true
			continue
		}
		// A margin for rounding: the simulation sums the same times in another order.
		late := j.deadline - comp - (now + w.bound[3*j.res]*(1+1e-9) + 1e-6)
		if late >= 0 {
			w.slack = min(w.slack, late)
			continue
		}
		if j.res != w.cpuRes {
			// The coprocessor jobs' bounds per job (coprocBounds), on a resource
			// whose every job takes all its instances.
			if !coDone {
				w.coprocBounds(doc)
				coDone = true
			}
			if !w.coWhole[j.res] {
				return false // the bounds per job below are the CPU jobs' (projectStats)
			}
			if late = j.deadline - comp - (now + w.coUp[i]*(1+1e-9) + 1e-6); late >= 0 {
				w.slack = min(w.slack, late)
				continue
			}
			over := now + w.coLow[i]*(1-1e-9) - 1e-6 - (j.deadline - comp)
			if !(over > 0) && w.coOrdered && !doc.BOINCEmulator {
				// pick's order of the projects at now (coAheads): the slack is then none.
				if late = j.deadline - comp - (now + w.coEx[i]*(1+1e-9) + 1e-6); late >= 0 {
					w.slack, coNow = min(w.slack, late), true
					continue
				}
				if over = now + w.coEx[i]*(1-1e-9) - 1e-6 - (j.deadline - comp); over > 0 {
					coNow = true
				}
			}
			if !(over > 0) {
				return false
			}
			w.anyMiss, w.boundMiss = true, true
			j.misses = true // certainly: counted below
			if fall := w.coFall(doc, coCPUFall); fall > 0 {
				w.lowSlack = min(w.lowSlack, over/fall)
			}
			continue
		}
		if !perJob {
			// The list schedule in pick's order first at the next passes, where
			// it holds (missesListedPick: listFirst).
			w.listFirst = perJobRest
			if w.perJobSkip > 0 {
				// The bounds per job failed at the last passes that tried them:
				// the simulation, without them, for a while (perJobFailed).
				w.perJobSkip--
				return false
			}
			if !w.projectStats(doc) {
				return false
			}
			perJob = true
			level = w.firstLevel()
			start = level
			for !w.projectServed(doc, now, recHorizons[level]) {
				level++
			}
			w.capSlack = recHorizon
			if h := recHorizons[level]; h > 0 {
				w.capSlack = min(w.capSlack, h)
			}
			w.slack = min(w.slack, w.capSlack)
		}
		for {
			if late = w.cumLate(doc, i, now, comp); late >= 0 {
				if level == last {
					now2 = true
				}
				w.slack = min(w.slack, late)
				break
			}
			// A miss by the bound from below, found with the served CPUs of the
			// horizon, before shorter horizons are tried (for an end in time, and
			// then the bound from below again: as many or more CPUs served).
			if !lower {
				w.missBounds(doc)
				lower, lowLevel, lowK = true, level, false
			}
			if over := now + w.low[i]*(1-1e-9) - 1e-6 - (j.deadline - comp); over > 0 {
				w.anyMiss, w.boundMiss = true, true
				j.misses = true // certainly: counted below
				if lowLevel == last {
					now2 = true
				}
				if !lowK { // lowFall's rates, of missBounds' served CPUs
					w.lowFall(doc)
					lowK = true
				}
				if fall := w.lowK[i]; fall > 0 {
					w.lowSlack = min(w.lowSlack, over/fall)
				}
				break
			}
			if slack, ok := w.tiedMissAt(doc, i, now, comp, &tiedDone); ok {
				w.anyMiss, w.boundMiss, j.misses = true, true, true // certainly (tiedEnds)
				now2 = now2 || level == last
				w.lowSlack = min(w.lowSlack, slack)
				break
			}
			if w.gRECFree || level == last {
				w.perJobFailed()
				w.longDone(start, level)
				return false
			}
			// A shorter horizon, where the REC moves less (the last: now alone),
			// but where the shorter ones have failed of late (shortFailed); one
			// that serves the same CPUs gives the same bounds, and fails again.
			for {
				if level++; level < last && w.shortSkip > 0 {
					w.shortSkip--
					level = last
				} else if level == last && last > 1 {
					w.shortFailed()
				}
				for ; !w.projectServed(doc, now, recHorizons[level]); level++ {
				}
				if !w.servedSame || level == last || sameCheck {
					break
				}
			}
			if sameTry = w.servedSame && sameCheck; sameTry {
				sameChecks++ // tried all the same: it must fail again
			} else if w.servedSame {
				w.perJobFailed()
				w.longDone(start, level)
				return false
			}
			if h := recHorizons[level]; h > 0 && !sameTry {
				w.slack = min(w.slack, h)
				w.capSlack = min(w.capSlack, h)
			}
			lower, tiedDone = false, false
		}
		if sameTry {
			sameDiffs++ // job i decided at a level servedSame passes over
			sameTry = false
		}
	}
	if perJob {
		w.perJobFails = 0
		if level > 0 && level < last {
			w.shortFails = 0
		}
		w.longDone(start, level)
	}
	// The served CPUs found at now hold while the RECs stay in the box their
	// comparisons leave (projectServed's servedEps); with none, the slack is none.
	w.recEps = math.Inf(1)
	if now2 {
		if w.servedEps > 0 {
			w.recEps = w.servedEps
		} else {
			w.slack, w.capSlack = 0, 0
		}
	}
	// The misses by missBounds' bound apart (missesKept may look at them again).
	w.restSlack, w.slack = w.slack, min(w.slack, w.lowSlack)
	if coNow && !coNowSlack {
		w.restSlack, w.slack, w.capSlack = 0, 0, 0
	}
	if w.anyMiss {
		w.markMisses(now, comp)
	}
	if coOnceCheck {
		w.checkCoOnceMisses(doc, now)
	}
	return true
}

// sameCheck, sameChecks, sameDiffs: with the check on (tests only), missesKnown tries
// every level servedSame passes over (the served CPUs those of the level that left
// job i open) all the same: sameChecks counts them, sameDiffs those at which job i
// was decided after all.
var (
	sameCheck             bool
	sameChecks, sameDiffs int
)

// perJobFailed counts a pass at which the bounds per job left a job open (the
// simulation then runs after them): after perJobTries in a row they are not tried
// at the next perJobRest passes that would need them, where they would likely cost
// for nothing (on some corpus hosts they fail at almost every pass). Whether they are
// tried changes no decision: the simulation decides what they leave.
func (w *Workspace) perJobFailed() {
	if w.perJobFails++; w.perJobFails >= perJobTries {
		w.perJobFails, w.perJobSkip = 0, perJobRest
	}
}

const perJobTries, perJobRest = 2, 16 // 2 from 4: issue 30, forty-second round (down-2cpu, part-time-4cpu)

// firstLevel is the horizon of recHorizons missesKnown tries first: the longest,
// unless it has failed at the last perJobTries passes that tried it (longDone), when
// it is passed over at the next perJobRest passes for the next one, or for now alone
// while that one rests too (shortFailed). part-time-4cpu's RECs move too fast for an
// hour's horizon at nine passes in ten, and trying it first cost a projectServed, a
// listUpper and often a missBounds at every pass (issue 30, eleventh round). Like
// perJobFailed's rule it changes no decision, only how long a pass may be held.
func (w *Workspace) firstLevel() int {
	if w.longSkip == 0 {
		return 0
	}
	w.longSkip--
	if w.shortSkip > 0 {
		w.shortSkip--
		return len(recHorizons) - 1
	}
	return 1
}

// longDone counts a pass whose bounds per job were tried from level start and ended
// at level (firstLevel's rule): a failure of the longest horizon when it was tried
// and another decided.
func (w *Workspace) longDone(start, level int) {
	switch {
	case start != 0:
	case level == 0:
		w.longFails = 0
	default:
		if w.longFails++; w.longFails >= perJobTries {
			w.longFails, w.longSkip = 0, perJobRest
		}
	}
}

// shortFailed counts a pass at which the shorter horizons of recHorizons left a job
// open (the served CPUs at now alone then decided): after perJobTries in a row they
// are not tried at the next perJobRest passes that would need them (part-time-4cpu's
// RECs move too fast for any, and trying them cost a twentieth of its run). Whether
// they are tried changes no decision, only how long the pass may be held.
func (w *Workspace) shortFailed() {
	if w.shortFails++; w.shortFails >= perJobTries {
		w.shortFails, w.shortSkip = 0, perJobRest
	}
}

// projectBounds readies missesKnown's bound per job (w.cum[i]: CPU job i ends by now
// + w.cum[i] in the simulation). It reports false when the RECs cannot be bounded
// over the horizon. Beside coprocessor jobs (issue 30, twelfth round) the argument
// below holds with their CPUs counted first: pick takes them before the CPU jobs, at
// most gCoCPUs at once, so the CPUs left the CPU jobs are at least the host's less
// those (the limit of the CPUs served), and a job that waits does so only while the
// CPUs are used by other jobs, the coprocessor jobs' CPU-seconds (gCoSecs) among them.
//
// Why: pick takes a project's jobs in the jobs' order, the project of highest
// priority first, each job taken lowering its project's priority (its temporary REC
// raised by the job's SchedBump), from the same priorities (prepare's) at every pick,
// until the jobs taken use the CPUs. Before p's k-th job, p's priority is at least
// its REC raised k − 1 times by its largest bump gives, and a project q is taken only
// while its priority is at least that, which its REC raised by its least bump at each
// job taken bounds from above (Priority falls as the REC grows; floating-point sums
// and quotients are monotone), and at most as many jobs as it has; so when the CPUs of
// the jobs that may come before p's k-th job (p's k − 1 first among them) are fewer
// than the host's, p's first k jobs left are taken at every pick while it has k (a
// project left with fewer jobs takes fewer; the priorities start from the same at
// every pick). Under BOINC's emulator the projects come by address, the last in the
// document first (pick): the jobs before p's first are at most every later project's,
// and p then takes every job until the CPUs are used. With g so taken (p "served" g
// CPUs), a job i of p waits only while g jobs of p before it run, each at its full
// rate (its simulated time falling a second a second), and then runs to its end: it
// ends by the times of p's jobs before it ÷ g + its own. A job of a project served
// none waits only while the CPUs are used (pick stops only then) by jobs of other
// projects and p's before it: by their CPU-seconds ÷ the CPUs, and then its own time.
//
// The bound reads the REC, which moves from moment to moment. With horizon 0 it holds
// at now only (missesKnown's slack is then none); with a horizon, from now to now +
// horizon, the tasks staying as they are: the served CPUs are then found for any REC
// the projects may have by then (recRange), and the times only fall.
func (w *Workspace) projectBounds(doc *state.Document, now, horizon float64) bool {
	if !w.projectStats(doc) || !w.projectServed(doc, now, horizon) {
		return false
	}
	w.listUpper(doc, len(doc.Projects))
	return true
}

// cumLate is how long job i ends before its computation deadline (now, comp:
// missesKnown's) by projectServed's bound from above (a margin for rounding: the
// simulation sums the same times in another order), the list schedules' taken
// (listUpper) only when the sums' leave it late: they cost more, and most passes
// need only the sums.
func (w *Workspace) cumLate(doc *state.Document, i int, now, comp float64) float64 {
	late := w.jobs[i].deadline - comp - (now + w.cum[i]*(1+1e-9) + 1e-6)
	if late < 0 && !w.listUp {
		w.listUpper(doc, len(doc.Projects))
		late = w.jobs[i].deadline - comp - (now + w.cum[i]*(1+1e-9) + 1e-6)
	}
	return late
}

// projectServed is projectBounds' second part (projectStats done): the CPUs each
// project is served, and the bound per job, for the horizon. It reports false when
// the RECs cannot be bounded over the horizon (recRange).
func (w *Workspace) projectServed(doc *state.Document, now, horizon float64) bool {
	nP := len(doc.Projects)
	recSum, cpuSecs := w.gRecSum, w.gCPUSecs
	var decay, grow float64
	if horizon > 0 && !w.gRECFree {
		var ok bool
		if decay, grow, ok = w.recRange(doc, recSum, now+horizon); !ok {
			return false
		}
	}
	// The CPUs the last call served (servedSame), kept before they are cleared: a
	// copy taken after scratch.Grow was every time zeros, so servedSame held only
	// where no project was served any, and a shorter horizon serving the same CPUs
	// as the one that failed was tried again, its listUpper and tiedEnds worked out
	// afresh to fail the same way (issue 30, forty-fourth round).
	w.gPrev = append(w.gPrev[:0], w.gServed...)
	w.gServed = scratch.Grow(w.gServed, nP)
	w.cum = growJobs(w.cum, len(w.jobs))
	// At now, the box of REC fractions the served CPUs hold in (box.go): the least
	// margin of the comparisons of priorities made below.
	track := horizon == 0 && !w.gRECFree
	w.servedEps = math.Inf(1)
	if !doc.BOINCEmulator {
		w.servedPrios(doc, recSum, horizon > 0 && !w.gRECFree, decay, grow)
	}
	cpus := float64(doc.Host.CPU().Instances)
	// What pick's sums of the CPUs in use may differ by from these, in another order;
	// the coprocessor jobs' CPUs are counted before the CPU jobs' (at most gCoCPUs).
	limit := (cpus-w.gCoCPUs)*(1-1e-12) - 1e-9
	for p := range nP {
		w.gServed[p] = 0
		if !w.eligible[p] {
			continue
		}
		g := w.gCPUs[4*p : 4*p+4]
		if doc.BOINCEmulator {
			// pick takes the projects by address, the last first, each until its
			// jobs run out or the CPUs are used: before p's k-th job come every
			// later project's jobs (their CPUs, ahead) and p's k − 1 before it, so
			// p is served k while those are fewer than the CPUs left. (Served one
			// at most, part-time-4cpu's 10-day run under BOINC's emulator ran the
			// simulation at 5,523 of its 6,106 passes, 10 with this: issue 30,
			// nineteenth round.)
			var ahead float64
			for q := p + 1; q < nP; q++ {
				ahead += w.gCPUs[4*q+1]
			}
			for k := 1.0; k <= g[0] && ahead+(k-1)*g[2] < limit; k++ {
				w.gServed[p] = k
			}
			continue
		}
		x := w.rec[p] // p's REC before its k-th job, at most
		if horizon > 0 && !w.gRECFree {
			x = (x + grow) / decay
		}
		if servedCheck {
			w.checkServed(doc, p, x, recSum, limit, track, horizon, decay, grow)
		} else {
			w.servedREC(doc, p, x, recSum, limit, track)
		}
	}
	w.gSums = scratch.Grow(w.gSums, 2*nP)
	clear(w.gSums)
	sums, cpuSums := w.gSums[:nP], w.gSums[nP:] // per project: the times of its jobs so far, and their CPU-seconds
	// (The workspace's slices and figures in locals: the loop read them through w at
	// every job, after each store.)
	cum, gCPUs, served, coSecs, cpuRes := w.cum[:len(w.jobs)], w.gCPUs, w.gServed, w.gCoSecs, w.cpuRes
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != cpuRes {
			continue
		}
		p := j.proj
		t := j.simT
		// The other projects' CPU-seconds (every CPU job's but p's, and the
		// coprocessor jobs'), and p's before i.
		c := (cpuSecs+coSecs-gCPUs[4*p+3]+cpuSums[p])/cpus + t
		if g := served[p]; g > 0 {
			c = min(c, sums[p]/g+t)
		}
		cum[i] = c
		sums[p] += t
		cpuSums[p] += j.cpus * t
	}
	w.listUp = false
	w.servedSame = slices.Equal(w.gPrev, w.gServed)
	return true
}

// growJobs is scratch.Grow for a slice per job, with room for twice as many: the
// jobs' count grows by a few at a time in a run, and a slice grown to each new
// count would allocate at every one (TestStepLoopAllocatesNothing).
func growJobs(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n, 2*n)
	}
	return scratch.Grow(b, n)
}

// boundsScratch gives the bounds' buffers per project their room when the view is
// built, so that a run allocates them once at its start, not at the first moment a
// bound is needed (TestStepLoopAllocatesNothing counts a run's steady state).
func (w *Workspace) boundsScratch(nP, cpus int) {
	n := min(cpus, maxTop)
	w.gCPUs = scratch.Grow(w.gCPUs, 4*nP)
	w.gBump = scratch.Grow(w.gBump, 2*nP)
	if cap(w.statsJobs) < 6*nP || cap(w.statsElig) < nP {
		w.statsJobs, w.statsElig = make([]float64, 0, 6*nP), make([]bool, 0, nP)
	}
	w.gPrio = scratch.Grow(w.gPrio, nP)
	w.gShare = scratch.Grow(w.gShare, nP)
	w.gServed = scratch.Grow(w.gServed, nP)
	if cap(w.gPrev) < nP {
		w.gPrev = make([]float64, 0, nP)
	}
	w.gSums = scratch.Grow(w.gSums, 2*nP)
	if cap(w.sQ) < nP {
		w.sQ = make([]servedQ, 0, nP)
	}
	w.sPrio = growJobs(w.sPrio, len(w.jobs)+16)
	w.listFree = scratch.Grow(w.listFree, nP*n)
	w.listRel = scratch.Grow(w.listRel, nP*n)
	w.listNow = scratch.Grow(w.listNow, nP)
	if cap(w.top) < n {
		w.top = make([]float64, 0, n)
	}
	w.satFree = scratch.Grow(w.satFree, cpus)
	w.cum = growJobs(w.cum, len(w.jobs)+16)
	w.ownEnd = growJobs(w.ownEnd, len(w.jobs)+16)
	w.low = growJobs(w.low, len(w.jobs)+16)
	if cap(w.lowServed) < nP {
		w.lowServed, w.lowElig = make([]float64, 0, nP), make([]bool, 0, nP)
		w.fallServed, w.fallElig = make([]float64, 0, nP), make([]bool, 0, nP)
	}
	w.lowK = growJobs(w.lowK, len(w.jobs)+16)
	w.lowD = growJobs(w.lowD, len(w.jobs)+16)
	w.tied = growJobs(w.tied, 3*(len(w.jobs)+16))
	w.tiedFree = scratch.Grow(w.tiedFree, nP*n)
	w.tiedRun = scratch.Grow(w.tiedRun, 2*nP)
	if cap(w.fallD) < 2*(len(w.jobs)+16) {
		w.fallD = make([]float64, 0, 2*(len(w.jobs)+16))
	}
	w.lowRunP = scratch.Grow(w.lowRunP, 3*nP)
	w.coWhole = scratch.Grow(w.coWhole, w.nRes)
	w.coSums = scratch.Grow(w.coSums, w.nRes*nP)
	w.coOthers = scratch.Grow(w.coOthers, w.nRes*nP)
	w.coUp = growJobs(w.coUp, len(w.jobs)+16)
	w.coLow = growJobs(w.coLow, len(w.jobs)+16)
	w.coEx = growJobs(w.coEx, len(w.jobs)+16)
	w.coAhead = scratch.Grow(w.coAhead, w.nRes*nP)
	w.coPrio = scratch.Grow(w.coPrio, 2*nP)
	w.coOnce = scratch.Grow(w.coOnce, 4*w.nRes)
	w.coServed = scratch.Grow(w.coServed, n)
}

// markMisses marks missing every job found missing or whose computation deadline
// (its deadline less comp) has passed, and counts each by project and resource.
func (w *Workspace) markMisses(now, comp float64) {
	nR := w.nRes
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.misses || now > j.deadline-comp {
			j.misses = true
			w.missed[j.proj*nR+j.res]++
			w.Sim[j.res].Misses++
		}
	}
}
