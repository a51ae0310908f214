package boincpolicy

import (
	"math/rand/v2"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// The tests' cross-checks make a whole pass (or simulation, or work fetch) afresh
// hundreds of thousands of times: allocating a new workspace for each, its every
// buffer grown again, and collecting them was about half of the package's test CPU.
// The checks now make them in renewed workspaces (renew) and document copies whose
// memory is reused, and the collector runs less often.
func init() {
	// The tests' live heap is a few MB: a fifth of the collections, at most a few
	// tens of MB more.
	debug.SetGCPercent(400)
	checkSpace = func(overestimate float64) *Workspace {
		w := spaces.Get().(*Workspace)
		renew(w)
		w.Overestimate = overestimate
		return w
	}
	checkDone = func(w *Workspace) { spaces.Put(w) }
}

// spaces holds the checks' workspaces between uses (a check may run within another's
// whole computation, and the parallel tests each make their own).
var spaces = sync.Pool{New: func() any { return new(Workspace) }}

// renew makes w as a new workspace is, every field its zero value, but for the memory
// of the buffers below: each is kept at length 0 with every element cleared up to its
// capacity. Each of them the policy sets by growing it (scratch.Grow, growJobs, view's
// jobs and reasons, append to an emptied slice: the same elements, zeroed, whatever
// the capacity), reads no further than it grew or cleared, never tells from a nil
// slice, and shares with no other field; so a renewed workspace decides as a new one
// does (TestRenewedIsNew). A field left out is zeroed, as new: only its memory is not
// reused.
func renew(w *Workspace) {
	k := *w
	*w = Workspace{}
	w.jobs = kept(k.jobs)
	w.rec = kept(k.rec)
	w.recTemp = kept(k.recTemp)
	w.prio = kept(k.prio)
	w.shareFrac = kept(k.shareFrac)
	w.eligible = kept(k.eligible)
	w.nusedTotal = kept(k.nusedTotal)
	w.simNused = kept(k.simNused)
	w.fetchShare = kept(k.fetchShare)
	w.missed = kept(k.missed)
	w.missedCopy = kept(k.missedCopy)
	w.nRunnable = kept(k.nRunnable)
	w.pendingAt = kept(k.pendingAt)
	w.gCPUs = kept(k.gCPUs)
	w.gBump = kept(k.gBump)
	w.gPrio = kept(k.gPrio)
	w.gShare = kept(k.gShare)
	w.gServed = kept(k.gServed)
	w.gPrev = kept(k.gPrev)
	w.gSums = kept(k.gSums)
	w.listFree = kept(k.listFree)
	w.listRel = kept(k.listRel)
	w.listNow = kept(k.listNow)
	w.satFree = kept(k.satFree)
	w.top = kept(k.top)
	w.cum = kept(k.cum)
	w.ownEnd = kept(k.ownEnd)
	w.low = kept(k.low)
	w.lowK = kept(k.lowK)
	w.lowRunP = kept(k.lowRunP)
	w.coWhole = kept(k.coWhole)
	w.coSums = kept(k.coSums)
	w.coOthers = kept(k.coOthers)
	w.coUp = kept(k.coUp)
	w.coLow = kept(k.coLow)
	w.coEx = kept(k.coEx)
	w.coAhead = kept(k.coAhead)
	w.coPrio = kept(k.coPrio)
	w.coOnce = kept(k.coOnce)
	w.coServed = kept(k.coServed)
	w.reason = kept(k.reason)
	w.projReason = kept(k.projReason)
	w.Sim = kept(k.Sim)
	w.copyTasks = kept(k.copyTasks)
	w.copyProjects = kept(k.copyProjects)
}

// kept is s emptied, its memory cleared up to its capacity (renew).
func kept[T any](s []T) []T {
	s = s[:cap(s)]
	clear(s)
	return s[:0]
}

// wholeSpace is a whole pass's workspace and its copy of the document, kept from pass
// to pass for their memory only (renew): the randomized tests' wholePass.
type wholeSpace struct {
	w        Workspace
	doc      state.Document
	tasks    []state.Task
	projects []state.Project
}

// pass is a pass made from scratch on a copy of doc at now (no hold, no earlier
// pass's state: the CPU schedule left out), for the randomized tests that check a held
// pass against the whole one. The workspace it returns is good until the next pass.
func (s *wholeSpace) pass(doc *state.Document, now float64) *Workspace {
	s.tasks = append(s.tasks[:0], doc.Tasks...)
	s.projects = append(s.projects[:0], doc.Projects...)
	s.doc = *doc
	s.doc.Tasks, s.doc.Projects = s.tasks, s.projects
	s.doc.CPUSched = nil
	renew(&s.w)
	s.w.Schedule(&s.doc, now)
	return &s.w
}

// TestRenewedIsNew: on random queues, CPU-only and with GPUs, a renewed workspace
// that served other queues before (a whole pass, a work fetch, a simulation) makes the
// same pass, work fetch and simulation as a new one: its run list, miss counts, jobs
// and simulation's results. It fails with the workspace's state kept (renew's buffers
// only, not the rest, left as they were). (The kept buffers left uncleared, even at
// their last length, pass: the policy grows each before reading it.)
func TestRenewedIsNew(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 31))
	var used wholeSpace
	for trial := range 400 {
		var doc *state.Document
		if trial%2 == 0 {
			doc = randomQueue(rng)
			stirQueue(rng, doc, t0)
		} else {
			doc = randomGPUQueue(rng)
		}
		now := t0 + 60*float64(rng.IntN(30))
		var fresh wholeSpace
		a, b := used.pass(doc, now), fresh.pass(doc, now)
		if !same(a.list, b.list) || a.Changed() != b.Changed() || !slices.Equal(a.passMissed, b.passMissed) ||
			!slices.Equal(a.missed, b.missed) || !same(a.jobs, b.jobs) || !same(a.Sim, b.Sim) {
			t.Fatalf("trial %d: the renewed workspace's pass differs from a new one's", trial)
		}
		renew(a)
		b = &Workspace{}
		ca, cb := a.ChooseProject(a.checkCopy(doc), now), b.ChooseProject(b.checkCopy(doc), now)
		if !reflect.DeepEqual(ca, cb) || !same(a.Sim, b.Sim) || !same(a.jobs, b.jobs) {
			t.Fatalf("trial %d: the renewed workspace's work fetch differs from a new one's", trial)
		}
		renew(a)
		b = &Workspace{}
		a.Simulate(a.checkCopy(doc), now+600)
		b.Simulate(b.checkCopy(doc), now+600)
		if !slices.Equal(a.missed, b.missed) || !same(a.jobs, b.jobs) || !same(a.Sim, b.Sim) {
			t.Fatalf("trial %d: the renewed workspace's simulation differs from a new one's", trial)
		}
	}
}

// same compares two slices' elements (an empty slice and a nil one alike).
func same[T any](a, b []T) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}

// renewed is w renewed (renew), for a test's loop that wants a new workspace at each
// trial.
func renewed(w *Workspace) *Workspace {
	renew(w)
	return w
}
