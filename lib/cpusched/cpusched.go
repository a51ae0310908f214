// Package cpusched owns seed 001's CPU scheduling policy: one scheduling pass decides which
// tasks run on the host's processors, from the projects' debts. It is a pure function of
// the state document and the time of the pass; bsched and the emulator both call it.
//
// A pass, per processing resource (coprocessor types first, then the CPU):
//
//  1. work done: each running task's CPU time since the last pass (instance-seconds of
//     elapsed time for a coprocessor);
//  2. debts: on the CPU, seed 001's debt: a project without a runnable task gets debt 0
//     and no part in the share sum; the others lose the work they got and gain their
//     share of the total. On a coprocessor, seed 002's long-term debt of the project on
//     that resource, as bdevices' debt stage keeps it, read and not changed (DESIGN §5);
//  3. anticipated debt starts at the debt; while an instance is free, the project with the
//     largest anticipated debt and a task that fits gets, in this order, its running task,
//     a preempted task, or its ready result with the earliest deadline, and its
//     anticipated debt falls by the expected pay-off (total work ÷ instances, times the
//     instances the task takes); a task fits on the CPUs by BOINC's rule (state.CPUsFit:
//     while a CPU is uncommitted, and a coprocessor task up to one CPU over);
//  4. tasks chosen run (started or resumed), running tasks not chosen are preempted, and
//     every task's CPU time at the last pass is brought up to date.
//
// docs/decisions.md records how fractional CPUs and coprocessors extend the seed.
package cpusched

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/bkit/bkit/lib/scratch"
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
		return fmt.Sprintf("largest anticipated debt %s: starts its earliest-deadline result (deadline %s)", num(d.Anticipated), strconv.FormatFloat(d.Deadline, 'f', -1, 64))
	case WhyNoRoom:
		return fmt.Sprintf("needs %s %s, %s free; project's anticipated debt %s", num(d.Need), unit(d.Resource), num(math.Max(d.Free, 0)), num(d.Anticipated))
	case WhyNoCPUs:
		return fmt.Sprintf("needs %s CPUs beside the %s, not free", num(d.NeedCPUs), d.Resource)
	case WhyAppLimit:
		return "its app is at max_concurrent"
	}
	return fmt.Sprintf("project's anticipated debt %s; its other tasks come first (running, preempted, earliest deadline)", num(d.Anticipated))
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
	// resource), and out of the document the words of cpu_sched.next_pass_reason
	// (empty): the decisions and every other field are the same. (A pass set off by a
	// task expected to finish named it in a new string, one per task of a long run.)
	Quiet bool

	names names
	avRes []int // host resource index of each app version

	avOf        []int32
	avCand      []candidate // per app version: what its candidates share (group)
	avProject   []int       // per app version: its project's index (group)
	chosen      []bool
	why         []TaskDecision
	cands       [][][]candidate // [resource][project]
	runnable    [][]int         // [resource][project]
	mixed       [][]bool        // [resource][project]: candidates out of order (group)
	rpProjects  [][]ProjectDebt // [resource]
	order       []int
	done, antic []float64
	next        []int
	used, small []float64 // Due: per resource
	least       []float64 // Due: per resource
	waiting     []bool
	pass        Pass
}

// names is the document's name index, built again only when the names changed.
type names struct {
	projects, appVersions []string
	ix                    *state.Index
	// distinctAV: no two app versions' names alike. A name stored where one of them
	// is stored is then that one, the first and only one alike.
	distinctAV bool
}

// linearMax is the count of names up to which a look-up compares names one by one:
// the emulator's documents name their app versions with the very strings the tasks
// hold, so each comparison is a pointer check, faster than hashing.
const linearMax = 8

func (n *names) project(name string) int {
	if len(n.projects) <= linearMax {
		return state.IndexName(n.projects, name)
	}
	return n.ix.Project[name]
}

func (n *names) appVersion(name string) int {
	if len(n.appVersions) <= linearMax {
		if n.distinctAV {
			// The pointers first: names of the same length would otherwise be
			// compared by their bytes on the way to the task's.
			for i, s := range n.appVersions {
				if sameStorage(s, name) {
					return i
				}
			}
		}
		return state.IndexName(n.appVersions, name)
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
		n.distinctAV = true
		for i, a := range n.appVersions {
			if slices.Contains(n.appVersions[i+1:], a) {
				n.distinctAV = false
			}
		}
	}
	w.fillAVRes(doc)
	return n
}

// fillAVRes finds each app version's host resource (-1: the host has none).
func (w *Workspace) fillAVRes(doc *state.Document) {
	w.avRes = scratch.Grow(w.avRes, len(doc.AppVersions))
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

// Schedule is Schedule with w's index and buffers: the package comment's four steps on
// each processing resource, coprocessors first, then the record of the pass.
func (w *Workspace) Schedule(doc *state.Document, now float64) *Pass {
	ix := w.index(doc)
	nP := len(doc.Projects)
	w.pass = Pass{Now: now, Resources: w.pass.Resources[:0]}
	apps := newAppLimits(doc)
	w.group(doc, ix, &apps)
	w.chosen = scratch.Grow(w.chosen, len(doc.Tasks))
	var why []TaskDecision // compacted into the pass's Tasks by carryOut
	if !w.Quiet {
		why = scratch.Grow(w.why, len(doc.Tasks))
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
		w.done, w.antic = scratch.Grow(w.done, nP), scratch.Grow(w.antic, nP)
		rp.TotalWorkDone = workDone(doc.Tasks, byProject, w.mixed[ri][:nP], r.Type, w.done)
		settleDebts(doc, &rp, w.runnable[ri], w.done, w.antic, w.Quiet)
		rp.ExpectedPayOff = expectedPayOff(rp.TotalWorkDone, r.Instances, doc.Preferences.CPUSchedulingPeriod)
		cpuFree = w.choose(byProject, w.mixed[ri][:nP], w.leastNeed(ri), w.antic, &rp, cpuFree, &apps, why)
		if why != nil {
			explain(ix, byProject, w.antic, &rp, cpuFree, &apps, w.chosen, why)
		}
		w.rpProjects[ri] = rp.Projects
		w.pass.Resources = append(w.pass.Resources, rp)
	}
	w.pass.Tasks = carryOut(doc, w.chosen, w.avOf, why)
	record(doc, &w.pass, w.avOf, w.Quiet)
	return &w.pass
}

func unit(resource string) string {
	if resource == state.ResourceCPU {
		return "CPUs"
	}
	return resource + " instances"
}

func num(x float64) string { return fmt.Sprintf("%.6g", x) }
