package boincpolicy

import (
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestOneSimulationPerMoment pins BOINC's one round-robin simulation per moment
// (client/rr_sim.cpp rr_simulation: "We only need to do one simulation per moment"):
// the work fetch at the moment of a pass reads the simulation made before the pass,
// so a task the pass started is still unstarted in MissStarted (the busy time an
// emulated request reports is its estimate × the correction factor, not its true
// remaining work); at the next moment it is started. Quiet and whole paths alike:
// making the view afresh after the pass would change 224 emulator runs' figures
// (docs/decisions.md, speed72).
func TestOneSimulationPerMoment(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		doc := host(1)
		// a misses whatever runs (earliest deadline first starts it); b does not.
		doc.Tasks = []state.Task{task("a", "A", 3600, t0+100), task("b", "B", 3600, t0+1e6)}
		w := Workspace{Quiet: quiet}
		w.Schedule(doc, t0)
		if doc.Tasks[0].State != state.TaskRunning {
			t.Fatalf("quiet %v: a %s, want running (it misses its deadline)", quiet, doc.Tasks[0].State)
		}
		// The work fetch's simulation at the same moment (lib/sim's busyTimes).
		w.Simulate(doc, t0)
		if got := w.MissOrder(); !slices.Equal(got, []int{0}) {
			t.Fatalf("quiet %v: miss order %v, want [0]", quiet, got)
		}
		if got := w.MissStarted(); !slices.Equal(got, []bool{false}) {
			t.Errorf("quiet %v: at the pass's moment MissStarted %v, want [false] (the simulation made before the pass)", quiet, got)
		}
		w.Schedule(doc, t0+60)
		w.Simulate(doc, t0+60)
		if got := w.MissStarted(); !slices.Equal(got, []bool{true}) || !slices.Equal(w.MissOrder(), []int{0}) {
			t.Errorf("quiet %v: at the next moment miss order %v, MissStarted %v; want [0] [true]", quiet, w.MissOrder(), got)
		}
	}
}
