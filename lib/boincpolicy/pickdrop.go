package boincpolicy

import "github.com/bkit/bkit/lib/state"

// pickDrop is pickAgain after job i ended, of project p and resource r, where the
// last pick took every job of r (its loop's heap emptied before the instances in use
// reached r's: not segBroke), and so every job p had on r: it reports whether it made
// the pick (else pick must run).
//
// In r's loop each project's priority at a pick is read from its REC and how many of
// its jobs the loop has taken, when p's jobs on r all have the bump of the one that
// ended (the others' lists are as they were), so the loop now takes the projects in
// the order of the last pick's, p's last pick left out: up to it the projects and
// priorities are the same, and where the last pick took p's last job, p was the
// highest (or, under BOINC's emulator, the last left); any other project taken while
// p stays in the heap is the first of the highest without p too. After that pick
// only p is gone. Nor does the loop stop sooner: the instances in use at each of its
// picks are sums of fewer of the same terms ≥ 0, in the same order, as the last
// pick's at its end, which it did not stop at (rounding is monotonic). So its jobs
// are the projects' first in their lists again, in that order.
//
// The other coprocessors' loops are as they were (each starts its projects afresh
// and counts its own instances only). After a CPU job's end the coprocessors' loops
// come first and leave the CPUs as they were; after a coprocessor job's end the
// CPUs' loop starts from the coprocessor jobs' CPUs, which are less by the job's
// (or the same: none, or GPU computing suspended, pick then not counting them), and
// takes the same jobs when it took every CPU job (the same argument: its stop is
// only further), or when they are the same.
//
// Every buffer pick leaves is then as pick leaves it: the picks and the jobs they
// took (r's found again, the loops after it moved up one), p's instances in use
// summed again in pick's order, each resource's total, p's temporary REC (its REC and
// the bumps of its jobs the last loop it is in took). (On the corpus's hosts whose
// jobs fit their instances, pickAgain failed at 5.2 million CPU jobs' ends of a
// 10-day run of every scenario, and pick ran at every one of 4.5 million coprocessor
// jobs' ends: issue 30, fifteenth round.)
func (w *Workspace) pickDrop(doc *state.Document, i int) bool {
	j := &w.jobs[i]
	p, r, nR, cpu := j.proj, j.res, w.nRes, w.cpuRes
	k := p*nR + r
	if w.segBroke[r] && !dropBroke {
		// The loop stopped at r's instances: resumed where it may (pickResume).
		return !noDropResume && w.pickResume(doc, i)
	}
	if !dropAnyBump {
		for _, a := range w.pending[k] {
			if w.jobs[a].bump != j.bump {
				return false
			}
		}
	}
	if r != cpu && w.pickBroke && j.cpus != 0 && !doc.GPUsSuspended && !dropCPUsBroke {
		return false // the CPUs' loop stopped at the CPUs, which the job's leave
	}
	// r's picks: p's t-th takes p's t-th job still listed, p's last is left out, the
	// later loops' move up one (the other projects' picks and places in their
	// lists as they were).
	at, end := w.segAt[r], len(w.pickSeq)
	for _, q := range w.resOrder {
		if s := w.segAt[q]; s > at && s < end {
			end = s
		}
	}
	list, seq, act := w.pending[k], w.pickSeq, w.active // (in locals: the stores to act made the loop read them through w)
	t, x := 0, -1
	for y := at; y < end; y++ {
		if seq[y] != p {
			continue
		}
		if t < len(list) {
			act[y] = list[t]
			t++
		} else {
			x = y
		}
	}
	if x < 0 {
		return false // (not reached: the last pick took the job that ended)
	}
	w.pickSeq = append(w.pickSeq[:x], w.pickSeq[x+1:]...)
	w.cpuOne = -1 // (not worked out again: pickAgain walks the picks)
	w.active = append(w.active[:x], w.active[x+1:]...)
	for _, q := range w.resOrder {
		if w.segAt[q] > at {
			w.segAt[q]--
		}
	}
	w.cpuSeqAt, w.cpuActAt = w.segAt[cpu], w.segAt[cpu]
	w.pendingAt[k] = len(list)
	if noDropSums {
		return true
	}
	for q := range nR {
		w.simNused[p*nR+q] = 0
	}
	last := -1 // the last loop p is in
	for _, q := range w.resOrder {
		if len(w.pending[p*nR+q]) > 0 {
			last = q
		}
	}
	if noDropLast {
		last = r
	}
	// p's CPUs and temporary REC summed in locals, in the same order from the same
	// starts (+0, p's REC): the same bits.
	jobs, pCPUs, pREC, suspended := w.jobs, 0.0, w.rec[p], doc.GPUsSuspended
	for _, a := range w.active {
		jj := &jobs[a]
		if jj.proj != p {
			continue
		}
		if jj.res == cpu || !suspended {
			pCPUs += jj.cpus
		}
		if jj.res != cpu {
			w.simNused[p*nR+jj.res] += jj.inst
		}
		if jj.res == last {
			pREC += jj.bump
		}
	}
	w.simNused[p*nR+cpu], w.recTemp[p] = pCPUs, pREC
	w.simUsed[cpu] = w.resUsed(cpu)
	if r != cpu {
		w.simUsed[r] = w.resUsed(r)
	}
	if pickDropped != nil {
		*pickDropped++
	}
	return true
}

// A test's switches: noPickDrop, pickAgain never drops (picks afresh where it
// cannot replay the last pick); dropBroke, it drops after a loop that stopped at
// its instances too; dropAnyBump, whatever the bumps of the project's jobs;
// dropCPUsBroke, after a coprocessor job's end whatever the CPUs' loop did;
// noDropLast, the temporary REC taken from the ended job's loop; noDropSums, the
// sums and temporary REC left as the last pick left them. pickDropped, when set,
// counts pickDrop's picks; pickHook, when set, sees the workspace after every pick
// of the simulation (pick's, pickAgain's or pickDrop's).
var (
	noPickDrop, dropBroke, dropAnyBump, dropCPUsBroke, noDropLast, noDropSums bool
	pickDropped                                                               *int
	pickHook                                                                  func(*Workspace)
)
