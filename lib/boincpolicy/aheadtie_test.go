package boincpolicy

import (
	"math/rand/v2"
	"slices"
	"testing"

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
		moments += walkHold(t, &ws, rng, trial, quiet, doc, now, func(now float64) {
			if l := edfListed(&ws.w); !slices.Equal(l, listed) {
				t.Fatalf("trial %d: %.0f s into a hold until %.0f s, the whole pass listed %v for their misses, the hold's listing %v",
					trial, now-t0, quiet.holdUntil-t0, l, listed)
			}
		})
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

// aheadTieQueue is pairQueue with the second job's true remaining work up to an hour's
// more than the first's (0 in a tenth of the queues), each job's work done its own.
func aheadTieQueue(rng *rand.Rand) *state.Document {
	return pairQueue(rng, func(left float64) (x, u func() (float64, float64)) {
		gap := 3600e9 * rng.Float64()
		if rng.IntN(10) == 0 {
			gap = 0
		}
		return func() (float64, float64) { return left, left*rng.Float64() + 1e9 },
			func() (float64, float64) { return left + gap, left*rng.Float64() + 1e9 }
	})
}
