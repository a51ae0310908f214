package rpc

import (
	"slices"
	"strconv"

	"github.com/bkit/bkit/lib/state"
)

// When a computed result is overdue for reporting. The seed does not say; bkit follows
// BOINC's client: a done result is reported when its report deadline is within a day
// (so that it cannot miss it for want of a connection), or when it has waited a day
// since it finished computing (so that results do not pile up on a host with a full
// buffer, which would otherwise only report on the next get-work session).
const (
	// ReportDeadlineCushion: a done result whose deadline is at most this far away
	// (or past) is overdue, seconds.
	ReportDeadlineCushion = SecondsPerDay
	// MaxReportDelay: a done result finished at least this long ago is overdue, seconds.
	// A result with no completed_time (0) is judged by its deadline alone.
	MaxReportDelay = SecondsPerDay
)

// Overdue reports whether task t is a done result that should be reported at now.
func Overdue(t *state.Task, now float64) bool {
	if t.State != state.TaskDone {
		return false
	}
	if t.ReportDeadline-now <= ReportDeadlineCushion {
		return true
	}
	return t.CompletedTime > 0 && now-t.CompletedTime >= MaxReportDelay
}

// WaterMarks returns the work buffer's low-water mark (work_buf_min_days) and
// high-water mark (work_buf_min_days + work_buf_additional_days), in days.
func WaterMarks(p *state.Preferences) (low, high float64) {
	return p.WorkBufMinDays, p.WorkBufMinDays + p.WorkBufAdditionalDays
}

// EstimatedWorkDays is the work the client has on hand, in days of the whole host:
// the sum over runnable tasks (ready, running, preempted) of their remaining estimated
// CPU time — remaining estimated work ÷ one CPU's FLOPS, as seed 001's
// estimated_cpu_time (DESIGN.md section 5) — divided by the number of CPUs and by 86,400.
// Seed 000 knows only CPUs, so coprocessor tasks count at CPU speed too (per-resource
// buffers are seed 002's, in lib/prsc). Availability fractions are not applied: the
// water marks are days of computing. A host without a usable CPU has 0 days.
func EstimatedWorkDays(doc *state.Document) float64 {
	cpu := doc.Host.CPU()
	if cpu.Instances < 1 || cpu.Flops <= 0 {
		return 0
	}
	var secs float64
	for i := range doc.Tasks {
		if t := &doc.Tasks[i]; t.State.Runnable() {
			secs += t.RemainingWork(doc.ProjectDCF(t.Project)) / cpu.Flops
		}
	}
	return secs / float64(cpu.Instances) / SecondsPerDay
}

// WorkRequestSeconds is the work to ask for to bring the buffer up to the high-water
// mark, in CPU seconds of the whole host: (high − estimated) days × 86,400 × ncpus,
// at least 0.
func WorkRequestSeconds(doc *state.Document) float64 {
	_, high := WaterMarks(&doc.Preferences)
	short := high - EstimatedWorkDays(doc)
	if short <= 0 {
		return 0
	}
	return short * SecondsPerDay * float64(doc.Host.CPU().Instances)
}

// GreatestDebt returns the index of the project with the greatest resource debt at now
// (MoreDebt) among those that can be contacted (min_rpc_time <= now) and that skip does
// not exclude (skip may be nil), or -1 when there is none. Ties keep document order.
func GreatestDebt(doc *state.Document, now float64, skip func(*state.Project) bool) int {
	best := -1
	for i := range doc.Projects {
		p := &doc.Projects[i]
		if !CanContact(p, now) || (skip != nil && skip(p)) {
			continue
		}
		if best < 0 || MoreDebt(p, &doc.Projects[best], now) {
			best = i
		}
	}
	return best
}

// Action is what Poll decides.
type Action int

// Poll's actions.
const (
	None    Action = iota // start nothing
	GetWork               // start a get-work session
	Report                // start a report-result session for one project
)

func (a Action) String() string {
	switch a {
	case None:
		return "none"
	case GetWork:
		return "get_work"
	case Report:
		return "report"
	}
	return "unknown"
}

// Decision is the outcome of Poll, with the figures it was made on.
type Decision struct {
	Action    Action
	Project   string  // Report: the project whose results are reported
	AskWork   bool    // Report: also ask for work up to the high-water mark
	WorkDays  float64 // EstimatedWorkDays at the time
	LowWater  float64 // days
	HighWater float64 // days
	Reason    string
}

// Poll is seed 000's poll function:
//
//	if a scheduler RPC session is not active
//	    if estimated work is less than the low-water mark → start a get-work session
//	    else if some project P has overdue results       → start a report-result session
//	        for P, asking for work up to the high-water mark if P has the greatest debt
//
// Only projects that can be contacted count (min_rpc_time <= now): a get-work session
// is started only if at least one can, and a report session only for one that can.
// Among several projects with overdue results, the one holding the earliest report
// deadline is chosen (ties: the first such task in document order). "The greatest
// debt" is among the projects that can be contacted (the project a get-work session
// would ask, seed 000's "greatest debt and min_rpc_time < now"); P has it when no such
// project comes before P by MoreDebt, so projects tied for it each have it. Work is
// asked for only while estimated work is below the high-water mark.
func Poll(doc *state.Document, now float64) Decision {
	return poll(doc, now, true, true)
}

// poll is Poll; with explain false only a Report decision is given its Reason, and
// with explainReport false not that either.
func poll(doc *state.Document, now float64, explain, explainReport bool) Decision {
	low, high := WaterMarks(&doc.Preferences)
	d := Decision{WorkDays: EstimatedWorkDays(doc), LowWater: low, HighWater: high}
	if s := doc.RPCSession; s != nil {
		if explain {
			d.Reason = "a " + s.Kind + " session is active (started " + fmtTime(s.Started) + ")"
		}
		return d
	}
	if d.WorkDays < low {
		if i := GreatestDebt(doc, now, nil); i >= 0 {
			d.Action = GetWork
			if explain {
				d.Reason = "estimated work " + fmtG4(d.WorkDays) + " days is below the low-water mark " + fmtG(low) + " days"
			}
			return d
		}
	}
	rp, deadline := OverdueReport(doc, now, nil)
	if rp < 0 {
		if !explain {
			return d
		}
		if d.WorkDays < low {
			d.Reason = "estimated work " + fmtG4(d.WorkDays) + " days is below the low-water mark " + fmtG(low) + " days, but every project is backed off"
		} else {
			d.Reason = "estimated work " + fmtG4(d.WorkDays) + " days is at least the low-water mark " + fmtG(low) + " days and no result is overdue"
		}
		return d
	}
	d.Action, d.Project = Report, doc.Projects[rp].Name
	d.AskWork = d.WorkDays < high && hasGreatestDebt(doc, now, rp)
	if !explainReport {
		return d
	}
	d.Reason = "project " + strconv.Quote(d.Project) + " has a result overdue for reporting (deadline " + fmtTime(deadline) + ")"
	if d.AskWork {
		d.Reason += "; it has the greatest debt, so ask for work up to the high-water mark"
	}
	return d
}

// hasGreatestDebt reports whether no project that can be contacted at now comes before
// project p by debt (MoreDebt): p has the greatest resource debt, alone or tied with
// others (a tie is not broken by document order here, as GreatestDebt must to choose
// one: each of the tied projects has the greatest debt).
func hasGreatestDebt(doc *state.Document, now float64, p int) bool {
	for i := range doc.Projects {
		if q := &doc.Projects[i]; i != p && CanContact(q, now) && MoreDebt(q, &doc.Projects[p], now) {
			return false
		}
	}
	return true
}

// OverdueReport is the project a report session goes to at now: of the projects that
// may be contacted and are not in asked (indices in doc.Projects), the one with the
// overdue result (Overdue) of earliest deadline, and that deadline; -1 when there is
// none.
func OverdueReport(doc *state.Document, now float64, asked []int) (project int, deadline float64) {
	project = -1
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !Overdue(t, now) || (project >= 0 && t.ReportDeadline >= deadline) {
			continue
		}
		j := projectIndex(doc, t.Project)
		if j < 0 || slices.Contains(asked, j) || !CanContact(&doc.Projects[j], now) {
			continue
		}
		project, deadline = j, t.ReportDeadline
	}
	return project, deadline
}

// IsReportSession reports whether an RPC at now to project (index in doc.Projects),
// the projects in asked having been contacted at this step already, is seed 000's
// report-result session: the step's first RPC, to the project Poll starts a report
// session for (whatever the RPC asks for). brpc poll records its session so, and the
// emulator's loop tells a failed RPC's kind so: a report session's failures set no
// master-fetch flag (ReportFailed).
func IsReportSession(doc *state.Document, now float64, asked []int, project int) bool {
	if len(asked) > 0 {
		return false
	}
	d := pollIfOverdue(doc, now, false)
	return d.Action == Report && projectIndex(doc, d.Project) == project
}

// fmtG and fmtG4 format as fmt's %g and %.4g do (both are strconv's 'g'). Poll's reasons are
// built without fmt: the emulator polls at every step with an overdue result and throws
// the reason away, and fmt.Sprintf was a quarter of a 10-day down-2cpu run.
func fmtG(x float64) string  { return strconv.FormatFloat(x, 'g', -1, 64) }
func fmtG4(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// fmtTime writes a time in Unix seconds in full, as the document holds it ('g' would
// print 1.70005e+09, which a reader cannot match against a task's deadline).
func fmtTime(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// StartSession records the session Poll decided on in doc.RPCSession; a None decision
// changes nothing.
func StartSession(doc *state.Document, d Decision, now float64) {
	switch d.Action {
	case GetWork:
		doc.RPCSession = &state.RPCSession{Kind: GetWork.String(), Started: now}
	case Report:
		doc.RPCSession = &state.RPCSession{Kind: Report.String(), Project: d.Project, AskWork: d.AskWork, Started: now}
	}
}

// EndSession clears the session record: the next Poll may start another.
func EndSession(doc *state.Document) {
	doc.RPCSession = nil
}

// NextGetWork is one turn of the get-work session's loop:
//
//	while estimated work < high water mark
//	    P = project with greatest debt and min_rpc_time <= now
//
// It returns P's index and records P in the session's Contacted list, or -1 when the
// session's loop is over: the high-water mark is reached, or no project that can be
// contacted is left. Each project is asked at most once per session (the seed's loop
// would otherwise ask a project that succeeded but sent no work forever); a failed
// project drops out anyway, its min_rpc_time being in the future. Without a get-work
// session in doc, it starts one at now.
func NextGetWork(doc *state.Document, now float64) int {
	s := doc.RPCSession
	if s == nil || s.Kind != GetWork.String() {
		s = &state.RPCSession{Kind: GetWork.String(), Started: now}
		doc.RPCSession = s
	}
	if _, high := WaterMarks(&doc.Preferences); EstimatedWorkDays(doc) >= high {
		return -1
	}
	i := GreatestDebt(doc, now, func(p *state.Project) bool { return slices.Contains(s.Contacted, p.Name) })
	if i >= 0 {
		s.Contacted = append(s.Contacted, doc.Projects[i].Name)
	}
	return i
}

// MasterFetches returns, in document order, the projects whose master file the end of
// a get-work session reads: those with the master-fetch flag set. As in the seed, the
// flag alone decides (a project backed off after its tenth failure still has its master
// file read).
func MasterFetches(doc *state.Document) []int {
	var out []int
	for i := range doc.Projects {
		if doc.Projects[i].MasterFetchPending {
			out = append(out, i)
		}
	}
	return out
}

// ReportTasks returns the indices of the done tasks of project name, in document
// order: a report-result session (or any RPC to the project) reports all of them, not
// only the overdue ones.
func ReportTasks(doc *state.Document, name string) []int {
	return AppendReportTasks(nil, doc, name)
}

// AppendReportTasks appends ReportTasks' indices to out (the emulator reuses one
// buffer for every RPC).
func AppendReportTasks(out []int, doc *state.Document, name string) []int {
	for i := range doc.Tasks {
		if t := &doc.Tasks[i]; t.Project == name && t.State == state.TaskDone {
			out = append(out, i)
		}
	}
	return out
}
