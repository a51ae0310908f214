package boincpolicy

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/state"
)

// A hold carried across the arrival of new jobs (issue 30, twenty-ninth round).
//
// The holds (setHold, setEDFHold, setKeepHold, rehold) rest on the tasks staying as
// they are, so any change of them ended the hold (TasksChanged), an RPC's new jobs
// too: corpus c143 under BOINC's emulator received jobs at 651 moments of a 10-day
// run, 420 of them under a hold, and each made a whole listing at that moment (its
// emulator's second pass, Arrived) and another at the next (the misses found again),
// before a hold was set again. On a host of relistable's (one project, every runnable
// job a CPU job of one CPU) with its n CPUs taken by n running jobs, new jobs that
// come after every old one in earliest_deadline_result's order change no pass:
//
//   - the listing for the misses takes the project's jobs earliest deadline first (a
//     started job, then the least remaining time, then the jobs' order among equals),
//     as many as the project has misses, until 2n CPUs are listed: with m misses
//     among the old jobs, m' among all, and min(m', 2n) = min(m, 2n), it lists the
//     same old jobs in the same order when every new job's deadline is after every
//     old job's (m ≤ the old jobs);
//   - the listing by priority takes the project's jobs by rank (running, preempted,
//     the others in the jobs' order: cpuRank, activeOrder), so the new jobs, not
//     started and last in the jobs' order (the loop adds a reply's tasks at the
//     end), come after every old job, and the old jobs listed are the same;
//   - enforce_run_list adds the running jobs within their slice, old ones only, and
//     the run list's order (sortRunList, stable by keys of the entries' own) puts
//     the new jobs' entries (no miss, no slice, one CPU) after every old entry: its
//     first n entries, the jobs that run (jobs of one CPU, state.CPUsFit), are those
//     of the pass without the new jobs.
//
// So where the hold says the pass without the new jobs runs exactly the n jobs
// running, the pass with them does too, for as long as the hold lasts and the misses
// keep those counts.

// arrivedOld reports, before the view is brought up to date, whether the runnable
// tasks are the jobs of the last view (w.jobs, the old jobs, not brought up to date
// since the hold was lost: every one still runnable, in their order) followed by new
// tasks, ready, each of the old jobs' project and of an app version of one CPU and no
// coprocessor, with a deadline after every old job's; the old jobs those of a host of
// relistable's, n of them running on its n CPUs, of a project whose correction factor
// puts no job in EDF. It reports the old jobs' count. (A task settled since is no
// longer runnable, and its job's place goes unmatched; a task's state changes only by
// a pass, and the holds' passes change none.)
func (w *Workspace) arrivedOld(doc *state.Document) (int, bool) {
	k := len(w.jobs)
	if w.viewN != w.arrViewN || !w.relistable() || w.jobs[0].proj >= len(doc.Projects) || doc.Projects[w.jobs[0].proj].DCF() > EDFDCF {
		return 0, false
	}
	first := &w.jobs[0]
	last := math.Inf(-1) // the old jobs' latest deadline
	for i := range w.jobs {
		last = max(last, w.jobs[i].deadline)
	}
	n := doc.Host.CPU().Instances
	at, running := 0, 0
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		runnable, _, run := runState(t.State)
		if !runnable {
			continue
		}
		if at < k {
			if !w.jobs[at].is(t) {
				return 0, false
			}
			at++
			if run {
				running++
			}
			continue
		}
		// A new task.
		if t.State != state.TaskReady || !(t.ReportDeadline > last) || !state.SameName(t.Project, first.project) {
			return 0, false
		}
		v := slices.IndexFunc(doc.AppVersions, func(av state.AppVersion) bool { return state.SameName(av.Name, t.AppVersion) })
		if v < 0 || doc.AppVersions[v].Coproc != nil || doc.AppVersions[v].AvgNCPUs != 1 {
			return 0, false
		}
	}
	if at != k || running != n {
		return 0, false
	}
	return k, true
}

// arrivedKeeps reports whether the emulator's second pass at now after an RPC brought
// jobs (Arrived: the moment's miss counts, passMissed, the new jobs in none) runs
// exactly the jobs running, without making it: a hold was in force at the moment's
// first pass (arrLost: the caller's test; before arrUntil, the RECs in its box), and
// the tasks are its jobs followed by new ones as arrivedOld has them. The misses are
// the moment's, the hold's: the same listing for them, and the new jobs after every
// old one (the argument at the top of this file), so the pass runs the jobs the hold
// says it does. The hold itself is not set again here (the next moment's misses
// count the new jobs): arrCarry is left for the next pass to try.
func (w *Workspace) arrivedKeeps(doc *state.Document, now float64) bool {
	if !(now < w.arrUntil) || !w.inBox(doc) || noArrived {
		return false
	}
	k, ok := w.arrivedOld(doc)
	if !ok {
		return false
	}
	if arrivedCheck {
		w.checkArrived(doc, now)
	}
	w.arrK, w.arrCarry = k, true
	return true
}

// arrivedHold sets the hold again at a quiet pass at now whose misses have just been
// found (missesKept, missesListed or missesKnown, kept: w.missed, w.slack, w.recEps),
// where a hold in force was ended by an RPC that brought jobs (arrCarry: arrivedOld
// held before the view was brought up to date, its k old jobs now w.jobs[:k]). The
// old jobs' misses must be the hold's (its counts, arrMissed) and the new jobs' leave
// the listing for the misses as it was: min(m', 2n) = min(m, 2n) for the project's
// counts on the CPUs (the argument at the top of this file). Then every pass until the first
// of the hold's end, the misses' slack and a rise runs exactly the jobs running, with
// these counts. The misses' box must hold everywhere (recEps +Inf: missesListed's;
// the hold keeps its own box). It reports whether it set the hold.
func (w *Workspace) arrivedHold(doc *state.Document, now float64) bool {
	k := w.arrK
	if !w.arrCarry || k > len(w.jobs) || !math.IsInf(w.recEps, 1) || !w.relistable() {
		return false
	}
	n := doc.Host.CPU().Instances
	p := w.jobs[0].proj
	at := p*w.nRes + w.cpuRes
	if at >= len(w.arrMissed) || at >= len(w.missed) {
		return false
	}
	m, m2 := w.arrMissed[at], w.missed[at]
	old := 0
	for i := range k {
		if w.jobs[i].misses {
			old++
		}
	}
	for q := range w.missed {
		if q != at && (w.missed[q] != 0 || q < len(w.arrMissed) && w.arrMissed[q] != 0) {
			return false // (one project, on the CPUs: none elsewhere)
		}
	}
	if old != m || min(m2, 2*n) != min(m, 2*n) {
		return false
	}
	until := min(w.arrUntil, now+w.slack, w.noRiseUntil(doc, now))
	if !(until > now) {
		return false
	}
	w.hold, w.holdUntil, w.holdMiss = true, until, w.anyMiss
	return true
}

// noArrived: no hold is carried across an RPC's new jobs (a test's, to check against).
var noArrived bool

// arrivedCheck, arrivedDiffs, arrivedChecks: the tests' check of arrivedKeeps. Where
// it answers, the pass it stands for (Arrived's: the view built, the moment's miss
// counts) made whole on a copy of the document by a workspace of its own must start
// and stop no task; arrivedDiffs counts where it did not, arrivedChecks the answers.
var (
	arrivedCheck                bool
	arrivedDiffs, arrivedChecks int
	arrivedHolds                int // the holds arrivedHold set (with passCheck on)
)

// checkArrived is arrivedCheck's test of arrivedKeeps' answer at now.
func (w *Workspace) checkArrived(doc *state.Document, now float64) {
	arrivedChecks++
	whole := checkSpace(w.Overestimate)
	defer checkDone(whole)
	full := whole.checkCopy(doc)
	full.CPUSched = nil
	whole.Idle(now) // a pass at the moment, with no miss counted yet
	whole.passMissed = append(whole.passMissed[:0], w.passMissed...)
	whole.keep = true
	whole.Schedule(full, now)
	if whole.Changed() {
		arrivedDiffs++
	}
}
