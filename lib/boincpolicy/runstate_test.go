package boincpolicy

import (
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestRunState: runState is Runnable, started (not ready) and running, for every
// task state and ones that are none of them.
func TestRunState(t *testing.T) {
	for _, s := range []state.TaskState{state.TaskReady, state.TaskRunning, state.TaskPreempted,
		state.TaskDone, state.TaskReported, "", "Running"} {
		runnable, started, running := runState(s)
		if runnable != s.Runnable() || runnable && (started != (s != state.TaskReady) || running != (s == state.TaskRunning)) {
			t.Errorf("runState(%q) = %v, %v, %v", s, runnable, started, running)
		}
	}
}
