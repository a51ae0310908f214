package boincpolicy

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/state"
)

// TestMissesKeptAgainstSimulation: on random queues (their RECs often where the
// projects' priorities meet), after a quiet pass whose missesKnown kept its answer
// (keepMisses), at every 60 s after it while the tasks stay as they are (the running
// jobs' work done at any rate up to their speed, the RECs moved by the jobs running or
// by one project's), whenever missesKept gives the misses they are the simulation's,
// job by job. It wants many such moments, and fails with the box not shrunk by the
// RECs' moves, or with the slack read as twice as long.
func TestMissesKeptAgainstSimulation(t *testing.T) {
	var quietMem, simMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 14))
	kept, moments, missing, bounded, carried, relowed := 0, 0, 0, 0, 0, 0
	for trial := range 20000 {
		doc := randomQueue(rng)
		doc.BOINCEmulator = false
		if rng.IntN(2) == 0 {
			for p := range doc.Projects {
				doc.Projects[p].REC = doc.Projects[p].ResourceShare * (1 + 0.02*(rng.Float64()-0.5))
			}
		}
		for i := range doc.Tasks {
			tk := &doc.Tasks[i]
			if tk.State != state.TaskReady {
				tk.FlopsDone = tk.EstimatedFlops * 0.5 * rng.Float64()
				if rng.IntN(3) == 0 {
					// Near its estimate, below its true work (1.6 ×): its estimated
					// remaining work grows as the work done passes it (noRiseUntil).
					tk.FlopsDone = tk.EstimatedFlops * (0.95 + 0.05*rng.Float64())
				}
				tk.FractionDone = tk.FlopsDone / (tk.EstimatedFlops * 1.6)
			}
		}
		quiet := renewed(&quietMem)
		quiet.Quiet = true
		now := t0
		quiet.Schedule(doc, now)
		if !quiet.mkKept || quiet.Changed() {
			continue
		}
		kept++
		rel := RelativeSpeeds(&doc.Host, nil)
		used := make([][]float64, len(doc.Projects))
		how, favoured := rng.IntN(2), rng.IntN(len(doc.Projects))
		var d credit.Decay
		for now+60 < min(quiet.mkUntil+120, t0+6*3600) {
			now += 60
			for p := range used {
				used[p] = []float64{0}
			}
			for i := range doc.Tasks {
				tk := &doc.Tasks[i]
				if tk.State != state.TaskRunning {
					continue
				}
				tk.ElapsedTime += 60
				tk.FlopsDone = min(tk.EstimatedFlops*1.5, tk.FlopsDone+60e9*rng.Float64())
				tk.FractionDone = tk.FlopsDone / (tk.EstimatedFlops * 1.6)
				if how == 0 {
					used[slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == tk.Project })][0]++
				}
			}
			if how == 1 {
				used[favoured][0] = float64(doc.Host.CPU().Instances)
			}
			AccountDecay(doc, used, 60, now, rel, &d)
			quiet.viewDone = false
			quiet.quietView(doc, now)
			quiet.prepareJobs(doc)
			// Past its box, the answer is carried only with the served CPUs the same
			// (reserve).
			past := !math.IsInf(quiet.mkEps, 1) && !(quiet.mkEps-recDrift(doc, quiet.mkF) > 0)
			// Past its slack, only with the misses by missBounds' bound found again
			// (relow).
			pastLow := !(now < quiet.mkUntil)
			if !quiet.missesKept(doc, now) {
				continue
			}
			if past {
				carried++
			}
			if pastLow {
				relowed++
			}
			sim := renewed(&simMem)
			sim.Simulate(doc, now)
			for i := range quiet.jobs {
				if quiet.jobs[i].misses != sim.jobs[i].misses {
					t.Fatalf("trial %d: %.0f s on (kept until %.0f s): job %d misses %v, in the simulation %v",
						trial, now-t0, quiet.mkUntil-t0, i, quiet.jobs[i].misses, sim.jobs[i].misses)
				}
				if sim.jobs[i].misses {
					missing++
				}
			}
			if !slices.Equal(quiet.missed, sim.missed) {
				t.Fatalf("trial %d: misses %v, the simulation's %v", trial, quiet.missed, sim.missed)
			}
			moments++
			if quiet.mkUntil < t0+6*3600 {
				bounded++
			}
		}
	}
	if kept < 800 || bounded < 5000 || missing < 2000 || carried < 10 || relowed < 20 {
		t.Errorf("%d answers kept, %d moments given by them (%d within a slack that ends, %d jobs missing, %d carried past the box, %d past the bound's misses' slack): want more", kept, moments, bounded, missing, carried, relowed)
	}
	t.Logf("%d answers kept, %d moments given by them (%d within a slack that ends, %d jobs missing, %d carried past the box, %d past the bound's misses' slack)", kept, moments, bounded, missing, carried, relowed)
}
