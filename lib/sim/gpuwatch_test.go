package sim

import "testing"

// TestGPUWatchChangesNothing runs policy boinc under BOINC's emulator's conventions
// with the loop's changes of the GPUs' suspension told apart (gpuWatcher: the holds
// and the view go on while no app version uses a coprocessor) and told as
// tasksChanged (noGPUWatch), at every step: the figures and the counts must be the
// same. The hosts: CPU-only ones whose activity changes often (noisy, part-time-4cpu;
// there the holds go on) and hosts with coprocessor jobs (seed002-gpu, corpus c002,
// c005, c007; there a change must end them: the pass then schedules no coprocessor
// job, and the simulation counts no coprocessor job's CPUs).
func TestGPUWatchChangesNothing(t *testing.T) {
	if !Alone(t) {
		return
	}
	for _, dir := range []string{"testdata/noisy", "../../scenarios/part-time-4cpu", seed002GPU,
		"../../scenarios/corpus/c002", "../../scenarios/corpus/c005", "../../scenarios/corpus/c007"} {
		for _, seed := range []uint64{1, 2} {
			cfg := Config{Duration: 5 * 86400, Delta: 60, Policy: BOINCPolicy, Seed: seed, EmulateBOINC: true}
			flips := 0
			run := func(off bool) string {
				_, figures := runSwitched(t, dir, cfg, &noGPUWatch, off, func(s *Sim) {
					if s.doc.GPUsSuspended != s.gpuPrev {
						flips++
					}
				})
				return figures
			}
			if got, want := run(false), run(true); got != want {
				t.Errorf("%s, seed %d: with the GPUs' changes told apart\n%s\nwant (told as tasksChanged)\n%s", dir, seed, got, want)
			}
			if flips == 0 {
				t.Errorf("%s, seed %d: the GPUs' suspension never changed", dir, seed)
			}
		}
	}
}
