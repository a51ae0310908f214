package credit

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestGranted: a day of a 1-GFLOPS host is 200 credits; nothing for a bad estimate.
func TestGranted(t *testing.T) {
	for _, tc := range []struct{ fpops, want float64 }{
		{86400e9, 200}, {3600e9, 200.0 / 24}, {0, 0}, {-1, 0}, {math.NaN(), 0}, {math.Inf(1), 0},
	} {
		if got := Granted(tc.fpops); !near(got, tc.want) {
			t.Errorf("Granted(%g) = %g, want %g", tc.fpops, got, tc.want)
		}
	}
}

// TestUpdateAverage follows BOINC's update_average: the first grant is its rate since
// the start; with no work the average halves every half-life; a steady rate of credit
// per day converges to that rate; a grant with no time elapsed adds ln 2 × work ×
// day / half-life.
func TestUpdateAverage(t *testing.T) {
	avg, at := UpdateAverage(2*86400, 0, 100, 0, 0)
	if !near(avg, 50) || at != 2*86400 {
		t.Fatalf("first grant: %g at %g, want 50 credits a day at %d", avg, at, 2*86400)
	}
	if got, _ := UpdateAverage(at+HalfLife, 0, 0, avg, at); !near(got, 25) {
		t.Errorf("a half-life without work: %g, want 25", got)
	}
	if got, _ := UpdateAverage(at, 0, 10, avg, at); !near(got, 50+math.Ln2*10*86400/HalfLife) {
		t.Errorf("a grant with no time elapsed: %g", got)
	}
	avg, at = 0, 0
	for day := 1; day <= 200; day++ {
		avg, at = UpdateAverage(float64(day)*86400, 0, 300, avg, at)
	}
	if !near(avg, 300) {
		t.Errorf("300 credits a day for 200 days: average %g, want 300", avg)
	}
	if got, _ := UpdateAverage(0, 0, 0, 0, 0); got != 0 {
		t.Errorf("nothing ever: %g", got)
	}
}

// TestDecayKeepsTheWeight: one Decay carried over intervals of changing lengths and two
// half-lives gives DecayedAverage's averages to the last bit (its weight is reused
// only for the same interval and half-life).
func TestDecayKeepsTheWeight(t *testing.T) {
	var d Decay
	avg, at := 0.0, 0.0
	now := 1.7e9
	for i, dt := range []float64{60, 60, 60.000001, 60, 17, 17, 3600, 60, 0, 60, 60} {
		now += dt
		half := float64(HalfLife)
		if i%4 == 3 {
			half = 10 * 86400
		}
		work := float64(i%3) * 0.7
		want, wantAt := DecayedAverage(now, 1.7e9, work, half, avg, at)
		got, gotAt := d.Average(now, 1.7e9, work, half, avg, at)
		if got != want || gotAt != wantAt {
			t.Fatalf("interval %d (%g s, half-life %g): %v at %v, want %v at %v", i, dt, half, got, gotAt, want, wantAt)
		}
		avg, at = got, gotAt
	}
}

// TestDecayIsDecayedAverage: Decay.Average, its weight and days kept and no work's
// zero term left out, gives decayedAverageFormula's (the whole computation's) averages to the
// last bit (any NaN as any other: a product of two NaNs has either's payload, as the
// compiler orders the operands) over random intervals, half-lives, works and averages, with the zeros of
// either sign, subnormals, infinities and NaN among them. It fails with the zero term
// left out for an average of −0 (−0 + +0 is +0) or for a half-life of ±0 (the term is
// then NaN where a decayed average is ±∞), or with the kept days of another interval.
func TestDecayIsDecayedAverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 30))
	pick := func(xs ...float64) float64 { return xs[rng.IntN(len(xs))] }
	odd := func() float64 {
		return pick(0, math.Copysign(0, -1), 5e-324, -5e-324, math.Inf(1), math.Inf(-1), math.NaN(), 1e-300, -1)
	}
	var d Decay
	skipped := 0
	for trial := range 2_000_000 {
		now := 1.7e9 + float64(rng.IntN(1000))*pick(60, 17, 0.5)
		at := now - pick(60, 60, 60, 17, 0, 3600, 1e-9, 5e-324, 1e9)
		if rng.IntN(50) == 0 {
			at = odd()
		}
		half := pick(10*86400, 10*86400, 7*86400, 1e-3)
		if rng.IntN(50) == 0 {
			half = odd()
		}
		work := pick(0, 0, 0, math.Copysign(0, -1), 1.5, 1e-20, 3e5)
		avg := pick(0, math.Copysign(0, -1), 1, 123.456, 1e-310, 7e300)
		if rng.IntN(30) == 0 {
			avg = odd()
		}
		if rng.IntN(20) == 0 {
			work = odd()
		}
		want, wantAt := decayedAverageFormula(now, 1.6e9, work, half, avg, at)
		got, gotAt := d.Average(now, 1.6e9, work, half, avg, at)
		if !sameBits(got, want) || !sameBits(gotAt, wantAt) {
			t.Fatalf("trial %d: Average(now %v, work %v, half-life %v, avg %v, at %v) = %v at %v, want %v at %v",
				trial, now, work, half, avg, at, got, gotAt, want, wantAt)
		}
		if work == 0 && at > 0 {
			skipped++
		}
	}
	if skipped < 100_000 {
		t.Fatalf("only %d averages without work", skipped)
	}
}

// TestAgainIsAverage: wherever Decay.Again answers, its average is Average's with the
// same Decay to the last bit, and it leaves the Decay as it was; where it does not,
// Average is called, as its callers do. The inputs are TestDecayIsDecayedAverage's
// (intervals mostly of one length, odd times, half-lives, works and averages among
// them), so that the Decay keeps a weight at most calls and Again answers most.
func TestAgainIsAverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 30))
	pick := func(xs ...float64) float64 { return xs[rng.IntN(len(xs))] }
	odd := func() float64 {
		return pick(0, math.Copysign(0, -1), 5e-324, -5e-324, math.Inf(1), math.Inf(-1), math.NaN(), 1e-300, -1)
	}
	var d Decay
	answered, declined := 0, 0
	gap, lastHalf := 60.0, 10*86400.0
	for trial := range 2_000_000 {
		now := 1.7e9 + float64(rng.IntN(1000))*pick(60, 17, 0.5)
		var at, half float64
		if rng.IntN(4) > 0 {
			at, half = now-gap, lastHalf // the last interval's length again, mostly
		} else {
			gap = pick(60, 17, 0, 3600, 1e-9, 5e-324, 1e9, -60, math.Copysign(0, -1))
			half = pick(10*86400, 7*86400, 1e-3, 1e-9, math.Copysign(0, -1))
			at = now - gap
		}
		if rng.IntN(50) == 0 {
			at = odd()
		}
		if rng.IntN(50) == 0 {
			half = odd()
		}
		lastHalf = half
		work := pick(0, 0, 0, math.Copysign(0, -1), 1.5, 1e-20, 3e5)
		avg := pick(0, math.Copysign(0, -1), 1, 123.456, 1e-310, 7e300)
		if rng.IntN(30) == 0 {
			avg = odd()
		}
		if rng.IntN(20) == 0 {
			work = odd()
		}
		kept := d
		got, ok := d.Again(now, work, half, avg, at)
		if !sameDecay(d, kept) {
			t.Fatalf("trial %d: Again moved the Decay from %+v to %+v", trial, kept, d)
		}
		want, wantAt := d.Average(now, 1.6e9, work, half, avg, at)
		if !ok {
			if sameDecay(d, kept) && kept.known {
				declined++ // Average found the weight kept
			}
			continue
		}
		answered++
		if !sameBits(got, want) || wantAt != now {
			t.Fatalf("trial %d: Again(now %v, work %v, half-life %v, avg %v, at %v) = %v, Average %v",
				trial, now, work, half, avg, at, got, want)
		}
	}
	if answered < 500_000 {
		t.Fatalf("Again answered only %d of 2,000,000", answered)
	}
	t.Logf("Again answered %d of 2,000,000; declined %d where Average found the weight kept", answered, declined)
}

// sameDecay: a and b keep the same figures, each to the last bit.
func sameDecay(a, b Decay) bool {
	return a.known == b.known && math.Float64bits(a.diff) == math.Float64bits(b.diff) &&
		math.Float64bits(a.halfLife) == math.Float64bits(b.halfLife) &&
		math.Float64bits(a.weight) == math.Float64bits(b.weight) && math.Float64bits(a.days) == math.Float64bits(b.days)
}

// sameBits: a and b are the same float64 to the last bit, or both NaN.
func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b
}

// decayedAverageFormula is BOINC's update_average computed whole at every call, the
// oracle Decay.Average (and so DecayedAverage) is held to: the weight exp(−Δt·ln 2 ÷
// half-life) each time, the new work's term always added.
func decayedAverageFormula(now, start, work, halfLife, avg, avgTime float64) (newAvg, newTime float64) {
	switch {
	case avgTime > 0:
		diff := max(now-avgTime, 0)
		weight := math.Exp(-diff * math.Ln2 / halfLife)
		avg *= weight
		if 1-weight > 1e-6 {
			avg += (1 - weight) * work / (diff / 86400)
		} else {
			// The limit as diff → 0, where the quotient above is 0 × ∞.
			avg += math.Ln2 * work * 86400 / halfLife
		}
	case work > 0:
		if days := (now - start) / 86400; days > 0 {
			avg = work / days
		} else {
			avg = math.Ln2 * work * 86400 / halfLife // no time yet: as for a burst
		}
	}
	return avg, now
}
