package boincpolicy

import "github.com/bkit/bkit/lib/state"

// fallCheck, fallBreaks: the tests' check of w.fall (prepareJobs; TestFallBound). At
// every quiet pass that looks at the jobs, each job's simulated time (its remaining
// work ÷ its rate) must have fallen since the last such pass that saw it, the tasks
// unchanged since (TasksChanged forgets them), by at most that pass's runFall for it
// (w.fall, or the job's own where known, which is at most w.fall) ÷ the availability
// the rate was found with, a second: the pace the holds' bounds allow a job (lowFall,
// missesListed, coFall, tieLead, workBound). fallBreaks counts the jobs that fell
// faster.
var (
	fallCheck  bool
	fallBreaks int
	fallSeen   = map[int]fallAt{} // by task: the tasks stay where they are until TasksChanged
)

// fallAt is a job as a pass saw it: when, its simulated time, and the fastest it
// may fall a second from then.
type fallAt struct{ at, simT, per float64 }

// checkFall is fallCheck's test at a pass at now (prepareJobs done).
func (w *Workspace) checkFall(doc *state.Document, now float64) {
	for i := range w.jobs {
		j := &w.jobs[i]
		// A margin for rounding: the times are worked out afresh at every pass.
		if s, ok := fallSeen[j.task]; ok && s.simT-j.simT > s.per*(now-s.at)*(1+1e-9)+1e-6 {
			fallBreaks++
		}
		fallSeen[j.task] = fallAt{now, j.simT, w.runFall(doc, j) / availFrac(&doc.Host.TimeStats, j.res != w.cpuRes)}
	}
}
