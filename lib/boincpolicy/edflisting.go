package boincpolicy

import (
	"math"

	"github.com/bkit/bkit/lib/state"
)

// The holds for deadline misses (setEDFHold, setKeepHold) ask whether every pass of
// the hold lists the same jobs for their misses: earliest_deadline_result's ties.

// edfListingSure is setEDFHold's test that every pass of its hold lists the same jobs
// for their misses, whatever the order of ties (the last pass's list: w.list): it
// reports whether they do, and until when (+Inf: for the whole hold).
//
// Where a started job X listed for its miss shares its deadline with a running job U
// not listed, of a project with misses, on a host whose CPU jobs all take the same CPUs,
// earliest_deadline_result takes X before U while X's estimated remaining time is
// the less (the ties' order: started, then that time, then the jobs' order), and only
// U's overtaking X could list U instead: X's time does not grow within a hold (a
// preempted job's stands still, a running one's falls: noRiseUntil ends the hold
// before one may grow), and U's falls by at most workBound's fall a second (its
// estimated remaining work by at most fall × the work done, at most its speed a
// second). So the listing stands until X's lead over U, ÷ fall, has passed. Two such
// jobs neither of which is listed are then left alike: with every listed job ahead
// of every unlisted one of its deadline that runs, the jobs listed before the listing
// reaches them stay the same, and it stops before them as it did. (part-time-4cpu's A
// jobs come two of one deadline a reply, both running, one listed: 264 holds refused
// in a 10-day run, most of the pairs a constant lead apart; issue 30, eleventh round.)
func (w *Workspace) edfListingSure(doc *state.Document, now float64) (float64, bool) {
	if edfSureCheck {
		edfSureAll = true
		ua, oka := w.edfListingSureOnce(doc, now)
		edfSureAll = false
		if ub, okb := w.edfListingSureOnce(doc, now); ua != ub || oka != okb {
			edfSureDiffs++
		}
	}
	return w.edfListingSureOnce(doc, now)
}

func (w *Workspace) edfListingSureOnce(doc *state.Document, now float64) (float64, bool) {
	nR := w.nRes
	// The CPU jobs listed for their misses (a coprocessor's listing is
	// coEDFSure's; the pairs below are of CPU jobs, as only they have CPU misses).
	listed := w.edfCPUs
	misses := 0
	for p := range doc.Projects {
		misses += w.missed[p*nR+w.cpuRes]
	}
	if listed == misses && !w.boundMiss {
		return math.Inf(1), true // every job that misses listed: the ties' order lists no other
	}
	// Only started jobs pair: their indices, in the jobs' order, the pairs then
	// looked at in the same order. (Each job against every job after it was 4 % of
	// corpus c143's run under the emulator, about 35 jobs of which 7 to 14 started:
	// issue 30, twenty-first round.)
	sameCPUs := true // every CPU job of the first's CPUs
	first := -1
	w.edfStarted = w.edfStarted[:0]
	for i := range w.jobs {
		if w.jobs[i].res == w.cpuRes {
			if first < 0 {
				first = i
			}
			sameCPUs = sameCPUs && w.jobs[i].cpus == w.jobs[first].cpus
		}
		if w.jobs[i].started || edfSureAll {
			w.edfStarted = append(w.edfStarted, i)
		}
	}
	until := math.Inf(1)
	for k, a := range w.edfStarted {
		ja := &w.jobs[a]
		if ja.res != w.cpuRes || w.missed[ja.proj*nR+ja.res] == 0 || !ja.started {
			continue // (a coprocessor's ties are coEDFSure's)
		}
		for _, b := range w.edfStarted[k+1:] {
			jb := &w.jobs[b]
			if jb.res == w.cpuRes && jb.deadline == ja.deadline && jb.started && (ja.running || jb.running) &&
				w.missed[jb.proj*nR+jb.res] > 0 && !(sameCPUs && w.tieListed(ja, jb)) {
				if !sameCPUs {
					return 0, false
				}
				x, u := ja, jb
				la, lb := w.listedEDF(ja.task), w.listedEDF(jb.task)
				switch {
				case !la && !lb:
					continue // neither listed: the pairs with a listed job decide
				case lb:
					x, u = jb, ja
				}
				lead, ok := w.tieLead(doc, x, u)
				if !ok {
					return 0, false
				}
				until = min(until, now+lead)
			}
		}
	}
	return until, true
}

// edfSureCheck: edfListingSure's every answer is checked against the pairs of every
// job (edfSureAll), the differences counted in edfSureDiffs (a test's).
var (
	edfSureCheck, edfSureAll bool
	edfSureDiffs             int
)

// tieLead is how long running job u, not listed, stays behind job x of its deadline,
// listed for its miss, in earliest_deadline_result's order (edfListingSure): x's lead
// in estimated remaining time ÷ workBound's fall, less a margin for rounding (the
// times are worked out afresh at every pass). It reports false when there is no lead,
// or when u's or a running x's estimated remaining work may jump: a task with a true
// remaining work (state.Task.EmulatorFlopsLeft) that has not yet computed reads its
// estimate until it has, and then its true remaining work, which may be far less or
// more. Two jobs exactly tied (exactTie) stay so: +Inf.
func (w *Workspace) tieLead(doc *state.Document, x, u *job) (float64, bool) {
	for _, j := range [2]*job{x, u} {
		if t := &doc.Tasks[j.task]; j.running && t.EmulatorFlopsLeft > 0 && !(t.FlopsDone > 0 && t.FractionDone < 1) {
			return 0, false
		}
	}
	if exactTie(doc, x, u) || aheadTie(doc, x, u) {
		return math.Inf(1), true // no lead to eat, or none eaten: the listing stands
	}
	lead := (u.est/u.speed-x.est/x.speed)*(1-1e-9) - 1e-6
	if !(lead > 0) || !(u.speed > 0) || !(x.speed > 0) {
		return 0, false
	}
	return lead / w.fall, true
}

// tieListed reports whether two started jobs of one deadline, one of them running, of
// projects with misses, are listed for their misses alike in every pass of a hold, on a
// host whose jobs all take the same CPUs (edfListingSure): when both are listed
// (listedEDF), or when only one runs and it is the one listed. earliest_deadline_result
// takes ties of deadline by the least estimated remaining time, and within a hold only
// a running job's falls (noRiseUntil ends the hold before one may grow): the running
// one listed only moves ahead of the other, and the jobs listed before the listing
// stops (a project's misses, stop_scan_cpu's count of jobs of the same CPUs) stay the
// same set. (part-time-4cpu's A jobs come two of one deadline a reply; 331 of its
// passes cut short in a 10-day run were refused a hold for such a pair.)
func (w *Workspace) tieListed(ja, jb *job) bool {
	la, lb := w.listedEDF(ja.task), w.listedEDF(jb.task)
	switch {
	case la && lb:
		return true
	case ja.running && !jb.running:
		return la
	case jb.running && !ja.running:
		return lb
	}
	return false
}

// listedEDF reports whether the last pass listed task (an index in doc.Tasks) for its
// deadline miss (setEDFHold). When every started job that shares its deadline with a
// running one (of projects with misses) is so listed, and every job takes the same
// CPUs, the ties' order changes nothing: a running job's remaining time may move it
// among them, but only among them, all within the jobs listed (as many, of the same
// CPUs, in whatever order), and the listing is the same set.
func (w *Workspace) listedEDF(task int) bool {
	for k := range w.list {
		if w.list[k].Task == task && w.list[k].Why == WhyEDF {
			return true
		}
	}
	return false
}

// exactTie reports whether running jobs x, listed for its miss, and u, not listed, of
// one deadline, stay tied in earliest_deadline_result's order for as long as both
// run, x first: under BOINC's emulator, of one app version, with equal true remaining
// works (state.Task.EmulatorFlopsLeft, which their estimated remaining works are once
// they have computed), work done and progress, x before u in the jobs' order. The
// loop takes each step's work off a running task's true remaining work and adds it to
// its work done (its version's speed × the step, the same for both), so the two stay
// equal, bit for bit, their progress too (their true works are equal), and the ties'
// order keeps the first in the jobs' order. (part-time-4cpu's A jobs come two of one
// deadline and one work a reply, both running, one listed: under --emulate boinc 506
// holds a 10-day run were refused for want of a lead; issue 30, nineteenth round.)
func exactTie(doc *state.Document, x, u *job) bool {
	if !doc.BOINCEmulator || !x.running || !u.running || x.task > u.task || !state.SameName(x.appVersion, u.appVersion) {
		return false
	}
	tx, tu := &doc.Tasks[x.task], &doc.Tasks[u.task]
	return tx.EmulatorFlopsLeft > 0 && tx.FlopsDone > 0 && tx.FractionDone < 1 && tx.EmulatorFlopsLeft == tu.EmulatorFlopsLeft &&
		tx.FlopsDone == tu.FlopsDone && tx.FractionDone == tu.FractionDone
}

// aheadTie reports whether running job u, not listed, stays behind running job x,
// listed for its miss, of one deadline, in earliest_deadline_result's order for as
// long as both run (issue 30, thirty-third round): under BOINC's emulator, of one app
// version, each with a true remaining work (state.Task.EmulatorFlopsLeft, which its
// estimated remaining work is once it has computed, until it ends), x before u in the
// jobs' order and x's time now at most u's. exactTie's argument without the equality:
// the loop takes the same work off both at every step (their version's speed × the
// step), and rounding keeps the order (a ≤ b gives a − d ≤ b − d, and ÷ one speed the
// same), so x's time stays at most u's, and a tie of times keeps the first in the
// jobs' order: the lead is not eaten at all. (part-time-4cpu's A jobs come two of one
// deadline a reply, both running, one listed, of different true works: every one of
// the 479 leads tieLead found in a 10-day run under --emulate boinc was such a pair,
// and the holds ended at the lead ÷ fall, 199 of them then a whole listing that ran
// the same jobs.)
func aheadTie(doc *state.Document, x, u *job) bool {
	if !doc.BOINCEmulator || !x.running || !u.running || x.task > u.task || !state.SameName(x.appVersion, u.appVersion) {
		return false
	}
	tx, tu := &doc.Tasks[x.task], &doc.Tasks[u.task]
	return tx.EmulatorFlopsLeft > 0 && tx.FlopsDone > 0 && tx.FractionDone < 1 &&
		tu.EmulatorFlopsLeft > 0 && tu.FlopsDone > 0 && tu.FractionDone < 1 && x.speed == u.speed && x.est/x.speed <= u.est/u.speed
}

// coEDFSure is edfListingSure for the coprocessors (setKeepHold, on a host with
// coprocessor jobs): it reports whether every pass of the hold lists the same
// coprocessor jobs for their misses, in the same order. earliest_deadline_result
// takes, on coprocessor r, the job of the earliest deadline among those of the
// projects with misses left on r, ties by a started job first, then the least
// estimated remaining time, then the jobs' order: a total order, in which only
// ties of deadline can change places within a hold, and only by a running job's
// time falling (a preempted or unstarted job's stands still; noRiseUntil ends the
// hold before a running one's may grow). So when every running job of such a
// project is ahead of every other job of its deadline on r, of a project with
// misses there, the order stays the order, and the listing with it: the same counts
// (the hold's misses are the same), the same instances taken. Under BOINC's emulator a
// running job that has not computed yet reads its estimate until it has, and then its
// true remaining work (tieLead): such a one is not looked at further.
func (w *Workspace) coEDFSure(doc *state.Document) bool {
	nR := w.nRes
	for a := range w.jobs {
		ja := &w.jobs[a]
		if ja.res == w.cpuRes || !ja.running || w.missed[ja.proj*nR+ja.res] == 0 {
			continue
		}
		if t := &doc.Tasks[ja.task]; t.EmulatorFlopsLeft > 0 && !(t.FlopsDone > 0 && t.FractionDone < 1) {
			return false
		}
		ta := ja.est / ja.speed
		for b := range w.jobs {
			jb := &w.jobs[b]
			if b == a || jb.res != ja.res || jb.deadline != ja.deadline || w.missed[jb.proj*nR+jb.res] == 0 || !jb.started {
				continue // (an unstarted job comes after every started one)
			}
			if tb := jb.est / jb.speed; !(ta < tb || ta == tb && a < b) {
				return false // behind jb: it may come ahead (NaN: not looked at)
			}
		}
	}
	return true
}
