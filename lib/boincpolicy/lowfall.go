package boincpolicy

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// missBounds readies a bound from below on when each job ends in the simulation
// (w.low[i], from now), after projectBounds, so that a job may be known to miss its
// deadline: at least its own simulated time, and on a host whose jobs each take one
// CPU, its project's list schedule on the CPUs the projects served some (projectServed)
// leave it (listLower). (The sixth round's bounds there, the sums of a project's jobs'
// times but the n − 1 longest ÷ n, after the sum of a project served every CPU but its
// n − 1 longest ÷ n, are never above these: the list schedules place the same jobs
// one by one.)
//
// Its bounds read only the jobs' simulated times, the projects with jobs (w.eligible)
// and the CPUs each is served (w.gServed): where none of these changed since its last
// work (lowSame), that work stands. (c182 under BOINC's emulator worked out the same
// bounds again at 4,701 of its 17,728 calls of a 10-day run: saturatedLowAt's after
// missesKnown's or relow's at the same moment, missesKnown's after relow's.)
func (w *Workspace) missBounds(doc *state.Document) {
	kept := w.lowSame()
	if kept && !lowCheck {
		return
	}
	keptList := w.lowList
	if kept {
		// lowCheck: the kept work, held to the work done again below.
		lowKeptChecks++
		w.lowKept = append(w.lowKept[:0], w.low[:min(len(w.low), len(w.jobs))]...)
	}
	w.lowOK, w.lowGen = true, w.simGen
	w.lowServed = append(w.lowServed[:0], w.gServed...)
	w.lowElig = append(w.lowElig[:0], w.eligible...)
	w.low = growJobs(w.low, len(w.jobs))
	n := doc.Host.CPU().Instances
	ones := n <= maxTop
	for i := range w.jobs {
		if w.jobs[i].cpus != 1 && w.jobs[i].res == w.cpuRes {
			ones = false
			break
		}
	}
	w.lowList = ones
	if ones {
		// The list schedules' bounds, which are at least the sums' below.
		if lowCheck {
			listLowerAgain = true
			w.listLower(len(doc.Projects), n)
			listLowerAgain = false
			w.lowCopy = append(w.lowCopy[:0], w.low[:len(w.jobs)]...)
		}
		w.listLower(len(doc.Projects), n)
		if lowCheck && !slices.Equal(w.lowCopy, w.low[:len(w.jobs)]) {
			lowDiffs++
		}
	} else {
		for i := range w.jobs {
			j := &w.jobs[i]
			w.low[i] = j.simT
		}
	}
	if kept && (keptList != w.lowList || !slices.Equal(w.lowKept, w.low[:len(w.jobs)])) {
		lowDiffs++
	}
}

// lowSame reports whether missBounds' last work stands: the jobs and their simulated
// times not changed since (simGen, which prepareJobs carries over where its own work
// stands: prepSame), nor the projects with jobs, nor the CPUs each is served.
// lowBreak (the tests') leaves simGen out, to show the check fails so.
func (w *Workspace) lowSame() bool {
	return w.lowOK && (w.lowGen == w.simGen || lowBreak) && slices.Equal(w.lowServed, w.gServed) && slices.Equal(w.lowElig, w.eligible)
}

// lowCheck: missBounds' list schedules from below are also worked out with every
// job placed again (listLowerAgain), and lowFall's rates with every served project's
// eq (lowFallAll), and the passes whose bounds or rates differ bit for bit counted in
// lowDiffs (a test's); so is missBounds' kept work (lowSame) against its work done
// again, and lowFall's (fallSame) against its work done again, lowKeptChecks counting
// those checked. lowBreak: lowSame leaves simGen out; fallBreak: fallSame the d's.
var (
	lowCheck, lowBreak, fallBreak bool
	lowDiffs, lowKeptChecks       int
)

// lowFallAll: lowFall works out every served project's eq, read or not (a test's, to
// check lowFall's rates against).
var lowFallAll bool

// lowFall sets w.lowK[i], how much faster than time job i's simulated end by
// missBounds' bound, now + w.low[i], may come nearer while the tasks stay as they
// are; only the running jobs' times fall, each by at most d = workBound's fall ÷ the
// availability the simulation runs it at a second, and now grows a second a second.
// Until over ÷ w.lowK[i] has passed, a job whose bound is past its computation
// deadline by over goes on missing it. Without the list schedules, w.low[i] is job
// i's own time: d − 1 if it runs. With them (listLower), job i's end is placed on its
// project's CPUs after its project's jobs before it, the CPUs from now or freed where
// the other served projects' list schedules leave them, and a bound e on how far the
// CPUs' free times, in order, may have fallen is carried job by job (shiftAfter): a
// job placed ends at most e + its d sooner, and e grows by its d; but on CPUs all
// free from now, each of the first n jobs starts now on a CPU of its own (its end
// falls by its own d), and the free times are then now and those ends, in order:
// sorting keeps a bound on every element's move, so e is the greatest d so far. The
// other served projects' CPUs fall by their own schedules' e (issue 30, tenth round:
// the eighth round's rate was the sum over every running job, 4d − 1 a second behind
// part-time-4cpu's four; behind the other served project's tails, its usual case,
// this still gives up to 4d − 1: docs/decisions.md).
// (The served CPUs the bound reads are the horizon's unless lowExact.)
//
// The rates read the times of no job: only each job's d (0 if it does not run), the
// jobs (their projects and resources, in order), whether the bounds are the list
// schedules' and the CPUs each project is served. Where none of these changed since
// its last work (fallSame), that work stands: under BOINC's emulator a running job's
// d is 1 ÷ the availability (runFall) from one pass to the next while the same jobs
// run. (c182 under BOINC's emulator worked out the same rates again at 9,893 of its
// 16,539 calls of a 10-day run, c143 at 1,536 of 2,203: relow's at the passes
// after, lowHold's after missesKnown's or relow's.)
func (w *Workspace) lowFall(doc *state.Document) {
	if lowCheck {
		lowFallAll = true
		w.lowFallOnce(doc)
		lowFallAll = false
		w.lowCopy = append(w.lowCopy[:0], w.lowK[:len(w.jobs)]...)
		w.lowFallOnce(doc)
		if !slices.Equal(w.lowCopy, w.lowK[:len(w.jobs)]) {
			lowDiffs++
		}
		return
	}
	w.lowFallOnce(doc)
}

// fallSame reports whether lowFall's last work stands: the same jobs (jobsGen), each
// with the same d (w.lowD, worked out for this call), the bounds the list schedules'
// as they were, and the same CPUs served and projects with jobs. fallBreak (the
// tests') leaves the d's out, to show the check fails so.
func (w *Workspace) fallSame() bool {
	return w.fallOK && w.fallGen == w.jobsGen && w.fallList == w.lowList &&
		(fallBreak || slices.Equal(w.fallD, w.lowD[:len(w.jobs)])) &&
		slices.Equal(w.fallServed, w.gServed) && slices.Equal(w.fallElig, w.eligible)
}

// lowFallOnce is lowFall's work: each job's d (w.lowD), and the rates unless they
// stand (fallSame; under lowCheck worked out all the same, and held to them).
func (w *Workspace) lowFallOnce(doc *state.Document) {
	w.jobFalls(doc)
	kept := w.fallSame()
	if kept && !lowCheck {
		return
	}
	if kept {
		// lowCheck: the kept work, held to the work done again below.
		lowKeptChecks++
		w.fallKept = append(w.fallKept[:0], w.lowK[:min(len(w.lowK), len(w.jobs))]...)
	}
	w.fallOK, w.fallGen, w.fallList = true, w.jobsGen, w.lowList
	w.fallServed = append(w.fallServed[:0], w.gServed...)
	w.fallElig = append(w.fallElig[:0], w.eligible...)
	w.fallD = append(w.fallD[:0], w.lowD[:len(w.jobs)]...)
	w.lowK = growJobs(w.lowK, len(w.jobs))
	if w.lowList {
		w.lowFallList(doc)
	} else {
		for i := range w.jobs {
			w.lowK[i] = -1
			if j := &w.jobs[i]; j.running {
				w.lowK[i] += w.lowD[i]
			}
		}
	}
	if kept && !slices.Equal(w.fallKept, w.lowK[:len(w.jobs)]) {
		lowDiffs++
	}
}

// jobFalls sets each job's d (w.lowD): how much faster than time its simulated time
// may fall while the tasks stay as they are, runFall ÷ the availability the
// simulation runs it at for a running job, else 0 (lowFall's, tiedEnds'), rounded up
// to fallGrid's grid.
func (w *Workspace) jobFalls(doc *state.Document) {
	af := availFrac(&doc.Host.TimeStats, false)
	w.lowD = growJobs(w.lowD, len(w.jobs))
	for i := range w.jobs {
		w.lowD[i] = 0
		if j := &w.jobs[i]; j.running {
			w.lowD[i] = fallGrid(w.runFall(doc, j) / af)
		}
	}
}

// fallGrid rounds a d up to a grid of 2^-32 of its size (its mantissa's 20 lowest
// bits cleared, rounding up), so that it stays the same from pass to pass where the
// job's own rate does. runFall's own rate reads fraction done ÷ work done, lib/sim's
// quotient of the work done by the true work, worked out afresh at every pass: the
// same rate but for its last bits, which changed the d's, and so ended lowFall's kept
// rates (fallSame), at 3,786 of corpus c182's 12,123 rates worked out in a 10-day run
// under bsim's conventions, c192's 2,215 of 4,677 (issue 30, forty-third round). A d
// is a bound on how fast a job's time may fall: a larger one is a bound too, and every
// rate worked out from the d's (lowFall's, tiedEnds') only grows with them
// (shiftAfter's max and sum), so the slacks they give are no longer than the d's as
// they were give.
func fallGrid(d float64) float64 {
	if !(d > 0 && d <= math.MaxFloat64) {
		return d
	}
	const low = 1<<20 - 1
	return math.Float64frombits((math.Float64bits(d) + low) &^ low)
}

// lowFallList is lowFallOnce's rates where the bounds are the list schedules'.
func (w *Workspace) lowFallList(doc *state.Document) {
	nP, n := len(doc.Projects), doc.Host.CPU().Instances
	w.lowRunP = scratch.Grow(w.lowRunP, 3*nP)
	// Per project: how far its list schedule on n CPUs from now may have fallen
	// (served projects, rel in listLower), and, while its own is placed, how far its
	// CPUs' free times (in order) may have, and how many of its jobs are placed.
	eq, ep, placed := w.lowRunP[:nP], w.lowRunP[nP:2*nP], w.lowRunP[2*nP:]
	served, nElig := 0, 0
	for q := range nP {
		if w.gServed[q] >= 1 {
			served += min(int(w.gServed[q]), n)
		}
		if w.eligible[q] {
			nElig++
		}
	}
	// eq is read below only for a served project beside another project with jobs:
	// on a host of one project it is not worked out (a third of lowFall's time on
	// corpus c143: issue 30, twenty-first round).
	for i := range w.jobs {
		if nElig < 2 && !lowFallAll {
			break
		}
		j := &w.jobs[i]
		if w.gServed[j.proj] < 1 || j.res != w.cpuRes {
			continue
		}
		d := w.lowD[i]
		eq[j.proj], placed[j.proj] = shiftAfter(eq[j.proj], d, placed[j.proj] < float64(n)), placed[j.proj]+1
	}
	// Each project's CPUs: from now (all equal), or with the other served
	// projects' last CPUs, each falling as its schedule may.
	equal := placed // reused: 1 where p's CPUs are all from now
	for p := range nP {
		equal[p] = 1
		if gp := min(int(w.gServed[p]), n); w.eligible[p] && served-max(gp, 0) <= n {
			for q := range nP {
				if q != p && min(int(w.gServed[q]), n) >= 1 {
					equal[p], ep[p] = 0, max(ep[p], eq[q])
				}
			}
		}
	}
	// placed counts down from n on the CPUs from now: reuse eq.
	for p := range nP {
		eq[p] = float64(n)
	}
	for i := range w.jobs {
		j := &w.jobs[i]
		d := w.lowD[i]
		if j.res != w.cpuRes {
			w.lowK[i] = d - 1 // its own time (missBounds)
			continue
		}
		fresh := equal[j.proj] == 1 && eq[j.proj] > 0
		eq[j.proj]--
		if fresh {
			// it starts now on a CPU of its own: its end falls as its time
			w.lowK[i] = d - 1
		} else {
			w.lowK[i] = ep[j.proj] + d - 1
		}
		ep[j.proj] = shiftAfter(ep[j.proj], d, fresh)
	}
}

// shiftAfter is how far a list schedule's CPUs' free times, in order, may have
// fallen once a job whose time may have fallen by d is placed, from e before: where
// the job starts on a CPU none of the jobs placed before took, of n CPUs all free
// from one moment (fresh), the free times are that moment and the jobs' ends in order,
// each falling by at most its job's own d plus the moment's e0 (≤ e): sorting keeps a
// bound on every element's move, so max(e, d) with e0 = 0; else the least free time
// moves by at most e and the new end by e + d: e + d.
func shiftAfter(e, d float64, fresh bool) float64 {
	if fresh {
		return max(e, d)
	}
	return e + d
}
