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
