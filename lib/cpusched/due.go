package cpusched

import (
	"math"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// Due reports whether a pass is due at now, and why: no pass has run yet, the scheduling
// period is over, a result arrived since the last pass, or a processor is free (seed
// 001's three occasions). A processor is free when a running task has finished its
// work (a completed_time; the emulator keeps such a task running until a pass has
// counted its last CPU time) or when an instance is free while a task waits for it.
func Due(doc *state.Document, now float64) (bool, string) {
	var w Workspace
	cause, i := w.due(doc, now)
	s := doc.CPUSched
	switch cause {
	case dueFirst:
		return true, "no pass has run yet"
	case duePeriod:
		return true, "next pass was due at " + num(s.NextPass) + " (" + s.NextPassReason + ")"
	case dueNewResult:
		return true, "new result " + doc.Tasks[i].Name
	case dueFinished:
		return true, "task " + doc.Tasks[i].Name + " finished"
	case dueFree:
		return true, "a " + doc.Host.Resources[i].Type + " instance is free"
	}
	return false, "next pass due at " + num(s.NextPass) + " (" + s.NextPassReason + ")"
}

// Due is Due's answer without its reason, with w's index and buffers.
func (w *Workspace) Due(doc *state.Document, now float64) bool {
	cause, _ := w.due(doc, now)
	return cause != dueNot
}

// dueCause is why a pass is due.
type dueCause int

const (
	dueNot       dueCause = iota
	dueFirst              // no pass has run yet
	duePeriod             // the next pass's time has come
	dueNewResult          // a result arrived since the last pass (the task's index)
	dueFree               // an instance is free while a task waits (the resource's index)
	dueFinished           // a running task has finished its work: its processor is free (the task's index)
)

// dueExhaustive, set by tests, makes due look at every waiting task (no settled
// resources).
var dueExhaustive bool

// due is Due's decision: its cause and the task or resource it names.
func (w *Workspace) due(doc *state.Document, now float64) (dueCause, int) {
	s := doc.CPUSched
	if s == nil {
		return dueFirst, -1
	}
	if now >= s.NextPass {
		return duePeriod, -1
	}
	// The first task that calls for a pass by itself, before any look-up (a pass is due
	// at most steps on which this is asked at all).
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.State == state.TaskReady && t.ReceivedTime > s.LastPass {
			return dueNewResult, i
		}
		// Whether or not its end was foreseen (its estimate may be off either way).
		if t.State == state.TaskRunning && t.CompletedTime > 0 {
			return dueFinished, i
		}
	}
	ix := w.index(doc)
	nR := len(doc.Host.Resources)
	used, small, waiting := scratch.Grow(w.used, nR), scratch.Grow(w.small, nR), scratch.Grow(w.waiting, nR)
	w.used, w.small, w.waiting = used, small, waiting
	// least[r]: the least need of an app version on r (-Inf when one's is NaN). Once a
	// resource's smallest waiting need is that (settled), no later task lowers it, and
	// once every resource with app versions is settled the waiting tasks need no look.
	least := scratch.Grow(w.least, nR)
	w.least = least
	for r := range least {
		least[r] = math.Inf(1)
	}
	for v := range doc.AppVersions {
		if r := w.avRes[v]; r >= 0 {
			if n := doc.AppVersions[v].Instances(); n < least[r] {
				least[r] = n
			} else if n != n {
				least[r] = math.Inf(-1)
			}
		}
	}
	open := 0 // resources with app versions not settled
	for r := range least {
		if least[r] < math.Inf(1) {
			open++
		}
	}
	var coprocCPUs float64
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		running := false
		switch t.State {
		case state.TaskRunning:
			running = true
		case state.TaskReady, state.TaskPreempted:
			if open == 0 && !dueExhaustive {
				continue // every resource settled: it would change nothing
			}
		default:
			continue // a done or reported task counts in neither sum
		}
		v := ix.appVersion(t.AppVersion)
		av := &doc.AppVersions[v]
		r := w.avRes[v]
		if running {
			used[r] += av.Instances()
			if av.Coproc != nil {
				coprocCPUs += av.AvgNCPUs
			}
		} else if n := av.Instances(); !waiting[r] || n < small[r] {
			small[r], waiting[r] = n, true
			if n == least[r] {
				open--
			}
		}
	}
	// The CPUs coprocessor tasks take are not free for CPU tasks (the pass gives them
	// first), and a task whose app is at max_concurrent waits for no free instance.
	for r := range doc.Host.Resources {
		if doc.Host.Resources[r].Type == state.ResourceCPU {
			used[r] += coprocCPUs
		}
	}
	if len(doc.Apps) > 0 {
		w.waitingBelowLimit(doc, ix, small, waiting)
	}
	for r := range doc.Host.Resources {
		free := float64(doc.Host.Resources[r].Instances) - used[r]
		if !waiting[r] {
			continue
		}
		if doc.Host.Resources[r].Type == state.ResourceCPU && state.CPUsFit(free, small[r], false) ||
			doc.Host.Resources[r].Type != state.ResourceCPU && small[r] <= free+fitSlack {
			return dueFree, r
		}
	}
	return dueNot, -1
}

// waitingBelowLimit finds again, for each resource, the smallest need of a waiting task
// (small, waiting), leaving out the tasks whose app already runs max_concurrent tasks.
// Only a document with apps can have such limits, so other documents never come here.
func (w *Workspace) waitingBelowLimit(doc *state.Document, ix *names, small []float64, waiting []bool) {
	apps := newAppLimits(doc)
	if len(apps.limit) == 0 {
		return
	}
	appOf := func(av *state.AppVersion) int {
		if a, ok := apps.of[[2]string{av.Project, av.App}]; ok && av.App != "" {
			return a
		}
		return -1
	}
	for i := range doc.Tasks {
		if t := &doc.Tasks[i]; t.State == state.TaskRunning {
			if a := appOf(&doc.AppVersions[ix.appVersion(t.AppVersion)]); a >= 0 {
				apps.running[a]++
			}
		}
	}
	clear(small)
	clear(waiting)
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.State != state.TaskReady && t.State != state.TaskPreempted {
			continue
		}
		v := ix.appVersion(t.AppVersion)
		av := &doc.AppVersions[v]
		if apps.full(appOf(av)) {
			continue
		}
		r := w.avRes[v]
		if n := av.Instances(); !waiting[r] || n < small[r] {
			small[r], waiting[r] = n, true
		}
	}
}
