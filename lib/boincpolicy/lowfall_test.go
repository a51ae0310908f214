package boincpolicy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestLowFallPerJob (issue 30, tenth round): on random queues, where missesKnown
// finds jobs that miss by missBounds' bound, at every 60 s within its slack, the
// running jobs' work done at the host's full speed (their simulated times falling at
// the most lowFall allows) and the RECs still, the simulation still misses every one
// of them. lowFall's rate per job (the
// running jobs placed before the job and the other served projects') against the sum
// over every running job: the slack is longer, and still good.
func TestLowFallPerJob(t *testing.T) {
	var qMem, simMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 10))
	checked, moments, longer := 0, 0, 0
	for trial := range 12000 {
		doc := randomQueue(rng)
		if rng.IntN(2) == 0 {
			// part-time-4cpu's shape: one project of every job.
			for i := range doc.Tasks {
				doc.Tasks[i].Project, doc.Tasks[i].AppVersion = doc.Projects[0].Name, doc.AppVersions[0].Name
			}
		}
		q := renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		if !q.missesKnown(doc, t0) || !q.boundMiss || q.slack < 60 {
			continue
		}
		missed := make([]bool, len(q.jobs))
		for i := range q.jobs {
			missed[i] = q.jobs[i].misses
		}
		// The eighth round's rate: every running job.
		sum := -1.0
		per := q.fall / availFrac(&doc.Host.TimeStats, false)
		for i := range q.jobs {
			if q.jobs[i].running {
				sum += per
			}
		}
		for i := range q.jobs {
			if q.jobs[i].misses && q.lowK[i] < sum {
				longer++
				break
			}
		}
		checked++
		slack := q.slack
		for dt := 60.0; dt < slack; dt += 60 {
			done := false
			for i := range doc.Tasks {
				tk := &doc.Tasks[i]
				if tk.State != state.TaskRunning {
					continue
				}
				tk.ElapsedTime += 60
				speed := doc.Host.CPU().Flops // its full speed, or less
				if rng.IntN(2) == 0 {
					speed *= rng.Float64()
				}
				tk.FlopsDone += 60 * speed
				if tk.FlopsDone > 0.99*tk.EstimatedFlops {
					done = true // the task would end: the tasks change, the hold ends
				}
				tk.FractionDone = tk.FlopsDone / tk.EstimatedFlops
			}
			if done {
				break
			}
			for p := range doc.Projects {
				doc.Projects[p].RECTime = t0 + dt
			}
			sim := renewed(&simMem)
			sim.Simulate(doc, t0+dt)
			for i := range missed {
				if missed[i] && !sim.jobs[i].misses {
					t.Fatalf("trial %d: job %d missed by the bound at now, not %.0f s on (slack %.0f s)", trial, i, dt, slack)
				}
			}
			moments++
		}
	}
	if checked < 5000 || longer < 4000 {
		t.Errorf("%d queues with misses by the bound, %d with a longer slack than the sum's: want more", checked, longer)
	}
	t.Logf("%d queues with misses by the bound (%d with a longer slack than the sum's); %d moments within their slack", checked, longer, moments)
}

// TestFallGrid: on random d's over many sizes, fallGrid's d is never below the d it
// rounds, at most 2^-31 of it above, the same once rounded again, never below the
// rounding of a smaller d, and the same for a d moved by a few of its last bits (the
// jitter of runFall's quotient from pass to pass) wherever no multiple of the grid lies
// between them. It fails with the rounding made down (the bits cleared, not added to
// first): then below the d.
func TestFallGrid(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 4301))
	const grid = 1<<20 - 1
	for trial := range 200000 {
		d := math.Ldexp(1+rng.Float64(), rng.IntN(80)-40)
		g := fallGrid(d)
		if !(g >= d) || g > d*(1+math.Ldexp(1, -31)) || fallGrid(g) != g {
			t.Fatalf("trial %d: fallGrid(%v) = %v (again %v)", trial, d, g, fallGrid(g))
		}
		e := math.Float64frombits(math.Float64bits(d) + uint64(rng.IntN(8)))
		if ge := fallGrid(e); ge < g || math.Float64bits(e)&^grid == math.Float64bits(d)&^grid && math.Float64bits(d)&grid != 0 && ge != g {
			t.Fatalf("trial %d: fallGrid(%v) = %v, fallGrid(%v) = %v", trial, d, g, e, ge)
		}
	}
	for _, d := range []float64{0, math.Inf(1), 1, 2} {
		if g := fallGrid(d); g != d {
			t.Fatalf("fallGrid(%v) = %v", d, g)
		}
	}
}
