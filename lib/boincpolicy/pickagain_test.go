package boincpolicy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// samePicks simulates doc at t0 twice, with the full computation (*full set: picking
// afresh after every job's end, or summing the instances in use at every pick) and
// with the shortcut, and fails unless every result is the same: the misses job by
// job and in order, each resource's figures, the instances in use, the temporary
// RECs, the jobs' times. It returns the workspace that took the shortcut.
func samePicks(t *testing.T, trial int, doc *state.Document, full *bool) *Workspace {
	t.Helper()
	var a, b Workspace
	*full = true
	a.Simulate(doc, t0)
	*full = false
	b.Simulate(doc, t0)
	if !slices.Equal(a.Sim, b.Sim) || !slices.Equal(a.missed, b.missed) || !slices.Equal(a.missOrder, b.missOrder) ||
		!slices.Equal(a.simUsed, b.simUsed) || !slices.Equal(a.simNused, b.simNused) || !slices.Equal(a.recTemp, b.recTemp) {
		t.Fatalf("trial %d: in full %+v %v %v, with the shortcut %+v %v %v", trial, a.Sim, a.missed, a.missOrder, b.Sim, b.missed, b.missOrder)
	}
	for i := range a.jobs {
		if a.jobs[i] != b.jobs[i] {
			t.Fatalf("trial %d: job %d in full %+v, with the shortcut %+v", trial, i, a.jobs[i], b.jobs[i])
		}
	}
	return &b
}

// TestPickAgainIsPick: on random queues (ties of priority among them: equal shares
// and RECs), the simulation whose picks after a job's end are pickAgain's where it
// may leaves every result as the simulation that picks afresh every time.
func TestPickAgainIsPick(t *testing.T) {
	if !Alone(t) {
		return
	}
	rng := rand.New(rand.NewPCG(30, 7))
	again := 0
	for trial := range 20000 {
		doc := randomQueue(rng)
		if rng.IntN(3) == 0 {
			for p := range doc.Projects {
				doc.Projects[p].ResourceShare, doc.Projects[p].REC = 100, 50
			}
		}
		if b := samePicks(t, trial, doc, &noPickAgain); b.pickSame && len(b.jobs) > len(b.pickSeq) {
			again++
		}
	}
	if again < 5000 {
		t.Errorf("pickAgain could apply on %d queues only", again)
	}
	t.Logf("pickAgain could apply on %d of 20000 queues", again)
}

// TestPickAgainWithCoprocessors: the same on random queues of a host with one or two
// GPUs beside its CPUs, some projects' jobs on them (a fraction of a CPU, or a whole
// one, each; half a GPU or one), the GPUs now and then suspended: pickAgain after a
// CPU job's end keeps the coprocessors' picks, and the CPUs they leave (the corpus's
// GPU hosts picked afresh at almost every job's end). It fails when pickAgain takes a
// coprocessor job's end too, after a project's CPU jobs of other CPUs or bumps, or
// with the coprocessors' picks not kept.
func TestPickAgainWithCoprocessors(t *testing.T) {
	if !Alone(t) {
		return
	}
	rng := rand.New(rand.NewPCG(30, 17))
	again := 0
	pickAgainAfter = &again
	defer func() { pickAgainAfter = nil }()
	for trial := range 20000 {
		doc := randomGPUQueue(rng)
		samePicks(t, trial, doc, &noPickAgain)
	}
	if again < 6000 {
		t.Errorf("pickAgain took %d picks after coprocessors' only", again)
	}
	t.Logf("pickAgain took %d picks after coprocessors' in 20,000 queues", again)
}

// randomGPUQueue is randomQueue on a host with one or two GPUs beside its CPUs, some
// projects' jobs on them (a fraction of a CPU, or a whole one, each; half a GPU or
// one), some projects' CPU jobs of two versions, the GPUs now and then suspended.
func randomGPUQueue(rng *rand.Rand) *state.Document {
	doc := randomQueue(rng)
	doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1 + rng.IntN(2), Flops: 5e9})
	doc.GPUsSuspended = rng.IntN(8) == 0
	var gpu []string
	for p := range doc.Projects {
		if rng.IntN(3) == 0 {
			continue
		}
		n := doc.Projects[p].Name
		gpu = append(gpu, n)
		doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: n + "/gpu", Project: n,
			AvgNCPUs: []float64{0.1, 0.37, 1}[rng.IntN(3)], Flops: 5e9,
			Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: []float64{1, 0.5}[rng.IntN(2)]}})
	}
	// Some projects' CPU jobs of two versions, of other CPUs or speeds (pickAgain
	// then picks afresh).
	for p := range doc.Projects {
		if rng.IntN(5) != 0 {
			continue
		}
		n := doc.Projects[p].Name
		doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: n + "/v2", Project: n,
			AvgNCPUs: []float64{1, 2}[rng.IntN(2)], Flops: []float64{1e9, 2e9}[rng.IntN(2)]})
		for i := range doc.Tasks {
			if doc.Tasks[i].Project == n && rng.IntN(2) == 0 {
				doc.Tasks[i].AppVersion = n + "/v2"
			}
		}
	}
	for i := range len(gpu) * rng.IntN(6) {
		n := gpu[rng.IntN(len(gpu))]
		tk := task(fmt.Sprint("g", i), n, 600+rng.Float64()*20000, t0+8640+rng.Float64()*80000)
		tk.AppVersion = n + "/gpu"
		if rng.IntN(3) == 0 {
			tk.State = state.TaskRunning
		}
		doc.Tasks = slices.Insert(doc.Tasks, rng.IntN(len(doc.Tasks)+1), tk)
	}
	return doc
}

// TestUsedNear: on random queues of hosts with GPUs whose CPU jobs often take tenths
// of a CPU (sums that round differently in pick's order and in resUsed's), the
// simulation whose picks read the instances in use from their running sum where
// usedNear allows leaves every result as the one that sums them over the projects at
// every pick. It fails with usedNear's margin taken away.
func TestUsedNear(t *testing.T) {
	if !Alone(t) {
		return
	}
	rng := rand.New(rand.NewPCG(30, 18))
	for trial := range 20000 {
		doc := randomGPUQueue(rng)
		for v := range doc.AppVersions {
			if doc.AppVersions[v].Coproc == nil && rng.IntN(2) == 0 {
				doc.AppVersions[v].AvgNCPUs = []float64{0.1, 0.2, 0.3, 0.7}[rng.IntN(4)]
			}
		}
		samePicks(t, trial, doc, &exactUsed)
	}
}
