package cpusched

import (
	"fmt"
	"math"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// Due's answer is the same when it stops looking at waiting tasks once each resource's
// smallest need is its app versions' least (settled) as when it looks at every one:
// CPUs and a GPU, fractional and NaN needs, instances free or not, apps at a limit.
func TestDueSettledChangesNothing(t *testing.T) {
	free := 0
	for i := range 80 {
		doc := gpuHost()
		doc.AppVersions[0].AvgNCPUs = []float64{1, 0.5, 2, 1.5}[i%4]
		if i%7 == 6 {
			doc.AppVersions[1].AvgNCPUs = math.NaN()
		}
		if i%3 == 0 {
			doc.Apps = nil
		}
		doc.Host.Resources[0].Instances = 1 + i%4
		for k := range 20 {
			st := []state.TaskState{state.TaskReady, state.TaskRunning, state.TaskPreempted, state.TaskDone}[(k*3+i)%4]
			if k > i%20 && st == state.TaskRunning {
				st = state.TaskReady // fewer running as i grows: some instances free
			}
			addTask(doc, fmt.Sprint("t", k), []string{"A", "B"}[(k+i)%2], st, 0, 100)
			if k%4 == i%4 && doc.Tasks[len(doc.Tasks)-1].Project == "B" {
				doc.Tasks[len(doc.Tasks)-1].AppVersion = "B_gpu"
			}
		}
		if i%5 == 0 {
			// A's tasks take 2 CPUs, B's 1; B runs one of 2 CPUs: A's waiting task comes
			// first and does not fit, B's comes later and does.
			doc = host(2, map[string]float64{"A": 1, "B": 1}, "A", "B")
			doc.AppVersions[0].AvgNCPUs = 2
			addTask(doc, "b_run", "B", state.TaskRunning, 0, 100)
			addTask(doc, "a_wait", "A", state.TaskReady, 0, 100)
			addTask(doc, "b_wait", "B", []state.TaskState{state.TaskReady, state.TaskPreempted, state.TaskDone}[i/5%3], 0, 100)
		}
		doc.CPUSched = &state.CPUSched{LastPass: 1e9, NextPass: 2e9} // no new result, no period over
		var w Workspace
		dueExhaustive = true
		wantCause, wantAt := w.due(doc, 1e9)
		dueExhaustive = false
		gotCause, gotAt := w.due(doc, 1e9)
		if gotCause != wantCause || gotAt != wantAt {
			t.Fatalf("document %d: due %v %d, looking at every task %v %d", i, gotCause, gotAt, wantCause, wantAt)
		}
		if wantCause == dueFree {
			free++
		}
	}
	if free == 0 || free == 80 {
		t.Fatalf("%d of 80 documents had a free instance: the test compares one answer only", free)
	}
}
