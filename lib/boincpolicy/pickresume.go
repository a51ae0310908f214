package boincpolicy

import (
	"slices"

	"github.com/bkit/bkit/lib/state"
)

// pickResume is pickDrop where the last pick's loop stopped at the CPUs (segBroke), on
// a host of CPUs only: job i of project p ended. It reports whether it made the pick
// (else pick must run).
//
// When p's jobs still listed all have the bump of the one that ended (or under BOINC's
// emulator, whose loop takes the projects in the document's order from the last,
// each to its list's end, whatever their priorities), the loop takes the projects in
// the last pick's order up to that pick's stop, p's t-th pick taking its t-th job
// still listed and a pick of p beyond its list left out (pickDrop's argument: p's
// priority after c picks is the same; where the last pick took p again after p now
// runs out, p was the first of the highest, and every other project taken is the first
// of the highest without p too; after that pick the heap holds the same projects). So
// those picks are made again in that order, each with pick's own sums and test of the
// CPUs in use (the loop stops where pick would), and where the last of them does not
// stop it, the loop goes on as pick's: the heap is the projects with jobs left, in
// the document's order, each one's priority (read only while two or more are left) its
// temporary REC's, as pick left it after that project's last pick, or its REC's
// (prioBase) before any.
func (w *Workspace) pickResume(doc *state.Document, i int) bool {
	j := &w.jobs[i]
	p, cpu, emu := j.proj, w.cpuRes, doc.BOINCEmulator
	if w.nRes != 1 || j.res != cpu {
		return false
	}
	jobs, pending, list := w.jobs, w.pending, w.pending[p]
	if !emu && !resumeAnyBump {
		for _, a := range list {
			if jobs[a].bump != j.bump {
				return false
			}
		}
	}
	// p's picks take its jobs still listed; one beyond its list (its last) is left out.
	seq, act := w.pickSeq, w.active
	t, x := 0, -1
	for y, q := range seq {
		if q != p {
			continue
		}
		if t < len(list) {
			act[y] = list[t]
			t++
		} else {
			x = y
		}
	}
	if x >= 0 {
		seq = append(seq[:x], seq[x+1:]...)
		act = append(act[:x], act[x+1:]...)
	}
	// The picks again, with pick's sums (one resource: project q's place is q).
	simNused, recTemp, pendingAt := w.simNused, w.recTemp, w.pendingAt
	clear(simNused)
	copy(recTemp, w.rec)
	for q := range doc.Projects {
		pendingAt[q] = 0
	}
	thr := float64(doc.Host.CPU().Instances)
	run := w.resUsed(cpu)
	broke := false
	for y, q := range seq {
		jj := &jobs[act[y]]
		simNused[q] += jj.cpus
		run += jj.cpus
		recTemp[q] += jj.bump
		if usedNear(run, thr, y+1) && w.resUsed(cpu) >= thr {
			seq, act, broke = seq[:y+1], act[:y+1], true
			break
		}
		pendingAt[q]++
	}
	if !broke && !noResumeLoop {
		heap := w.heap[:0]
		for q := range doc.Projects {
			if pendingAt[q] < len(pending[q]) {
				heap = append(heap, q)
			}
		}
		recSum := w.pickRecSum
		if !emu && len(heap) > 1 && !noResumePrio {
			for _, q := range heap {
				w.prio[q] = Priority(recTemp[q], recSum, doc.Projects[q].ResourceShare, w.shareFrac[q])
			}
		}
		for len(heap) > 0 {
			bi := len(heap) - 1
			if !emu {
				bi = 0
				for y := 1; y < len(heap); y++ {
					if w.prio[heap[y]] > w.prio[heap[bi]] {
						bi = y
					}
				}
			}
			q := heap[bi]
			a := pending[q][pendingAt[q]]
			jj := &jobs[a]
			act = append(act, a)
			seq = append(seq, q)
			simNused[q] += jj.cpus
			run += jj.cpus
			recTemp[q] += jj.bump
			if usedNear(run, thr, len(seq)) && w.resUsed(cpu) >= thr {
				broke = true
				break
			}
			pendingAt[q]++
			if pendingAt[q] == len(pending[q]) {
				heap = slices.Delete(heap, bi, bi+1)
			} else if !emu && len(heap) > 1 {
				w.prio[q] = Priority(recTemp[q], recSum, doc.Projects[q].ResourceShare, w.shareFrac[q])
			}
		}
		w.heap = heap
	}
	w.active, w.pickSeq = act, seq
	w.pickBroke, w.segBroke[cpu] = broke, broke
	w.simUsed[cpu] = w.resUsed(cpu)
	if pickResumed != nil {
		*pickResumed++
	}
	return true
}

// A test's switches: noDropResume, pickDrop never resumes a loop that stopped at the
// CPUs (pick runs); resumeAnyBump, it resumes whatever the bumps of the project's
// jobs; noResumeLoop, it stops after the last pick's picks; noResumePrio, it resumes
// with the priorities the last pick left. pickResumed, when set, counts pickResume's
// picks.
var (
	noDropResume, resumeAnyBump, noResumeLoop, noResumePrio bool
	pickResumed                                             *int
)
