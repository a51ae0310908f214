package boincpolicy

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/credit"
)

// TestBoundsPerJobBesideCoprocessors: on random queues of GPU hosts (randomGPUQueue),
// the CPU jobs' deadlines just past their bounds per job at t0 (projectBounds, the
// coprocessor jobs' CPUs counted), whenever missesKnown decides the misses with the
// bounds per job they are the simulation's, job by job, and so they stay at a moment
// within its slack, the RECs brought up to date meanwhile step by step with every
// instance to one project. It fails when the bounds leave out the coprocessor jobs'
// CPUs (from the CPUs the projects are served, or from the CPU-seconds a job waits
// behind), or when the list schedule beside a project served every CPU is taken as
// exact beside them.
func TestBoundsPerJobBesideCoprocessors(t *testing.T) {
	var qMem, simMem, sMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 22))
	known, held := 0, 0
	for trial := range 20000 {
		doc := randomGPUQueue(rng)
		doc.GPUsSuspended = false
		if rng.IntN(2) == 0 {
			doc.BOINCEmulator = false
			base := 20 + rng.Float64()*100 // RECs near one another
			for p := range doc.Projects {
				doc.Projects[p].REC = base * (1 + 0.1*rng.NormFloat64())
			}
		}
		q := renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		if q.coprocCPUs == 0 || !q.projectBounds(doc, t0, 0) {
			continue
		}
		comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
		for i := range q.jobs {
			if q.jobs[i].res == q.cpuRes && rng.IntN(4) != 0 {
				doc.Tasks[q.jobs[i].task].ReportDeadline = t0 + comp + q.cum[i]*(1+0.01*rng.Float64()) + 1
			}
		}
		renew(q)
		q.view(doc)
		q.prepareJobs(doc)
		if !q.missesKnown(doc, t0) || !q.perJobUsed(doc, t0) {
			continue
		}
		sim := renewed(&simMem)
		sim.Simulate(doc, t0)
		for i := range q.jobs {
			if q.jobs[i].misses != sim.jobs[i].misses {
				t.Fatalf("trial %d: job %d misses %v, in the simulation %v", trial, i, q.jobs[i].misses, sim.jobs[i].misses)
			}
		}
		known++
		if !(q.slack > 0) {
			continue
		}
		missed := slices.Clone(q.missed)
		later := t0 + min(q.slack, recHorizon)*rng.Float64()
		favoured := rng.IntN(len(doc.Projects))
		var d credit.Decay
		rel := RelativeSpeeds(&doc.Host, nil)
		used := make([][]float64, len(doc.Projects))
		now := t0
		for now+60 <= later {
			for p := range used {
				used[p] = make([]float64, len(doc.Host.Resources))
			}
			for r, res := range doc.Host.Resources {
				used[favoured][r] = float64(res.Instances)
			}
			now += 60
			AccountDecay(doc, used, 60, now, rel, &d)
		}
		s := renewed(&sMem)
		s.Simulate(doc, now)
		if !slices.Equal(missed, s.missed) {
			t.Fatalf("trial %d: misses %v at t0 (slack %.0f s), the simulation's %v %.0f s later", trial, missed, q.slack, s.missed, now-t0)
		}
		if now > t0 {
			held++
		}
	}
	if known < 2000 || held < 150 {
		t.Errorf("misses known by the bounds per job beside coprocessor jobs on %d queues, %d of them held a while: want more", known, held)
	}
	t.Logf("misses known by the bounds per job beside coprocessor jobs on %d queues, %d of them held a while", known, held)
}
