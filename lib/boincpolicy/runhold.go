package boincpolicy

import (
	"math"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// runHold is setEDFHold without the listing, on a host whose runnable jobs are all
// CPU jobs of one CPU, no project's correction factor putting its jobs in EDF (issue
// 30, thirty-fifth round for one project, thirty-sixth for several): at a quiet pass
// at now whose misses have just been found (missesKept, missesListed or missesKnown,
// kept: w.missed, w.slack, w.recEps), it reports whether the pass runs exactly the
// jobs running, and then sets the hold (until the misses' slack, the first running
// job's time slice or a rise), without the listing. (Corpus c143 under BOINC's
// emulator listed 1,030 times a 10-day run the moment after a listing that started a
// job, where rehold's carry had ended with the change, and each of those listings
// changed nothing; c182, two projects, about 2,700.)
//
// Why: with m_p misses for project p, the listing for the misses (earliestMiss)
// walks the jobs in earliest_deadline_result's order (deadline, then a started job
// first, then the least estimated remaining time, est ÷ speed, then the jobs' order:
// a total order without NaN, which earliestMiss's walk follows whatever the project)
// and takes a job when its project has misses left (fewer than m_p of its jobs taken)
// until it has 2n (stop_scan_cpu); a project's taken jobs are its first ones. So a
// job x of p is taken when fewer than m_p of p's jobs come before it and fewer than 2n
// jobs are taken before it; and with c_p the jobs of p at or before a job y, at most
// Σ min(m_p, c_p) are taken up to y. When the n running jobs fill the n CPUs, each is
// within its time slice and each is among its project's first m_p (fewer than m_p of
// its project's jobs come before its project's last running job) and Σ min(m_p, c_p)
// ≤ 2n for y the last running job, every running job is taken (were one, r of p, not,
// the 2n taken would all come before r, fewer than min(m_p, c_p) of them p's: fewer
// than 2n up to y). Or else, on a host of several projects, when the jobs taken are
// all running (listsRunning: none of a project's first m_p jobs is not running). Either way the run list
// (sortRunList: misses first, within them unfinished time slices first; then the
// unfinished slices, whether listed by priority or for their slice; only a running job
// has one) begins with exactly the n running jobs, so they take the n CPUs and nothing
// else runs (state.CPUsFit): the pass starts and stops nothing, whatever the order
// among them and whatever comes after (the RECs' priorities order only what comes
// after). With one project the first test is the thirty-fifth round's: fewer than
// K = min(m, 2n, J) jobs before the last running one.
//
// While the tasks stay as they are, the misses keep their counts until the slack
// (setHold's argument, in the misses' box), the jobs not running keep their place in
// the order (their estimates stand still, their started flags and deadlines too) and
// the running ones only move ahead (their estimated remaining times fall: under BOINC's
// emulator each has its true remaining work, elsewhere until a rise, noRiseUntil). So
// per project the jobs not running before its last running job only fall in number,
// and c_p at the last running job (its running jobs and its jobs not running before
// that job, which is at or before the old last one) too: the tests stay true; and a
// project's first job not running stays its first, with only more running jobs
// before it. Each running job stays within its slice until its end (its slice's run
// grows by at most a second a second: the elapsed time, or under the emulator the end
// of the last step it computed in, from its slice's start).
func (w *Workspace) runHold(doc *state.Document, now float64) bool {
	if !w.anyMiss || noRunHold || len(w.jobs) == 0 || !(w.slack > 0) {
		return false
	}
	if w.relistable() {
		return w.runHoldOne(doc, now)
	}
	return w.runHoldSeveral(doc, now)
}

// runHoldSeveral is runHold on a host whose jobs are not all of one project.
func (w *Workspace) runHoldSeveral(doc *state.Document, now float64) bool {
	nP := len(doc.Projects)
	if anyEDFDCF(doc.Projects) {
		return false // (earliestMiss would take all of its jobs)
	}
	n := doc.Host.CPU().Instances
	if n <= 2 {
		// On one or two CPUs the listing for the misses stops at 2n ≤ 4 jobs and
		// costs about what these walks over the jobs do (down-2cpu, two projects:
		// 1 % more instructions with them).
		return false
	}
	period := doc.Preferences.CPUSchedulingPeriod
	// Per project p, at rh[5p:5p+5]: its last running job, its jobs before it, its
	// jobs at or before the last running job, its first job not running (listsRunning),
	// its running jobs before that.
	w.rh = scratch.Grow(w.rh, 5*nP)
	for p := range nP {
		r := w.rh[5*p : 5*p+5 : 5*p+5]
		r[0], r[1], r[2], r[3], r[4] = -1, 0, 0, -1, 0
	}
	ends := math.Inf(1) // the first time slice's end
	running, last := 0, -1
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != w.cpuRes || j.cpus != 1 || j.proj >= nP {
			return false
		}
		if math.IsNaN(j.deadline) || math.IsNaN(j.est/j.speed) {
			return false // (earliestMiss's order is then another)
		}
		r := w.rh[5*j.proj : 5*j.proj+5 : 5*j.proj+5]
		if !j.running {
			if f := r[3]; f < 0 || edfAfter(&w.jobs[f], j, f, i) {
				r[3] = i
			}
			continue
		}
		if running++; running > n {
			return false
		}
		var ok bool
		if ends, ok = runningSlice(doc, &doc.Tasks[j.task], now, period, ends); !ok {
			return false
		}
		if l := r[0]; l < 0 || edfAfter(j, &w.jobs[l], i, l) {
			r[0] = i
		}
		if last < 0 || edfAfter(j, &w.jobs[last], i, last) {
			last = i
		}
	}
	if running != n || !(ends > now) {
		return false
	}
	for i := range w.jobs {
		j := &w.jobs[i]
		r := w.rh[5*j.proj : 5*j.proj+5 : 5*j.proj+5]
		if l := r[0]; l >= 0 && i != l && edfAfter(&w.jobs[l], j, l, i) {
			r[1]++ // before the project's last running job
		}
		if i == last || edfAfter(&w.jobs[last], j, last, i) {
			r[2]++ // at or before the last running job
		}
		if f := r[3]; j.running && f >= 0 && edfAfter(&w.jobs[f], j, f, i) {
			r[4]++ // running, before the project's first job not running
		}
	}
	listed := 0 // at most the jobs the listing takes up to the last running job
	for p := range nP {
		r := w.rh[5*p : 5*p+5 : 5*p+5]
		m := w.missed[p*w.nRes+w.cpuRes]
		if r[0] >= 0 && !(r[1] < m) {
			listed = math.MaxInt
			break
		}
		listed += min(m, r[2])
	}
	if listed > 2*n && !w.listsRunning(nP) {
		return false
	}
	until := min(now+w.slack, ends, w.noRiseUntil(doc, now))
	if !(until > now) {
		return false
	}
	w.hold, w.holdUntil, w.holdMiss = true, until, true
	w.setBox(doc, w.recEps)
	return true
}

// listsRunning (runHoldSeveral's) reports whether every job runHold's listing would take for a miss is
// running: for each project p with misses (m), none of the jobs not running among
// its first m in earliest_deadline_result's order (at least m running jobs before
// its first job not running: runHold's counts in w.rh). Then the run list's misses are running jobs, each
// within its slice (runHold's test), and the other running jobs come right after
// them (sortRunList: unfinished time slices next, whether listed by priority or for
// their slice; the jobs not running after them): again exactly the running jobs run.
// While the tasks stay as they are, the jobs not running keep their order and the
// running ones only move ahead, so a project's first job not running only falls
// back among its jobs.
func (w *Workspace) listsRunning(nP int) bool {
	for p := range nP {
		if r := w.rh[5*p : 5*p+5 : 5*p+5]; r[3] >= 0 && r[4] < w.missed[p*w.nRes+w.cpuRes] {
			return false
		}
	}
	return true
}

// runHoldOne is runHold on a host of relistable's (one project): the thirty-fifth
// round's walks, cheaper there than runHoldSeveral's (c143 called it at most of its
// passes: 4 % more instructions with runHoldSeveral's).
func (w *Workspace) runHoldOne(doc *state.Document, now float64) bool {
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
		var ok bool
		if ends, ok = runningSlice(doc, &doc.Tasks[j.task], now, period, ends); !ok {
			return false
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

// runningSlice is a running job's part of runHold's test, for either kind of host:
// false when the listing may read another remaining work from it than the hold
// assumes (under the emulator its estimate until it has computed, then its true
// work: tieLead) or its time slice has run out; else ends lowered to its slice's end.
func runningSlice(doc *state.Document, t *state.Task, now, period, ends float64) (float64, bool) {
	if doc.BOINCEmulator && !(t.EmulatorFlopsLeft > 0 && t.FlopsDone > 0 && t.FractionDone < 1) {
		return ends, false
	}
	run := sliceRun(doc, t)
	if !(run <= period) {
		return ends, false
	}
	ends = min(ends, now+period-run, now+period-(t.ElapsedTime-t.ElapsedTimeAtLastSched))
	if doc.BOINCEmulator && t.EmulatorRunStart > 0 {
		ends = min(ends, t.EmulatorRunStart+period)
	}
	return ends, true
}
