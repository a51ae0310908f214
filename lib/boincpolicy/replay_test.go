package boincpolicy

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReplayAgainstSimulation: on random queues of judgeList's hosts (one project's
// jobs of one CPU, or several projects' under BOINC's emulator: pickListed's), with
// one job's report deadline set so that its computation deadline is its replayed end
// to the bit (or one step of the float off it either way), judgeReplayed's misses are
// the whole simulation's, job by job. The times are not whole seconds, so the list
// schedule's ends (summed in another order) are not the simulation's: it wants many
// trials where a job's list end differs from its replayed one, and fails with those
// ends in place of the replayed ones, with the simulation's cut of a step over 3,600
// seconds left out, and with the test of the end at or past the deadline (>= for >).
func TestReplayAgainstSimulation(t *testing.T) {
	var simMem, qMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 4208))
	var tried, ties, apart int
	for trial := range 20000 {
		doc := randomQueue(rng)
		if rng.IntN(2) == 0 {
			doc.BOINCEmulator = true
		}
		for i := range doc.AppVersions {
			doc.AppVersions[i].AvgNCPUs = 1
		}
		n := doc.Host.CPU().Instances
		comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
		q := renewed(&qMem)
		q.view(doc)
		if len(q.jobs) == 0 || n > maxTop {
			continue
		}
		q.prepareJobs(doc)
		order, ok := q.pickListed(doc, q.relistable())
		if !ok {
			continue
		}
		q.listOrder = append(q.listOrder[:0], order...)
		q.replayEnds(t0, n)
		// One job's deadline at its replayed end.
		x := rng.IntN(len(q.jobs))
		end := q.replayEnd[x]
		dl := end + comp
		for range 4 {
			if dl-comp < end {
				dl = math.Nextafter(dl, math.Inf(1))
			} else if dl-comp > end {
				dl = math.Nextafter(dl, math.Inf(-1))
			}
		}
		switch rng.IntN(4) {
		case 0:
			dl = math.Nextafter(dl, math.Inf(1))
		case 1:
			dl = math.Nextafter(dl, math.Inf(-1))
		}
		doc.Tasks[q.jobs[x].task].ReportDeadline = dl
		// The list schedule's ends, against the replayed ones.
		free := make([]float64, n)
		for k := range q.jobs {
			i := k
			if len(order) > 0 {
				i = order[k]
			}
			if t0+listEnd(free, q.jobs[i].simT) != q.replayEnd[i] {
				apart++
				break
			}
		}

		sim := renewed(&simMem)
		sim.Simulate(doc, t0)
		q = renewed(&qMem)
		q.view(doc)
		q.prepareJobs(doc)
		order, _ = q.pickListed(doc, q.relistable())
		q.listOrder = append(q.listOrder[:0], order...)
		if !q.judgeReplayed(doc, t0, n) {
			t.Fatalf("trial %d: judgeReplayed did not decide", trial)
		}
		tried++
		if q.replayEnd[x] == q.jobs[x].deadline-comp {
			ties++
		}
		if !slices.Equal(q.missed, sim.missed) || q.Sim[0].Misses != sim.Sim[0].Misses {
			t.Fatalf("trial %d: misses replayed %v, the simulation's %v", trial, q.missed, sim.missed)
		}
		for i := range q.jobs {
			if q.jobs[i].misses != sim.jobs[i].misses {
				t.Fatalf("trial %d: job %d misses %v, in the simulation %v", trial, i, q.jobs[i].misses, sim.jobs[i].misses)
			}
		}
	}
	if tried < 5000 || ties < 1000 || apart < 1000 {
		t.Errorf("%d queues, %d with a job's end at its computation deadline, %d with list ends not the replayed ones: want more", tried, ties, apart)
	}
	t.Logf("%d queues, %d with a job's end at its computation deadline, %d with list ends not the replayed ones", tried, ties, apart)
}
