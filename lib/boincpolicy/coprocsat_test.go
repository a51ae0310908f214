package boincpolicy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestSaturatedWithCoprocessorCPUs: on random queues of GPU hosts (randomGPUQueue),
// the coprocessor jobs' CPUs counted on the CPUs (their CPU jobs of one CPU each,
// often of one project), saturatedBound's sum and n-th longest time and
// saturatedList's end are never past the simulation's saturated time of their
// resource; with work_buf_min just or well below the least of the resources' best (workBound's
// own among them), when workBound puts every
// resource past it, so does the simulation, and at up to 20 moments within the work
// fetch's hold it sets (the running jobs' work done at their speed, at most a CPU
// each and the GPUs' instances), the simulation's saturated times stay past
// work_buf_min. It fails when a coprocessor's jobs of half an instance are taken as
// one each, or saturatedList takes several projects' jobs.
func TestSaturatedWithCoprocessorCPUs(t *testing.T) {
	var simMem, qMem, laterMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 19))
	checked, listed, bounded, held := 0, 0, 0, 0
	for trial := range 10000 {
		doc := randomGPUQueue(rng)
		one := rng.IntN(2) == 0 // the CPU jobs all one project's (saturatedList)
		for i := range doc.Tasks {
			if tk := &doc.Tasks[i]; one && tk.AppVersion[len(tk.AppVersion)-2:] == "/v" {
				tk.Project, tk.AppVersion = "A", "A/v"
			}
		}
		for v := range doc.AppVersions {
			av := &doc.AppVersions[v]
			if av.Coproc == nil {
				av.AvgNCPUs = 1
				continue
			}
			for k := range rng.IntN(8) { // the GPUs busy too, often
				tk := task(fmt.Sprint(av.Name, k), av.Project, 600+rng.Float64()*20000, t0+1e6)
				tk.AppVersion = av.Name
				doc.Tasks = append(doc.Tasks, tk)
			}
		}
		sim := renewed(&simMem)
		sim.Simulate(doc, t0)
		q := renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		best := math.Inf(1) // the least of the resources' best bounds
		for r := range doc.Host.Resources {
			want := sim.Sim[r].Saturated
			b := math.Inf(-1)
			if sum, kth, ok := q.saturatedBound(&doc.Host, r); ok {
				if !(sum <= want*(1+1e-9)+1e-6) || !(kth <= want*(1+1e-9)+1e-6) {
					t.Fatalf("trial %d: resource %d's bounds %v and %v past the simulation's saturated time %v", trial, r, sum, kth, want)
				}
				b = max(b, sum, kth)
				if r == q.cpuRes && q.coprocCPUs > 0 {
					checked++
				}
			}
			if sat, ok := q.saturatedList(&doc.Host, r); ok {
				if !(sat <= want*(1+1e-9)+1e-6) {
					t.Fatalf("trial %d: resource %d's list schedule ends %v, past the simulation's saturated time %v", trial, r, sat, want)
				}
				b = max(b, sat)
				if r == q.cpuRes && q.coprocCPUs > 0 {
					listed++
				}
			}
			n := float64(doc.Host.Resources[r].Instances)
			if s := q.sums[sumsPer*r : sumsPer*r+sumsPer]; s[sumW] > 0 { // workBound's own
				b = max(b, (s[sumW]-n*s[sumMaxT])/(n+s[sumMaxU]))
			}
			best = min(best, b)
		}
		if !(best > EstFetchTime) || q.coprocCPUs == 0 {
			continue
		}
		// Just below it, or well below (a hold of some length).
		doc.Preferences.WorkBufMinDays = best * []float64{1 - 1e-6, 0.9, 0.5}[rng.IntN(3)] / 86400
		bufMin := WorkBufMin(&doc.Preferences)
		q.prepareJobs(doc)
		q.boundAt = t0
		if !q.workBound(&doc.Host, bufMin) {
			continue
		}
		bounded++
		for r := range doc.Host.Resources {
			if !(sim.Sim[r].Saturated >= bufMin) {
				t.Fatalf("trial %d: resource %d saturated past %v by the bound, the simulation's %v", trial, r, bufMin, sim.Sim[r].Saturated)
			}
		}
		step := *doc
		step.Tasks = slices.Clone(doc.Tasks)
		n := float64(doc.Host.CPU().Instances)
		gpus := float64(doc.Host.Resources[1].Instances)
		stride := max(60, math.Ceil((q.fetchHoldUntil-t0)/20/60)*60)
		for now := t0 + stride; q.fetchHold && now < q.fetchHoldUntil; now += stride {
			cpus, gpu := 0.0, 0.0
			for i := range step.Tasks {
				tk := &step.Tasks[i]
				if tk.State != state.TaskRunning {
					continue
				}
				av := &step.AppVersions[slices.IndexFunc(step.AppVersions, func(v state.AppVersion) bool { return v.Name == tk.AppVersion })]
				if av.Coproc != nil && gpu+av.Coproc.Count <= gpus || av.Coproc == nil && cpus < n {
					tk.FlopsDone = min(tk.EstimatedFlops, tk.FlopsDone+stride*av.Flops) // at full speed
					if av.Coproc != nil {
						gpu += av.Coproc.Count
					} else {
						cpus++
					}
				}
			}
			later := renewed(&laterMem)
			later.Simulate(&step, now)
			for r := range step.Host.Resources {
				if !(later.Sim[r].Saturated >= bufMin) {
					t.Fatalf("trial %d: %.0f s into the fetch hold (until %.0f s), resource %d saturated %v, work_buf_min %v", trial, now-t0, q.fetchHoldUntil-t0, r, later.Sim[r].Saturated, bufMin)
				}
			}
			held++
		}
	}
	if checked < 2000 || listed < 500 || bounded < 1000 || held < 2000 {
		t.Errorf("%d queues' CPUs bounded beside coprocessor jobs' CPUs, %d by the list schedule, %d past work_buf_min by workBound, %d moments held: want more", checked, listed, bounded, held)
	}
	t.Logf("%d queues' CPUs bounded beside coprocessor jobs' CPUs, %d by the list schedule, %d past work_buf_min by workBound, %d moments held", checked, listed, bounded, held)
}
