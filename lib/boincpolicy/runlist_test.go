package boincpolicy

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestRunHoldListing: on random queues of one project (1 to 8 CPUs, each CPU taken by a
// running job, jobs of few deadlines so that ties are common, started jobs preempted or
// running, slices near their end or past it, under both conventions, under BOINC's
// emulator some running jobs not yet computed, elsewhere some near a rise of their
// estimated remaining work), wherever runHold sets a hold with the
// misses m, a whole listing with those misses (schedule, on a copy) starts and stops
// no task at every minute of the hold, the running jobs computing as lib/sim has them.
// It fails with runHold's test of the running jobs' place in the order dropped, with
// its test of their time slices dropped or their ends taken two minutes late, with its
// test of the emulator's true remaining work dropped, with the misses' count left out
// (K taken as 2n) and with the hold not ended at a rise (noRiseUntil).
func TestRunHoldListing(t *testing.T) {
	t.Parallel()
	runHoldListing(t, rand.New(rand.NewPCG(30, 3402)), 1)
}

// TestRunHoldListingProjects is TestRunHoldListing on queues of two or three projects
// (issue 30, thirty-sixth round), their jobs' deadlines shared so that the listing
// interleaves them, each project's misses at random (none for some): it fails with
// runHold's per-project test dropped (the jobs before the project's last running job
// fewer than its misses), with that test read against all the jobs, and with the
// count of the listing's jobs up to the last running job left out or taken as its
// jobs' (the listing stops at twice the CPUs), with listsRunning's count taken one
// short and with its first job not running taken as the first in the jobs' order.
func TestRunHoldListingProjects(t *testing.T) {
	t.Parallel()
	runHoldListing(t, rand.New(rand.NewPCG(30, 3601)), 3)
}

// runHoldListing is TestRunHoldListing's trials, on queues of 1 to projects projects.
func runHoldListing(t *testing.T, rng *rand.Rand, projects int) {
	pick := func(k int) int { // (one project: the draws of TestRunHoldListing's first version)
		if k == 1 {
			return 0
		}
		return rng.IntN(k)
	}
	holds, moments, several := 0, 0, 0 // several: holds on a host of several projects
	for trial := range 20000 {
		n := 1 + rng.IntN(8)
		doc := host(n)
		doc.Projects = append(doc.Projects, state.Project{Name: "C", ResourceShare: 50})
		doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "C/v", Project: "C", AvgNCPUs: 1, Flops: 1e9})
		nP := 1 + pick(projects)
		doc.Projects, doc.AppVersions = doc.Projects[:nP], doc.AppVersions[:nP]
		doc.BOINCEmulator = rng.IntN(2) == 0
		period := doc.Preferences.CPUSchedulingPeriod
		dls := []float64{t0 + 20000 + 40000*rng.Float64(), t0 + 60000 + 40000*rng.Float64(), t0 + 150000}
		truth := make(map[int]float64) // each task's true work
		for i := range n + rng.IntN(3*n+4) {
			tk := task(fmt.Sprint("t", i), doc.Projects[pick(nP)].Name, 600+rng.Float64()*3000, dls[rng.IntN(len(dls))])
			truth[i] = tk.EstimatedFlops * (0.5 + rng.Float64())
			if i < n || rng.IntN(3) == 0 {
				tk.State = state.TaskPreempted
				tk.FlopsDone = truth[i] * 0.5 * rng.Float64()
				if rng.IntN(2) == 0 {
					// Near the end of its estimate, its true work more: its estimated
					// remaining work rises there (noRiseUntil).
					truth[i] = tk.EstimatedFlops * (1.2 + rng.Float64())
					tk.FlopsDone = tk.EstimatedFlops * (0.9 + 0.1*rng.Float64())
				}
				if doc.BOINCEmulator && rng.IntN(8) == 0 {
					tk.FlopsDone = 0 // started, not yet computed
				}
				tk.FractionDone = tk.FlopsDone / truth[i]
				tk.ElapsedTime = tk.FlopsDone/1e9 + 60
				tk.ElapsedTimeAtLastSched = tk.ElapsedTime - period*(0.5+0.6*rng.Float64())
				if doc.BOINCEmulator {
					tk.EmulatorFlopsLeft = truth[i] - tk.FlopsDone
				}
			}
			doc.Tasks = append(doc.Tasks, tk)
		}
		// n of the started jobs run, at random.
		for _, i := range rng.Perm(len(doc.Tasks)) {
			if tk := &doc.Tasks[i]; tk.State == state.TaskPreempted && n > 0 {
				tk.State = state.TaskRunning
				tk.EmulatorRunStart, tk.EmulatorCheckpoint = t0-(tk.ElapsedTime-tk.ElapsedTimeAtLastSched), t0
				n--
			}
		}
		w := &Workspace{}
		w.Simulate(doc, t0)
		m := append([]int(nil), w.missed...)
		if nP == 1 {
			m[w.cpuRes] = 1 + rng.IntN(len(w.jobs)) // the project's misses, as the hold takes them
		} else {
			for p := range nP {
				if rng.IntN(4) > 0 {
					m[p*w.nRes+w.cpuRes] = 1 + rng.IntN(len(w.jobs))
				}
			}
		}
		copy(w.missed, m)
		w.anyMiss, w.slack, w.recEps = true, 7200*rng.Float64(), 1
		if !w.runHold(doc, t0) {
			continue
		}
		holds++
		if nP > 1 {
			several++
		}
		for now := t0; now < w.holdUntil; now += 60 {
			if now > t0 {
				for i := range doc.Tasks {
					tk := &doc.Tasks[i]
					if tk.State != state.TaskRunning {
						continue
					}
					tk.ElapsedTime += 60
					tk.FlopsDone += 60e9
					if tk.FlopsDone >= truth[i] {
						now = w.holdUntil // it ends: the tasks change
						break
					}
					tk.FractionDone = tk.FlopsDone / truth[i]
					if doc.BOINCEmulator {
						tk.EmulatorFlopsLeft, tk.EmulatorCheckpoint = truth[i]-tk.FlopsDone, now
					}
				}
				if now >= w.holdUntil {
					break
				}
			}
			whole := &Workspace{}
			cp := whole.checkCopy(doc)
			whole.view(cp)
			whole.prepareJobs(cp)
			copy(whole.missed, m)
			whole.schedule(cp, now, nil)
			if whole.changed {
				t.Fatalf("trial %d: %.0f s into runHold's hold (until %.0f s), a listing with its misses %v started or stopped a task",
					trial, now-t0, w.holdUntil-t0, m)
			}
			moments++
		}
	}
	if holds < 1000 || projects > 1 && several < 1000 {
		t.Errorf("%d holds, %d on several projects: want more", holds, several)
	}
	t.Logf("%d holds (%d on several projects), %d moments", holds, several, moments)
}
