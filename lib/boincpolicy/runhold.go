package boincpolicy

import (
	"math"

	"github.com/bkit/bkit/lib/state"
)

// runHold is setEDFHold without the listing, on a host of relistable's (issue 30,
// thirty-fourth round): at a quiet pass at now whose misses have just been found
// (missesKept, missesListed or missesKnown, kept: w.missed, w.slack, w.recEps), it
// reports whether the pass runs exactly the jobs running, and then sets the hold
// (until the misses' slack, the first running job's time slice or a rise), without
// the listing. (Corpus c143 under BOINC's emulator listed 1,030 times a 10-day run the
// moment after a listing that started a job, where rehold's carry had ended with the
// change, and each of those listings changed nothing.)
//
// Why: on such a host (one project, every runnable job a CPU job of one CPU, its
// correction factor putting no job in EDF) with m misses, the listing for the misses
// (earliestMiss) takes the first K = min(m, 2n, J) of the J jobs in
// earliest_deadline_result's order: deadline, then a started job first, then the
// least estimated remaining time (est ÷ speed), then the jobs' order, a total order
// without NaN (earliestMiss's walk keeps the first of the least, as a scan in the
// jobs' order does). When the n running jobs fill the n CPUs, are all among those K
// and all within their time slice, the run list (sortRunList: misses first, within
// them unfinished time slices first) begins with exactly them (only a running job is
// within its slice; the entries by priority and for a slice come after every miss),
// so they take the n CPUs and nothing else runs (state.CPUsFit): the pass starts and
// stops nothing, whatever the order among them and whatever comes after. The running
// job last in that order is among the first K when fewer than K jobs come before it.
// While the tasks stay as they are, the misses keep their counts until the slack
// (setHold's argument, in the misses' box), the jobs not running keep their place in
// the order (their estimates stand still, their started flags and deadlines too) and
// the running ones only move ahead (their estimated remaining times fall: under BOINC's
// emulator each has its true remaining work, elsewhere until a rise, noRiseUntil), so
// the running jobs stay among the first K; each stays within its slice until its end
// (its slice's run grows by at most a second a second: the elapsed time, or under the
// emulator the end of the last step it computed in, from its slice's start).
func (w *Workspace) runHold(doc *state.Document, now float64) bool {
	if !w.anyMiss || noRunHold || !w.relistable() {
		return false
	}
	p := w.jobs[0].proj
	if doc.Projects[p].DCF() > EDFDCF {
		return false
	}
	n := doc.Host.CPU().Instances
	k := min(w.missed[p*w.nRes+w.cpuRes], 2*n, len(w.jobs))
	period := doc.Preferences.CPUSchedulingPeriod
	ends := math.Inf(1) // the first time slice's end
	running, last := 0, -1
	for i := range w.jobs {
		j := &w.jobs[i]
		if math.IsNaN(j.deadline) || math.IsNaN(j.est/j.speed) {
			return false // (earliestMiss's order is then another)
		}
		if !j.running {
			continue
		}
		t := &doc.Tasks[j.task]
		if doc.BOINCEmulator && !(t.EmulatorFlopsLeft > 0 && t.FlopsDone > 0 && t.FractionDone < 1) {
			return false // its estimate until it has computed, then its true work (tieLead)
		}
		run := sliceRun(doc, t)
		if !(run <= period) {
			return false
		}
		ends = min(ends, now+period-run, now+period-(t.ElapsedTime-t.ElapsedTimeAtLastSched))
		if doc.BOINCEmulator && t.EmulatorRunStart > 0 {
			ends = min(ends, t.EmulatorRunStart+period)
		}
		running++
		if last < 0 || edfAfter(j, &w.jobs[last], i, last) {
			last = i
		}
	}
	if running != n {
		return false
	}
	ahead := 0 // the jobs before the last running one
	for i := range w.jobs {
		if i != last && edfAfter(&w.jobs[last], &w.jobs[i], last, i) {
			if ahead++; ahead >= k {
				return false
			}
		}
	}
	until := min(now+w.slack, ends, w.noRiseUntil(doc, now))
	if !(until > now) {
		return false
	}
	w.hold, w.holdUntil, w.holdMiss = true, until, true
	w.setBox(doc, w.recEps)
	return true
}

// edfAfter reports whether job a (index ia) comes after job b (index ib) in
// earliest_deadline_result's order (runHold's): a later deadline, or of one deadline
// not started where b is, or as started a longer estimated remaining time, or as long
// later in the jobs' order. (No NaN: runHold's test.)
func edfAfter(a, b *job, ia, ib int) bool {
	if a.deadline != b.deadline {
		return a.deadline > b.deadline
	}
	if a.started != b.started {
		return b.started
	}
	if ta, tb := a.est/a.speed, b.est/b.speed; ta != tb {
		return ta > tb
	}
	return ia > ib
}

// runHolds counts the holds runHold set while passCheck is on (each such pass, and
// each pass held after it, is checked against a whole pass: checkPass); noRunHold
// sets none (a test's: with fewer listings to carry, rehold's are fewer).
var (
	runHolds  int
	noRunHold bool
)
