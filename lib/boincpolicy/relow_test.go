package boincpolicy

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/state"
)

// TestRelowAgainstSimulation: on random queues whose missesKnown answer, kept, has
// misses by missBounds' bound and a slack shorter than the rest's (relow), time
// jumps to about where that slack ends and past it (the running jobs' work done at
// any rate up to their speed, the RECs moved by the jobs running), and whenever
// missesKept gives the misses past that slack they are the simulation's, job by job.
// It wants many such moments and some refused, and fails with the bound's misses not
// found again.
func TestRelowAgainstSimulation(t *testing.T) {
	var quietMem, simMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 13))
	answers, relowed, refused := 0, 0, 0
	for trial := range 40000 {
		doc := randomQueue(rng)
		doc.BOINCEmulator = false
		quiet := renewed(&quietMem)
		quiet.Quiet = true
		now := t0
		quiet.Schedule(doc, now)
		if !quiet.mkKept || !quiet.mkBound || !(quiet.mkUntil < quiet.mkRest) || quiet.Changed() {
			continue
		}
		answers++
		rel := RelativeSpeeds(&doc.Host, nil)
		used := make([][]float64, len(doc.Projects))
		var d credit.Decay
		fast := rng.IntN(2) == 0 // the running jobs' work done at their speed
		for range 8 {
			if !quiet.mkKept || !(now < quiet.mkRest) {
				break
			}
			// About where the slack ends, or well past it (for some refused).
			dt := max(1, (quiet.mkUntil-now)*(0.5+[]float64{1, 6}[rng.IntN(2)]*rng.Float64()))
			now += dt
			for p := range used {
				used[p] = []float64{0}
			}
			for i := range doc.Tasks {
				tk := &doc.Tasks[i]
				if tk.State != state.TaskRunning {
					continue
				}
				tk.ElapsedTime += dt
				rate := rng.Float64()
				if fast {
					rate = 1
				}
				tk.FlopsDone = min(tk.EstimatedFlops*1.5, tk.FlopsDone+dt*1e9*rate)
				tk.FractionDone = tk.FlopsDone / (tk.EstimatedFlops * 1.6)
				used[slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == tk.Project })][0]++
			}
			AccountDecay(doc, used, dt, now, rel, &d)
			quiet.viewDone = false
			quiet.quietView(doc, now)
			quiet.prepareJobs(doc)
			past := !(now < quiet.mkUntil)
			if !quiet.missesKept(doc, now) {
				if past && now < quiet.mkRest {
					refused++
				}
				break
			}
			if !past {
				continue
			}
			relowed++
			sim := renewed(&simMem)
			sim.Simulate(doc, now)
			for i := range quiet.jobs {
				if quiet.jobs[i].misses != sim.jobs[i].misses {
					t.Fatalf("trial %d: %.0f s on: job %d misses %v, in the simulation %v",
						trial, now-t0, i, quiet.jobs[i].misses, sim.jobs[i].misses)
				}
			}
			if !slices.Equal(quiet.missed, sim.missed) {
				t.Fatalf("trial %d: misses %v, the simulation's %v", trial, quiet.missed, sim.missed)
			}
		}
	}
	if relowed < 150 || refused < 3 {
		t.Errorf("%d answers, %d moments past the bound's misses' slack, %d refused: want more", answers, relowed, refused)
	}
	t.Logf("%d answers, %d moments past the bound's misses' slack, %d refused", answers, relowed, refused)
}
