package boincpolicy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestServedWalkRandom: on random projects' figures (2 to 6 projects, some with no CPU
// jobs or not eligible, jobs of 1, 2, 0.5 or 1.5 CPUs at most, shares often equal and
// RECs often whole multiples of one bump, so that priorities tie exactly; bumps of 0;
// one call in eight with a bump below 0 for p, which makes its priority rise with k,
// and one in forty with a NaN REC), horizons 0 or not, track on or off, limits of 1 to
// 16 CPUs less a few: projectServed's walks of every eligible project in turn, one
// call's kept priorities shared (servedPrios, then servedREC, which resumes each k's
// walk where the last stopped), give every project's CPUs served and the box's margin
// bit for bit as the walk that works every priority out afresh and walks every k from
// its start (servedWhole). It fails with the counts carried where
// p's priority rose (the reset on a base above the last dropped) and with the counts
// carried from one project's walk to the next.
func TestServedWalkRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 4481))
	checks, resumed, tied := 0, 0, 0
	for trial := range 40000 {
		w, doc := &Workspace{}, &state.Document{}
		nP := 2 + rng.IntN(5)
		doc.Projects = make([]state.Project, nP)
		w.gCPUs, w.gBump = make([]float64, 4*nP), make([]float64, 2*nP)
		w.gShare, w.rec, w.eligible = make([]float64, nP), make([]float64, nP), make([]bool, nP)
		w.gServed = make([]float64, nP)
		unit := []float64{1, 0.25, 3.7e-3, rng.Float64()}[rng.IntN(4)]
		sameShare := rng.IntN(2) == 0
		var shareSum, recSum float64
		for q := range nP {
			share := 100.0
			if !sameShare {
				share = []float64{0, 1, 2, 100, 539, 1000 * rng.Float64()}[rng.IntN(6)]
			}
			doc.Projects[q].ResourceShare = share
			if rng.IntN(6) == 0 {
				continue // not eligible: no jobs, none counted
			}
			w.eligible[q] = true
			shareSum += share
			if rng.IntN(8) > 0 { // else coprocessor jobs alone: eligible, no CPU jobs
				n := 1 + rng.IntN(14)
				most := []float64{1, 1, 1, 2, 0.5, 1.5}[rng.IntN(6)]
				w.gCPUs[4*q], w.gCPUs[4*q+1], w.gCPUs[4*q+2] = float64(n), float64(n)*most, most
			}
			if rng.IntN(2) == 0 {
				w.rec[q] = float64(rng.IntN(20)) * unit
			} else {
				w.rec[q] = 20 * unit * rng.Float64()
			}
			recSum += w.rec[q]
			lo := []float64{0, unit, 2 * unit, unit * rng.Float64()}[rng.IntN(4)]
			w.gBump[2*q], w.gBump[2*q+1] = lo, lo+[]float64{0, 0, unit, unit * rng.Float64()}[rng.IntN(4)]
		}
		for q := range nP {
			if w.eligible[q] && shareSum > 0 {
				w.gShare[q] = doc.Projects[q].ResourceShare / shareSum
			}
		}
		if recSum == 0 {
			recSum = 1
		}
		horizon, decay, grow := 0.0, 1.0, 0.0
		if rng.IntN(2) == 0 {
			horizon, decay, grow = 3600, 0.9+0.1*rng.Float64(), unit*rng.Float64()
		}
		track := horizon == 0 && rng.IntN(4) > 0
		cpus := float64(1 + rng.IntN(16))
		limit := (cpus-float64(rng.IntN(2)))*(1-1e-12) - 1e-9
		w.servedPrios(doc, recSum, horizon > 0, decay, grow)
		w.servedEps = math.Inf(1)
		if rng.IntN(3) == 0 {
			w.servedEps = rng.Float64()
		}
		for p := range nP {
			if !w.eligible[p] {
				continue
			}
			x := w.rec[p]
			if horizon > 0 {
				x = (x + grow) / decay
			}
			switch rng.IntN(40) {
			case 0:
				x = math.NaN()
			case 1, 2, 3, 4, 5:
				w.gBump[2*p+1] = -unit * (0.5 + rng.Float64())
			}
			served, eps := w.servedWhole(doc, p, x, recSum, limit, track, horizon, decay, grow)
			w.servedREC(doc, p, x, recSum, limit, track)
			checks++
			if w.gServed[p] != served || w.servedEps != eps {
				t.Errorf("trial %d, project %d of %d: served %v, margin %v; the walk afresh %v, %v", trial, p, nP, w.gServed[p], w.servedEps, served, eps)
			}
			if w.gServed[p] > 1 {
				for q := range w.sQ {
					if q != p && w.sQ[q].count > 0 {
						resumed++
						break
					}
				}
			}
			tied += servedTies(w, doc, p, x, recSum, horizon, decay, grow)
		}
		if t.Failed() {
			break
		}
	}
	t.Logf("%d walks checked; %d with counts carried past k = 1, %d priorities tied exactly", checks, resumed, tied)
	if checks < 100000 || resumed < 10000 || tied < 1000 {
		t.Errorf("too few: %d walks, %d counts carried, %d ties", checks, resumed, tied)
	}
}

// servedTies counts the pairs of p's priority before one of its jobs (the first
// w.gServed[p] + 1) and another project's before one of its, as servedWhole works them
// out, that are equal.
func servedTies(w *Workspace, doc *state.Document, p int, x, recSum, horizon, decay, grow float64) int {
	ties := 0
	for k := 1.0; k <= min(w.gCPUs[4*p], w.gServed[p]+1); k++ {
		base := Priority(x, recSum, doc.Projects[p].ResourceShare, w.gShare[p])
		for q := range doc.Projects {
			if q == p || !w.eligible[q] {
				continue
			}
			y := w.rec[q]
			if horizon > 0 {
				y = decay * recSum * y / (recSum + grow)
			}
			for c := 0.0; c < w.gCPUs[4*q]; c++ {
				if Priority(y, recSum, doc.Projects[q].ResourceShare, w.gShare[q]) == base {
					ties++
				}
				y += w.gBump[2*q]
			}
		}
		x += w.gBump[2*p+1]
	}
	return ties
}
