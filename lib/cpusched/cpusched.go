// Package cpusched owns seed 001's CPU scheduling policy: one scheduling pass decides which
// tasks run on the host's processors, from the projects' debts. It is a pure function of
// the state document and the time of the pass; bsched and the emulator both call it.
//
// A pass, per processing resource (coprocessor types first, then the CPU):
//
//  1. work done: each running task's CPU time since the last pass (instance-seconds of
//     elapsed time for a coprocessor);
//  2. debts: a project without a runnable task on the resource gets debt 0 and no part
//     in the share sum; the others lose the work they got and gain their share of the
//     total;
//  3. anticipated debt starts at the debt; while an instance is free, the project with the
//     largest anticipated debt and a task that fits gets, in this order, its running task,
//     a preempted task, or its ready result with the earliest deadline, and its
//     anticipated debt falls by the expected pay-off (total work ÷ instances, times the
//     instances the task takes);
//  4. tasks chosen run (started or resumed), running tasks not chosen are preempted, and
//     every task's CPU time at the last pass is brought up to date.
//
// docs/decisions.md records how fractional CPUs and coprocessors extend the seed.
package cpusched

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bkit/bkit/lib/state"
)

// fitSlack absorbs rounding when fractional usages are summed.
const fitSlack = 1e-9

// Pass is the record of one scheduling pass: enough to explain every decision.
type Pass struct {
	Now            float64
	Resources      []ResourcePass
	Tasks          []TaskDecision
	NextPass       float64
	NextPassReason string
}

// ResourcePass is what happened on one processing resource.
type ResourcePass struct {
	Type           string
	Instances      float64 // instances the pass could fill (the CPU's excludes CPUs taken by coprocessor tasks)
	Used           float64 // instances given to tasks
	TotalWorkDone  float64 // instance-seconds done by running tasks since the last pass
	ExpectedPayOff float64 // per instance
	Projects       []ProjectDebt
}

// ProjectDebt is one project's debt on one resource before and after the pass.
type ProjectDebt struct {
	Project        string
	Runnable       int     // runnable tasks on the resource
	ShareFraction  float64 // of the projects with runnable tasks
	WorkDone       float64
	DebtBefore     float64
	DebtAfter      float64
	AnticipatedEnd float64 // anticipated debt when the pass ended
}

// TaskDecision is the fate of one runnable task. Its reason is kept as data and put
// into words only when asked (Reason), since most of 10,000 tasks are never shown.
type TaskDecision struct {
	Task        int // index in Document.Tasks
	Name        string
	Project     string
	Resource    string
	Before      state.TaskState
	After       state.TaskState
	Why         Why
	Anticipated float64 // the project's anticipated debt when chosen, or at the end of the pass
	Need        float64 // instances of Resource the task takes
	NeedCPUs    float64 // CPUs a coprocessor task takes beside
	Free        float64 // instances of Resource left free at the end of the pass
	Deadline    float64
}

// Why a task was given a processor or left waiting.
type Why int

// The reasons of a TaskDecision.
const (
	WhyKeepsRunning Why = iota // chosen: running task of the project with the largest anticipated debt
	WhyResumed                 // chosen: preempted task resumed
	WhyStarted                 // chosen: earliest-deadline ready result started
	WhyNoRoom                  // waits: not enough free instances
	WhyNoCPUs                  // waits: a coprocessor task whose CPUs are not free
	WhyAppLimit                // waits: its app is at max_concurrent
	WhyOtherTasks              // waits: its project's other tasks came first, or its debt was too low
)

// Reason puts the decision into words.
func (d *TaskDecision) Reason() string {
	switch d.Why {
	case WhyKeepsRunning:
		return fmt.Sprintf("largest anticipated debt %s: keeps running", num(d.Anticipated))
	case WhyResumed:
		return fmt.Sprintf("largest anticipated debt %s: resumes its preempted task", num(d.Anticipated))
	case WhyStarted:
		return fmt.Sprintf("largest anticipated debt %s: starts its earliest-deadline result (deadline %s)", num(d.Anticipated), num(d.Deadline))
	case WhyNoRoom:
		return fmt.Sprintf("needs %s %s, %s free; project's anticipated debt %s", num(d.Need), unit(d.Resource), num(math.Max(d.Free, 0)), num(d.Anticipated))
	case WhyNoCPUs:
		return fmt.Sprintf("needs %s CPUs beside the %s, not free", num(d.NeedCPUs), d.Resource)
	case WhyAppLimit:
		return "its app is at max_concurrent"
	}
	return fmt.Sprintf("project's anticipated debt %s; its other tasks come first (running, preempted, earliest deadline)", num(d.Anticipated))
}

// candidate is a runnable task in the order the seed prefers it within a project.
type candidate struct {
	task  int
	need  float64 // instances of the resource
	ncpus float64 // CPUs a coprocessor task also takes
	rank  int     // 0 running, 1 preempted, 2 ready
	app   int     // index into the app-concurrency table, -1 if unlimited
}

// Schedule runs one pass at time now, changing the task states, debts and CPU times at
// the last pass in doc, and returns its record. doc must be valid (state.Validate).
func Schedule(doc *state.Document, now float64) *Pass {
	var w Workspace
	return w.Schedule(doc, now)
}

// Workspace keeps what passes need from one call to the next: the document's name
// index and the buffers of a pass. It is for a caller that runs many passes and asks
// Due again and again on one document (the emulator does about 1,500 times a simulated
// day). The zero value is ready. Its passes and answers are Schedule's and Due's, to
// the last bit; the Pass it returns is valid until its next Schedule.
type Workspace struct {
	// Quiet leaves out of the Pass what only explains it (Tasks, and Projects of each
	// resource): the decisions and the document are the same.
	Quiet bool

	names names
	avRes []int // host resource index of each app version

	avOf        []int32
	chosen      []bool
	why         []TaskDecision
	cands       [][][]candidate // [resource][project]
	runnable    [][]int         // [resource][project]
	rpProjects  [][]ProjectDebt // [resource]
	order       []int
	done, antic []float64
	next        []int
	used, small []float64 // Due: per resource
	waiting     []bool
	pass        Pass
}

// names is the document's name index, built again only when the names changed.
type names struct {
	projects, appVersions []string
	ix                    *state.Index
}

// linearMax is the count of names up to which a look-up compares names one by one:
// the emulator's documents name their app versions with the very strings the tasks
// hold, so each comparison is a pointer check, faster than hashing.
const linearMax = 8

func (n *names) project(name string) int {
	if len(n.projects) <= linearMax {
		return slices.Index(n.projects, name)
	}
	return n.ix.Project[name]
}

func (n *names) appVersion(name string) int {
	if len(n.appVersions) <= linearMax {
		return slices.Index(n.appVersions, name)
	}
	return n.ix.AppVersion[name]
}

// index brings w's name index up to date with doc.
func (w *Workspace) index(doc *state.Document) *names {
	n := &w.names
	same := n.ix != nil && len(n.projects) == len(doc.Projects) && len(n.appVersions) == len(doc.AppVersions)
	for i := 0; same && i < len(doc.Projects); i++ {
		same = n.projects[i] == doc.Projects[i].Name
	}
	for i := 0; same && i < len(doc.AppVersions); i++ {
		same = n.appVersions[i] == doc.AppVersions[i].Name
	}
	if !same {
		n.ix = state.NewIndex(doc)
		n.projects, n.appVersions = n.projects[:0], n.appVersions[:0]
		for i := range doc.Projects {
			n.projects = append(n.projects, doc.Projects[i].Name)
		}
		for i := range doc.AppVersions {
			n.appVersions = append(n.appVersions, doc.AppVersions[i].Name)
		}
	}
	w.fillAVRes(doc)
	return n
}

// fillAVRes finds each app version's host resource (-1: the host has none).
func (w *Workspace) fillAVRes(doc *state.Document) {
	w.avRes = grow(w.avRes, len(doc.AppVersions))
	for v := range doc.AppVersions {
		w.avRes[v] = -1
		t := doc.AppVersions[v].ResourceType()
		for r := range doc.Host.Resources {
			if doc.Host.Resources[r].Type == t {
				w.avRes[v] = r
				break
			}
		}
	}
}

// grow returns b with length n, every element zero, reusing its storage.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// Schedule is Schedule with w's index and buffers: the package comment's four steps on
// each processing resource, coprocessors first, then the record of the pass.
func (w *Workspace) Schedule(doc *state.Document, now float64) *Pass {
	ix := w.index(doc)
	nP := len(doc.Projects)
	w.pass = Pass{Now: now, Resources: w.pass.Resources[:0]}
	apps := newAppLimits(doc)
	w.group(doc, ix, &apps)
	w.chosen = grow(w.chosen, len(doc.Tasks))
	var why []TaskDecision // compacted into the pass's Tasks by carryOut
	if !w.Quiet {
		why = grow(w.why, len(doc.Tasks))
		if why == nil {
			why = []TaskDecision{} // a pass over no task still has its (empty) list
		}
		w.why = why
	}
	cpuFree := float64(doc.Host.CPU().Instances)
	w.order = resourceOrder(doc.Host.Resources, w.order[:0])
	for _, ri := range w.order {
		r := &doc.Host.Resources[ri]
		byProject := w.cands[ri][:nP]
		rp := ResourcePass{Type: r.Type, Instances: float64(r.Instances), Projects: w.rpProjects[ri][:0]}
		if r.Type == state.ResourceCPU {
			rp.Instances = cpuFree
		}
		w.done, w.antic = grow(w.done, nP), grow(w.antic, nP)
		rp.TotalWorkDone = workDone(doc.Tasks, byProject, r.Type, w.done)
		settleDebts(doc, &rp, w.runnable[ri], w.done, w.antic, !w.Quiet)
		rp.ExpectedPayOff = expectedPayOff(rp.TotalWorkDone, r.Instances, doc.Preferences.CPUSchedulingPeriod)
		cpuFree = w.choose(doc.Tasks, byProject, w.antic, &rp, cpuFree, &apps, why)
		if why != nil {
			explain(ix, byProject, w.antic, &rp, cpuFree, &apps, w.chosen, why)
		}
		w.rpProjects[ri] = rp.Projects
		w.pass.Resources = append(w.pass.Resources, rp)
	}
	w.pass.Tasks = carryOut(doc, w.chosen, w.avOf, why)
	record(doc, &w.pass, w.avOf)
	return &w.pass
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
// (w.avOf). Tasks that cannot run are left out.
func (w *Workspace) group(doc *state.Document, ix *names, apps *appLimits) {
	nP, nR := len(doc.Projects), len(doc.Host.Resources)
	w.avOf = grow(w.avOf, len(doc.Tasks))
	if len(w.cands) < nR {
		w.cands = append(w.cands, make([][][]candidate, nR-len(w.cands))...)
		w.runnable = append(w.runnable, make([][]int, nR-len(w.runnable))...)
		w.rpProjects = append(w.rpProjects, make([][]ProjectDebt, nR-len(w.rpProjects))...)
	}
	for r := range nR {
		if len(w.cands[r]) < nP {
			w.cands[r] = append(w.cands[r], make([][]candidate, nP-len(w.cands[r]))...)
		}
		for p := range nP {
			w.cands[r][p] = w.cands[r][p][:0]
		}
		w.runnable[r] = grow(w.runnable[r], nP)
	}
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !t.State.Runnable() {
			continue
		}
		v := ix.appVersion(t.AppVersion)
		w.avOf[i] = int32(v)
		av := &doc.AppVersions[v]
		p := ix.project(t.Project)
		c := candidate{task: i, need: av.Instances(), app: -1}
		if av.Coproc != nil {
			c.ncpus = av.AvgNCPUs
		}
		switch t.State {
		case state.TaskPreempted:
			c.rank = 1
		case state.TaskReady:
			c.rank = 2
		}
		if a, ok := apps.of[[2]string{av.Project, av.App}]; ok && av.App != "" {
			c.app = a
		}
		r := w.avRes[v]
		w.cands[r][p] = append(w.cands[r][p], c)
		w.runnable[r][p]++
	}
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

// workDone is step 1 on one resource: the work each project's running tasks did since
// the last pass (done[p], added to) and their total, in CPU seconds for the CPU and
// instance-seconds of elapsed time for a coprocessor.
func workDone(tasks []state.Task, byProject [][]candidate, resource string, done []float64) float64 {
	var total float64
	for p, cands := range byProject {
		for _, c := range cands {
			t := &tasks[c.task]
			if t.State != state.TaskRunning {
				continue
			}
			var x float64
			if resource == state.ResourceCPU {
				x = t.CPUTime - t.CPUTimeAtLastSched
			} else {
				x = (t.ElapsedTime - t.ElapsedTimeAtLastSched) * c.need
			}
			done[p] += x
			total += x
		}
	}
	return total
}

// settleDebts is step 2 on resource rp.Type: a project without a runnable task there
// (runnable[p] == 0) gets debt 0 and no part in the share sum; the others lose the work
// they got (done[p]) and gain their share of rp.TotalWorkDone. Each project's new debt
// is also written to debts[p]. With explain, the projects with work or a debt before are
// added to rp.Projects.
func settleDebts(doc *state.Document, rp *ResourcePass, runnable []int, done, debts []float64, explain bool) {
	var shareTotal float64
	nWithWork := 0
	for p := range doc.Projects {
		if runnable[p] > 0 {
			shareTotal += doc.Projects[p].ResourceShare
			nWithWork++
		}
	}
	for p := range doc.Projects {
		debt := debtOf(&doc.Projects[p], rp.Type)
		pd := ProjectDebt{Project: doc.Projects[p].Name, Runnable: runnable[p], WorkDone: done[p], DebtBefore: *debt}
		if runnable[p] == 0 {
			*debt = 0
		} else {
			pd.ShareFraction = shareFraction(doc.Projects[p].ResourceShare, shareTotal, nWithWork)
			*debt += pd.ShareFraction*rp.TotalWorkDone - done[p]
		}
		pd.DebtAfter = *debt
		debts[p] = *debt
		if (runnable[p] > 0 || pd.DebtBefore != 0) && explain {
			rp.Projects = append(rp.Projects, pd)
		}
	}
}

// expectedPayOff is what a task chosen in step 3 is expected to be worth per instance:
// the work done since the last pass spread over the resource's instances, or the
// scheduling period when no work was done (the first pass).
func expectedPayOff(totalWorkDone float64, instances int, period float64) float64 {
	if totalWorkDone > 0 && instances > 0 {
		return totalWorkDone / float64(instances)
	}
	return period
}

// choose is step 3 on one resource: anticipated[p] starts at project p's debt; while
// an instance of rp's capacity (rp.Instances) is free, the project with the largest
// anticipated debt and a candidate that fits gets its first such candidate (running,
// then preempted, then ready by earliest deadline), marked in w.chosen, and its
// anticipated debt falls by the expected pay-off times the instances the task takes.
// It adds the instances given to rp.Used, the tasks to the apps' running counts, and
// with why != nil the reason of each chosen task; it returns the CPUs left free.
func (w *Workspace) choose(tasks []state.Task, byProject [][]candidate, anticipated []float64, rp *ResourcePass, cpuFree float64, apps *appLimits, why []TaskDecision) float64 {
	sortCandidates(tasks, byProject)
	chosen, capacity := w.chosen, rp.Instances
	next := grow(w.next, len(byProject)) // first candidate not yet taken
	w.next = next
	for {
		best, bestTask := -1, -1
		for p := range byProject {
			if best >= 0 && anticipated[p] <= anticipated[best] {
				continue
			}
			if k := firstFit(byProject[p], next[p], chosen, capacity-rp.Used, cpuFree, apps, rp.Type); k >= 0 {
				best, bestTask = p, k
			}
		}
		if best < 0 {
			break
		}
		c := byProject[best][bestTask]
		chosen[c.task] = true
		if why != nil {
			why[c.task] = TaskDecision{Why: Why(c.rank), Anticipated: anticipated[best]}
		}
		rp.Used += c.need
		if rp.Type == state.ResourceCPU {
			cpuFree -= c.need
		} else {
			cpuFree -= c.ncpus
		}
		if c.app >= 0 {
			apps.running[c.app]++
		}
		anticipated[best] -= rp.ExpectedPayOff * c.need
		for next[best] < len(byProject[best]) && chosen[byProject[best][next[best]].task] {
			next[best]++
		}
	}
	return cpuFree
}

// sortCandidates puts each project's candidates in the order the seed prefers them:
// running, preempted, then ready by earliest deadline; document order breaks ties.
func sortCandidates(tasks []state.Task, byProject [][]candidate) {
	byDeadline := func(a, b candidate) int {
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		if a.rank == 2 {
			if c := cmp.Compare(tasks[a.task].ReportDeadline, tasks[b.task].ReportDeadline); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.task, b.task)
	}
	for p := range byProject {
		slices.SortFunc(byProject[p], byDeadline)
	}
}

// explain completes the record of one resource after step 3: each project's
// anticipated debt at the end, and why each candidate not chosen waits.
func explain(ix *names, byProject [][]candidate, anticipated []float64, rp *ResourcePass, cpuFree float64, apps *appLimits, chosen []bool, why []TaskDecision) {
	for i := range rp.Projects {
		rp.Projects[i].AnticipatedEnd = anticipated[ix.project(rp.Projects[i].Project)]
	}
	for p, cands := range byProject {
		for _, c := range cands {
			if chosen[c.task] {
				continue
			}
			why[c.task] = waiting(c, anticipated[p], rp.Instances-rp.Used, cpuFree, rp.Type, apps)
		}
	}
}

// carryOut is step 4: the chosen tasks run (started or resumed), running tasks not
// chosen are preempted, and every runnable task's CPU and elapsed time at the last pass
// are brought up to date. With why != nil it returns the decisions, one per runnable
// task in document order, compacted into why's storage.
func carryOut(doc *state.Document, chosen []bool, avOf []int32, why []TaskDecision) []TaskDecision {
	var tasks []TaskDecision
	if why != nil {
		tasks = why[:0]
	}
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !t.State.Runnable() {
			continue
		}
		before := t.State
		switch {
		case chosen[i]:
			t.State = state.TaskRunning
		case t.State == state.TaskRunning:
			t.State = state.TaskPreempted
		}
		t.CPUTimeAtLastSched = t.CPUTime
		t.ElapsedTimeAtLastSched = t.ElapsedTime
		if why == nil {
			continue
		}
		av := &doc.AppVersions[avOf[i]]
		d := why[i]
		d.Task, d.Name, d.Project, d.Resource = i, t.Name, t.Project, av.ResourceType()
		d.Before, d.After, d.Deadline = before, t.State, t.ReportDeadline
		d.Need = av.Instances()
		if av.Coproc != nil {
			d.NeedCPUs = av.AvgNCPUs
		}
		tasks = append(tasks, d)
	}
	return tasks
}

// record sets when the next pass is due (nextPass) in pass and records the pass in the
// document's cpu_sched.
func record(doc *state.Document, pass *Pass, avOf []int32) {
	prev := ""
	if doc.CPUSched != nil {
		prev = doc.CPUSched.NextPassReason
	}
	pass.NextPass, pass.NextPassReason = nextPass(doc, avOf, pass.Now, prev)
	// In place when there is one: the emulator passes every few steps, and a new record
	// each time was most of a quiet step's allocations.
	if doc.CPUSched == nil {
		doc.CPUSched = new(state.CPUSched)
	}
	*doc.CPUSched = state.CPUSched{LastPass: pass.Now, NextPass: pass.NextPass, NextPassReason: pass.NextPassReason}
}

// debtOf is the scheduling debt of a project on a resource: the seed's debt for the CPU,
// the resource entry's scheduling debt for a coprocessor.
func debtOf(p *state.Project, resource string) *float64 {
	if resource == state.ResourceCPU {
		return &p.Debt
	}
	return &p.ResourceState(resource).SchedDebt
}

// shareFraction is a project's part of the work: its share of the shares of projects with
// work, or an equal part when all of those shares are 0 (the seed would divide by 0).
func shareFraction(share, total float64, n int) float64 {
	if total > 0 {
		return share / total
	}
	return 1 / float64(n)
}

// firstFit returns the index of the first candidate from k on that is not yet chosen and
// fits in the free instances (and free CPUs, for a coprocessor task), or -1.
func firstFit(cands []candidate, k int, chosen []bool, free, cpuFree float64, apps *appLimits, resource string) int {
	for ; k < len(cands); k++ {
		c := cands[k]
		if chosen[c.task] || c.need > free+fitSlack {
			continue
		}
		if resource != state.ResourceCPU && c.ncpus > cpuFree+fitSlack {
			continue
		}
		if apps.full(c.app) {
			continue
		}
		return k
	}
	return -1
}

// waiting says why an unchosen candidate waits.
func waiting(c candidate, anticipated, free, cpuFree float64, resource string, apps *appLimits) TaskDecision {
	d := TaskDecision{Why: WhyOtherTasks, Anticipated: anticipated, Free: free}
	switch {
	case c.need > free+fitSlack:
		d.Why = WhyNoRoom
	case resource != state.ResourceCPU && c.ncpus > cpuFree+fitSlack:
		d.Why = WhyNoCPUs
	case apps.full(c.app):
		d.Why = WhyAppLimit
	}
	return d
}

func unit(resource string) string {
	if resource == state.ResourceCPU {
		return "CPUs"
	}
	return resource + " instances"
}

// nextPass is when the next pass is due at the latest: one scheduling period from now, or
// earlier when a running task is expected to finish and free its processor. (A new
// result is the caller's event: it should run a pass when one arrives.) prev is the
// last pass's reason, given back when it is the same words (no new string to make).
func nextPass(doc *state.Document, avOf []int32, now float64, prev string) (float64, string) {
	at, first := now+doc.Preferences.CPUSchedulingPeriod, -1
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.State != state.TaskRunning || t.EstimatedFlops <= 0 {
			continue
		}
		speed := doc.AppVersions[avOf[i]].Speed(&doc.Host) // a running task is runnable: avOf knows it
		if speed <= 0 {
			continue
		}
		if end := now + t.RemainingFlops()/speed; end < at {
			at, first = end, i
		}
	}
	if first < 0 {
		return at, "scheduling period"
	}
	const pre, post = "task ", " expected to finish"
	name := doc.Tasks[first].Name
	if len(prev) == len(pre)+len(name)+len(post) && strings.HasPrefix(prev, pre) && strings.HasSuffix(prev, post) && prev[len(pre):len(pre)+len(name)] == name {
		return at, prev
	}
	return at, pre + name + post
}

// Due reports whether a pass is due at now, and why: no pass has run yet, the scheduling
// period is over, a result arrived since the last pass, or an instance is free while a
// task waits for it.
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
)

// due is Due's decision: its cause and the task or resource it names.
func (w *Workspace) due(doc *state.Document, now float64) (dueCause, int) {
	s := doc.CPUSched
	if s == nil {
		return dueFirst, -1
	}
	if now >= s.NextPass {
		return duePeriod, -1
	}
	ix := w.index(doc)
	nR := len(doc.Host.Resources)
	used, small, waiting := grow(w.used, nR), grow(w.small, nR), grow(w.waiting, nR)
	w.used, w.small, w.waiting = used, small, waiting
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.State == state.TaskReady && t.ReceivedTime > s.LastPass {
			return dueNewResult, i
		}
		v := ix.appVersion(t.AppVersion)
		av := &doc.AppVersions[v]
		r := w.avRes[v]
		switch t.State {
		case state.TaskRunning:
			used[r] += av.Instances()
		case state.TaskReady, state.TaskPreempted:
			if n := av.Instances(); !waiting[r] || n < small[r] {
				small[r], waiting[r] = n, true
			}
		}
	}
	for r := range doc.Host.Resources {
		if waiting[r] && small[r] <= float64(doc.Host.Resources[r].Instances)-used[r]+fitSlack {
			return dueFree, r
		}
	}
	return dueNot, -1
}

func num(x float64) string { return fmt.Sprintf("%.6g", x) }
