package boincpolicy

import "github.com/bkit/bkit/lib/state"

// runFall is how much faster than its work is done job j's remaining work may fall
// while the tasks stay as they are (issue 30, thirty-first round): prepareJobs' fall
// (w.fall, the most over every job: Overestimate × the correction factor) or, where
// the job's own is known to be less, its own. A task that has done some work and
// reports a fraction done below 1 tells its true work: lib/sim reports fraction done
// = work done ÷ true work, so true work = work done ÷ fraction done. Its estimated
// remaining work (state.Task.RemainingWork) is then (1 − fraction done) × estimate ×
// factor, falling est × factor ÷ true work times as fast as the work is done, until
// the work done passes estimate × factor; past it the true remaining work, true work
// − work done, as fast as the work is done (the jump between them is a rise, which
// noRiseUntil bounds the holds by, and which only delays an end). So max(1, est ×
// factor × fraction done ÷ work done), with a margin for rounding (the fraction is
// lib/sim's quotient, the remaining work worked out afresh at every pass). The
// factor moves only when a task ends (TasksChanged), which ends what rests on this.
// Under BOINC's emulator a started job's remaining work is its true one already
// (prepareJobs counts it 1). fallCheck holds the runs to it (TestFallBound).
//
// Why: on corpus c143 (true work 1.36 × the estimate on average, widely spread) w.fall,
// the largest overestimate of the jobs made × the factor, was 8 to 30 in a 10-day run
// under bsim's conventions, where a running job's own rate was 2.0 on average (0.54 of
// w.fall): lowFall's rate, which eats the misses' margins (missesListed, relow), ended
// 3,142 EDF holds of the run, a view and relow each (1,625 now).
func (w *Workspace) runFall(doc *state.Document, j *job) float64 {
	t := &doc.Tasks[j.task]
	if doc.BOINCEmulator && t.EmulatorFlopsLeft > 0 {
		return 1 // its true remaining work (remaining): prepareJobs' count for it
	}
	if !(t.FlopsDone > 0) || !(t.FractionDone > 0) || !(t.FractionDone < 1) {
		return w.fall // its true work unknown (not started, or done)
	}
	own := max(1, t.EstimatedFlops*w.dcfOf[j.proj]*t.FractionDone/t.FlopsDone*(1+1e-9))
	return min(w.fall, own)
}
