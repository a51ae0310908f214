package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestAccountEmulatorAgainstCopy checks, at every step of runs of policy boinc under
// BOINC's emulator, the instance-seconds accountEmulator adds (the CPUs' column
// replaced as it goes) against the figure of a copy of the step's usage with the
// CPUs' column replaced by each task's avg_ncpus (StepUsage.cpuSecs ÷ the step),
// added × the step, as Account made it before (issue 30, twenty-third round): bit for
// bit. The runs: the public scenarios with coprocessors or overcommitted CPUs, noisy,
// and random corpus hosts, where the loop's CPU column and the avg_ncpus differ.
func TestAccountEmulatorAgainstCopy(t *testing.T) {
	if !Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 23))
	dirs := []string{"../../scenarios/seed002-gpu", "../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "testdata/noisy"}
	for range 6 {
		dirs = append(dirs, fmt.Sprintf("../../scenarios/corpus/c%03d", r.IntN(200)))
	}
	var checks, replaced, diffs int
	accountCheck = func(doc *state.Document, u *StepUsage, before, after [][]float64) {
		checks++
		cpu := slices.IndexFunc(doc.Host.Resources, func(r state.Resource) bool { return r.Type == state.ResourceCPU })
		for p := range u.Used {
			row := make([]float64, len(u.Used[p]))
			if len(before) == len(u.Used) {
				copy(row, before[p])
			}
			used := slices.Clone(u.Used[p])
			if u.DT > 0 && cpu >= 0 && p < len(u.cpuSecs) {
				used[cpu] = u.cpuSecs[p] / u.DT
				if used[cpu] != u.Used[p][cpu] {
					replaced++
				}
			}
			for r, x := range used {
				row[r] += x * u.DT
			}
			for r := range row {
				if math.Float64bits(row[r]) != math.Float64bits(after[p][r]) {
					diffs++
				}
			}
		}
	}
	defer func() { accountCheck = nil }()
	for _, dir := range dirs {
		cfg := Config{Duration: float64(2+r.IntN(5)) * 86400, Delta: 60, Policy: BOINCPolicy, Seed: 1 + r.Uint64N(1000), EmulateBOINC: true}
		if _, err := Run(load(t, dir), cfg); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
	}
	if checks == 0 || replaced == 0 {
		t.Fatalf("%d steps checked, %d with the CPUs' column replaced: the check saw nothing", checks, replaced)
	}
	if diffs > 0 {
		t.Errorf("%d instance-second figures in %d steps differ from the copy's", diffs, checks)
	}
	t.Logf("%d steps checked, %d rows with the CPUs' column replaced", checks, replaced)
}
