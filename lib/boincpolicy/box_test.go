package boincpolicy

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/state"
)

// TestBoxHoldAgainstPass: on random queues, their RECs often where the projects'
// priorities meet (part-time-4cpu's) and running jobs often past their time slice,
// whenever a quiet pass sets a hold good within a box of REC fractions (setBox), then
// at every 60 s within the hold while the RECs stay in the box (moved by the jobs
// running, by one project's, or by none, as the host computes or not), the quiet pass
// is held and a whole pass changes nothing and counts the hold's misses.
func TestBoxHoldAgainstPass(t *testing.T) {
	t.Parallel()
	var ws wholeSpace // the whole passes' memory
	rng := rand.New(rand.NewPCG(30, 10))
	held, kept, missed, moments := 0, 0, 0, 0
	for trial := range 40000 {
		doc := randomQueue(rng)
		period := doc.Preferences.CPUSchedulingPeriod
		stirQueue(rng, doc, t0)
		quiet, now := firstHold(doc, t0)
		if !quiet.hold || math.IsInf(quiet.boxEps, 1) {
			continue
		}
		held++
		for i := range quiet.jobs {
			if j := &quiet.jobs[i]; j.running && sliceRun(doc, &doc.Tasks[j.task]) > period {
				kept++
				break
			}
		}
		if quiet.holdMiss {
			missed++
		}
		misses := slices.Clone(quiet.passMissed)
		rel := RelativeSpeeds(&doc.Host, nil)
		used := make([][]float64, len(doc.Projects))
		how := rng.IntN(3)
		favoured := rng.IntN(len(doc.Projects))
		var d credit.Decay
		for now+60 < quiet.holdUntil {
			now += 60
			on := rng.IntN(4) != 0
			for p := range used {
				used[p] = []float64{0}
			}
			for i := range doc.Tasks {
				tk := &doc.Tasks[i]
				if tk.State != state.TaskRunning || !on {
					continue
				}
				tk.ElapsedTime += 60
				tk.FlopsDone = min(tk.EstimatedFlops*1.5, tk.FlopsDone+60e9*rng.Float64())
				tk.FractionDone = tk.FlopsDone / (tk.EstimatedFlops * 1.6)
				if how == 0 {
					used[slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == tk.Project })][0]++
				}
			}
			if on && how == 1 {
				used[favoured][0] = float64(doc.Host.CPU().Instances)
			}
			AccountDecay(doc, used, 60, now, rel, &d)
			if !holdStands(t, &ws, trial, quiet, doc, now, t0, misses) {
				break // the hold ends: a pass is made
			}
			moments++
		}
	}
	if held < 2000 || kept < 1000 || missed < 300 || moments < 10000 {
		t.Errorf("%d holds in a box, %d with a job past its slice, %d for misses; %d moments within them: want more", held, kept, missed, moments)
	}
	t.Logf("%d holds in a box, %d with a job past its slice, %d for misses; %d moments within them", held, kept, missed, moments)
}

// stirQueue moves a random queue toward the holds' hard cases: often its RECs in
// proportion to the shares, give or take a little (where the projects' priorities
// meet, as part-time-4cpu's do), often its deadlines later (fewer misses, more holds
// by priority), some tasks preempted, the started ones part done, a third of them near
// an estimate below their true work (1.6 ×: their estimated remaining work grows as
// the work done passes it, noRiseUntil), and running ones often past their time slice.
func stirQueue(rng *rand.Rand, doc *state.Document, t0 float64) {
	period := doc.Preferences.CPUSchedulingPeriod
	if rng.IntN(2) == 0 {
		for p := range doc.Projects {
			doc.Projects[p].REC = doc.Projects[p].ResourceShare * (1 + 0.02*(rng.Float64()-0.5))
		}
	}
	late := rng.IntN(2) == 0
	for i := range doc.Tasks {
		tk := &doc.Tasks[i]
		if late {
			tk.ReportDeadline += 2 * (tk.ReportDeadline - t0)
		}
		if tk.State != state.TaskRunning && rng.IntN(4) == 0 {
			tk.State = state.TaskPreempted
		}
		if tk.State != state.TaskReady {
			tk.FlopsDone = tk.EstimatedFlops * 0.5 * rng.Float64()
			if rng.IntN(3) == 0 {
				tk.FlopsDone = tk.EstimatedFlops * (0.95 + 0.05*rng.Float64())
			}
			tk.FractionDone = tk.FlopsDone / (tk.EstimatedFlops * 1.6)
			tk.ElapsedTime = period * 3 * rng.Float64()
			if tk.State == state.TaskRunning && rng.IntN(2) == 0 {
				tk.ElapsedTimeAtLastSched = tk.ElapsedTime - period*rng.Float64()
			}
		}
	}
}

// firstHold makes quiet passes on doc from t0, a minute apart, until one is held (at
// most three), and returns the workspace and the time of its last pass: the start of
// the randomized tests that follow a hold.
func firstHold(doc *state.Document, t0 float64) (*Workspace, float64) {
	quiet := &Workspace{Quiet: true}
	now := t0
	for range 3 {
		quiet.Schedule(doc, now)
		if quiet.hold {
			break
		}
		now += 60
		quiet.TasksChanged()
	}
	return quiet, now
}

// holdStands checks a quiet pass's hold at now, after the jobs' progress and the RECs'
// accounting of the step: false when the RECs left the hold's box (the hold ends);
// otherwise the quiet pass must still hold, and a whole pass change nothing and count
// the hold's misses.
func holdStands(t *testing.T, ws *wholeSpace, trial int, quiet *Workspace, doc *state.Document, now, t0 float64, misses []int) bool {
	t.Helper()
	if !quiet.inBox(doc) {
		return false
	}
	if l := quiet.Schedule(doc, now); len(l) != 0 || !quiet.hold {
		t.Fatalf("trial %d: the quiet pass %.0f s in not held", trial, now-t0)
	}
	w := ws.pass(doc, now)
	if w.Changed() || !sameMisses(w.passMissed, misses) {
		t.Fatalf("trial %d: %.0f s into a hold until %.0f s (box %g), the whole pass changed %v, misses %v, the hold's %v",
			trial, now-t0, quiet.holdUntil-t0, quiet.boxEps, w.Changed(), w.passMissed, misses)
	}
	return true
}

// sameMisses compares two passes' deadline-miss counts, a count left out being none.
func sameMisses(a, b []int) bool {
	for i := range max(len(a), len(b)) {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return false
		}
	}
	return true
}
