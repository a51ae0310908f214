package sim

import "testing"

// TestAskedAtFlipsOnce: a project server's process under --emulate boinc moves only
// when asked, and at most one flip an ask however long the gap (BOINC's emulator's
// RANDOM_PROCESS::sample in simulate_rpc); its first ask starts its clock.
func TestAskedAtFlipsOnce(t *testing.T) {
	p := newOnOff(0.5, 100, 0, newStream(1, 7))
	p.atRPC, p.asked, p.on, p.next = true, false, true, 50 // 50 s left in "up"
	if !p.askedAt(1e6) {                                   // the first ask: sample(0), the 50 s not yet used
		t.Fatal("first ask: down, want up")
	}
	if p.next != 1e6+50 {
		t.Fatalf("first ask: next %g, want %g", p.next, 1e6+50)
	}
	if !p.askedAt(1e6 + 49) {
		t.Fatal("49 s later: down, want up")
	}
	// Ten thousand periods later: one flip, to down, whatever happened between.
	if p.askedAt(2e6) {
		t.Fatal("after a long gap: up, want down (one flip)")
	}
	// And the next ask flips again if the time left is still below 0 (the flip
	// added a period of ~100 s to a time ~1e6 s in the past).
	if !p.askedAt(2e6 + 1) {
		t.Fatal("the next ask: down, want up (one flip more)")
	}
}

// TestOnOffStationary: the host's availability process is on for its fraction of the
// time on average over seeds, from the first step (it starts in the stationary state,
// as BOINC's client/sim_util.cpp RANDOM_PROCESS::init does). A few seeds of one
// scenario may be well off that fraction (10 days hold only a handful of spells of tens
// of hours): the part-time hosts of the corpus at seeds 1-5 are on 0.027 less than
// their fraction on average (docs/decisions.md, issue 30, part-time hosts), which is
// chance, not a bias of the process, as this test checks over many seeds.
func TestOnOffStationary(t *testing.T) {
	t.Parallel()
	const seeds, steps, delta = 400, 14400, 60.0
	for _, c := range []struct{ frac, lambda float64 }{{0.424, 47700}, {0.224, 75200}, {0.8, 3600}} {
		var first, mean float64
		for seed := uint64(1); seed <= seeds; seed++ {
			p := newOnOff(c.frac, c.lambda, 0, newStream(seed, streamOn))
			on := 0
			for i := 0; i < steps; i++ {
				if p.at(float64(i) * delta) {
					on++
					if i == 0 {
						first++
					}
				}
			}
			mean += float64(on) / steps / seeds
		}
		first /= seeds
		if d := mean - c.frac; d < -0.03 || d > 0.03 {
			t.Errorf("frac %g lambda %g: on %.4f of the time over %d seeds of 10 days, want %g ± 0.03", c.frac, c.lambda, mean, seeds, c.frac)
		}
		if d := first - c.frac; d < -0.08 || d > 0.08 {
			t.Errorf("frac %g: on at the first step in %.3f of %d seeds, want %g ± 0.08 (the stationary state)", c.frac, first, seeds, c.frac)
		}
	}
}
