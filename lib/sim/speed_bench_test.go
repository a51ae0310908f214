package sim

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkTenDays is issue 30's speed figure: one 10-day run (delta 60 s, seed 1) of
// each scenario under each policy and each convention, the time of Run alone (the
// scenario is loaded outside the timer), so that scripts/bench-policy-speed.sh can
// print policy boinc's time over policy seed's. Its names are
// SCENARIO/CONVENTION/POLICY. BKIT_BENCH_CORPUS=1 adds scenarios/corpus/c* (200
// hosts, 800 runs a round).
func BenchmarkTenDays(b *testing.B) {
	dirs := []string{publicExample, "../../scenarios/deadlines-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/part-time-4cpu", seed002GPU, "../../scenarios/share-75-25", "testdata/noisy"}
	if os.Getenv("BKIT_BENCH_CORPUS") == "1" {
		corpus, err := filepath.Glob("../../scenarios/corpus/c*")
		if err != nil || len(corpus) == 0 {
			b.Fatalf("BKIT_BENCH_CORPUS=1: no scenarios/corpus/c* (%v)", err)
		}
		dirs = append(dirs, corpus...)
	}
	for _, dir := range dirs {
		for _, conv := range []struct {
			name  string
			boinc bool
		}{{"bsim", false}, {"emulate-boinc", true}} {
			for _, policy := range []string{"seed", "boinc"} {
				b.Run(filepath.Base(dir)+"/"+conv.name+"/"+policy, func(b *testing.B) {
					cfg := Config{Duration: 10 * 86400, Delta: 60, Policy: policy, Seed: 1, EmulateBOINC: conv.boinc}
					for b.Loop() {
						b.StopTimer()
						sc := load(b, dir)
						b.StartTimer()
						if _, err := Run(sc, cfg); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
