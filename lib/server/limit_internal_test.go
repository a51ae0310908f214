package server

import (
	"fmt"
	"testing"
	"time"
)

// TestAccountLimits: a bucket per address of perMin requests, refilled at perMin a
// minute; addresses do not share; a full table forgets the addresses whose buckets
// are full again, and keeps the others; no limit when perMin ≤ 0.
func TestAccountLimits(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	l := &accountLimits{perMin: 6}
	for i := range 6 {
		if !l.allow("10.0.0.1:5000", t0) {
			t.Fatalf("request %d refused", i+1)
		}
	}
	if l.allow("10.0.0.1:5001", t0) {
		t.Error("the 7th request of an address (another port) allowed")
	}
	if !l.allow("10.0.0.2:5000", t0) {
		t.Error("another address refused")
	}
	if l.allow("10.0.0.1:5000", t0.Add(9*time.Second)) || !l.allow("10.0.0.1:5000", t0.Add(10*time.Second)) {
		t.Error("one request back every 10 s at 6 a minute: wrong")
	}
	for i := len(l.buckets); i < maxBuckets; i++ {
		l.allow(fmt.Sprintf("192.0.2.%d:1", i), t0)
	}
	l.allow("203.0.113.1:1", t0.Add(30*time.Second))
	if _, ok := l.buckets["192.0.2.5"]; ok || len(l.buckets) > 3 {
		t.Errorf("full table: %d addresses kept, want the idle ones forgotten", len(l.buckets))
	}
	if _, ok := l.buckets["10.0.0.1"]; !ok {
		t.Error("an address with a spent bucket forgotten")
	}
	for range 100 {
		if !(&accountLimits{perMin: -1}).allow("10.0.0.1:1", t0) {
			t.Fatal("refused with no limit")
		}
	}
}
