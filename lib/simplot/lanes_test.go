package simplot

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bkit/bkit/lib/sim"
)

func TestAssignLanes(t *testing.T) {
	res := []sim.TraceResource{{Type: "cpu", Instances: 2, Flops: 1e9}, {Type: "NVIDIA", Instances: 1, Flops: 1e10}}
	run := func(r int, inst, start, end float64) sim.TaskRun {
		return sim.TaskRun{Resource: r, Instances: inst, Start: start, End: end}
	}
	for _, tc := range []struct {
		name  string
		runs  []sim.TaskRun
		slots []slot
		lanes []int
	}{
		{
			name:  "no runs: one lane per instance",
			lanes: []int{2, 1},
		},
		{
			name:  "whole CPUs take the lowest free lane; a lane is free from its run's end",
			runs:  []sim.TaskRun{run(0, 1, 0, 100), run(0, 1, 0, 50), run(0, 1, 50, 150), run(0, 1, 100, 200), run(1, 1, 0, 200)},
			slots: []slot{{0, 0}, {1, 0}, {1, 0}, {0, 0}, {0, 0}},
			lanes: []int{2, 1},
		},
		{
			name: "a fractional pair shares a lane; a whole CPU goes on the other",
			runs: []sim.TaskRun{run(0, 0.5, 0, 100), run(0, 0.5, 0, 100), run(0, 1, 10, 90), run(0, 0.5, 100, 200)},
			// The third half-CPU task comes when both halves of lane 0 are free again.
			slots: []slot{{0, 0}, {0, 0.5}, {1, 0}, {0, 0}},
			lanes: []int{2, 1},
		},
		{
			name: "a half-CPU task fills the freed half of a lane, not a new lane",
			runs: []sim.TaskRun{run(0, 0.5, 0, 50), run(0, 0.5, 0, 100), run(0, 1, 0, 100), run(0, 0.5, 60, 90)},
			// Lane 0: [0,.5) until 50, [.5,1) until 100; at 60 the top half is free.
			slots: []slot{{0, 0}, {0, 0.5}, {1, 0}, {0, 0}},
			lanes: []int{2, 1},
		},
		{
			name:  "thirds fill a lane despite rounding",
			runs:  []sim.TaskRun{run(0, 1.0/3, 0, 10), run(0, 1.0/3, 0, 10), run(0, 1.0/3, 0, 10), run(0, 1, 0, 10)},
			slots: []slot{{0, 0}, {0, 1.0 / 3}, {0, 2.0 / 3}, {1, 0}},
			lanes: []int{2, 1},
		},
		{
			name:  "runs are placed in order of start, whatever their order in the trace",
			runs:  []sim.TaskRun{run(0, 1, 50, 100), run(0, 1, 0, 60), run(0, 1, 0, 40)},
			slots: []slot{{1, 0}, {0, 0}, {1, 0}},
			lanes: []int{2, 1},
		},
		{
			name:  "overcommitment goes on an extra lane",
			runs:  []sim.TaskRun{run(0, 1, 0, 100), run(0, 1, 0, 100), run(0, 1, 10, 20), run(0, 1, 30, 40)},
			slots: []slot{{0, 0}, {1, 0}, {2, 0}, {2, 0}},
			lanes: []int{3, 1},
		},
		{
			name:  "a two-CPU task needs two free lanes",
			runs:  []sim.TaskRun{run(0, 0.5, 0, 10), run(0, 2, 5, 20), run(0, 2, 20, 30)},
			slots: []slot{{0, 0}, {1, 0}, {0, 0}},
			lanes: []int{3, 1},
		},
		{
			name:  "a GPU task on two GPUs of one: extra lane",
			runs:  []sim.TaskRun{run(1, 2, 0, 10), run(1, 0.5, 0, 10)},
			slots: []slot{{0, 0}, {2, 0}},
			lanes: []int{2, 3},
		},
		{
			name:  "a run claiming no instance is drawn whole",
			runs:  []sim.TaskRun{run(0, 0, 0, 10), run(0, 0.5, 0, 10)},
			slots: []slot{{0, 0}, {1, 0}},
			lanes: []int{2, 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &sim.Trace{Resources: res, Runs: tc.runs}
			slots, lanes := assignLanes(tr)
			if tc.slots == nil {
				tc.slots = []slot{}
			}
			if diff := cmp.Diff(tc.slots, slots, cmp.AllowUnexported(slot{})); diff != "" {
				t.Errorf("slots (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.lanes, lanes); diff != "" {
				t.Errorf("lanes (-want +got):\n%s", diff)
			}
		})
	}
}
