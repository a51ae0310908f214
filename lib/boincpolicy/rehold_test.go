package boincpolicy

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/state"
)

// TestReholdAgainstPass: on random queues (TestBoxHoldAgainstPass's: RECs often where
// the priorities meet, running jobs often past their slice, estimates often below the
// true work), from a quiet pass's hold on, at every 60 s for up to 90 minutes while the
// tasks stay as they are (the RECs moved by the jobs running, by one project's, or by
// none, as the host computes or not), the quiet pass and a whole pass made afresh
// decide alike: the same tasks started or stopped, and where rehold made the quiet
// pass the whole one changes nothing and counts the same misses.
func TestReholdAgainstPass(t *testing.T) {
	t.Parallel()
	var ws wholeSpace // the whole passes' memory
	rng := rand.New(rand.NewPCG(30, 14))
	reheld, moments := 0, 0
	for trial := range 20000 {
		doc := randomQueue(rng)
		stirQueue(rng, doc, t0)
		if rng.IntN(2) == 0 {
			// Ties: jobs of a project two of one deadline, both started (part-time-4cpu's
			// A jobs; edfListingSure's order).
			for i := 1; i < len(doc.Tasks); i++ {
				if a, b := &doc.Tasks[i-1], &doc.Tasks[i]; a.Project == b.Project && rng.IntN(2) == 0 {
					b.ReportDeadline = a.ReportDeadline
					for _, tk := range []*state.Task{a, b} {
						if tk.State == state.TaskReady {
							tk.State = []state.TaskState{state.TaskRunning, state.TaskPreempted}[rng.IntN(2)]
							tk.FlopsDone = tk.EstimatedFlops * 0.5 * rng.Float64()
							tk.FractionDone = tk.FlopsDone / (tk.EstimatedFlops * 1.6)
						}
					}
					// Their remaining times close: the order may turn within a hold.
					b.EstimatedFlops = a.EstimatedFlops
					b.FlopsDone = a.FlopsDone * (1 + 0.02*(rng.Float64()-0.5))
					b.FractionDone = b.FlopsDone / (b.EstimatedFlops * 1.6)
				}
			}
		}
		quiet, now := firstHold(doc, t0)
		if !quiet.hold {
			continue
		}
		rel := RelativeSpeeds(&doc.Host, nil)
		used := make([][]float64, len(doc.Projects))
		how := rng.IntN(3)
		favoured := rng.IntN(len(doc.Projects))
		speed := 60e9 * rng.Float64() // the work done a second at most, this trial
		var d credit.Decay
		for range 90 {
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
				tk.FlopsDone = min(tk.EstimatedFlops*1.5, tk.FlopsDone+speed*rng.Float64())
				tk.FractionDone = tk.FlopsDone / (tk.EstimatedFlops * 1.6)
				if how == 0 {
					used[slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == tk.Project })][0]++
				}
			}
			if on && how == 1 {
				used[favoured][0] = float64(doc.Host.CPU().Instances)
			}
			AccountDecay(doc, used, 60, now, rel, &d)
			w := ws.pass(doc, now)
			before := quiet.reheld
			l := quiet.Schedule(doc, now)
			if quiet.Changed() != w.Changed() {
				t.Fatalf("trial %d: %.0f s in, the quiet pass changed %v, the whole one %v", trial, now-t0, quiet.Changed(), w.Changed())
			}
			if quiet.Changed() {
				break // the tasks changed
			}
			if quiet.reheld > before {
				if len(l) != 0 || !sameMisses(w.passMissed, quiet.passMissed) {
					t.Fatalf("trial %d: %.0f s in, the reheld pass's misses %v, the whole one's %v",
						trial, now-t0, quiet.passMissed, w.passMissed)
				}
				reheld++
			}
			moments++
		}
	}
	if reheld < 1000 {
		t.Errorf("%d passes reheld in %d moments: want more", reheld, moments)
	}
	t.Logf("%d passes reheld in %d moments", reheld, moments)
}
