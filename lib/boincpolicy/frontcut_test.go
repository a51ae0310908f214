package boincpolicy

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFrontCut: on random queues (CPU and GPU hosts, ties of priority now and then),
// simulations that take a finished job first in its list off the list's front
// (reslicing; prepareRest starts the list again from pendBase) leave every result as
// those that move the rest of the list, each workspace simulating the queue three
// times (its lists' arrays used again). It fails with the front cut taken for a job
// second in its list too.
func TestFrontCut(t *testing.T) {
	if !Alone(t) {
		return
	}
	rng := rand.New(rand.NewPCG(30, 4702))
	cuts := 0
	for trial := range 5000 {
		doc := dropQueue(rng)
		var a, b Workspace
		for n := range 3 {
			now := t0 + float64(n)*600
			noFrontCut = true
			a.Reset()
			a.Simulate(doc, now)
			noFrontCut = false
			b.Reset()
			b.Simulate(doc, now)
			if !slices.Equal(a.Sim, b.Sim) || !slices.Equal(a.missed, b.missed) || !slices.Equal(a.missOrder, b.missOrder) ||
				!slices.Equal(a.simUsed, b.simUsed) || !slices.Equal(a.simNused, b.simNused) || !slices.Equal(a.recTemp, b.recTemp) {
				t.Fatalf("trial %d, simulation %d: moving the lists %+v %v %v, cutting their fronts %+v %v %v",
					trial, n, a.Sim, a.missed, a.missOrder, b.Sim, b.missed, b.missOrder)
			}
			for i := range a.jobs {
				if a.jobs[i] != b.jobs[i] {
					t.Fatalf("trial %d, simulation %d: job %d moving the lists %+v, cutting their fronts %+v", trial, n, i, a.jobs[i], b.jobs[i])
				}
			}
			for k := range b.pending {
				if cap(b.pending[k]) < cap(b.pendBase[k]) { // a front cut
					cuts++
					break
				}
			}
		}
	}
	noFrontCut = false
	if cuts < 5000 {
		t.Errorf("%d simulations cut a list at its front: want more", cuts)
	}
	t.Logf("%d simulations cut a list at its front", cuts)
}
