package cpusched

import (
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
