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
	record(doc, &pass, w.avOf, false)
	want := state.CPUSched{LastPass: 500, NextPass: 4100, NextPassReason: "scheduling period"}
	if doc.CPUSched == nil || *doc.CPUSched != want || pass.NextPass != 4100 || pass.NextPassReason != want.NextPassReason {
		t.Errorf("cpu_sched = %+v, pass %+v; want %+v", doc.CPUSched, pass, want)
	}
	// Quiet: the same times, no reason.
	record(doc, &pass, w.avOf, true)
	want.NextPassReason = ""
	if *doc.CPUSched != want || pass.NextPassReason != "" {
		t.Errorf("quiet: cpu_sched = %+v, pass %+v; want %+v", doc.CPUSched, pass, want)
	}
}

// Seed 001 runs the pass when a CPU is free, when a result arrives and when it has not
// run for MV seconds. A running task is expected to free its CPU when its remaining
// estimated work is done: a2 has 2e12 of 3.6e12 FLOPs left at 1 GFLOPS, 2000 s. A task
// already past its estimate (over: 2e12 done of 1e12) frees nothing at any time the
// estimate can tell, so it does not make the next pass due at once, pass after pass:
// alone it leaves the scheduling period (5000 + 3600).
func TestNextPassOverrun(t *testing.T) {
	doc := host(2, map[string]float64{"A": 1}, "A")
	addTask(doc, "over", "A", state.TaskRunning, 100, 1e6)
	addTask(doc, "a2", "A", state.TaskRunning, 100, 1e6)
	doc.Tasks[0].EstimatedFlops, doc.Tasks[0].FlopsDone = 1e12, 2e12
	doc.Tasks[1].FlopsDone = 1.6e12
	mustValid(t, doc)
	Schedule(doc, 5000)
	if got := *doc.CPUSched; got.NextPass != 7000 || got.NextPassReason != "task a2 expected to finish" {
		t.Errorf("next pass = %+v, want 7000 (task a2 expected to finish)", got)
	}
	doc.Tasks = doc.Tasks[:1]
	Schedule(doc, 5000)
	if got := *doc.CPUSched; got.NextPass != 8600 || got.NextPassReason != "scheduling period" {
		t.Errorf("next pass with only the overrun task = %+v, want 8600 (scheduling period)", got)
	}
	if due, why := Due(doc, 5060); due {
		t.Errorf("a pass is due a step later (%s); want none before 8600", why)
	}
}

// Due names the seed's three occasions for a pass (a CPU is free: a running task has
// finished its work, or a processor is free with a task waiting for it; a new result;
// the scheduling period is over), and the first pass. A running task with a
// completed_time has finished computing (the emulator keeps it running until the pass
// has counted its last CPU time).
func TestDue(t *testing.T) {
	doc := host(2, map[string]float64{"A": 1}, "A")
	addTask(doc, "a1", "A", state.TaskRunning, 0, 1e6)
	addTask(doc, "a2", "A", state.TaskRunning, 0, 1e6)
	addTask(doc, "a3", "A", state.TaskReady, 0, 1e6)
	mustValid(t, doc)
	if due, why := Due(doc, 0); !due || why != "no pass has run yet" {
		t.Errorf("first: %v (%s)", due, why)
	}
	doc.CPUSched = &state.CPUSched{LastPass: 1000, NextPass: 4600, NextPassReason: "scheduling period"}
	for _, c := range []struct {
		name string
		edit func(d *state.Document)
		now  float64
		due  bool
		why  string
	}{
		{"both CPUs busy, nothing new", func(*state.Document) {}, 4599, false, "next pass due at 4600 (scheduling period)"},
		{"period over", func(*state.Document) {}, 4600, true, "next pass was due at 4600 (scheduling period)"},
		{"a result arrived", func(d *state.Document) { d.Tasks[2].ReceivedTime = 1001 }, 2000, true, "new result a3"},
		{"a CPU is free, a task waits", func(d *state.Document) { d.Tasks[1].State = state.TaskDone }, 2000, true, "a cpu instance is free"},
		{"a task finished its work, not yet done", func(d *state.Document) { d.Tasks[1].CompletedTime = 1500 }, 2000, true, "task a2 finished"},
		{"a CPU is free, nothing waits", func(d *state.Document) { d.Tasks[1].State, d.Tasks[2].State = state.TaskDone, state.TaskDone }, 2000, false, "next pass due at 4600 (scheduling period)"},
	} {
		d := *doc
		d.Tasks = append([]state.Task(nil), doc.Tasks...)
		c.edit(&d)
		if due, why := Due(&d, c.now); due != c.due || why != c.why {
			t.Errorf("%s: Due = %v (%s), want %v (%s)", c.name, due, why, c.due, c.why)
		}
	}
}

// A CPU is free for Due only when the pass could give it to a waiting task: CPUs that a
// running GPU task takes are not free, and a task whose app runs max_concurrent tasks
// cannot start. Otherwise every step would be a pass (with one step's work as pay-off)
// while such a task waits, which is none of the seed's occasions.
func TestDueFreeOnlyWhenAPassCouldUseIt(t *testing.T) {
	// 2 CPUs: g1 on the GPU takes one, b1 the other; b2 waits for a CPU.
	doc := host(2, map[string]float64{"A": 1, "B": 1}, "A", "B")
	doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 1e10})
	doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "A_gpu", Project: "A", AvgNCPUs: 1, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}})
	addTask(doc, "b1", "B", state.TaskRunning, 0, 100)
	addTask(doc, "b2", "B", state.TaskReady, 0, 200)
	doc.Tasks = append(doc.Tasks, state.Task{Name: "g1", Project: "A", AppVersion: "A_gpu", State: state.TaskRunning, ReportDeadline: 100})
	doc.CPUSched = &state.CPUSched{LastPass: 1000, NextPass: 4600, NextPassReason: "scheduling period"}
	mustValid(t, doc)
	if due, why := Due(doc, 2000); due {
		t.Errorf("GPU task on a CPU: Due = true (%s), want no pass: no CPU is free", why)
	}
	doc.Tasks[2].State = state.TaskDone // g1 ends: its CPU is free for b2
	if due, why := Due(doc, 2000); !due || why != "a cpu instance is free" {
		t.Errorf("after g1: Due = %v (%s), want a cpu instance free", due, why)
	}

	// 2 CPUs, one app that may run one task at a time: a2 cannot take the idle CPU.
	doc = host(2, map[string]float64{"A": 1}, "A")
	doc.AppVersions[0].App = "A_app"
	doc.Apps = []state.App{{Project: "A", Name: "A_app", MaxConcurrent: 1}}
	addTask(doc, "a1", "A", state.TaskRunning, 0, 100)
	addTask(doc, "a2", "A", state.TaskReady, 0, 200)
	doc.CPUSched = &state.CPUSched{LastPass: 1000, NextPass: 4600, NextPassReason: "scheduling period"}
	mustValid(t, doc)
	if due, why := Due(doc, 2000); due {
		t.Errorf("app at max_concurrent: Due = true (%s), want no pass", why)
	}
	doc.Apps[0].MaxConcurrent = 2
	if due, why := Due(doc, 2000); !due || why != "a cpu instance is free" {
		t.Errorf("app below max_concurrent: Due = %v (%s), want a cpu instance free", due, why)
	}
}
