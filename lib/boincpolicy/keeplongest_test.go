package boincpolicy

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKeepLongest: keepLongest's walk keeps bit for bit what the search
// (keepLongestSearch) keeps, over random times with many ties, both zeros, infinities
// and NaNs, for k from 1 to 9. It fails with the walk's test of a time equal to t
// (top[x-1] < t) taken as ≤ (−0 after +0), with its stop at the first of equal
// times in the full case dropped, and with the NaN's search dropped.
func TestKeepLongest(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 3203))
	pool := []float64{0, math.Copysign(0, -1), 1, 1, 2, 2.5, 3, 3, 7, math.Inf(1), math.Inf(-1), -1}
	for trial := range 20000 {
		k := 1 + r.IntN(9)
		var a, b []float64
		for range r.IntN(30) {
			var x float64
			switch {
			case trial%50 == 0 && r.IntN(8) == 0:
				x = math.NaN()
			case r.IntN(2) == 0:
				x = pool[r.IntN(len(pool))]
			default:
				x = math.Round(r.Float64()*20) / 4
			}
			a = keepLongest(a, x, k)
			b = keepLongestSearch(b, x, k)
			if len(a) != len(b) {
				t.Fatalf("trial %d: %v, want %v", trial, a, b)
			}
			for i := range a {
				if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
					t.Fatalf("trial %d (k %d, t %v): %v, want %v", trial, k, x, a, b)
				}
			}
			if !slices.IsSorted(b) {
				t.Fatalf("trial %d: the search's %v out of order", trial, b)
			}
		}
	}
}
