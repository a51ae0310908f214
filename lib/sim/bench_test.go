package sim

import "testing"

// benchRun runs the public example for days simulated days at delta 60 s per iteration
// (loading the scenario is part of the work, as it is for the program).
func benchRun(b *testing.B, policy string, days float64) {
	load(b, publicExample) // skips when the scenario is absent
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(load(b, publicExample), Config{Duration: days * 86400, Delta: 60, Policy: policy, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPublicExample10Days(b *testing.B)   { benchRun(b, "seed", 10) }
func BenchmarkPublicExample1000Days(b *testing.B) { benchRun(b, "seed", 1000) }
func BenchmarkPublicExample10DaysRR(b *testing.B) { benchRun(b, "rr", 10) }
