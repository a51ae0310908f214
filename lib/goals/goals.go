// Package goals owns the "goals" client policy: the goals seed 001 states (use the
// processors, enforce resource shares over a day or two, meet deadlines) pursued where
// the seeds' own algorithms fall short of them on an ordinary volunteer's host — a
// project whose server is down half the time, a host that is off at night, a project
// with deadlines of hours (issue 15; docs/decisions.md, "The goals policy", gives each
// rule and the figure it moves).
//
// Like lib/cpusched, lib/workfetch and lib/prsc it is pure: functions of the state
// document and the time, no clock, no randomness, no I/O. bsim's policy "goals" calls
// them, and bsched, bfetch and bdevices request call them with --policy goals, so a
// shell loop of the programs runs the same policy.
//
// The rules, in short:
//
//   - Debt: seed 002's long-term debts (prsc.AccumulateDebt), which keep accruing to a
//     project that may have jobs (D(P,R)) while it has none, clamped to a day of the
//     resource either way (Account). A project whose server is down is owed the time it
//     missed and gets it back when its work arrives; seed 001 resets the debt of a
//     project without runnable work to 0, so that time is lost for good. A reply
//     without jobs keeps D(P,R) (ApplyReply: the server most often refused jobs it
//     has), so a project refused is owed too.
//   - Scheduling (Schedule): per resource, first the tasks the round-robin simulation
//     sees missing their computation deadline (the report deadline less the work
//     buffer's low-water mark), earliest deadline first and whatever their project's
//     share (BOINC's deadline mode, which seed 001 lacks), with them any started task
//     that one of them of later deadline would push past its own; then by overall
//     debt as seed 001 does, its anticipated debt falling by the scheduling period per
//     instance given. A task, started or not, that can no longer meet its deadline even if run
//     from now on without a break (by its estimate, corrected only downwards; a started
//     one by its progress when the app reports it) is abandoned (done, as a BOINC client aborts a late unstarted job): running it
//     would only waste the host. While GPU computing is suspended (doc.GPUsSuspended)
//     no coprocessor task runs, so their CPU fractions go to CPU tasks.
//   - Work fetch (Request): each project keeps a buffer of its own, in wall-clock time:
//     enough of its work to last the work buffer at the rate its share gives it, with
//     the host's on fraction counted (seed 001 counts only the active fraction;
//     availability says why not both), but never more than it can finish in 0.3 to 0.5
//     of its jobs' latency, the more the shorter its jobs (latencyCap); a project alone
//     on a resource asks for the whole resource's buffer, without the on fraction,
//     within that cap (aloneWant), the cap in run time as its started tasks show it
//     (capScale); it asks when
//     below the low-water mark or when an instance is idle. So a project with
//     2-hour deadlines holds an hour of work, a reliable project with long deadlines a
//     day, and an unreliable server's project keeps enough to ride out its outages. A
//     project ahead of its share by more than a scheduling period waits for a resource
//     while it holds enough or a project owed more may be asked for it, and is asked
//     for it then only when an instance is idle; the instances its tasks hold count
//     as idle for a project owed more than a period, when the tasks could wait.
//   - Reporting (Next): a result overdue for reporting (seed 000's rule) is reported at
//     the first RPC the host can make, whether or not any project needs work; seed
//     000's Poll lets it wait while the host is low on work, and a host that is off
//     much of the time may not get another chance before the deadline. On a host with
//     one project the report also asks for the work it lacks below its want
//     (BOINC's piggybacked request; Next).
package goals

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// Name is the policy's name for --policy.
const Name = "goals"

// LatencyFraction is the part of a job's latency its project's buffer may hold at
// least: the work a project holds must be done in part of its jobs' latency at its
// share's rate, the rest being the margin for estimates that are low and time the host
// is off.
const LatencyFraction = 0.3

// LatencyFractionMax is the part of a job's latency its project's buffer may hold at
// most: as much as leaves twice the longest job's estimated run time to spare, but no
// more than half (needsOf).
const LatencyFractionMax = 0.5

// DebtLimit is how far a debt may go either way, in days of the whole resource: the
// shares are enforced "in a typical period of a day or two" (seed 001).
const DebtLimit = 1.0

const fitSlack = 1e-9

// minAvailability is the least availability a task's run time is stretched by when
// Request asks whether it could wait (a host with on_frac 0 still computes under
// BOINC's emulator's conventions).
const minAvailability = 0.01

// Workspace keeps what the policy's passes and requests need from one call to the
// next: the document's name index, what each app version's tasks take, and the
// buffers of a pass, a request and the debts' accounting. It is for a caller that
// schedules, asks and accounts at every step (the emulator, about 1,500 times a
// simulated day: making them anew at each call was 80,000 objects, 15 MB, a simulated
// day, and half a run's time went to allocating and collecting them). The zero value
// is ready. Its answers are Schedule's, Needs', Request's, Next's and Account's, to the
// last bit; the slices it returns (the abandoned tasks, the needs, a request's
// Coprocs) are w's, good until its next call. As for those functions, doc must be valid
// (state.Validate: unique names, known references).
type Workspace struct {
	// Quiet leaves the words out: a request's Reason and a plan's Why stay empty; every
	// choice and number is the same. The emulator asks at every step and shows none,
	// and a report's reason was a new string at each report.
	Quiet bool

	projects, appVersions state.Names
	avRes                 []int     // per app version: its host resource
	avInst, avCPUs        []float64 // per app version: a task's instances, its CPUs beside a coprocessor
	avSpeed               []float64 // per app version: its Speed on the host
	tasks                 []taskInfo

	// A pass's buffers (Schedule).
	finish               prsc.CompletionsWork
	abandoned            []int
	overall, anticipated []float64 // per project
	chosen               []bool    // per task
	seen                 []bool    // per project
	order                []int     // the host's resources, coprocessors first
	mine, late           []taskInfo
	byRank               [3][]taskInfo // a resource's tasks by rank

	// A request's buffers (Needs, Request, Next).
	needs             []Need
	idle              []float64 // per host resource
	queued            []float64 // [p*nr+r]
	latency, longest  []float64 // per project
	ranFor, ranEst    []float64 // per project: its started tasks' elapsed time, and their estimates × progress
	skip              []int
	coprocs           []state.CoprocRequest
	resLow, resQueued []float64 // per host resource
	resTop            []float64 // per host resource
	held              []float64 // per host resource: instances an owed project may ask for

	// Each project's share of a resource and whether it has an app version for it
	// (shares).
	share []float64
	has   []bool

	debts prsc.DebtWork
}

// taskInfo is a runnable task as the policy sees it.
type taskInfo struct {
	i       int     // index in doc.Tasks
	p       int     // project index
	r       int     // resource index
	inst    float64 // instances of its resource
	cpus    float64 // CPUs a coprocessor task takes beside
	runtime float64 // remaining estimated run time, seconds (at the version's speed)
	speed   float64 // its app version's speed on the host, FLOPS
	rank    int     // 0 running, 1 preempted, 2 ready
	dl      float64 // report deadline
}

// runnable is doc's runnable tasks, in w's storage. A task's project, app version and
// resource are looked up as maps built in document order would answer (state.Names):
// a name that is not there is the first one's.
func (w *Workspace) runnable(doc *state.Document) []taskInfo {
	h := &doc.Host
	w.projects.SetProjects(doc.Projects)
	w.appVersions.SetAppVersions(doc.AppVersions)
	w.avRes, w.avInst, w.avCPUs, w.avSpeed = w.avRes[:0], w.avInst[:0], w.avCPUs[:0], w.avSpeed[:0]
	for v := range doc.AppVersions {
		av := &doc.AppVersions[v]
		r, t := 0, av.ResourceType()
		for k := range h.Resources {
			if h.Resources[k].Type == t {
				r = k // the last of two alike, as the map did
			}
		}
		cpus := 0.0
		if av.Coproc != nil {
			cpus = av.AvgNCPUs
		}
		w.avRes = append(w.avRes, r)
		w.avInst, w.avCPUs, w.avSpeed = append(w.avInst, av.Instances()), append(w.avCPUs, cpus), append(w.avSpeed, av.Speed(h))
	}
	ts := w.tasks[:0]
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !t.State.Runnable() {
			continue
		}
		v := w.appVersions.Index(t.AppVersion)
		ti := taskInfo{i: i, p: w.projects.Index(t.Project), r: w.avRes[v], inst: w.avInst[v], cpus: w.avCPUs[v], rank: rankOf(t.State), dl: t.ReportDeadline}
		if sp := w.avSpeed[v]; sp > 0 {
			ti.speed = sp
			ti.runtime = t.RemainingWork(doc.Projects[ti.p].DCF()) / sp
		}
		ts = append(ts, ti)
	}
	w.tasks = ts
	return ts
}

// availability is the fraction of wall-clock time resource r computes, as a project's
// buffer counts it: the host's on fraction (× the GPU-active fraction for a
// coprocessor), not its active fraction. A task started goes on through the spells in
// which the host is on but not active under BOINC's emulator's conventions (client/sim.cpp,
// the must-hold's), and every corpus scenario's preferences say run_if_user_active, so
// the work held drains at the on fraction's rate; counted, the active fraction shrank
// the buffer and the host idled before the next request (seed 1, all three within
// +0.01 of BOINC: 95 -> 96 of 199; seeds 1-5 90 -> 93). Under bsim's own conventions
// part-time-4cpu (active 0.9) moves by under 0.001 (docs/decisions.md).
func availability(h *state.Host, r int) float64 {
	ts := h.TimeStats
	a := ts.OnFrac
	if h.Resources[r].Type != state.ResourceCPU {
		a *= ts.GPUActiveFrac
	}
	return a
}

// Account brings the debts up to date over dt seconds during which each project used
// used[p][r] instances of each resource (prsc.Usage's rule): seed 002's accounting,
// then every debt clamped to ±DebtLimit days of its resource (instance-seconds). now
// is the interval's end (prsc.AccumulateDebt).
func Account(doc *state.Document, used [][]float64, dt, now float64) {
	var w Workspace
	w.Account(doc, used, dt, now)
}

// Account is Account with w's buffers.
func (w *Workspace) Account(doc *state.Document, used [][]float64, dt, now float64) {
	w.debts.AccumulateDebt(doc, used, dt, now)
	for p := range doc.Projects {
		for k := range doc.Projects[p].Resources {
			pr := &doc.Projects[p].Resources[k]
			if res, ok := doc.Host.Resource(pr.Type); ok {
				lim := DebtLimit * 86400 * float64(res.Instances)
				pr.LongTermDebt = math.Max(-lim, math.Min(lim, pr.LongTermDebt))
			}
		}
	}
}

// Need is one project's work-fetch position on one resource.
type Need struct {
	Project  int
	Resource int
	Queued   float64 // instance-seconds of estimated run time it holds
	Low      float64 // ask when Queued is below this
	Want     float64 // ask for up to this
	Latency  float64 // its jobs' latency as the client saw it (0: no job seen)
	Longest  float64 // the longest estimated run time of the jobs it holds, seconds
}

// Needs returns every (project, resource) position: projects with an app version for
// the resource.
func Needs(doc *state.Document) []Need {
	var w Workspace
	return w.Needs(doc)
}

// Needs is Needs with w's index and buffers.
func (w *Workspace) Needs(doc *state.Document) []Need {
	return w.needsOf(doc, w.runnable(doc))
}

// needsOf is Needs with doc's runnable tasks ts.
func (w *Workspace) needsOf(doc *state.Document, ts []taskInfo) []Need {
	h := &doc.Host
	np, nr := len(doc.Projects), len(h.Resources)
	low, high := rpc.WaterMarks(&doc.Preferences)
	// Each project's work held per resource, each sum in task order.
	queued := scratch.Grow(w.queued, np*nr)
	w.queued = queued
	// And the longest of each project's jobs by its estimate, corrected only downwards
	// (as the test that abandons a task: under --emulate boinc the factor is twice the
	// truth, BOINC's emulator's doubled elapsed time).
	longest := scratch.Grow(w.longest, np)
	w.longest = longest
	// And what its started tasks show of its estimates: their elapsed time against
	// their estimated run time (uncorrected) × their progress.
	ranFor, ranEst := scratch.Grow(w.ranFor, np), scratch.Grow(w.ranEst, np)
	w.ranFor, w.ranEst = ranFor, ranEst
	for _, t := range ts {
		queued[t.p*nr+t.r] += t.runtime * t.inst
		if dt := &doc.Tasks[t.i]; t.speed > 0 && dt.FractionDone > 0 && dt.ElapsedTime > 0 {
			ranFor[t.p] += dt.ElapsedTime
			ranEst[t.p] += dt.FractionDone * dt.EstimatedFlops / t.speed
		}
		if t.speed > 0 {
			longest[t.p] = max(longest[t.p], doc.Tasks[t.i].EstimatedFlops*min(1, doc.Projects[t.p].DCF())/t.speed)
		}
	}
	// Each project's latency: the longest from a job's receipt to its deadline.
	latency := scratch.Grow(w.latency, np)
	w.latency = latency
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.ReceivedTime > 0 {
			p := w.projects.Index(t.Project)
			latency[p] = max(latency[p], t.ReportDeadline-t.ReceivedTime)
		}
	}
	out := w.needs[:0]
	for r, res := range h.Resources {
		share, has := w.shares(doc, res.Type)
		a := availability(h, r)
		for p := range doc.Projects {
			if !has[p] {
				continue
			}
			nd := Need{Project: p, Resource: r, Queued: queued[p*nr+r], Latency: latency[p], Longest: longest[p]}
			rate := float64(res.Instances) * share[p] * a // instances of the resource per wall second
			lo, hi := low*86400, high*86400
			want := rate * hi
			if nd.Latency > 0 {
				lc := latencyCap(nd.Latency, nd.Longest)
				if share[p] >= 1 {
					lc *= capScale(doc.Projects[p].DCF(), ranFor[p], ranEst[p])
				}
				hi = math.Min(hi, lc)
				lo = math.Min(lo, hi/2)
				want = rate * hi
				if share[p] >= 1 {
					want = aloneWant(float64(res.Instances), high*86400, rate, lc)
				}
			}
			nd.Low, nd.Want = rate*lo, want
			out = append(out, nd)
		}
	}
	w.needs = out
	return out
}

// aloneWant is what a project asks for, up to, on a resource no other project has an
// app version for (no share is at stake there): BOINC's shortfall, the resource's
// instances × the work buffer in wall-clock seconds without the host's availability
// (work_fetch.cpp RSC_WORK_FETCH::set_request asks for the idle instance-seconds
// rr_sim.cpp counts over the buffer's wall-clock window, while the jobs it simulates
// run at on_frac's rate), but never more than the latency cap lc holds at the
// project's rate (its jobs must still be done in part of their latency when the host
// is off as often as its on fraction says). Counted at the on fraction's rate, a lone
// project's buffer ran dry on part-time hosts whose tasks go on while the host is off
// (BOINC's emulator's conventions, the must-hold's): c136, one project, 5 CPUs, on
// 0.444, its server up a third of the time, idled 0.042 more than BOINC (seeds 1-5),
// now 0.046 less. With projects sharing the resource the fuller request costs shares
// (tried: a project of share 0.46 on c185's one CPU, sv +0.10 -> +0.21), so there the
// buffer stays at the on fraction's rate. Unknown latency (no job held) keeps the on
// fraction's rate too: the cap is not known, and a full buffer of jobs whose deadlines
// turn out short is wasted.
func aloneWant(instances, high, rate, lc float64) float64 {
	return math.Min(instances*high, rate*lc)
}

// capScale turns the latency cap, meant as part of the latency in run time, into the
// corrected estimates the buffer is counted in, for a project alone on a resource: the
// factor dcf over the ratio of the project's started tasks' elapsed time (ran) to their
// uncorrected estimated run time × progress (ranEst), when that ratio is below dcf;
// else 1. The factor goes up at once with one job that ran long and down slowly, so on
// a project whose apps' estimates are unlike it sits at the worst one's ratio (and under
// BOINC's emulator's conventions, elapsed time counted twice, at twice it), and the cap
// held half the work or less: c052 and c143, one project each, ran dry while their
// server was down (docs/decisions.md, issue 29's ninth round). Where projects share the
// resource the cap stays in corrected estimates (tried: their short-deadline jobs were
// late more often, c072 wf +0.003 -> +0.038).
func capScale(dcf, ran, ranEst float64) float64 {
	if !(ranEst > 0) || ran <= 0 {
		return 1
	}
	return max(1, dcf*ranEst/ran)
}

// latencyCap is the most a project's buffer may hold, in wall-clock seconds at its
// share's rate, for jobs of the given latency whose longest estimated run time is
// longest: a job fetched behind the buffer waits for it and then runs, and its estimate
// may be half the truth (the corpus draws estimates up to 50 % low), so the buffer
// leaves twice the longest job to spare; never more than half the latency (the other
// half is the margin for a project that gets less than its share, and for the host
// being off), and never less than LatencyFraction of it (jobs that fill most of their
// latency keep the cap they had: deadlines-4cpu, 2-hour deadlines for 1-hour jobs,
// wastes 0.13 of the host at 0.35 of the latency against 0.003 at 0.3). At 0.3 of the
// latency short jobs with long deadlines ran dry while their server was down (c143:
// 16-minute jobs, 2.5-hour deadlines, the one project's server down in spells of 20
// minutes: idle 0.109 against BOINC's 0.027, now 0.057; seeds 1-5).
func latencyCap(latency, longest float64) float64 {
	return max(LatencyFraction*latency, min(LatencyFractionMax*latency, latency-2*longest))
}

// Request is the policy's next work request at now, not to the projects in asked
// (indices in doc.Projects): among the projects that may be contacted (seed 000's RPC
// backoff) and are not backed off for the resource, first one with an app version for
// a resource that has an idle instance (the largest overall debt), else the one below
// its low-water mark on some resource with the largest overall debt. For a project
// owed more than a scheduling period of a resource, the instances held by tasks of
// projects ahead of their share by as much, which could wait a period, count as idle.
// The request asks that project, on every resource where it holds less than it wants,
// for the difference (req_secs) and the idle instances (req_instances). ok is false
// when no project needs asking.
func Request(doc *state.Document, now float64, asked []int) (req state.WorkRequest, ok bool) {
	var w Workspace
	return w.Request(doc, now, asked)
}

// Request is Request with w's index and buffers; the request's Coprocs are w's.
func (w *Workspace) Request(doc *state.Document, now float64, asked []int) (req state.WorkRequest, ok bool) {
	req, _, ok = w.request(doc, now, asked)
	return req, ok
}

// request is Request and the index of the project it asks.
func (w *Workspace) request(doc *state.Document, now float64, asked []int) (req state.WorkRequest, project int, ok bool) {
	h := &doc.Host
	ts := w.runnable(doc)
	needs := w.needsOf(doc, ts)
	idle := w.idleInstances(doc, ts)
	eligible := func(nd Need) bool { return eligible(doc, nd, now, asked) }
	best, bestRes, bestIdle := -1, 0, false
	debt := func(p int) float64 { return prsc.OverallDebt(h, &doc.Projects[p]) }
	// overserved is how far a project's overall debt may fall below 0 before it is
	// ahead of its share on resource r: a scheduling period of the whole resource.
	overserved := func(r int) float64 {
		res := h.Resources[r]
		return doc.Preferences.CPUSchedulingPeriod * float64(res.Instances) * prsc.RelativeSpeed(h, res)
	}
	// Each resource's work held and low-water mark over all its projects, and the
	// largest debt of a project that may be asked for it.
	nr := len(h.Resources)
	resLow, resQueued := scratch.Grow(w.resLow, nr), scratch.Grow(w.resQueued, nr)
	w.resLow, w.resQueued = resLow, resQueued
	resTop := scratch.Grow(w.resTop, nr)
	w.resTop = resTop
	for r := range resTop {
		resTop[r] = math.Inf(-1)
	}
	for _, nd := range needs {
		resLow[nd.Resource] += nd.Low
		resQueued[nd.Resource] += nd.Queued
		if eligible(nd) {
			resTop[nd.Resource] = max(resTop[nd.Resource], debt(nd.Project))
		}
	}
	// Each resource's instances held by tasks of projects ahead of their share by
	// more than a scheduling period, when such a task could wait a scheduling period
	// and still meet its computation deadline at the host's availability: a project
	// owed more than a period would have them (the pass runs by debt, and deadline
	// mode brings the task back if it becomes late), so for that project's request
	// they are as good as idle (free). Only idle instances counted, a project far
	// ahead of its share that filled the instances while the one owed was down or
	// backed off kept them for as long as its jobs ran, the owed project being asked
	// only below its low-water mark, and then for its buffer's seconds and no
	// instances (c010: A, share 4.6 %, used half of the CPUs with 22-hour jobs
	// fetched while B's server was down; c015: E, 0.13 %, 10 %; c093: B, 3.6 %, 14 %).
	held := scratch.Grow(w.held, nr)
	w.held = held
	margin := doc.Preferences.WorkBufMinDays*86400 + doc.Preferences.CPUSchedulingPeriod
	for _, t := range ts {
		if debt(t.p) < -overserved(t.r) && now+t.runtime/max(availability(h, t.r), minAvailability)+margin < t.dl {
			held[t.r] += t.inst
		}
	}
	// free is the instances of its resource that position nd's project may ask for:
	// the idle ones, and those held by projects far ahead of their share when it is
	// owed more than a scheduling period of the resource.
	free := func(nd Need) float64 {
		if debt(nd.Project) > overserved(nd.Resource) {
			return idle[nd.Resource] + held[nd.Resource]
		}
		return idle[nd.Resource]
	}
	// waits reports whether position nd's project waits for its resource: ahead of its
	// share (overserved), while the resource holds enough or a project owed more may
	// be asked for it.
	waits := func(nd Need) bool {
		return debt(nd.Project) < -overserved(nd.Resource) && (resQueued[nd.Resource] >= resLow[nd.Resource] || debt(nd.Project) < resTop[nd.Resource])
	}
	for _, idleStep := range [...]bool{true, false} {
		for _, nd := range needs {
			if !eligible(nd) {
				continue
			}
			if idleStep && free(nd) <= fitSlack {
				continue
			}
			if !idleStep && nd.Queued >= nd.Low {
				continue
			}
			// A project ahead of its share by more than a scheduling period of the
			// resource refills its own buffer only when the resource as a whole runs
			// low and no project that may be asked for it is owed more (BOINC asks the
			// project of highest priority for a resource's shortfall, work_fetch.cpp
			// choose_project). Its buffer drains as fast as it runs, and a project
			// whose tasks run in deadline mode runs far beyond its share: asked again
			// whenever it is empty, it kept the resource (c167: a project of share 1
			// had half of a GPU, its tasks late in the simulation at its share's
			// rate; c171: one of share 28 had three quarters of a GPU whenever the
			// CPUs ran low). Within a period is a time slice's swing (down-2cpu: a
			// project whose server is down half the time keeps its buffer).
			if !idleStep && waits(nd) {
				continue
			}
			if best < 0 || debt(nd.Project) > debt(best) {
				best, bestRes, bestIdle = nd.Project, nd.Resource, idleStep
			}
		}
		if best >= 0 {
			break
		}
	}
	if best < 0 {
		return state.WorkRequest{}, -1, false
	}
	req = state.WorkRequest{Time: now, Project: doc.Projects[best].Name, Coprocs: w.coprocs[:0]}
	if !w.Quiet {
		req.Reason = "goals: " + h.Resources[bestRes].Type
		switch {
		case bestIdle && idle[bestRes] > fitSlack:
			req.Reason += " instance idle"
		case bestIdle:
			req.Reason += " instance held by a project far ahead of its share"
		default:
			req.Reason += " below the project's low-water mark"
		}
	}
	for _, nd := range needs {
		secs := math.Max(0, nd.Want-nd.Queued)
		inst := math.Max(0, free(nd))
		if nd.Project != best || !eligible(nd) || (secs <= 0 && inst <= fitSlack) {
			continue
		}
		// A project asked because an instance of one resource is idle is not asked
		// for the others where it waits (c130: C, far ahead of its share, was asked
		// for a CPU another project could not take and for a day of GPU work with it).
		if inst <= fitSlack && waits(nd) {
			continue
		}
		if h.Resources[nd.Resource].Type == state.ResourceCPU {
			req.CPUReqSecs, req.CPUReqInstances = secs, inst
		} else {
			req.Coprocs = append(req.Coprocs, state.CoprocRequest{Type: h.Resources[nd.Resource].Type, ReqSecs: secs, ReqInstances: inst})
		}
		req.WorkReqSeconds = math.Max(req.WorkReqSeconds, secs)
	}
	w.coprocs = req.Coprocs
	if len(prsc.Requested(&req)) == 0 {
		return state.WorkRequest{}, -1, false
	}
	return req, best, true
}

// idleInstances is, per host resource, the instances no runnable task (ts) takes.
func (w *Workspace) idleInstances(doc *state.Document, ts []taskInfo) []float64 {
	idle := scratch.Grow(w.idle, len(doc.Host.Resources))
	w.idle = idle
	for r, res := range doc.Host.Resources {
		idle[r] = float64(res.Instances)
	}
	for _, t := range ts {
		idle[t.r] -= t.inst
	}
	return idle
}

// eligible reports whether the project of position nd may be asked for work of its
// resource at now: not in asked, not in seed 000's RPC backoff, not backed off for the
// resource (seed 002).
func eligible(doc *state.Document, nd Need, now float64, asked []int) bool {
	p := &doc.Projects[nd.Project]
	return !slices.Contains(asked, nd.Project) && rpc.CanContact(p, now) && !prsc.BackedOff(p, doc.Host.Resources[nd.Resource].Type, now)
}

// shares returns each project's fraction of the resource shares among the projects
// with an app version for resource type t (0 for the others), and whether it has one;
// both are w's, good until its next call.
func (w *Workspace) shares(doc *state.Document, t string) (share []float64, has []bool) {
	share, has = scratch.Grow(w.share, len(doc.Projects)), scratch.Grow(w.has, len(doc.Projects))
	w.share, w.has = share, has
	var total float64
	n := 0
	for p := range doc.Projects {
		has[p] = hasVersionFor(doc, doc.Projects[p].Name, t)
		if has[p] {
			total += doc.Projects[p].ResourceShare
			n++
		}
	}
	for p := range doc.Projects {
		if has[p] {
			share[p] = 1 / float64(n)
			if total > 0 {
				share[p] = doc.Projects[p].ResourceShare / total
			}
		}
	}
	return share, has
}

// hasVersionFor reports whether project has an app version for resource type t.
func hasVersionFor(doc *state.Document, project, t string) bool {
	return slices.ContainsFunc(doc.AppVersions, func(av state.AppVersion) bool {
		return av.Project == project && av.ResourceType() == t
	})
}
