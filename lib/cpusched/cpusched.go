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
	ix := state.NewIndex(doc)
	mv := doc.Preferences.CPUSchedulingPeriod
	cpu := doc.Host.CPU()
	pass := &Pass{Now: now}

	// Concurrency limits of apps, shared by all resources of a pass.
	appLimit := []int{}
	appRunning := []int{}
	appOf := map[[2]string]int{}
	for _, a := range doc.Apps {
		if a.MaxConcurrent > 0 {
			appOf[[2]string{a.Project, a.Name}] = len(appLimit)
			appLimit = append(appLimit, a.MaxConcurrent)
			appRunning = append(appRunning, 0)
		}
	}

	// Group runnable tasks by resource and project.
	type group struct {
		byProject [][]candidate
		runnable  []int
	}
	avOf := make([]int32, len(doc.Tasks)) // app version index of each runnable task
	groups := map[string]*group{}
	for _, r := range doc.Host.Resources {
		groups[r.Type] = &group{byProject: make([][]candidate, len(doc.Projects)), runnable: make([]int, len(doc.Projects))}
	}
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !t.State.Runnable() {
			continue
		}
		avOf[i] = int32(ix.AppVersion[t.AppVersion])
		av := &doc.AppVersions[avOf[i]]
		p := ix.Project[t.Project]
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
		if a, ok := appOf[[2]string{av.Project, av.App}]; ok && av.App != "" {
			c.app = a
		}
		g := groups[av.ResourceType()]
		g.byProject[p] = append(g.byProject[p], c)
		g.runnable[p]++
	}

	chosen := make([]bool, len(doc.Tasks))
	why := make([]TaskDecision, len(doc.Tasks)) // compacted into pass.Tasks at the end
	cpuFree := float64(cpu.Instances)
	order := slices.Clone(doc.Host.Resources)
	slices.SortStableFunc(order, func(a, b state.Resource) int { // coprocessors first
		return cmp.Compare(boolInt(a.Type == state.ResourceCPU), boolInt(b.Type == state.ResourceCPU))
	})
	for _, r := range order {
		g := groups[r.Type]
		rp := ResourcePass{Type: r.Type, Instances: float64(r.Instances)}
		if r.Type == state.ResourceCPU {
			rp.Instances = cpuFree
		}

		// Work done since the last pass, and the debts it changes.
		done := make([]float64, len(doc.Projects))
		for p, cands := range g.byProject {
			for _, c := range cands {
				t := &doc.Tasks[c.task]
				if t.State != state.TaskRunning {
					continue
				}
				var x float64
				if r.Type == state.ResourceCPU {
					x = t.CPUTime - t.CPUTimeAtLastSched
				} else {
					x = (t.ElapsedTime - t.ElapsedTimeAtLastSched) * c.need
				}
				done[p] += x
				rp.TotalWorkDone += x
			}
		}
		var shareTotal float64
		nWithWork := 0
		for p := range doc.Projects {
			if g.runnable[p] > 0 {
				shareTotal += doc.Projects[p].ResourceShare
				nWithWork++
			}
		}
		anticipated := make([]float64, len(doc.Projects))
		for p := range doc.Projects {
			debt := debtOf(&doc.Projects[p], r.Type)
			pd := ProjectDebt{Project: doc.Projects[p].Name, Runnable: g.runnable[p], WorkDone: done[p], DebtBefore: *debt}
			if g.runnable[p] == 0 {
				*debt = 0
			} else {
				pd.ShareFraction = shareFraction(doc.Projects[p].ResourceShare, shareTotal, nWithWork)
				*debt += pd.ShareFraction*rp.TotalWorkDone - done[p]
			}
			pd.DebtAfter = *debt
			anticipated[p] = *debt
			if g.runnable[p] > 0 || pd.DebtBefore != 0 {
				rp.Projects = append(rp.Projects, pd)
			}
		}
		rp.ExpectedPayOff = mv
		if rp.TotalWorkDone > 0 && r.Instances > 0 {
			rp.ExpectedPayOff = rp.TotalWorkDone / float64(r.Instances)
		}

		// Preference order within each project: running, preempted, then ready by
		// earliest deadline; document order breaks ties.
		for p := range g.byProject {
			slices.SortFunc(g.byProject[p], func(a, b candidate) int {
				if c := cmp.Compare(a.rank, b.rank); c != 0 {
					return c
				}
				if a.rank == 2 {
					if c := cmp.Compare(doc.Tasks[a.task].ReportDeadline, doc.Tasks[b.task].ReportDeadline); c != 0 {
						return c
					}
				}
				return cmp.Compare(a.task, b.task)
			})
		}

		// Fill the instances by anticipated debt.
		capacity := rp.Instances
		next := make([]int, len(doc.Projects)) // first candidate not yet taken
		for {
			best, bestTask := -1, -1
			for p := range g.byProject {
				if best >= 0 && anticipated[p] <= anticipated[best] {
					continue
				}
				if k := firstFit(g.byProject[p], next[p], chosen, capacity-rp.Used, cpuFree, appLimit, appRunning, r.Type); k >= 0 {
					best, bestTask = p, k
				}
			}
			if best < 0 {
				break
			}
			c := g.byProject[best][bestTask]
			chosen[c.task] = true
			why[c.task] = TaskDecision{Why: Why(c.rank), Anticipated: anticipated[best]}
			rp.Used += c.need
			if r.Type == state.ResourceCPU {
				cpuFree -= c.need
			} else {
				cpuFree -= c.ncpus
			}
			if c.app >= 0 {
				appRunning[c.app]++
			}
			anticipated[best] -= rp.ExpectedPayOff * c.need
			for next[best] < len(g.byProject[best]) && chosen[g.byProject[best][next[best]].task] {
				next[best]++
			}
		}
		for i := range rp.Projects {
			rp.Projects[i].AnticipatedEnd = anticipated[ix.Project[rp.Projects[i].Project]]
		}

		// Unchosen tasks: say why.
		for p, cands := range g.byProject {
			for _, c := range cands {
				if chosen[c.task] {
					continue
				}
				why[c.task] = waiting(c, anticipated[p], capacity-rp.Used, cpuFree, r.Type, appLimit, appRunning)
			}
		}
		pass.Resources = append(pass.Resources, rp)
	}

	// Carry the decisions out.
	pass.Tasks = why[:0]
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
		av := &doc.AppVersions[avOf[i]]
		d := why[i]
		d.Task, d.Name, d.Project, d.Resource = i, t.Name, t.Project, av.ResourceType()
		d.Before, d.After, d.Deadline = before, t.State, t.ReportDeadline
		d.Need = av.Instances()
		if av.Coproc != nil {
			d.NeedCPUs = av.AvgNCPUs
		}
		pass.Tasks = append(pass.Tasks, d)
	}

	pass.NextPass, pass.NextPassReason = nextPass(doc, ix, now)
	doc.CPUSched = &state.CPUSched{LastPass: now, NextPass: pass.NextPass, NextPassReason: pass.NextPassReason}
	return pass
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
func firstFit(cands []candidate, k int, chosen []bool, free, cpuFree float64, appLimit, appRunning []int, resource string) int {
	for ; k < len(cands); k++ {
		c := cands[k]
		if chosen[c.task] || c.need > free+fitSlack {
			continue
		}
		if resource != state.ResourceCPU && c.ncpus > cpuFree+fitSlack {
			continue
		}
		if c.app >= 0 && appRunning[c.app] >= appLimit[c.app] {
			continue
		}
		return k
	}
	return -1
}

// waiting says why an unchosen candidate waits.
func waiting(c candidate, anticipated, free, cpuFree float64, resource string, appLimit, appRunning []int) TaskDecision {
	d := TaskDecision{Why: WhyOtherTasks, Anticipated: anticipated, Free: free}
	switch {
	case c.need > free+fitSlack:
		d.Why = WhyNoRoom
	case resource != state.ResourceCPU && c.ncpus > cpuFree+fitSlack:
		d.Why = WhyNoCPUs
	case c.app >= 0 && appRunning[c.app] >= appLimit[c.app]:
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
// result is the caller's event: it should run a pass when one arrives.)
func nextPass(doc *state.Document, ix *state.Index, now float64) (float64, string) {
	at, why := now+doc.Preferences.CPUSchedulingPeriod, "scheduling period"
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.State != state.TaskRunning || t.EstimatedFlops <= 0 {
			continue
		}
		speed := doc.AppVersions[ix.AppVersion[t.AppVersion]].Speed(&doc.Host)
		if speed <= 0 {
			continue
		}
		if end := now + t.RemainingFlops()/speed; end < at {
			at, why = end, "task "+t.Name+" expected to finish"
		}
	}
	return at, why
}

// Due reports whether a pass is due at now, and why: no pass has run yet, the scheduling
// period is over, a result arrived since the last pass, or an instance is free while a
// task waits for it.
func Due(doc *state.Document, now float64) (bool, string) {
	s := doc.CPUSched
	if s == nil {
		return true, "no pass has run yet"
	}
	if now >= s.NextPass {
		return true, "next pass was due at " + num(s.NextPass) + " (" + s.NextPassReason + ")"
	}
	ix := state.NewIndex(doc)
	used := map[string]float64{}
	smallestWaiting := map[string]float64{}
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.State == state.TaskReady && t.ReceivedTime > s.LastPass {
			return true, "new result " + t.Name
		}
		av := &doc.AppVersions[ix.AppVersion[t.AppVersion]]
		rt := av.ResourceType()
		switch t.State {
		case state.TaskRunning:
			used[rt] += av.Instances()
		case state.TaskReady, state.TaskPreempted:
			if n, ok := smallestWaiting[rt]; !ok || av.Instances() < n {
				smallestWaiting[rt] = av.Instances()
			}
		}
	}
	for _, r := range doc.Host.Resources {
		if need, ok := smallestWaiting[r.Type]; ok && need <= float64(r.Instances)-used[r.Type]+fitSlack {
			return true, "a " + r.Type + " instance is free"
		}
	}
	return false, "next pass due at " + num(s.NextPass) + " (" + s.NextPassReason + ")"
}

func num(x float64) string { return fmt.Sprintf("%.6g", x) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
