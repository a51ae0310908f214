package boincpolicy

import (
	"math"
	"unsafe"

	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
)

// BOINC's client's rule for reporting a computed result (client/cs_scheduler.cpp,
// CLIENT_STATE::find_project_with_overdue_results, at c5c6cb79b9).
const (
	// ReportDeadlineCushion: a result is reported once its deadline is less than the
	// larger of this and work_buf_min away (REPORT_DEADLINE_CUSHION, a day).
	ReportDeadlineCushion = 86400.0
	// MaxReportDelay: a result is reported once it has waited this long since it
	// finished computing (MAX_REPORT_DELAY, an hour; seed 000's rule, rpc.Overdue,
	// waits a day).
	MaxReportDelay = 3600.0
	// ReportIfAtLeastN: a project holding this many results to report is contacted
	// (RESULT_REPORT_IF_AT_LEAST_N, client_state.h).
	ReportIfAtLeastN = 64
)

// OverdueReport is the project BOINC's client contacts at now to report results, -1
// when there is none: going through the results in order, the project of the first
// done result, of a project that may be contacted, whose deadline is within the
// cushion (the larger of a day and work_buf_min), that finished more than an hour
// ago, or that is its project's ReportIfAtLeastN-th such result (BOINC's
// find_project_with_overdue_results; the conditions bkit's documents cannot hold, a
// project asking for immediate reports or a sporadic connection, are left out).
func OverdueReport(doc *state.Document, now float64, counts []int) (int, []int) {
	p, _, counts := overdueReport(doc, now, counts, false)
	return p, counts
}

// overdueReport is OverdueReport with, when it finds no project at now, from: the
// earliest time from which it may find one while the tasks and the projects' RPC
// backoffs stay as they are (the quiet paths' hold, Workspace.next). A done result's
// project may be contacted from its min_rpc_time on (and its results then counted),
// and a result of a project that may be contacted is overdue once past its deadline
// − the cushion or an hour after it finished (the time itself still not overdue:
// the answer holds before it). The walk that finds no project passes every done
// result, so it takes from on its way (a second walk of every task after each such
// answer, until issue 30's forty-first round); where it finds one, from is not read.
// distinct: no two projects have one name (projectFound).
func overdueReport(doc *state.Document, now float64, counts []int, distinct bool) (int, float64, []int) {
	cushion := max(ReportDeadlineCushion, WorkBufMin(&doc.Preferences))
	counts = append(counts[:0], make([]int, len(doc.Projects))...)
	from := math.Inf(1)
	tasks := doc.Tasks // (in a local: the counts' stores made the loop read it through doc)
	for i := range tasks {
		t := &tasks[i]
		if t.State != state.TaskDone {
			continue
		}
		p := projectFound(doc, t.Project, distinct)
		if p < 0 {
			continue
		}
		if pr := &doc.Projects[p]; !rpc.CanContact(pr, now) {
			from = min(from, pr.MinRPCTime)
			continue
		}
		due, late := t.ReportDeadline-cushion, t.CompletedTime+MaxReportDelay
		if now > due || now > late {
			return p, from, counts
		}
		from = min(from, due, late)
		counts[p]++
		if counts[p] >= ReportIfAtLeastN {
			return p, from, counts
		}
	}
	return -1, from, counts
}

// projectOf is the index of the project named name, -1 if none (projects are few).
func projectOf(doc *state.Document, name string) int {
	for i := range doc.Projects {
		if state.SameName(doc.Projects[i].Name, name) {
			return i
		}
	}
	return -1
}

// projectFound is projectOf, where distinct (no two projects have one name) by the
// string's storage first: a task that holds the very string of its project's name (as
// the emulator's do) is found without comparing the names before it by their bytes,
// which the projects' master URLs, of one length, make a call each (the done tasks of
// every project but the first, at every report's look: issue 30, forty-third round).
// With one project of each name the one stored where name is is the first so named.
func projectFound(doc *state.Document, name string, distinct bool) int {
	if distinct {
		for i := range doc.Projects {
			if n := doc.Projects[i].Name; len(n) == len(name) && unsafe.StringData(n) == unsafe.StringData(name) {
				return i
			}
		}
	}
	return projectOf(doc, name)
}

// namesDistinct reports whether no two of doc's projects have one name, kept while the
// projects are the slice it was found for (its identity and length) and no view has
// been built since (view: the caller changed the document), as hasVersion's table.
func (w *Workspace) namesDistinct(doc *state.Document) bool {
	if !w.distinctOK || w.distinctAt != unsafe.SliceData(doc.Projects) || w.distinctN != len(doc.Projects) {
		w.distinct = true
		for i := range doc.Projects {
			for k := range doc.Projects[:i] {
				if doc.Projects[k].Name == doc.Projects[i].Name {
					w.distinct = false
				}
			}
		}
		w.distinctOK, w.distinctAt, w.distinctN = true, unsafe.SliceData(doc.Projects), len(doc.Projects)
	}
	return w.distinct
}
