// Package workfetch owns seed 001's work fetch policy: given the client state document,
// decide whether the CPU scheduler is about to starve (the urgency) and how many CPU
// seconds of work to ask each project for (its work request). It is the library half of
// bfetch and is used unchanged by the emulator, so it is a pure function of the document:
// no clock, no randomness, no I/O.
//
// The policy, as compute_work_request() in seed 001 states it:
//
//	total_share    = sum of every project's resource share
//	avg_proc_rate(P) = P.share / total_share × ncpus × active_frac   (CPU s per wall s)
//	min_results(P)   = ceil(ncpus × P.share / total_share)
//	ETTPRC(P, k)     = walk P's runnable results from the latest deadline, skip k,
//	                   sum estimated_cpu_time(R) / avg_proc_rate(P) over the rest
//	S(P)             = ETTPRC(P, min_results(P) − 1)
//	S == 0           → NEED_WORK_IMMEDIATELY (starved now)
//	S < T            → at least NEED_WORK    (starves within the connection period T)
//	work_request(P)  = max(0, (2T − S) × avg_proc_rate(P)), all 0 if nobody needs work
//
// estimated_cpu_time(R) is R's remaining estimated work divided by one CPU's FLOPS
// (DESIGN.md section 5): estimate minus work done, at least 0, corrected by R's
// project's duration correction factor and, for a started result, taken from its
// progress (state.Task.RemainingWork; docs/decisions.md, issue 29). P's runnable results are
// those that run on the CPU: a result of an app version that uses a coprocessor feeds
// that coprocessor, not the CPU scheduler, and its work is fetched by seed 002
// (bdevices); counted here it would hide a starving CPU behind a GPU queue.
//
// Where the seed divides by zero — a project with resource share 0, all shares 0, an
// active fraction of 0 — avg_proc_rate(P) is 0: the client will not spend CPU time on P,
// so P cannot run out of work. Its ETTPRC is +Inf ("never"), it adds nothing to the
// urgency and its request is 0. The +Inf stays in Decision; Apply writes only finite
// numbers into the document.
package workfetch

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/bkit/bkit/lib/state"
)

// linearMax is the count of projects up to which a name is looked up by comparing
// names one by one rather than by hashing.
const linearMax = 8

// SecondsPerDay converts the preferences' connection period (days) to seconds.
const SecondsPerDay = 86400

// Urgency is seed 001's urgency level, ordered so that max() picks the more urgent.
type Urgency int

// The urgency levels of seed 001.
const (
	DontNeedWork        Urgency = iota // no project starves within T
	NeedWork                           // some project will starve within T days
	NeedWorkImmediately                // the CPU scheduler is starved now
)

// String is the urgency's name in the state document (state.WorkFetch.Urgency).
func (u Urgency) String() string {
	switch u {
	case DontNeedWork:
		return "dont_need_work"
	case NeedWork:
		return "need_work"
	case NeedWorkImmediately:
		return "need_work_immediately"
	}
	return fmt.Sprintf("Urgency(%d)", int(u))
}

// Row is the decision for one project, with the quantities it was made from.
type Row struct {
	Project     string
	Share       float64 // resource share as given
	Runnable    int     // runnable CPU results (ready, running, preempted)
	MinResults  int     // min_results(P)
	Skip        int     // results skipped by ETTPRC: min_results(P)−1, at least 0
	CPUTime     float64 // estimated CPU seconds of all runnable results
	AvgProcRate float64 // avg_proc_rate(P), CPU seconds per wall second
	ETTPRC      float64 // S(P), seconds; +Inf when AvgProcRate is 0
	Urgency     Urgency // what this project alone asks for
	WorkRequest float64 // CPU seconds to request (0 when the overall urgency is DontNeedWork)
	Reason      string  // one line on why
}

// Decision is the outcome of one pass of compute_work_request().
type Decision struct {
	T          float64 // connection period, seconds
	NCPUs      int
	CPUFlops   float64 // FLOPS of one CPU
	ActiveFrac float64
	TotalShare float64
	Rows       []Row // one per project, in document order
	Urgency    Urgency
	Reason     string // why this urgency, naming the project that decided it
}

// MinResults is min_results(P) = ceil(ncpus × share / totalShare); 0 when totalShare is 0.
func MinResults(ncpus int, share, totalShare float64) int {
	if totalShare <= 0 || share <= 0 {
		return 0
	}
	return int(math.Ceil(float64(ncpus) * share / totalShare))
}

// AvgProcRate is avg_proc_rate(P) = share / totalShare × ncpus × activeFrac, evaluated
// in the seed's order; 0 when totalShare is 0 (no project takes any CPU time).
func AvgProcRate(share, totalShare float64, ncpus int, activeFrac float64) float64 {
	if totalShare <= 0 {
		return 0
	}
	return share / totalShare * float64(ncpus) * activeFrac
}

// ETTPRC is seed 001's ettprc(P, k): cpuTimes are the estimated CPU seconds of P's
// runnable results in increasing deadline order (the order the CPU scheduler runs
// them). The k latest-deadline results are skipped, because min_results(P)−1 results
// can be left without the scheduler starving; the rest are summed, each divided by rate,
// walking from the latest deadline down as the seed's pseudocode does (the order fixes
// the floating-point rounding). A rate of 0 gives +Inf: nothing is ever consumed.
func ETTPRC(cpuTimes []float64, k int, rate float64) float64 {
	if rate <= 0 {
		return math.Inf(1)
	}
	est := 0.0
	for i := len(cpuTimes) - 1 - max(k, 0); i >= 0; i-- {
		est += cpuTimes[i] / rate
	}
	return est
}

// sums is the sum of cpuTimes, in their order, and ETTPRC(cpuTimes, skip, rate), in
// one loop: each sum's additions in its own order, so that their rounding is the
// same, the two chains of additions overlap (with thousands of results a decision
// spent most of its time waiting for them one after the other).
func sums(cpuTimes []float64, skip int, rate float64) (total, ettprc float64) {
	if rate <= 0 {
		for _, c := range cpuTimes {
			total += c
		}
		return total, math.Inf(1)
	}
	last := len(cpuTimes) - 1 - max(skip, 0) // ETTPRC's first term, walking down
	for i, c := range cpuTimes {
		total += c
		if j := last - i; j >= 0 {
			ettprc += cpuTimes[j] / rate
		}
	}
	return total, ettprc
}

// result is one runnable result: what ETTPRC orders by and what it sums.
type result struct {
	deadline float64
	order    int     // position in the document, which breaks deadline ties
	cpuTime  float64 // estimated CPU seconds
}

// byDeadline orders results by deadline, then document order; the keys are unique, so
// the faster unstable sort gives one answer.
func byDeadline(a, b result) int {
	switch {
	case a.deadline < b.deadline:
		return -1
	case a.deadline > b.deadline:
		return 1
	}
	return cmp.Compare(a.order, b.order)
}

// sortByDeadline sorts results byDeadline: a few (a project's runnable results on an
// emulated host, mostly in order already) by an insertion sort with the comparison
// inline, more by slices.SortFunc. The keys are unique: any sort gives this order.
func sortByDeadline(results []result) {
	if len(results) > 12 {
		// Most often in order already (results are taken in document order, in which a
		// project's arrive by deadline): a look at each neighbour tells, at a fraction
		// of the sort's cost. A later result goes before the one ahead of it only by an
		// earlier deadline; a NaN deadline, which byDeadline does not order
		// consistently, is left to the sort as before.
		for i := 1; i < len(results); i++ {
			if a, b := results[i].deadline, results[i-1].deadline; !(a >= b) {
				slices.SortFunc(results, byDeadline)
				return
			}
		}
		return
	}
	for i := 1; i < len(results); i++ {
		for j := i; j > 0 && byDeadline(results[j], results[j-1]) < 0; j-- {
			results[j], results[j-1] = results[j-1], results[j]
		}
	}
}

// Compute runs compute_work_request() over doc, which should be valid (state.Validate).
// It does not change doc; Apply records the decision.
func Compute(doc *state.Document) Decision {
	var w Workspace
	return *w.compute(doc, true)
}

// Workspace keeps Compute's buffers and the projects' name index from one call to the
// next, for a caller that decides again and again on one document (the emulator). The
// zero value is ready.
type Workspace struct {
	names    []string // the projects byName indexes, in order
	byName   map[string]int
	buckets  [][]result // per project: its runnable CPU results
	cpuTimes []float64
	coproc   []string // names of the app versions that use a coprocessor
	d        Decision
}

// Decide is Compute's decision without its reasons in words (Decision.Reason and
// Row.Reason are empty), with w's buffers; every number and urgency is Compute's, to
// the last bit. The decision is valid until w's next call.
func (w *Workspace) Decide(doc *state.Document) *Decision {
	return w.compute(doc, false)
}

// resize returns b with length n, reusing its storage, its elements as they were: for
// buffers whose every element the caller writes before reading (no clearing).
func resize[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// compute is Compute; explain puts the reasons into words.
func (w *Workspace) compute(doc *state.Document, explain bool) *Decision {
	cpu := doc.Host.CPU()
	w.d = Decision{
		T:          doc.Preferences.ConnectionPeriodDays * SecondsPerDay,
		NCPUs:      cpu.Instances,
		CPUFlops:   cpu.Flops,
		ActiveFrac: doc.Host.TimeStats.ActiveFrac,
		Rows:       resize(w.d.Rows, len(doc.Projects)), // each row written below
	}
	d := &w.d
	// A host without a usable CPU (only possible in an unvalidated document) processes
	// nothing; treating it as 0 CPUs keeps every division below finite.
	ncpus := cpu.Instances
	if cpu.Flops <= 0 {
		ncpus = 0
	}
	same := w.byName != nil && len(w.names) == len(doc.Projects)
	for i, p := range doc.Projects {
		d.TotalShare += p.ResourceShare
		same = same && w.names[i] == p.Name
	}
	if !same {
		w.byName = make(map[string]int, len(doc.Projects))
		w.names = w.names[:0]
		for i, p := range doc.Projects {
			w.byName[p.Name] = i
			w.names = append(w.names, p.Name)
		}
	}
	// With few projects a look-up compares names one by one: the tasks of a run hold
	// the very strings the projects do, so each comparison is a pointer check, faster
	// than hashing (as lib/cpusched's index does).
	project := func(name string) (int, bool) {
		if len(w.names) <= linearMax {
			i := state.IndexName(w.names, name)
			return i, i >= 0
		}
		i, ok := w.byName[name]
		return i, ok
	}

	// Bucket the runnable results by project in document order (one pass over the
	// tasks), then order each bucket by increasing deadline. Equal deadlines keep
	// document order: the CPU scheduler, choosing the earliest deadline, meets the
	// earlier one in the document first, so the later one is the one ETTPRC treats as
	// later and skips first.
	if len(w.buckets) < len(doc.Projects) {
		w.buckets = append(w.buckets, make([][]result, len(doc.Projects)-len(w.buckets))...)
	}
	buckets := w.buckets[:len(doc.Projects)]
	for p := range buckets {
		buckets[p] = buckets[p][:0]
	}
	// A coprocessor's results are no CPU work (see the package comment): their names,
	// few and usually none, are compared one by one.
	w.coproc = w.coproc[:0]
	for i := range doc.AppVersions {
		if av := &doc.AppVersions[i]; av.ResourceType() != state.ResourceCPU {
			w.coproc = append(w.coproc, av.Name)
		}
	}
	n := 0 // results in all buckets
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !t.State.Runnable() || (len(w.coproc) > 0 && slices.Contains(w.coproc, t.AppVersion)) {
			continue
		}
		p, ok := project(t.Project)
		if !ok {
			continue
		}
		ct := 0.0
		if cpu.Flops > 0 {
			ct = t.RemainingWork(doc.Projects[p].DCF()) / cpu.Flops
		}
		buckets[p] = append(buckets[p], result{deadline: t.ReportDeadline, order: i, cpuTime: ct})
		n++
	}

	cpuTimes := resize(w.cpuTimes, n) // each bucket's written below
	w.cpuTimes = cpuTimes
	at := 0
	for i := range doc.Projects {
		bucket := buckets[i]
		sortByDeadline(bucket)
		times := cpuTimes[at : at+len(bucket)]
		at += len(bucket)
		for j, r := range bucket {
			times[j] = r.cpuTime
		}
		d.Rows[i] = d.row(&doc.Projects[i], times, ncpus, explain)
	}

	decider := -1
	for i, r := range d.Rows {
		// The first project at the highest urgency names the reason; later ones at the
		// same level would give the same answer.
		if r.Urgency > d.Urgency {
			d.Urgency, decider = r.Urgency, i
		}
	}
	if d.Urgency == DontNeedWork {
		for i := range d.Rows {
			d.Rows[i].WorkRequest = 0
		}
	}
	if explain {
		d.Reason = d.reason(decider)
	}
	return d
}

// row decides one project; explain puts the reason into words.
func (d *Decision) row(p *state.Project, cpuTimes []float64, ncpus int, explain bool) Row {
	r := Row{
		Project:     p.Name,
		Share:       p.ResourceShare,
		Runnable:    len(cpuTimes),
		MinResults:  MinResults(ncpus, p.ResourceShare, d.TotalShare),
		AvgProcRate: AvgProcRate(p.ResourceShare, d.TotalShare, ncpus, d.ActiveFrac),
	}
	r.Skip = max(r.MinResults-1, 0)
	r.CPUTime, r.ETTPRC = sums(cpuTimes, r.Skip, r.AvgProcRate)
	if math.IsInf(r.ETTPRC, 1) {
		if explain {
			r.Reason = "takes no CPU time (" + d.noRateCause(*p) + "): never starves, asks for nothing"
		}
		return r
	}
	S := r.ETTPRC
	// The request is computed for every project, not only those below T: once an RPC is
	// due anyway, topping every project up to 2T means the next one is again T away.
	r.WorkRequest = max(0, (2*d.T-S)*r.AvgProcRate)
	switch {
	case S < d.T && S == 0: // the seed tests S == 0 only inside S < T: with T = 0, never
		r.Urgency = NeedWorkImmediately
		if explain {
			r.Reason = fmt.Sprintf("starved now: %d runnable result(s), %d may be left (min_results−1)", r.Runnable, r.Skip)
		}
	case S < d.T:
		r.Urgency = NeedWork
		r.Reason = "starves within T: ETTPRC < T"
	case r.WorkRequest > 0:
		r.Reason = "enough for T, less than 2T: topped up to 2T if work is fetched"
	default:
		r.Reason = "enough work for 2T or more"
	}
	if !explain {
		r.Reason = ""
	}
	return r
}

// noRateCause says why a project's avg_proc_rate is 0.
func (d *Decision) noRateCause(p state.Project) string {
	switch {
	case d.NCPUs < 1 || d.CPUFlops <= 0:
		return "no usable CPU"
	case p.ResourceShare <= 0:
		return "resource share 0"
	default:
		return "active fraction 0"
	}
}

// reason explains the overall urgency; decider is the project that set it, or -1.
func (d *Decision) reason(decider int) string {
	if decider >= 0 {
		r := d.Rows[decider]
		if r.Urgency == NeedWorkImmediately {
			return fmt.Sprintf("project %s is starved now: ETTPRC 0 with %d runnable result(s) and min_results %d", r.Project, r.Runnable, r.MinResults)
		}
		return fmt.Sprintf("project %s will starve within T: ETTPRC %s < T %s", r.Project, Seconds(r.ETTPRC), Seconds(d.T))
	}
	low := -1
	for i, r := range d.Rows {
		if !math.IsInf(r.ETTPRC, 1) && (low < 0 || r.ETTPRC < d.Rows[low].ETTPRC) {
			low = i
		}
	}
	if low < 0 {
		return "no project takes CPU time, so none can starve"
	}
	r := d.Rows[low]
	return fmt.Sprintf("no project starves within T %s: the shortest ETTPRC is %s's, %s", Seconds(d.T), r.Project, Seconds(r.ETTPRC))
}

// Seconds formats a duration in seconds for reasons and tables, whole seconds with a
// larger unit beside them once it helps: "43200 s (12 h)", "never" for +Inf.
func Seconds(s float64) string {
	var buf [48]byte
	return string(AppendSeconds(buf[:0], s))
}

// AppendSeconds appends Seconds(s) to b. It is strconv's, not fmt's: the emulator puts
// a work request into words at every RPC. The numbers are fmt's %.0f and %.3g, which
// are strconv's 'f' and 'g' ("+Inf" and "-Inf" aside: +Inf is "never" and -Inf never
// reaches the 'f' cases).
func AppendSeconds(b []byte, s float64) []byte {
	unit, div := "", 0.0
	switch {
	case math.IsInf(s, 1):
		return append(b, "never"...)
	case s >= 2*SecondsPerDay:
		unit, div = " d)", SecondsPerDay
	case s >= 7200:
		unit, div = " h)", 3600
	case s >= 120:
		unit, div = " min)", 60
	case s >= 10:
	default:
		return append(strconv.AppendFloat(b, s, 'g', 3, 64), " s"...)
	}
	b = append(strconv.AppendFloat(b, s, 'f', 0, 64), " s"...)
	if div == 0 {
		return b
	}
	b = append(strconv.AppendFloat(append(b, " ("...), s/div, 'g', 3, 64), unit...)
	return b
}

// Apply records d in doc: each project's work request and the urgency with its time.
// Every number written is finite, so the document stays valid JSON.
func Apply(doc *state.Document, d Decision, now float64) {
	for i := range doc.Projects {
		w := 0.0
		if i < len(d.Rows) && !math.IsInf(d.Rows[i].WorkRequest, 0) && !math.IsNaN(d.Rows[i].WorkRequest) {
			w = d.Rows[i].WorkRequest
		}
		doc.Projects[i].WorkRequest = w
	}
	// In place when there is one: the emulator decides at every poll.
	if doc.WorkFetch == nil {
		doc.WorkFetch = new(state.WorkFetch)
	}
	*doc.WorkFetch = state.WorkFetch{Time: now, Urgency: d.Urgency.String()}
}
