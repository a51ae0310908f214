package sim

import "testing"

// benchRun runs the public example for days simulated days at delta 60 s per iteration
// (loading the scenario is part of the work, as it is for the program).
func benchRun(b *testing.B, dir, policy string, days float64) {
	load(b, dir) // skips when the scenario is absent
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(load(b, dir), Config{Duration: days * 86400, Delta: 60, Policy: policy, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPublicExample10Days(b *testing.B)   { benchRun(b, publicExample, "seed", 10) }
func BenchmarkPublicExample1000Days(b *testing.B) { benchRun(b, publicExample, "seed", 1000) }
func BenchmarkPublicExample10DaysRR(b *testing.B) { benchRun(b, publicExample, "rr", 10) }
func BenchmarkGoals10Days(b *testing.B)           { benchRun(b, publicExample, "goals", 10) }
func BenchmarkBOINC10Days(b *testing.B)           { benchRun(b, publicExample, "boinc", 10) }
func BenchmarkBOINCDeadlines10Days(b *testing.B) {
	benchRun(b, "../../scenarios/deadlines-4cpu", "boinc", 10)
}
func BenchmarkBOINCGPU10Days(b *testing.B) { benchRun(b, seed002GPU, "boinc", 10) }

// The scenarios where policy boinc's round-robin simulation ran at most steps (issue
// 30's speed rounds, docs/decisions.md), beside seed's on the same ones.
func BenchmarkBOINCDown10Days(b *testing.B) { benchRun(b, "../../scenarios/down-2cpu", "boinc", 10) }
func BenchmarkBOINCPartTime10Days(b *testing.B) {
	benchRun(b, "../../scenarios/part-time-4cpu", "boinc", 10)
}
func BenchmarkBOINCNoisy10Days(b *testing.B) { benchRun(b, "testdata/noisy", "boinc", 10) }
func BenchmarkNoisy10Days(b *testing.B)      { benchRun(b, "testdata/noisy", "seed", 10) }
func BenchmarkDeadlines10Days(b *testing.B) {
	benchRun(b, "../../scenarios/deadlines-4cpu", "seed", 10)
}
func BenchmarkDown10Days(b *testing.B)       { benchRun(b, "../../scenarios/down-2cpu", "seed", 10) }
func BenchmarkPartTime10Days(b *testing.B)   { benchRun(b, "../../scenarios/part-time-4cpu", "seed", 10) }
func BenchmarkSeed002GPU10Days(b *testing.B) { benchRun(b, seed002GPU, "seed", 10) }

// The same under --emulate boinc, and policy boinc over seed's on every public scenario
// under both conventions: BenchmarkTenDays (speed_bench_test.go).

// benchStep is one step of a run already under way (two simulated days in, so that
// the buffers have their steady-state size): its allocations per op are the step
// loop's in steady state. A run that ends is started again, outside the timer.
func benchStep(b *testing.B, dir, policy string) {
	cfg := Config{Duration: 1000 * 86400, Delta: 60, Policy: policy, Seed: 1}
	start := func() *Sim {
		s, err := New(load(b, dir), cfg)
		if err != nil {
			b.Fatal(err)
		}
		for range 2 * 1440 {
			s.Step()
		}
		return s
	}
	s := start()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if !s.Step() {
			b.StopTimer()
			s = start()
			b.StartTimer()
		}
	}
}

func BenchmarkStepPublicExample(b *testing.B) { benchStep(b, publicExample, "seed") }
func BenchmarkStepDeadlines(b *testing.B)     { benchStep(b, "../../scenarios/deadlines-4cpu", "seed") }
func BenchmarkStepNoisy(b *testing.B)         { benchStep(b, "testdata/noisy", "seed") }
func BenchmarkStepGPU(b *testing.B)           { benchStep(b, seed002GPU, "seed") }
func BenchmarkStepRR(b *testing.B)            { benchStep(b, publicExample, "rr") }
func BenchmarkStepGoals(b *testing.B)         { benchStep(b, publicExample, "goals") }
func BenchmarkStepBOINC(b *testing.B)         { benchStep(b, publicExample, "boinc") }

// benchShortJobs runs the public example for a day with every job's work (real and
// estimated) set to secs seconds: a day of short jobs should cost in proportion to the
// jobs done, not to the thousands held in the buffer.
func benchShortJobs(b *testing.B, secs float64, policy string) {
	b.ReportAllocs()
	for b.Loop() {
		sc := load(b, publicExample)
		for i := range sc.Apps {
			sc.Apps[i].FpopsEst, sc.Apps[i].Fpops = secs*2e9, estimates(sc.Apps[i].Fpops)
		}
		if _, err := Run(sc, Config{Duration: 86400, Delta: 60, Policy: policy, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJobs10sOneDay(b *testing.B)      { benchShortJobs(b, 10, "seed") }
func BenchmarkJobs100sOneDay(b *testing.B)     { benchShortJobs(b, 100, "seed") }
func BenchmarkJobs10sOneDayRR(b *testing.B)    { benchShortJobs(b, 10, "rr") }
func BenchmarkJobs10sOneDayGoals(b *testing.B) { benchShortJobs(b, 10, "goals") }
