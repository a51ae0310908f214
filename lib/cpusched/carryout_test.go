package cpusched

import (
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
)

// Step 4: chosen tasks run, running tasks not chosen are preempted, the others keep
// their state; every runnable task's times at the last pass catch up, a finished
// task's do not.
func TestCarryOut(t *testing.T) {
	doc := host(2, map[string]float64{"A": 1}, "A")
	addTask(doc, "run_kept", "A", state.TaskRunning, 100, 1)
	addTask(doc, "run_dropped", "A", state.TaskRunning, 200, 2)
	addTask(doc, "pre_resumed", "A", state.TaskPreempted, 300, 3)
	addTask(doc, "ready_started", "A", state.TaskReady, 0, 4)
	addTask(doc, "ready_waits", "A", state.TaskReady, 0, 5)
	addTask(doc, "done", "A", state.TaskDone, 600, 6)
	for i := range doc.Tasks {
		doc.Tasks[i].ElapsedTime = doc.Tasks[i].CPUTime + 10
	}
	w, _, _ := grouped(t, doc)
	chosen := []bool{true, false, true, true, false, false}
	why := []TaskDecision{{Why: WhyKeepsRunning}, {Why: WhyOtherTasks}, {Why: WhyResumed}, {Why: WhyStarted}, {Why: WhyNoRoom}, {}}
	got := carryOut(doc, chosen, w.avOf, why)
	want := map[string]state.TaskState{"run_kept": "running", "run_dropped": "preempted", "pre_resumed": "running", "ready_started": "running", "ready_waits": "ready", "done": "done"}
	if d := cmp.Diff(want, states(doc)); d != "" {
		t.Errorf("states (-want +got):\n%s", d)
	}
	for _, tk := range doc.Tasks[:5] {
		if tk.CPUTimeAtLastSched != tk.CPUTime || tk.ElapsedTimeAtLastSched != tk.ElapsedTime {
			t.Errorf("%s: times at the last pass %g %g, want %g %g", tk.Name, tk.CPUTimeAtLastSched, tk.ElapsedTimeAtLastSched, tk.CPUTime, tk.ElapsedTime)
		}
	}
	if tk := doc.Tasks[5]; tk.CPUTimeAtLastSched != 0 || tk.ElapsedTimeAtLastSched != 0 {
		t.Errorf("the finished task's times at the last pass changed: %g %g", tk.CPUTimeAtLastSched, tk.ElapsedTimeAtLastSched)
	}
	if len(got) != 5 || got[1].Name != "run_dropped" || got[1].Before != "running" || got[1].After != "preempted" || got[1].Why != WhyOtherTasks || got[4].Deadline != 5 || got[2].Need != 1 {
		t.Errorf("decisions = %+v", got)
	}
	// Quiet: the same document changes, no decisions.
	doc.Tasks[0].State, doc.Tasks[0].CPUTime = state.TaskRunning, 150
	if got := carryOut(doc, []bool{false, false, false, false, false, false}, w.avOf, nil); got != nil || doc.Tasks[0].State != state.TaskPreempted || doc.Tasks[0].CPUTimeAtLastSched != 150 {
		t.Errorf("quiet carry-out: decisions %v, state %s, cpu_time_at_last_sched %g", got, doc.Tasks[0].State, doc.Tasks[0].CPUTimeAtLastSched)
	}
}

// The pass is recorded in cpu_sched: its time and the next pass's (a scheduling period
// on, when no running task finishes before).
func TestRecord(t *testing.T) {
	doc := host(1, map[string]float64{"A": 1}, "A")
	addTask(doc, "a1", "A", state.TaskReady, 0, 1e6)
	w, _, _ := grouped(t, doc)
	pass := Pass{Now: 500}
	record(doc, &pass, w.avOf)
	want := state.CPUSched{LastPass: 500, NextPass: 4100, NextPassReason: "scheduling period"}
	if doc.CPUSched == nil || *doc.CPUSched != want || pass.NextPass != 4100 || pass.NextPassReason != want.NextPassReason {
		t.Errorf("cpu_sched = %+v, pass %+v; want %+v", doc.CPUSched, pass, want)
	}
}
