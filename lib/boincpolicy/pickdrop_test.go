package boincpolicy

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// picksDiffer simulates doc at t0 picking afresh after every job's end and with
// pickAgain (and pickDrop), and reports whether any result differs (samePicks'
// comparison), with the workspace that took the shortcut.
func picksDiffer(doc *state.Document) (bool, *Workspace) {
	var a, b Workspace
	var la, lb []float64
	noPickAgain = true
	pickHook = func(w *Workspace) { la = pickLog(la, w) }
	a.Simulate(doc, t0)
	noPickAgain = false
	pickHook = func(w *Workspace) { lb = pickLog(lb, w) }
	b.Simulate(doc, t0)
	pickHook = nil
	if !slices.Equal(la, lb) || !slices.Equal(a.Sim, b.Sim) || !slices.Equal(a.missed, b.missed) || !slices.Equal(a.missOrder, b.missOrder) ||
		!slices.Equal(a.simUsed, b.simUsed) || !slices.Equal(a.simNused, b.simNused) || !slices.Equal(a.recTemp, b.recTemp) {
		return true, &b
	}
	for i := range a.jobs {
		if a.jobs[i] != b.jobs[i] {
			return true, &b
		}
	}
	return false, &b
}

// pickLog appends to l what a pick leaves (the jobs picked, the instances in use,
// the temporary RECs, the picks' order and places in the lists), so that every pick
// of a simulation is compared, not only its last.
func pickLog(l []float64, w *Workspace) []float64 {
	for _, a := range w.active {
		l = append(l, float64(a))
	}
	l = append(l, -1)
	l = append(l, w.simNused...)
	l = append(l, w.simUsed...)
	l = append(l, w.recTemp...)
	for _, p := range w.pickSeq {
		l = append(l, float64(p))
	}
	for _, k := range w.pendingAt {
		l = append(l, float64(k))
	}
	if w.pickBroke {
		l = append(l, -2)
	}
	return append(l, -3)
}

// dropQueue is a random queue for pickDrop: randomQueue's CPU host or
// randomGPUQueue's, whose CPU jobs often all fit the CPUs (so that the pick's heap
// empties: a host of more CPUs, fewer jobs), now and then with ties of priority
// (equal shares and RECs) and a project's CPU jobs of tenths of a CPU.
func dropQueue(rng *rand.Rand) *state.Document {
	var doc *state.Document
	if rng.IntN(2) == 0 {
		doc = randomQueue(rng)
	} else {
		doc = randomGPUQueue(rng)
	}
	if rng.IntN(2) == 0 {
		doc.Host.Resources[0].Instances += 4 + rng.IntN(12)
	}
	if rng.IntN(3) == 0 {
		for p := range doc.Projects {
			doc.Projects[p].ResourceShare, doc.Projects[p].REC = 100, 50
		}
	}
	for v := range doc.AppVersions {
		if doc.AppVersions[v].Coproc == nil && rng.IntN(4) == 0 {
			doc.AppVersions[v].AvgNCPUs = []float64{0.1, 0.3, 0.7}[rng.IntN(3)]
		}
	}
	return doc
}

// TestPickDropIsPick: on random queues whose CPU jobs often all fit the CPUs, the
// simulation whose picks after a CPU job's end are pickDrop's where pickAgain's list
// would run out leaves every result, and what each pick leaves, as the simulation
// that picks afresh every time;
// and with any of pickDrop's safeguards taken away (the pick's stop before its heap
// emptied, the temporary REC of a project left without CPU jobs but with
// coprocessor jobs, the sums and temporary REC found again), some result differs.
func TestPickDropIsPick(t *testing.T) {
	if !Alone(t) {
		return
	}
	const trials = 20000
	run := func(seed uint64) (int, int) { // the picks dropped, the first trial that differed (-1: none)
		rng := rand.New(rand.NewPCG(30, seed))
		dropped := 0
		pickDropped = &dropped
		defer func() { pickDropped = nil }()
		for trial := range trials {
			if differ, _ := picksDiffer(dropQueue(rng)); differ {
				return dropped, trial
			}
		}
		return dropped, -1
	}
	dropped, bad := run(41)
	if bad >= 0 {
		t.Fatalf("trial %d: pickDrop's results differ from a whole pick's", bad)
	}
	if dropped < 20000 {
		t.Errorf("pickDrop made %d picks only", dropped)
	}
	t.Logf("pickDrop made %d picks in %d queues", dropped, trials)
	for _, c := range []struct {
		name string
		off  *bool
	}{{"the loop's stop", &dropBroke}, {"the bumps", &dropAnyBump}, {"the CPUs' loop's stop", &dropCPUsBroke},
		{"the last loop's temporary REC", &noDropLast}, {"the sums", &noDropSums}} {
		*c.off = true
		_, bad := run(41)
		*c.off = false
		if bad < 0 {
			t.Errorf("pickDrop without %s: no result differs", c.name)
		} else {
			t.Logf("pickDrop without %s: trial %d differs", c.name, bad)
		}
	}
}
