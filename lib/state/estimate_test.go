package state

import (
	"math"
	"testing"
)

// TestLearnDuration: BOINC's rule (client/cpu_sched.cpp,
// PROJECT::update_duration_correction_factor): up at once, down by a tenth of the way
// (a hundredth for a task far shorter than its estimate), within [0.01, 100].
func TestLearnDuration(t *testing.T) {
	tests := []struct {
		name                   string
		dcf, elapsed, estimate float64
		want                   float64
	}{
		{"none learned, ran 2x: the ratio at once", 0, 2000, 1000, 2},
		{"ran 1.1x its corrected estimate: a tenth of the way", 1, 1100, 1000, 0.9*1 + 0.1*1.1},
		{"ran 1.5x at DCF 2 (0.75 of the corrected): a tenth of the way down", 2, 1500, 1000, 0.9*2 + 0.1*1.5},
		{"ran 3x at DCF 2: up at once", 2, 3000, 1000, 3},
		{"ran a twentieth of the corrected: a hundredth", 1, 50, 1000, 0.99*1 + 0.01*0.05},
		{"bounded above", 50, 1e6, 1000, 100},
		{"bounded below", 0.0101, 0, 1000, 0.01},
		{"no estimate: nothing learned", 1.5, 1000, 0, 1.5},
	}
	for _, tt := range tests {
		p := Project{DurationCorrectionFactor: tt.dcf}
		p.LearnDuration(tt.elapsed, tt.estimate)
		if math.Abs(p.DurationCorrectionFactor-tt.want) > 1e-12 {
			t.Errorf("%s: DCF %g, want %g", tt.name, p.DurationCorrectionFactor, tt.want)
		}
	}
}

// TestRemainingWork: an unstarted task's corrected estimate; a started one's from its
// progress (BOINC's est_dur − elapsed); without a reported progress, the seeds'
// estimate − done.
func TestRemainingWork(t *testing.T) {
	tests := []struct {
		name string
		task Task
		dcf  float64
		want float64
	}{
		{"unstarted", Task{EstimatedFlops: 100}, 1.5, 150},
		{"no estimate", Task{FlopsDone: 5}, 2, 0},
		{"started, estimate − done", Task{EstimatedFlops: 100, FlopsDone: 30}, 1, 70},
		{"started, (estimate − done) × dcf", Task{EstimatedFlops: 100, FlopsDone: 30}, 2, 140},
		{"done past its estimate, no progress: nothing left", Task{EstimatedFlops: 100, FlopsDone: 130}, 1, 0},
		// The real work is 200 (estimate half of it): at 40 % the estimate says 60 %
		// of 100 × dcf 2 to go, the truth's 120.
		{"progress 0.4 at dcf 2", Task{EstimatedFlops: 100, FlopsDone: 80, FractionDone: 0.4}, 2, 120},
		// Past its corrected estimate: the progress alone, done ÷ progress − done.
		{"past the corrected estimate", Task{EstimatedFlops: 100, FlopsDone: 160, FractionDone: 0.8}, 1, 40},
		{"all done", Task{EstimatedFlops: 100, FlopsDone: 200, FractionDone: 1}, 1, 0},
		// bsim --emulate boinc: BOINC's emulator's client knows a started task's true
		// remaining work, whatever its estimate, progress and correction factor say.
		{"emulator's truth", Task{EstimatedFlops: 100, FlopsDone: 80, FractionDone: 0.4, EmulatorFlopsLeft: 120}, 2.5, 120},
		{"emulator's truth, done", Task{EstimatedFlops: 100, FlopsDone: 200, FractionDone: 1, EmulatorFlopsLeft: 5}, 1, 0},
		// Its emulator's estimates are samples that can be 0 (client/sim.cpp make_job):
		// a started one still has its true remaining work (RESULT::
		// estimated_runtime_remaining reads sim_flops_left for an active task); one not
		// started has none (its estimated_runtime, 0).
		{"emulator's truth, no estimate", Task{FlopsDone: 80, FractionDone: 0.4, EmulatorFlopsLeft: 120}, 2, 120},
		{"emulator's truth, no estimate, not started", Task{EmulatorFlopsLeft: 200}, 2, 0},
		{"emulator's truth, no estimate, done", Task{FlopsDone: 200, FractionDone: 1, EmulatorFlopsLeft: 5}, 2, 0},
	}
	for _, tt := range tests {
		if got := tt.task.RemainingWork(tt.dcf); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: %g, want %g", tt.name, got, tt.want)
		}
	}
}
