package boincpolicy

import "math"

// nextBestCheck: simulateFrom's steps that keep the pick, and its picks that shift
// the active jobs (pickShift), check the active job that finishes first, found from
// the times the last step set (nextBest), against a scan of the times afresh (a
// test's; nextBestDiffs counts the differences, bit for bit, nextBestChecks the steps
// checked).
var (
	nextBestCheck                 bool
	nextBestDiffs, nextBestChecks int
)

// checkNextBest is nextBestCheck's check of best and dt.
func (w *Workspace) checkNextBest(best int, dt float64) {
	nextBestChecks++
	b, d := -1, 0.0
	for _, a := range w.active {
		if t := w.jobs[a].simT; b < 0 || t < d {
			b, d = a, t
		}
	}
	if b != best || math.Float64bits(d) != math.Float64bits(dt) {
		nextBestDiffs++
	}
}

// noFrontCut: simulateFrom takes a finished job that is first in its list out by
// moving the rest, as any other (a test's).
var noFrontCut bool
