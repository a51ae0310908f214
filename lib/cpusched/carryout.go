package cpusched

import (
	"strings"

	"github.com/bkit/bkit/lib/state"
)

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
// document's cpu_sched; quiet leaves the reason empty.
func record(doc *state.Document, pass *Pass, avOf []int32, quiet bool) {
	prev := ""
	if doc.CPUSched != nil {
		prev = doc.CPUSched.NextPassReason
	}
	pass.NextPass, pass.NextPassReason = nextPass(doc, avOf, pass.Now, prev, quiet)
	// In place when there is one: the emulator passes every few steps, and a new record
	// each time was most of a quiet step's allocations.
	if doc.CPUSched == nil {
		doc.CPUSched = new(state.CPUSched)
	}
	*doc.CPUSched = state.CPUSched{LastPass: pass.Now, NextPass: pass.NextPass, NextPassReason: pass.NextPassReason}
}

// nextPass is when the next pass is due at the latest: one scheduling period from now, or
// earlier when a running task is expected to finish and free its processor. A task
// already past its estimate is not expected at any time the estimate can tell: taken as
// finishing now, it made every later step a pass until it ended; its end is seen when
// it comes (Due). (A new result is the caller's event: it should run a pass when one
// arrives.) prev is the last pass's reason, given back when it is the same words (no
// new string to make); quiet gives no reason.
func nextPass(doc *state.Document, avOf []int32, now float64, prev string, quiet bool) (float64, string) {
	at, first := now+doc.Preferences.CPUSchedulingPeriod, -1
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.State != state.TaskRunning {
			continue
		}
		left := t.RemainingWork(doc.ProjectDCF(t.Project))
		if left <= 0 {
			continue
		}
		speed := doc.AppVersions[avOf[i]].Speed(&doc.Host) // a running task is runnable: avOf knows it
		if speed <= 0 {
			continue
		}
		if end := now + left/speed; end < at {
			at, first = end, i
		}
	}
	if quiet {
		return at, ""
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
