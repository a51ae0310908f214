package sim

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/bkit/bkit/lib/cpusched"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
	"github.com/bkit/bkit/lib/workfetch"
)

func init() {
	Register("seed", func() Policy {
		return &seedPolicy{sched: cpusched.Workspace{Quiet: true}, decide: prsc.DecideWork{Quiet: true}}
	})
}

// seedPolicy is the seeds together, each stage through the very functions its program
// calls:
//
//   - scheduling: seed 001's pass (lib/cpusched, bsched) whenever cpusched.Due says one
//     is due; coprocessors by seed 002's per-resource long-term debts, which
//     Account (bdevices debt) brought up to date at the end of the step before;
//   - reporting: seed 000's poll (lib/rpc): a report-result session for a project with
//     overdue results, asking for work too when rpc.Poll says so and seed 001 has a
//     request for that project;
//   - CPU work fetch: seed 001 (lib/workfetch, bfetch) at every poll: when a project
//     will starve within the connection period, the projects with a work request are
//     asked for it, the largest request first, each at most once per step (rpc.Next);
//   - coprocessor work fetch: seed 002 (lib/prsc, bdevices request): the round-robin
//     simulation and select_project by overall long-term debt + shortfall, sending the
//     coprocessor part of its request (seed 001 knows only CPUs);
//   - replies: prsc.ApplyReply (bdevices reply) for the per-resource backoffs and D
//     flags; RPC failures are seed 000's backoff, which the loop applies;
//   - accounting: seed 000's exp_avg_cpu (rpc.UpdateExpAvgCPU) and seed 002's long-term
//     debts (prsc.AccumulateDebt, as bdevices debt) after every step, from what each
//     project's tasks really used during it ('bsim advance' in a shell loop).
type seedPolicy struct {
	decided bool
	fetch   workfetch.Decision // seed 001's latest decision

	// Skips that change no decision, only the time a run takes (the emulator calls
	// these functions about 1,500 times per simulated day):
	//   - cpusched.Due is asked only when its answer may have changed (dueSkip);
	//   - seed 001's decision cannot change an RPC before fetchCheck (see
	//     nextFetchCheck) unless a task has finished since (finished differs from the
	//     loop's count) or an RPC was made (Replied);
	//   - rpc.Next finds no RPC at a step's first poll, after once finding none, until
	//     idleUntil (see NextRPC) unless the tasks change or an RPC is made;
	//   - the debts' inputs besides the step's use (the projects' resource entries, D
	//     flags and shares, the host) change only in a reply (prsc.ApplyReply): from one
	//     Account to the next without a reply, DebtWork compares the use alone
	//     (debtsSame, AccumulateDebtSame).
	due          dueSkip
	idle         bool
	idleUntil    float64
	quietUntil   []float64 // per project: requestsQuiet's bound
	fetchCheck   float64
	fetchQuietAt float64 // fetchQuiet's part of fetchCheck
	decisions    int     // seed 001's decisions made (tests count the skips)
	bounded      bool    // fetchCheck is fetchQuietAt and quietUntil's bound (afterRPC)
	finished     int     // the loop's count at the last Account
	seenFinished int     // the count when seed 001 last decided
	maxRate      float64 // FLOPS the host can give at most, all resources together
	overest      float64 // the loop's bound on estimate ÷ real work (overestimate)
	workRate     float64 // how many times faster than work is done estimates can fall
	debtsSame    bool    // no reply since the last Account (see the skips above)

	jitter replyRand           // the replies' random source
	decay  rpc.ExpDecay        // exp_avg_cpu's decay factor of a step
	debts  prsc.DebtWork       // AccumulateDebt's buffers
	decide prsc.DecideWork     // seed 002's decision's buffers (bdevices request)
	sched  cpusched.Workspace  // the passes' buffers and index
	wf     workfetch.Workspace // seed 001's decision's buffers
}

// Begin sets D(P,R) for every resource a project has app versions for, unless the
// document already says anything about it (prsc.SetDFromAppVersions). Seed 002 defines
// D(P,R) as "P would likely supply a job for R if we asked it", which an app version of
// P for R shows. Starting from false, as the seed's text does for a project never heard
// from, select_project (which asks only projects that may have the resource's jobs)
// would never ask anybody.
func (sp *seedPolicy) Begin(doc *state.Document) { prsc.SetDFromAppVersions(doc, true) }

func (sp *seedPolicy) Schedule(doc *state.Document, now float64) bool {
	if !sp.due.due(&sp.sched, doc, now) {
		return false
	}
	sp.sched.Schedule(doc, now)
	return true
}

// NextRPC is, in a shell loop, bfetch, then bdevices request, then 'brpc poll': seed
// 001's work-fetch decision recorded in the document, seed 002's request for the
// coprocessors, and rpc.Next's choice among them.
//
// At a step's first poll on a host without coprocessors, once it found no RPC, it
// finds none again until idleUntil: seed 001's decision is not made again before
// fetchCheck (no task finished since) and no request it made can be sent (see
// nextFetchCheck), and no report can be made before reportFrom. The loop's changes to
// the tasks and an RPC end the idle time (tasksChanged, Replied).
func (sp *seedPolicy) NextRPC(doc *state.Document, now float64, asked []int) (RPC, bool) {
	first := len(asked) == 0
	if first && sp.idle && !noSkips && now < sp.idleUntil && sp.finished == sp.seenFinished {
		return RPC{}, false
	}
	// After an RPC at this step (asked), on a host without coprocessors, the next RPC
	// could only be a CPU request to a project not asked yet: none while each one's
	// request is known to be 0 or unsendable (othersQuiet), no task having finished.
	if !first && !noSkips && len(doc.Host.Resources) == 1 && sp.decided && sp.finished == sp.seenFinished &&
		len(sp.quietUntil) == len(doc.Projects) && sp.othersQuiet(now, asked) {
		return RPC{}, false
	}
	sp.decideFetch(doc, now)
	r, ok := rpc.NextQuiet(doc, now, asked, func() state.WorkRequest { return sp.decide.Decide(doc, now).Request })
	sp.idle = !ok && first && len(doc.Host.Resources) == 1
	if sp.idle {
		sp.idleUntil = min(sp.fetchCheck, reportFrom(doc))
		if !sp.bounded {
			// fetchCheck then says only that seed 001's decision stands (no app version
			// can work its tasks off), not that no request it made can be sent: rpc.Next
			// asks a project that has no app version yet once it may be contacted.
			sp.idleUntil = min(sp.idleUntil, contactFrom(doc, now))
		}
	}
	return RPC{Project: r.Project, Request: r.Request, Why: r.Why}, ok
}

// reportFrom is a time before which seed 000's poll starts no report session, with
// the tasks and the projects' RPC times as they are: a report needs a done result
// overdue for reporting (rpc.Overdue: its report deadline a cushion away, or finished
// long enough ago) of a project that may be contacted (min_rpc_time passed). The
// overdue times are taken one second early for the rounding of their sums; +Inf
// without done tasks.
func reportFrom(doc *state.Document) float64 {
	at := math.Inf(1)
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.State != state.TaskDone {
			continue
		}
		overdue := t.ReportDeadline - rpc.ReportDeadlineCushion
		if t.CompletedTime > 0 {
			overdue = min(overdue, t.CompletedTime+rpc.MaxReportDelay)
		}
		contact := math.Inf(-1) // a task of no known project: its time alone
		for p := range doc.Projects {
			if doc.Projects[p].Name == t.Project {
				contact = doc.Projects[p].MinRPCTime
				break
			}
		}
		at = min(at, max(overdue-1, contact))
	}
	return at
}

// contactFrom is the earliest time after now at which a project's min_rpc_time or CPU
// backoff ends, +Inf when none is ahead: before it, no project becomes contactable.
func contactFrom(doc *state.Document, now float64) float64 {
	at := math.Inf(1)
	for i := range doc.Projects {
		p := &doc.Projects[i]
		for _, t := range [2]float64{p.MinRPCTime, cpuBackoffUntil(p)} {
			if t > now {
				at = min(at, t)
			}
		}
	}
	return at
}

// noSkips, set by tests, turns off every skip of the seed policy (Due's, rpc.Next's
// and seed 001's decision's), so that a run can be compared with one that asks every
// function at every poll (TestSkipsChangeNothing).
var noSkips bool

// tasksChanged is the loop's word that it changed the tasks (watcher): Due's and
// rpc.Next's answers are found again.
func (sp *seedPolicy) tasksChanged() { sp.due.changed(); sp.idle = false }

// decideFetch is bfetch: seed 001's compute_work_request at now, recorded in doc. It
// is skipped when it cannot change: before fetchCheck with no task finished since.
func (sp *seedPolicy) decideFetch(doc *state.Document, now float64) {
	if sp.decided && !noSkips && now < sp.fetchCheck && sp.finished == sp.seenFinished {
		return
	}
	sp.decided = true
	sp.decisions++
	sp.fetch = *sp.wf.Decide(doc) // Compute's decision, without the reasons no one reads here
	workfetch.Apply(doc, sp.fetch, now)
	sp.fetchCheck, sp.seenFinished = sp.nextFetchCheck(doc, now), sp.finished
}

// Replied is bdevices reply: the per-resource backoffs and D flags, jitter drawn from
// the reply's seed as bdevices draws it from --seed.
func (sp *seedPolicy) Replied(doc *state.Document, r RPC, rep Reply, now float64) {
	applyReply(doc, r, rep, now, &sp.jitter)
	sp.debtsSame = false // the reply may change the D flags and add resource entries
	// An RPC changes what nextFetchCheck's bound was made from for the project asked
	// (its min_rpc_time, backoffs and tasks): afterRPC says how long the decision still
	// holds. Plan and ask Due again.
	sp.fetchCheck = sp.afterRPC(doc, r.Project, now)
	sp.due.changed()
	sp.idle = false
}

// afterRPC is nextFetchCheck's bound after an RPC (or master file read) to project
// asked at now, with seed 001's decision unchanged; -Inf (decide again at the next
// poll) unless the host has only CPUs, as NextRPC's skips assume too.
//
// The bound still holds for every other project: a project's request (requestsQuiet)
// depends on its own tasks and RPC times only, which the RPC does not change. For the
// project asked, its request is read only once it can be contacted for CPU work again
// (rpc.Next: min_rpc_time passed, CPU not backed off): its bound becomes that time,
// or now, when it may be contacted at once (decide again). dont_need_work's bound
// (fetchQuiet) stays: the RPC reports done tasks (never runnable) and adds new ones,
// which only add to a project's ETTPRC. A task that finishes ends the hold as before
// (decideFetch compares the loop's count). TestHoldAfterRPCChangesNothing compares
// runs with and without this bound.
func (sp *seedPolicy) afterRPC(doc *state.Document, asked int, now float64) float64 {
	if noHoldAfterRPC || noSkips || !sp.decided || !sp.bounded || len(doc.Host.Resources) != 1 || len(sp.quietUntil) != len(doc.Projects) {
		return math.Inf(-1)
	}
	p := &doc.Projects[asked]
	backoff := cpuBackoffUntil(p)
	if rpc.CanContact(p, now) && !(backoff > now) {
		return math.Inf(-1)
	}
	sp.quietUntil[asked] = max(p.MinRPCTime, backoff)
	return max(sp.fetchQuietAt, slices.Min(sp.quietUntil))
}

// noHoldAfterRPC, set by tests, makes seed 001 decide again after every RPC, as it
// did before afterRPC.
var noHoldAfterRPC bool

// applyReply is bdevices reply after a successful RPC r: seed 002's per-resource
// backoffs and D flags, jitter drawn from the reply's seed as bdevices draws it from
// --seed.
func applyReply(doc *state.Document, r RPC, rep Reply, now float64, jitter *replyRand) {
	if rep.Failed {
		return
	}
	req := prsc.Requested(&r.Request)
	if len(req) == 0 {
		return
	}
	// The only error is an unknown project or resource, which the loop cannot produce.
	_ = prsc.ApplyReply(doc, req, prsc.Reply{Project: doc.Projects[r.Project].Name, Jobs: rep.Jobs, InstancesOnly: prsc.InstancesOnly(&r.Request)}, rep.ThreeState, now, jitter.seeded(rep.Seed))
}

// replyRand is the source of a reply's jitter, kept from reply to reply: seeded with
// the reply's seed it draws what prsc.NewRand's source would.
type replyRand struct {
	pcg rand.PCG
	r   *rand.Rand
}

func (x *replyRand) seeded(seed uint64) *rand.Rand {
	prsc.Reseed(&x.pcg, seed)
	if x.r == nil {
		x.r = rand.New(&x.pcg)
	}
	return x.r
}

// nextFetchCheck is a time before which seed 001's decision cannot change any RPC the
// loop makes, unless a task finishes or an RPC is made first (decideFetch and Replied
// see to those). Two arguments give one each, and the later holds:
//
//   - dont_need_work stays: each project's ETTPRC S must fall below T first, and with
//     the set of runnable results unchanged (new results only add to S) S falls at most
//     as fast as the whole host could work off the project's estimates: maxRate ÷ one
//     CPU's FLOPS ÷ avg_proc_rate seconds per second (fetchQuiet), times workRate (a
//     started task's estimate falls faster than its work is done when its estimate
//     is high or its project's correction factor is);
//   - every request that could be sent stays 0 (requestsQuiet).
//
// Any other decision means check again at the next poll.
func (sp *seedPolicy) nextFetchCheck(doc *state.Document, now float64) float64 {
	d := &sp.fetch
	sp.bounded = false // (afterRPC: no hold unless the bound below is made)
	sp.quietUntil = sp.quietUntil[:0]
	for range doc.Projects {
		sp.quietUntil = append(sp.quietUntil, now) // unless requestsQuiet shows otherwise
	}
	if d.CPUFlops <= 0 {
		return now
	}
	if sp.maxRate == 0 {
		for _, r := range doc.Host.Resources {
			var speed, need float64 = 0, math.Inf(1)
			for _, av := range doc.AppVersions {
				if av.ResourceType() == r.Type {
					speed = max(speed, av.Speed(&doc.Host))
					if n := av.Instances(); n > 0 {
						need = min(need, n)
					}
				}
			}
			if speed > 0 {
				sp.maxRate += float64(r.Instances) / need * speed
			}
		}
	}
	if sp.maxRate <= 0 {
		return math.Inf(1)
	}
	// A started task's estimated remaining work falls (estimate × correction factor ÷
	// real work) times as fast as its work is done (state.Task.RemainingWork); the
	// factors change only when a task completes, after which seed 001 decides again.
	sp.workRate = max(1, sp.overest)
	for i := range doc.Projects {
		sp.workRate = max(sp.workRate, max(1, sp.overest)*doc.Projects[i].DCF())
	}
	sp.fetchQuietAt, sp.bounded = sp.fetchQuiet(now), true
	return max(sp.fetchQuietAt, sp.requestsQuiet(doc, now))
}

// fetchQuiet is when seed 001's urgency can rise above dont_need_work at the earliest
// (now when it is above already): see nextFetchCheck.
func (sp *seedPolicy) fetchQuiet(now float64) float64 {
	d := &sp.fetch
	if d.Urgency != workfetch.DontNeedWork {
		return now
	}
	next := math.Inf(1)
	for _, r := range d.Rows {
		if math.IsInf(r.ETTPRC, 1) || r.AvgProcRate <= 0 {
			continue
		}
		next = min(next, now+(r.ETTPRC-d.T)*r.AvgProcRate*d.CPUFlops/sp.maxRate/sp.workRate)
	}
	return next
}

// requestsQuiet is the earliest time at which a CPU request seed 001 makes could be
// sent (now when one could be now). A project's request is read only while it can be
// contacted for CPU work (rpc.Next: min_rpc_time passed, CPU not backed off), which
// cannot begin before both times pass; while it can, a request of 0 (ETTPRC S >= 2T)
// stays 0 until S could fall below 2T, at most as fast as in fetchQuiet. The bound
// keeps a margin of 1e-9 × S for the rounding of the sums S is made of.
//
// The bound of each project is kept (quietUntil): a project's request depends on its
// own tasks and RPC times only, so after an RPC to another project it still holds.
func (sp *seedPolicy) requestsQuiet(doc *state.Document, now float64) float64 {
	d := &sp.fetch
	next := math.Inf(1)
	for i := range d.Rows {
		r, p := &d.Rows[i], &doc.Projects[i]
		q := math.Inf(1) // its request is 0 whatever happens, unless below
		backoff := cpuBackoffUntil(p)
		switch {
		case !rpc.CanContact(p, now) || backoff > now:
			q = max(p.MinRPCTime, backoff)
		case r.WorkRequest != 0:
			q = now
		case math.IsInf(r.ETTPRC, 1) || r.AvgProcRate <= 0:
		default:
			if gap := r.ETTPRC - 2*d.T - 1e-9*r.ETTPRC; gap > 0 {
				q = now + gap*r.AvgProcRate*d.CPUFlops/sp.maxRate/sp.workRate
			} else {
				q = now
			}
		}
		sp.quietUntil[i] = q
		next = min(next, q)
	}
	return next
}

// othersQuiet reports whether no project but those in asked can be sent a CPU request
// of seed 001's at now: each one's bound from the last decision (requestsQuiet) is
// still ahead.
func (sp *seedPolicy) othersQuiet(now float64, asked []int) bool {
	for i, q := range sp.quietUntil {
		if !(now < q) && !slices.Contains(asked, i) {
			return false
		}
	}
	return true
}

// cpuBackoffUntil is the end of project p's CPU work-fetch backoff (prsc.BackedOff's
// entry; 0 when it has none).
func cpuBackoffUntil(p *state.Project) float64 {
	for i := range p.Resources {
		if p.Resources[i].Type == state.ResourceCPU {
			return p.Resources[i].BackoffUntil
		}
	}
	return 0
}

func (sp *seedPolicy) overestimate(x float64) { sp.overest = x }

func (sp *seedPolicy) Account(doc *state.Document, u *StepUsage) {
	sp.finished = u.Finished
	for p := range doc.Projects {
		sp.decay.UpdateExpAvgCPU(&doc.Projects[p], u.CPUTime[p], u.Now)
	}
	if sp.debtsSame {
		sp.debts.AccumulateDebtSame(doc, u.Used, u.DT, u.Now)
	} else {
		sp.debts.AccumulateDebt(doc, u.Used, u.DT, u.Now)
	}
	sp.debtsSame = true // until the next reply (Replied)
	doc.DebtTime = u.Now
}

// projectIndex is the index of the project named name, or -1.
func projectIndex(doc *state.Document, name string) int {
	for i := range doc.Projects {
		if doc.Projects[i].Name == name {
			return i
		}
	}
	return -1
}
