package sim

import "testing"

// TestReportWatchChangesNothing runs policy boinc with an RPC that reported tasks and
// received none told apart (reportWatcher: the pass's hold goes on, the jobs' tasks
// found again by their keys) and told as tasksChanged (noReportWatch), under both
// conventions: the figures and the counts must be the same. (With the condition that
// the RPC received none dropped, it fails under bsim's conventions.)
func TestReportWatchChangesNothing(t *testing.T) {
	if !Alone(t) {
		return
	}
	for _, dir := range []string{"testdata/noisy", "../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu",
		publicExample, "../../scenarios/deadlines-4cpu", seed002GPU, "../../scenarios/corpus/c002",
		"../../scenarios/corpus/c060", "../../scenarios/corpus/c143", "../../scenarios/corpus/c159"} {
		for _, c := range []struct {
			seed    uint64
			emulate bool
		}{{1, true}, {2, true}, {1, false}, {3, false}} {
			cfg := Config{Duration: 5 * 86400, Delta: 60, Policy: BOINCPolicy, Seed: c.seed, EmulateBOINC: c.emulate}
			run := func(off bool) string {
				_, figures := runSwitched(t, dir, cfg, &noReportWatch, off, nil)
				return figures
			}
			if got, want := run(false), run(true); got != want {
				t.Errorf("%s, seed %d, emulate %v: with an RPC that only reported told apart\n%s\nwant (told as tasksChanged)\n%s", dir, c.seed, c.emulate, got, want)
			}
		}
	}
}
