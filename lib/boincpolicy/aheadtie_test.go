package boincpolicy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/state"
)

// TestEDFHoldAheadTie: as TestEDFHoldExactTie, on random queues under BOINC's emulator
// whose first two jobs (A's) share a deadline, both running, the first's true remaining
// work up to an hour's less than the second's (aheadTie), whenever a quiet pass holds
// for misses with a running job behind a listed one of its deadline and less work
// left, then at every 60 s within the hold, the pair's app version's jobs computing at
// one rate, the others at any rate, the RECs moved by the jobs running, a whole pass
// changes nothing, counts the hold's misses and lists the same jobs for them
// (edfListingSure's claim). In a quarter of the queues the second
// job is of another app version of the same speed, which the loop may run at another
// rate, in another quarter the first is preempted: aheadTie must not hold those. It
// wants many such holds, many of them longer than the lead ÷ the fall (what the hold
// was before aheadTie), and fails with aheadTie's app versions' test dropped (trial
// 229), or its test that both run (trial 25).
func TestEDFHoldAheadTie(t *testing.T) {
	t.Parallel()
	var ws wholeSpace // the whole passes' memory
	rng := rand.New(rand.NewPCG(30, 3301))
	held, past, moments := 0, 0, 0
	for trial := range 20000 {
		doc := aheadTieQueue(rng)
		quiet, now := firstHold(doc, t0)
		if !quiet.hold || !quiet.holdMiss {
			continue
		}
		ahead := false
		lead := 1e300 // the least lead of a pair in seconds of work, the fall 1 here
		xs, us := tiePairs(quiet)
		for k := range xs {
			x, u := &doc.Tasks[xs[k]], &doc.Tasks[us[k]]
			if x.EmulatorFlopsLeft < u.EmulatorFlopsLeft {
				ahead = true
				lead = min(lead, (u.EmulatorFlopsLeft-x.EmulatorFlopsLeft)/1e9)
			}
		}
		if !ahead {
			continue
		}
		held++
		if quiet.holdUntil-now > lead {
			past++
		}
		listed := edfListed(quiet)
		missed := slices.Clone(quiet.passMissed)
		rel := RelativeSpeeds(&doc.Host, nil)
		used := make([][]float64, len(doc.Projects))
		var d credit.Decay
	steps:
		for now+60 < quiet.holdUntil {
			now += 60
			for p := range used {
				used[p] = []float64{0}
			}
			same := rng.Float64() // the pair's version's rate
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
					break steps // it would end: the loop settles it (TasksChanged)
				}
				tk.ElapsedTime += 60
				tk.EmulatorFlopsLeft -= 60e9 * rate
				tk.FlopsDone += 60e9 * rate
				tk.FractionDone = tk.FlopsDone / (tk.FlopsDone + tk.EmulatorFlopsLeft)
				used[slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == tk.Project })][0]++
			}
			AccountDecay(doc, used, 60, now, rel, &d)
			if !holdStands(t, &ws, trial, quiet, doc, now, t0, missed) {
				break // the RECs left the hold's box: the hold ends
			}
			if l := edfListed(&ws.w); !slices.Equal(l, listed) {
				t.Fatalf("trial %d: %.0f s into a hold until %.0f s, the whole pass listed %v for their misses, the hold's listing %v",
					trial, now-t0, quiet.holdUntil-t0, l, listed)
			}
			moments++
		}
	}
	if held < 1000 || past < 150 || moments < 10000 {
		t.Errorf("%d holds with a running job behind a listed one of less work, %d past the lead, %d moments within them: want more", held, past, moments)
	}
	t.Logf("%d holds with a running job behind a listed one of less work, %d past the lead; %d moments within them", held, past, moments)
}

// edfListed is the tasks w's last listing listed for their misses, in order.
func edfListed(w *Workspace) []int {
	var l []int
	for _, e := range w.list {
		if e.Why == WhyEDF {
			l = append(l, e.Task)
		}
	}
	slices.Sort(l)
	return l
}

// aheadTieQueue is exactTieQueue with the second job's true remaining work up to an
// hour's more than the first's (0 in a tenth of the queues), its work done its own.
func aheadTieQueue(rng *rand.Rand) *state.Document {
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
	gap := 3600e9 * rng.Float64()
	if rng.IntN(10) == 0 {
		gap = 0
	}
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
	x := add("a0", "A", left, left*rng.Float64()+1e9, dl)
	u := add("a1", "A", left+gap, left*rng.Float64()+1e9, dl)
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
