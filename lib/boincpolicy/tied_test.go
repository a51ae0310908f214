package boincpolicy

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestTiedMissesAgainstSimulation: on random queues of jobs of one CPU each whose
// projects' RECs are near one another (where the CPUs served often tie), some
// deadlines set just before the jobs' ends in their projects' list schedules,
// wherever tiedMiss finds a job missing at the CPUs served at now, the simulation
// finds it missing; and again at a moment within its slack, the running jobs having
// done any work up to their speed, where the CPUs served then are the same.
// missesKnown's answers with the rule in are the simulation's (as in
// TestBoundsAgainstSimulation).
func TestTiedMissesAgainstSimulation(t *testing.T) {
	var simMem, qMem, rMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 63))
	found, later, known := 0, 0, 0
	for trial := range 40000 {
		doc := randomQueue(rng)
		for p := range doc.AppVersions {
			doc.AppVersions[p].AvgNCPUs = 1
		}
		base := 20 + rng.Float64()*100
		for p := range doc.Projects {
			doc.Projects[p].ResourceShare = 100
			doc.Projects[p].REC = base * (1 + 0.05*rng.NormFloat64())
		}
		for i := range doc.Tasks {
			if tk := &doc.Tasks[i]; tk.State == state.TaskRunning && rng.IntN(2) == 0 {
				tk.FlopsDone = tk.EstimatedFlops * 0.5 * rng.Float64()
				tk.FractionDone = tk.FlopsDone / (tk.EstimatedFlops * 1.6)
			}
		}
		q := renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		if !q.projectStats(doc) || !q.projectServed(doc, t0, 0) || !q.tiedEnds(doc) {
			continue
		}
		// Deadlines just before (or after) the ends in the list schedules.
		comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
		for i := range q.jobs {
			if end := q.tied[3*i+1]; end > 0 && rng.IntN(2) == 0 {
				doc.Tasks[q.jobs[i].task].ReportDeadline = t0 + comp + end*(1+0.04*(rng.Float64()-0.75))
			}
		}
		sim := renewed(&simMem)
		sim.Simulate(doc, t0)
		q = renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		if q.missesKnown(doc, t0) {
			known++
			if !slices.Equal(q.missed, sim.missed) {
				t.Fatalf("trial %d: misses known %v, the simulation's %v", trial, q.missed, sim.missed)
			}
			for i := range q.jobs {
				if q.jobs[i].misses != sim.jobs[i].misses {
					t.Fatalf("trial %d: job %d misses %v, in the simulation %v", trial, i, q.jobs[i].misses, sim.jobs[i].misses)
				}
			}
		}
		q.prepareJobs(doc)
		if !q.projectStats(doc) || !q.projectServed(doc, t0, 0) || !q.tiedEnds(doc) {
			continue
		}
		served := slices.Clone(q.gServed)
		slack, missing := math.Inf(1), []int{}
		for i := range q.jobs {
			if s, ok := q.tiedMiss(i, t0, comp); ok {
				found++
				if !sim.jobs[i].misses {
					t.Fatalf("trial %d: job %d missing by the tied CPUs (start %v, end %v, T %v), not in the simulation", trial, i, q.tied[3*i], q.tied[3*i+1], q.tiedT)
				}
				slack, missing = min(slack, s), append(missing, q.jobs[i].task)
			}
		}
		if len(missing) == 0 || !(slack > 0) {
			continue
		}
		// A moment within the slack, the running jobs' work done at up to their
		// speed (the remaining work falling as runFall's bound lets it).
		step := *doc
		step.Tasks = slices.Clone(doc.Tasks)
		dt := min(slack, 86400) * rng.Float64()
		for i := range step.Tasks {
			if tk := &step.Tasks[i]; tk.State == state.TaskRunning {
				tk.ElapsedTime += dt
				tk.FlopsDone = min(tk.EstimatedFlops*1.5, tk.FlopsDone+dt*1e9*rng.Float64())
				if tk.FractionDone > 0 {
					tk.FractionDone = tk.FlopsDone / (tk.EstimatedFlops * 1.6)
				}
			}
		}
		if q.noRiseUntil(doc, t0) < t0+dt {
			continue // a running job's work may grow: the kept answers end there
		}
		r := renewed(&rMem)
		r.view(&step)
		r.prepareJobs(&step)
		if !r.projectStats(&step) || !r.projectServed(&step, t0+dt, 0) || !slices.Equal(r.gServed, served) {
			continue
		}
		sim = renewed(&simMem)
		sim.Simulate(&step, t0+dt)
		for i := range sim.jobs {
			if slices.Contains(missing, sim.jobs[i].task) && !sim.jobs[i].misses {
				t.Fatalf("trial %d: task %d missing by the tied CPUs at t0 (slack %.0f s), not in the simulation %.0f s later", trial, sim.jobs[i].task, slack, dt)
			}
		}
		later++
	}
	if found < 500 || later < 200 || known == 0 {
		t.Errorf("%d misses by the tied CPUs, %d checked later, %d answers known: want more", found, later, known)
	}
	t.Logf("%d misses by the tied CPUs, %d checked later, %d answers known", found, later, known)
}
