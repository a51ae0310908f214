package cpusched

import (
	"math"
	"unsafe"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// candidate is a runnable task in the order the seed prefers it within a project.
type candidate struct {
	task     int
	deadline float64 // the task's report deadline (a copy: the sort reads it often)
	need     float64 // instances of the resource
	ncpus    float64 // CPUs a coprocessor task also takes
	rank     int     // 0 running, 1 preempted, 2 ready
	app      int     // index into the app-concurrency table, -1 if unlimited
}

// appLimits is the concurrency table of the apps with a max_concurrent, shared by all
// resources of a pass; a candidate's app indexes it. A document without such apps
// leaves it empty (and allocates nothing).
type appLimits struct {
	limit, running []int
	of             map[[2]string]int // (project, app) → index
}

func newAppLimits(doc *state.Document) appLimits {
	var a appLimits
	for _, app := range doc.Apps {
		if app.MaxConcurrent > 0 {
			if a.of == nil {
				a.of = map[[2]string]int{}
			}
			a.of[[2]string{app.Project, app.Name}] = len(a.limit)
			a.limit = append(a.limit, app.MaxConcurrent)
			a.running = append(a.running, 0)
		}
	}
	return a
}

// full reports whether app (an index, -1 for unlimited) runs as many tasks as it may.
func (a *appLimits) full(app int) bool {
	return app >= 0 && a.running[app] >= a.limit[app]
}

// group sorts the runnable tasks into candidates by resource and project
// (w.cands[r][p]), counts them (w.runnable[r][p]), and notes each one's app version
// (w.avOf) and the lists not in sortCandidates' order (w.mixed[r][p]: some candidate
// comes before the one ahead of it). Tasks that cannot run are left out.
func (w *Workspace) group(doc *state.Document, ix *names, apps *appLimits) {
	nP, nR := len(doc.Projects), len(doc.Host.Resources)
	w.avOf = scratch.Grow(w.avOf, len(doc.Tasks))
	if len(w.cands) < nR {
		w.cands = append(w.cands, make([][][]candidate, nR-len(w.cands))...)
		w.runnable = append(w.runnable, make([][]int, nR-len(w.runnable))...)
		w.rpProjects = append(w.rpProjects, make([][]ProjectDebt, nR-len(w.rpProjects))...)
		w.mixed = append(w.mixed, make([][]bool, nR-len(w.mixed))...)
	}
	for r := range nR {
		if len(w.cands[r]) < nP {
			w.cands[r] = append(w.cands[r], make([][]candidate, nP-len(w.cands[r]))...)
		}
		for p := range nP {
			w.cands[r][p] = w.cands[r][p][:0]
		}
		w.runnable[r] = scratch.Grow(w.runnable[r], nP)
		w.mixed[r] = scratch.Grow(w.mixed[r], nP)
	}
	// What the candidates of each app version share (their need, CPUs and app), and
	// the index of its project: a task's, when the task holds the very string of its
	// version's project (as the emulator's do), found without a look-up.
	w.avCand, w.avProject = scratch.Grow(w.avCand, len(doc.AppVersions)), scratch.Grow(w.avProject, len(doc.AppVersions))
	for v := range doc.AppVersions {
		av := &doc.AppVersions[v]
		c := candidate{need: av.Instances(), app: -1}
		if av.Coproc != nil {
			c.ncpus = av.AvgNCPUs
		}
		if apps.of != nil {
			if a, ok := apps.of[[2]string{av.Project, av.App}]; ok && av.App != "" {
				c.app = a
			}
		}
		w.avCand[v], w.avProject[v] = c, ix.project(av.Project)
	}
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		rank := 0
		switch t.State {
		case state.TaskRunning:
		case state.TaskPreempted:
			rank = 1
		case state.TaskReady:
			rank = 2
		default:
			continue // cannot run (not Runnable)
		}
		v := ix.appVersion(t.AppVersion)
		w.avOf[i] = int32(v)
		p := w.avProject[v]
		if av := &doc.AppVersions[v]; !sameStorage(t.Project, av.Project) {
			p = ix.project(t.Project)
		}
		c := w.avCand[v]
		c.task, c.deadline, c.rank = i, t.ReportDeadline, rank
		r := w.avRes[v]
		list := w.cands[r][p]
		// before(c, last), c coming later in the document than last (the keys' last).
		if n := len(list); n > 0 {
			last := &list[n-1]
			// (cmp.Compare(c.deadline, last.deadline) < 0, spelt out: NaN first.)
			a, b := c.deadline, last.deadline
			if c.rank < last.rank || c.rank == 2 && last.rank == 2 && (a < b || a != a && b == b) {
				w.mixed[r][p] = true // out of sortCandidates' order: choose sorts it
			}
		}
		w.cands[r][p] = append(list, c)
		w.runnable[r][p]++
	}
}

// leastNeed is the fewest instances of resource r a candidate takes at most: the least
// need of the app versions on r (after group), -Inf when one's is NaN (it may fit).
func (w *Workspace) leastNeed(r int) float64 {
	least := math.Inf(1)
	for v, c := range w.avCand {
		switch {
		case w.avRes[v] != r:
		case c.need < least:
			least = c.need
		case c.need != c.need:
			return math.Inf(-1)
		}
	}
	return least
}

// sameStorage reports whether a and b are one string stored in one place: then they
// are equal (the converse need not hold).
func sameStorage(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// resourceOrder appends to order the host's resources (indices) in the order a pass
// fills them: coprocessors first, then the CPU, each in host order, since a
// coprocessor task also takes CPUs.
func resourceOrder(resources []state.Resource, order []int) []int {
	for r := range resources {
		if resources[r].Type != state.ResourceCPU {
			order = append(order, r)
		}
	}
	for r := range resources {
		if resources[r].Type == state.ResourceCPU {
			order = append(order, r)
		}
	}
	return order
}
