package boincpolicy

import (
	"math/rand/v2"
	"testing"
)

// TestFirstLevelRests: after perJobTries passes in a row at which the hour's horizon
// was tried and another decided, the next perJobRest passes start at 600 s (at now
// alone while the 600 s horizon rests too), their outcomes not counted, and then the
// hour's is tried again; a pass it decides clears the count.
func TestFirstLevelRests(t *testing.T) {
	var w Workspace
	for k := range perJobTries {
		if l := w.firstLevel(); l != 0 {
			t.Fatalf("failure %d: first level %d, want 0", k, l)
		}
		w.longDone(0, 2)
	}
	for k := range perJobRest {
		if l := w.firstLevel(); l != 1 {
			t.Fatalf("resting pass %d: first level %d, want 1", k, l)
		}
		w.longDone(1, 2)
	}
	if l := w.firstLevel(); l != 0 {
		t.Fatalf("after the rest: first level %d, want 0", l)
	}
	w = Workspace{}
	for range perJobTries - 1 {
		w.longDone(0, 1)
	}
	w.longDone(0, 0)
	for range perJobTries - 1 {
		w.longDone(0, 1)
	}
	if l := w.firstLevel(); l != 0 {
		t.Errorf("three failures after a success: first level %d, want 0", l)
	}
	w = Workspace{longSkip: 1, shortSkip: 1}
	if l := w.firstLevel(); l != len(recHorizons)-1 || w.shortSkip != 0 {
		t.Errorf("both resting: first level %d (short skip %d), want now alone", l, w.shortSkip)
	}
}

// TestRestedHorizonSlack: on random queues whose misses the bounds per job decide
// with the hour's horizon resting (firstLevel 1), the slack is within the 600 s the
// served CPUs were found for.
func TestRestedHorizonSlack(t *testing.T) {
	var qMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 13))
	tried := 0
	for range 20000 {
		doc := randomQueue(rng)
		q := renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		q.longSkip = 1
		if !q.missesKnown(doc, t0) || !q.perJobUsed(doc, t0) {
			continue
		}
		tried++
		if q.slack > recHorizons[1] {
			t.Fatalf("slack %g past the 600 s horizon", q.slack)
		}
	}
	if tried < 1000 {
		t.Errorf("%d queues decided by the bounds per job: want more", tried)
	}
	t.Logf("%d queues decided by the bounds per job", tried)
}
