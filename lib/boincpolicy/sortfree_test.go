package boincpolicy

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortFreeAgainstSort: sortFree leaves 200,000 random slices (0 to 40 elements,
// listLower's sizes among them: CPUs' free times as listEnd's heaps leave them, and
// drawn from a few values so that many are equal; +0 and −0, NaNs of two payloads,
// infinities and values below zero among them in a third of the slices) as slices.Sort
// leaves them, bit for bit. It fails with sortFree's test for −0 dropped and with its
// test for NaN dropped.
func TestSortFreeAgainstSort(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 4482))
	nan2 := math.Float64frombits(0x7ff8000000000001)
	odd := []float64{0, math.Copysign(0, -1), math.NaN(), nan2, math.Inf(1), math.Inf(-1), -1, -0.5}
	inserted, fellBack := 0, 0
	for trial := range 200000 {
		n := rng.IntN(41)
		if trial%2 == 0 {
			n = []int{4, 8, 13, 16}[rng.IntN(4)]
		}
		f := make([]float64, n)
		switch rng.IntN(3) {
		case 0: // a list schedule's free times: jobs placed on the CPU freed first
			for range rng.IntN(3 * (n + 1)) {
				if n > 0 {
					listEnd(f, float64(rng.IntN(5))*[]float64{1, 0.1, 3600}[rng.IntN(3)])
				}
			}
		case 1: // few distinct values
			for i := range f {
				f[i] = float64(rng.IntN(4))
			}
		default:
			for i := range f {
				f[i] = rng.Float64() * 1e4
			}
		}
		if trial%3 == 0 {
			for range 1 + rng.IntN(4) {
				if n > 0 {
					f[rng.IntN(n)] = odd[rng.IntN(len(odd))]
				}
			}
		}
		want := slices.Clone(f)
		slices.Sort(want)
		safe := true
		for _, v := range f {
			if v != v || math.Float64bits(v) == 1<<63 {
				safe = false
			}
		}
		if safe {
			inserted++
		} else {
			fellBack++
		}
		sortFree(f)
		for i := range f {
			if math.Float64bits(f[i]) != math.Float64bits(want[i]) {
				t.Fatalf("trial %d: sortFree %v, slices.Sort %v", trial, f, want)
			}
		}
	}
	t.Logf("%d slices sorted by insertion, %d by slices.Sort", inserted, fellBack)
	if inserted < 100000 || fellBack < 20000 {
		t.Errorf("too few: %d by insertion, %d by slices.Sort", inserted, fellBack)
	}
}
