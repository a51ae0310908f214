package boincpolicy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/state"
)

// TestEDFHoldExactTie: under BOINC's emulator, on random queues whose first two jobs
// (A's) share a deadline and a true remaining work, both running, and often a later
// job of A misses (EDF then lists A's earliest: the first of the two), whenever a
// quiet pass holds for misses with a running job behind a listed one of its deadline
// exactly tied (exactTie), then at every 60 s within the hold, the jobs of the pair's
// app version computing at one rate (the loop's: their version's speed × the step,
// taken off their true remaining work), the others at any rate, the RECs moved by the
// jobs running, a whole pass changes nothing and counts the hold's misses. In a quarter
// of the queues the second job is of another app version of the same speed, which the
// loop may run at another rate (a coprocessor's, say), in another quarter the first is
// preempted: exactTie must not hold those, and the test fails when it does (its app
// versions' test dropped: trial 841).
func TestEDFHoldExactTie(t *testing.T) {
	t.Parallel()
	var ws wholeSpace // the whole passes' memory
	rng := rand.New(rand.NewPCG(30, 19))
	held, moments := 0, 0
	for trial := range 20000 {
		doc := exactTieQueue(rng)
		quiet, now := firstHold(doc, t0)
		if !quiet.hold || !quiet.holdMiss {
			continue
		}
		exact := false
		xs, us := tiePairs(quiet)
		for k := range xs {
			if doc.Tasks[xs[k]].EmulatorFlopsLeft == doc.Tasks[us[k]].EmulatorFlopsLeft {
				exact = true
			}
		}
		if !exact {
			continue
		}
		held++
		moments += walkHold(t, &ws, rng, trial, quiet, doc, now, nil)
	}
	if held < 1000 || moments < 10000 {
		t.Errorf("%d holds with a running job exactly tied behind a listed one, %d moments within them: want more", held, moments)
	}
	t.Logf("%d holds with a running job exactly tied behind a listed one; %d moments within them", held, moments)
}

// exactTieQueue is pairQueue with the pair's true remaining work and work done equal.
func exactTieQueue(rng *rand.Rand) *state.Document {
	return pairQueue(rng, func(left float64) (x, u func() (float64, float64)) {
		done := left * rng.Float64()
		same := func() (float64, float64) { return left, done }
		return same, same
	})
}

// walkHold steps a host whose quiet pass held for misses (quiet, at now) through the
// hold 60 s at a time: the running jobs of the first job's app version compute at one
// rate (the loop's: their version's speed × the step, taken off their true remaining
// work), the others at any rate, the RECs move by the jobs running, and a whole pass at
// each moment must change nothing and count the hold's misses (holdStands; t fails
// otherwise). It stops when a job would end (the loop settles that: TasksChanged) or
// the RECs leave the hold's box, calls each (when not nil) at every moment the hold
// stood, and returns the moments.
func walkHold(t *testing.T, ws *wholeSpace, rng *rand.Rand, trial int, quiet *Workspace, doc *state.Document, now float64, each func(now float64)) int {
	moments := 0
	missed := slices.Clone(quiet.passMissed)
	rel := RelativeSpeeds(&doc.Host, nil)
	used := make([][]float64, len(doc.Projects))
	var d credit.Decay
	for now+60 < quiet.holdUntil {
		now += 60
		for p := range used {
			used[p] = []float64{0}
		}
		same := rng.Float64() // the first job's version's rate
		for i := range doc.Tasks {
			tk := &doc.Tasks[i]
			if tk.State != state.TaskRunning {
				continue
			}
			rate := rng.Float64()
			if tk.AppVersion == doc.Tasks[0].AppVersion {
				rate = same
			}
			if tk.EmulatorFlopsLeft <= 60e9*rate {
				return moments // it would end: the loop settles it (TasksChanged)
			}
			tk.ElapsedTime += 60
			tk.EmulatorFlopsLeft -= 60e9 * rate
			tk.FlopsDone += 60e9 * rate
			tk.FractionDone = tk.FlopsDone / (tk.FlopsDone + tk.EmulatorFlopsLeft)
			used[slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == tk.Project })][0]++
		}
		AccountDecay(doc, used, 60, now, rel, &d)
		if !holdStands(t, ws, trial, quiet, doc, now, t0, missed) {
			return moments // the RECs left the hold's box: the hold ends
		}
		if each != nil {
			each(now)
		}
		moments++
	}
	return moments
}

// pairQueue is a host of 2–8 CPUs under BOINC's emulator, on 40 % to all of the
// time, whose first two jobs (A's) share a deadline, both started and running, their
// true remaining work (state.Task.EmulatorFlopsLeft) and work done pair's: pair is
// given the first's remaining work, draws what it needs, and returns the two jobs'
// (remaining, done), each drawn as its job is added. In a quarter of the queues the
// second is of another app version of the same speed, in another the first
// preempted; then other jobs of A, some of a later deadline that they miss, and often
// of B, as many running as fill the CPUs. The estimates are not the true work.
func pairQueue(rng *rand.Rand, pair func(left float64) (x, u func() (float64, float64))) *state.Document {
	n := 2 + rng.IntN(7)
	doc := host(n)
	doc.BOINCEmulator = true
	doc.Host.TimeStats.OnFrac = []float64{1, 0.9, 0.4}[rng.IntN(3)]
	doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "A/w", Project: "A", AvgNCPUs: 1, Flops: 1e9})
	avail := availFrac(&doc.Host.TimeStats, false)
	comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
	for p := range doc.Projects {
		doc.Projects[p].REC, doc.Projects[p].RECTime = 100*rng.Float64(), t0
		doc.Projects[p].ResourceShare = []float64{100, 50, 30}[rng.IntN(3)]
	}
	left := (1800 + 20000*rng.Float64()) * 1e9
	xWork, uWork := pair(left)
	dl := t0 + comp + left/1e9/avail*(1+2*rng.Float64())
	running := 0
	add := func(name, p string, left, done, dl float64) *state.Task {
		tk := task(name, p, (left+done)*(0.5+rng.Float64()), dl)
		tk.EmulatorFlopsLeft = left
		if done > 0 {
			tk.FlopsDone, tk.FractionDone = done, done/(done+left)
			tk.ElapsedTime = 3600 * 3 * rng.Float64()
			tk.State = state.TaskPreempted
			if running < n {
				tk.State, running = state.TaskRunning, running+1
			}
		}
		doc.Tasks = append(doc.Tasks, tk)
		return &doc.Tasks[len(doc.Tasks)-1]
	}
	xLeft, xDone := xWork()
	x := add("a0", "A", xLeft, xDone, dl)
	uLeft, uDone := uWork()
	u := add("a1", "A", uLeft, uDone, dl)
	switch rng.IntN(4) {
	case 0:
		u.AppVersion = "A/w"
	case 1:
		x.State = state.TaskPreempted // x listed and not running, u's work falls
		running--
	}
	for i := range rng.IntN(12) {
		p := "A"
		if rng.IntN(2) == 0 {
			p = "B"
		}
		secs := 1800 + 20000*rng.Float64()
		d := dl + 86400*rng.Float64()
		if p == "A" && rng.IntN(3) == 0 {
			d = dl + secs/avail*rng.Float64() // a later deadline it misses
		}
		var done float64
		if running < n {
			done = secs * 1e9 * rng.Float64()
		}
		add(fmt.Sprint("t", i), p, secs*1e9, done, d)
	}
	return doc
}
