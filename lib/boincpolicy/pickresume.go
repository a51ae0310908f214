package boincpolicy

import (
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// pickResume is pickDrop where the last pick's CPU loop stopped at the CPUs (segBroke):
// CPU job i of project p ended. It reports whether it made the pick (else pick must
// run).
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
// (prioBase) before any. Where p's jobs take the CPUs of the one that ended, the
// picks again keep the last pick's sums (pickResumeKept) instead of making them anew.
//
// On a host with coprocessors their loops come first and are as they were (pickAgain's
// argument: a CPU job's end changes none of their lists, RECs or priorities), and so
// are the CPUs their jobs take, from which the CPUs' loop starts: its sums start from
// them (resumeCoCPUs), the rest as above, and its picks follow theirs (from cpuSeqAt).
// There the kept sums only (a project's CPUs in use and temporary REC are not the CPUs'
// loop's alone to sum again), and p's CPU list not run out: a project without CPU jobs
// keeps the temporary REC of its last coprocessor loop, not its REC. (Corpus c105, 16
// CPUs and a GPU, picked afresh at 58,000 CPU jobs' ends of a 10-day run: issue 30,
// thirty-ninth round.)
func (w *Workspace) pickResume(doc *state.Document, i int) bool {
	j := &w.jobs[i]
	p, cpu, emu, nR := j.proj, w.cpuRes, doc.BOINCEmulator, w.nRes
	if j.res != cpu {
		return false
	}
	jobs, pending, list := w.jobs, w.pending, w.pending[p*nR+cpu]
	// p's jobs still listed of the CPUs of the one that ended (pickResumeKept's case);
	// with each project's CPU jobs of its first's CPUs and bump (pickSame) they are,
	// of its bump too.
	sameCPUs := true
	if !w.pickSame || noResumeSame {
		for _, a := range list {
			if !emu && !resumeAnyBump && jobs[a].bump != j.bump {
				return false
			}
			sameCPUs = sameCPUs && (jobs[a].cpus == j.cpus || resumeAnyCPUs)
		}
	}
	if nR > 1 && (!sameCPUs || (len(list) == 0 && !resumeCoEmpty)) {
		return false
	}
	// p's picks take its jobs still listed; one beyond its list (its last) is left out.
	// The same walk sums, in the picks' order without that one, the CPUs in use (run)
	// and p's CPUs and temporary REC, as the picks again add them, each from where the
	// CPUs' loop starts (the coprocessor jobs' CPUs; none on a host of CPUs only).
	seq, act, at := w.pickSeq, w.active, w.cpuSeqAt
	stop := seq[len(seq)-1] // the last pick's loop stopped at its last pick (segBroke)
	t, x := 0, -1           // p's picks again, the pick left out (-1: none)
	run, pUsed, pREC := 0.0, 0.0, w.rec[p]
	if at > 0 {
		run, pUsed = w.resumeCoCPUs(doc, p)
	}
	for y := at; y < len(seq); y++ {
		if seq[y] != p {
			run += jobs[act[y]].cpus // (its pick as it was)
			continue
		}
		if t == len(list) {
			x = y
			break
		}
		a := list[t]
		t++
		act[y] = a
		pUsed += jobs[a].cpus
		pREC += jobs[a].bump
		run += jobs[a].cpus
	}
	if x >= 0 {
		// The picks after the one left out move up one (none of them p's: p has at
		// most one pick beyond its list, the last pick having taken no more of p's
		// jobs than its list then held, and one having ended since).
		for y := x + 1; y < len(seq); y++ {
			a := act[y]
			seq[y-1], act[y-1] = seq[y], a
			run += jobs[a].cpus
		}
		seq, act = seq[:len(seq)-1], act[:len(act)-1]
	}
	// The picks again, with pick's sums (project q's place in its CPU list is
	// q×nR + cpu).
	simNused, recTemp, pendingAt := w.simNused, w.recTemp, w.pendingAt
	thr := float64(doc.Host.CPU().Instances)
	broke := false
	if sameCPUs && !resumeWhole {
		broke = w.pickResumeKept(p, t, stop, seq, run, thr, pUsed, pREC)
	} else {
		// (One resource: project q's place is q.)
		clear(simNused)
		copy(recTemp, w.rec)
		for q := range doc.Projects {
			pendingAt[q] = 0
		}
		run = w.resUsed(cpu)
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
	}
	if !broke && !noResumeLoop {
		heap := w.heap[:0]
		for q := range doc.Projects {
			if k := q*nR + cpu; pendingAt[k] < len(pending[k]) {
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
			k := q*nR + cpu
			a := pending[k][pendingAt[k]]
			jj := &jobs[a]
			act = append(act, a)
			seq = append(seq, q)
			simNused[k] += jj.cpus
			run += jj.cpus
			recTemp[q] += jj.bump
			if usedNear(run, thr, len(seq)) && w.resUsed(cpu) >= thr {
				broke = true
				break
			}
			pendingAt[k]++
			if pendingAt[k] == len(pending[k]) {
				heap = slices.Delete(heap, bi, bi+1)
			} else if !emu && len(heap) > 1 {
				w.prio[q] = Priority(recTemp[q], recSum, doc.Projects[q].ResourceShare, w.shareFrac[q])
			}
		}
		w.heap = heap
	}
	w.active, w.pickSeq = act, seq
	w.cpuOne = -1 // (not worked out again: pickAgain walks the picks)
	w.pickBroke, w.segBroke[cpu] = broke, broke
	w.simUsed[cpu] = w.resUsed(cpu)
	if pickResumed != nil {
		*pickResumed++
		if nR > 1 && pickResumedCo != nil {
			*pickResumedCo++
		}
	}
	return true
}

// resumeCoCPUs is, where the CPUs' loop starts (after the coprocessors' loops, which
// pickResume keeps), the CPUs in use (run: resUsed's sum over the projects, in their
// order) and p's (its CPUs in use), each as pick summed them: every project's from
// +0, its coprocessor picks' CPUs added in the picks' order (none while GPU computing
// is suspended: pick then does not count them).
func (w *Workspace) resumeCoCPUs(doc *state.Document, p int) (run, pUsed float64) {
	if doc.GPUsSuspended || noResumeCoCPUs {
		return 0, 0
	}
	co := scratch.Grow(w.resumeCo, len(doc.Projects))
	w.resumeCo = co
	clear(co)
	for y, q := range w.pickSeq[:w.cpuSeqAt] {
		co[q] += w.jobs[w.active[y]].cpus
	}
	for _, c := range co {
		run += c
	}
	return run, co[p]
}

// pickResumeKept is pickResume's picks again where p's jobs still listed all take the
// CPUs of the one that ended (sameCPUs): it sets the sums those picks leave and
// reports whether the loop stops at the last of them. p's picks (t of them, the last
// pick's last one of p left out where p's list ran out) take other jobs of p, with
// the same CPUs, so the CPUs p uses at each pick are the last pick's; the other
// projects' picks are the same jobs in the same order. So every sum the picks again
// make is the last pick's as it left it: each other project's CPUs in use and
// temporary REC (pick's, pickAgain's, pickDrop's and pickResume's: each the sum over
// that project's picks, the one the loop stopped at included, in their order), and
// its count of picks that went on (pendingAt), but for the last pick's stop (its
// project's count left it out: it now goes on, unless the loop stops there again).
// p's are summed again (pUsed, pREC, its t picks). Nor can the loop stop before the
// last of these picks: up to the pick left out the sums are the last pick's at the
// same pick, which did not stop there; after it each is the last pick's one pick
// later with one term of p fewer (the same terms ≥ 0 in the same order: rounding is
// monotonic), and the last pick did not stop before its last pick. At the last one
// the test is pick's, on the same sums (run: the CPUs in use in the picks' order).
// (Corpus c072 under bsim's conventions resumed 70,000 loops in a 10-day run, each
// summing its nine picks and every project's place again: issue 30, thirty-eighth
// round.)
func (w *Workspace) pickResumeKept(p, t, stop int, seq []int, run, thr, pUsed, pREC float64) bool {
	pendingAt, nR, cpu := w.pendingAt, w.nRes, w.cpuRes
	if !noKeptStop {
		pendingAt[stop*nR+cpu]++
	}
	pendingAt[p*nR+cpu] = t
	w.simNused[p*nR+cpu], w.recTemp[p] = pUsed, pREC
	// (seq: every pick, the coprocessors' first: n is pick's count at its test.)
	if n := len(seq); n > w.cpuSeqAt && usedNear(run, thr, n) && w.resUsed(cpu) >= thr {
		pendingAt[seq[n-1]*nR+cpu]--
		return true
	}
	return false
}

// A test's switches: noDropResume, pickDrop never resumes a loop that stopped at the
// CPUs (pick runs); resumeAnyBump, it resumes whatever the bumps of the project's
// jobs; noResumeLoop, it stops after the last pick's picks; noResumePrio, it resumes
// with the priorities the last pick left; resumeAnyCPUs, its picks again keep the last
// pick's sums whatever the CPUs of p's jobs; resumeWhole, they are summed again from
// the first pick; noKeptStop, the kept sums leave the last pick's stop out of its
// project's count; noResumeSame, p's jobs are looked at whatever pickSame says.
// pickResumed, when set, counts pickResume's picks, and pickResumedCo those on hosts
// with coprocessors. On those: noResumeCoCPUs, the CPUs' sums start from none, not
// the coprocessor jobs' CPUs; resumeCoEmpty, it picks after p's last CPU job too.
var (
	noDropResume, resumeAnyBump, noResumeLoop, noResumePrio bool
	resumeAnyCPUs, resumeWhole, noKeptStop, noResumeSame    bool
	noResumeCoCPUs, resumeCoEmpty                           bool
	pickResumed, pickResumedCo                              *int
)
