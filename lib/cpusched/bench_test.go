package cpusched

import (
	"fmt"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// BenchmarkSchedule is one pass over 100 projects, 10,000 tasks and 16 CPUs (target:
// at most 5 ms). Each iteration works on a fresh copy of the tasks, since a pass changes
// them.
func BenchmarkSchedule(b *testing.B) {
	doc := state.Synthetic(100, 10000, 16)
	if err := state.Validate(doc); err != nil {
		b.Fatal(err)
	}
	tasks := append([]state.Task(nil), doc.Tasks...)
	projects := append([]state.Project(nil), doc.Projects...)
	b.ReportAllocs()
	for b.Loop() {
		copy(doc.Tasks, tasks)
		copy(doc.Projects, projects)
		Schedule(doc, 1.7e9)
	}
}

// BenchmarkWorkspaceEmulator is one quiet pass with a Workspace over a document of
// the emulator's size (2 projects, 2 CPUs, 20 tasks: 2 running, 1 preempted, 13
// ready, 4 done), the pass bsim's seed policy runs every few steps, and one Due.
// Allocations per op must be 0.
func BenchmarkWorkspaceEmulator(b *testing.B) {
	doc := host(2, map[string]float64{"X": 200, "Y": 100}, "X", "Y")
	for i := range 20 {
		st := state.TaskReady
		switch {
		case i < 2:
			st = state.TaskRunning
		case i == 2:
			st = state.TaskPreempted
		case i >= 16:
			st = state.TaskDone
		}
		p := i % 3 / 2
		addTask(doc, fmt.Sprintf("t%d", i), "", st, float64(i), 1.7e9+float64(i)*3600)
		// The very strings of the project and app version, as the emulator's tasks hold.
		doc.Tasks[i].Project, doc.Tasks[i].AppVersion = doc.Projects[p].Name, doc.AppVersions[p].Name
	}
	if err := state.Validate(doc); err != nil {
		b.Fatal(err)
	}
	w := Workspace{Quiet: true}
	now := 1.7e9
	b.ReportAllocs()
	for b.Loop() {
		now += 60
		for i := range doc.Tasks {
			if doc.Tasks[i].State == state.TaskRunning {
				doc.Tasks[i].CPUTime += 60
			}
		}
		w.Schedule(doc, now)
		w.Due(doc, now)
	}
}
