package sim

import (
	"slices"
	"unsafe"

	"github.com/bkit/bkit/lib/boincpolicy"
	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/glibcrand"
	"github.com/bkit/bkit/lib/state"
)

func init() {
	Register(BOINCPolicy, func() Policy { return &boincPolicy{work: boincpolicy.Workspace{Quiet: true}} })
}

// BOINCPolicy is the name of today's BOINC client policy (--policy boinc).
const BOINCPolicy = "boinc"

// boincPolicy is today's BOINC client (lib/boincpolicy) in the loop:
//
//   - scheduling: a pass every step (BOINC's client schedules every minute, and
//     BOINC's emulator's step is a minute), boincpolicy.Schedule: deadline misses of
//     the round-robin simulation earliest deadline first, then by REC priority, time
//     slices kept;
//   - RPCs: at most one a step, as BOINC's emulator polls (client/sim.cpp
//     scheduler_rpc_poll): a project with overdue results (seed 000's rule, as for
//     every policy) is contacted with a piggybacked work request, else
//     boincpolicy.ChooseProject's choice;
//   - replies: boincpolicy.HandleReply's per-resource backoffs;
//   - accounting: every project's REC after every step (boincpolicy.Account).
//
// Its decisions depend on the document alone: the workspace only keeps the
// round-robin simulation of the current moment, which an RPC or a change of the tasks
// makes it run again.
type boincPolicy struct {
	jitter replyRand
	g      *glibcrand.Rand // BOINC's stream under --emulate boinc (boincstream.go), else nil
	work   boincpolicy.Workspace
	rel    []float64
	// The host's resources bp.rel and relCPU (their CPUs' FLOPS) were found for
	// (recSpeeds): the slice's data and length.
	relHost *state.Resource
	relN    int
	relCPU  float64
	decay   credit.Decay // REC's decay of a step (Account)
	// busyTimes' buffers: per host resource, each instance's busy time, and the delay.
	busy  [][]float64
	delay []float64
	// BOINC's REC accounting interval in BOINC's emulator (adjustREC): when it
	// started (rec_interval_start; 0: none yet), its length limit (2 ×
	// rec_adjust_period, the emulator's step) and each project's instance-seconds
	// per host resource since it started (secs_this_rec_interval).
	recStart, recLimit float64
	recSecs            [][]float64
	order              []int // runList's buffer
}

func (*boincPolicy) carried() {}

// Schedule runs a pass at every step and reports whether it started or stopped a
// task: a pass that changed none (most are: a held pass, boincpolicy's skips) leaves
// the loop's list of running tasks as it was (Sim.runningHold).
func (bp *boincPolicy) Schedule(doc *state.Document, now float64) bool {
	bp.work.Quiet = !noSkips // the workspace's skips are its quiet mode's
	if len(doc.Tasks) == 0 {
		bp.work.Idle(now)
		return false
	}
	if doc.BOINCEmulator {
		bp.adjustREC(doc, now) // schedule_cpus calls adjust_rec first
	}
	list := bp.work.Schedule(doc, now)
	if bp.work.Changed() {
		bp.order = bp.order[:0]
		for _, e := range list {
			if e.Runs {
				bp.order = append(bp.order, e.Task)
			}
		}
	}
	return bp.work.Changed()
}

// rpcMade: the policy hears in Replied of an RPC that reported and received no task
// (rpcWatcher).
func (*boincPolicy) rpcMade() {}

// reportMade: the policy hears in Replied of an RPC that reported tasks and received
// none (reportWatcher).
func (*boincPolicy) reportMade() {}

// runList: the tasks the last pass that changed a task ran, in its run list's order
// (Sim.noteStarts).
func (bp *boincPolicy) runList() []int { return bp.order }

func (bp *boincPolicy) NextRPC(doc *state.Document, now float64, asked []int) (RPC, bool) {
	bp.work.Quiet = !noSkips
	if bp.work.NoneYet(doc, now, asked) {
		return RPC{}, false // (Next's answer, without its plan copied)
	}
	r, ok := bp.work.Next(doc, now, asked)
	if !ok {
		return RPC{}, false
	}
	return RPC{Project: r.Project, Request: r.Request, Why: r.Why}, true
}

func (bp *boincPolicy) Replied(doc *state.Document, r RPC, rep Reply, now float64) {
	switch {
	case rep.received || rep.tasks && noReportWatch:
		bp.work.TasksReceived() // the RPC's backoffs and the tasks reported and received
	case rep.tasks:
		bp.work.TasksReported() // the RPC's backoffs and the tasks reported (dropped)
	default:
		bp.work.RPCMade() // the RPC's backoffs only (Serve told no tasksChanged)
	}
	if rep.Failed {
		return
	}
	if doc.BOINCEmulator && len(rep.Jobs) > 0 {
		// BOINC's emulator's second pass of the step sees the new jobs with the
		// step's simulation (boincpolicy.Workspace.Arrived).
		bp.work.Arrived()
	}
	if bp.g != nil {
		boincpolicy.HandleReply(doc, r.Project, &r.Request, rep.Jobs, now, bp.g)
		return
	}
	boincpolicy.HandleReply(doc, r.Project, &r.Request, rep.Jobs, now, bp.jitter.seeded(rep.Seed))
}

// useBOINCStream: the resource backoffs draw from BOINC's stream (boincStreamUser).
func (bp *boincPolicy) useBOINCStream(g *glibcrand.Rand) { bp.g = g }

// tasksChanged: the loop settled tasks, or reported or received tasks (Serve); the
// simulation runs again, the workspace's view brought up to date (TasksChanged).
func (bp *boincPolicy) tasksChanged() { bp.work.TasksChanged() }

// gpusChanged: the loop changed whether GPU computing is suspended. The workspace reads
// doc.GPUsSuspended only for coprocessor jobs (the pass's, the round-robin
// simulation's CPUs of coprocessor jobs, the work fetch's pick), so while no app
// version uses a coprocessor, and so no task can (a task that arrives with one comes
// with TasksReceived), its holds and view stay good; else TasksChanged. (Under
// --emulate boinc the GPUs' activity follows the host's, so on a CPU-only host such
// as part-time-4cpu each change of activity ended the holds: issue 30, twenty-fifth
// round.)
func (bp *boincPolicy) gpusChanged(doc *state.Document) {
	for k := range doc.AppVersions {
		if doc.AppVersions[k].Coproc != nil {
			bp.work.TasksChanged()
			return
		}
	}
}

// overestimate: the loop's bound on a job's estimate ÷ real work (noteJobs), which the
// work fetch's hold allows for.
func (bp *boincPolicy) overestimate(x float64) { bp.work.Overestimate = x }

// taskFinished: a task finished its work in the step; it stays running until the loop
// settles it (TaskFinished).
func (bp *boincPolicy) taskFinished() { bp.work.TaskFinished() }

// Account adds the step to every project's REC. BOINC's client counts every task's
// CPUs on the CPU, a coprocessor task's too, beside its coprocessor instances
// (client/work_fetch.cpp WORK_FETCH::accumulate_inst_sec: avg_ncpus to resource 0,
// coproc_usage to the task's coprocessor), where the loop's usage counts a
// coprocessor task on its coprocessor only: the CPUs' column is the step's CPU time
// instead (StepUsage.CPUTime, all of the project's tasks' CPUs). In BOINC's emulator
// it is each task's avg_ncpus, not scaled down when the CPUs are overcommitted
// (StepUsage.cpuSecs), on any host. On a host of CPUs alone the speeds are 1 and the
// column is the CPUs' as it is: boincpolicy.AccountDecayOnlyCPU, without them.
func (bp *boincPolicy) Account(doc *state.Document, u *StepUsage) {
	if doc.BOINCEmulator {
		bp.accountEmulator(doc, u)
		return
	}
	if res := doc.Host.Resources; len(res) == 1 && res[0].Type == state.ResourceCPU {
		boincpolicy.AccountDecayOnlyCPU(doc, u.Used, u.DT, u.Now, res[0].Flops, &bp.decay)
		return
	}
	cpuFlops := bp.recSpeeds(&doc.Host)
	col := -1
	if len(doc.Host.Resources) > 1 {
		col = slices.IndexFunc(doc.Host.Resources, func(r state.Resource) bool { return r.Type == state.ResourceCPU })
	}
	boincpolicy.AccountDecayCPUTime(doc, u.Used, col, u.CPUTime, u.DT, u.Now, bp.rel, cpuFlops, &bp.decay)
}

// accountEmulator is Account under BOINC's emulator, where the step's
// instance-seconds wait for adjust_rec, which handle_finished_apps calls when a task
// has ended, on or off. The usage is added to the interval's instance-seconds as it
// comes, the CPUs' column each task's avg_ncpus (StepUsage.cpuSecs ÷ the step, × the
// step: the same figure bit for bit as a copy of the usage with that column replaced
// made), and no relative speeds, which only adjustREC reads and finds itself. (Account
// runs at every step, the host off too, and under the emulator the copy and the
// speeds were about half of it: issue 30, twenty-third round.)
func (bp *boincPolicy) accountEmulator(doc *state.Document, u *StepUsage) {
	cpu := slices.IndexFunc(doc.Host.Resources, func(r state.Resource) bool { return r.Type == state.ResourceCPU })
	used, cpuSecs, dt := u.Used, u.cpuSecs, u.DT
	col := cpu // the column replaced: none for a step of no length
	if !(dt > 0) {
		col = -1
	}
	var before [][]float64
	if accountCheck != nil {
		before = cloneRows(bp.recSecs)
	}
	if len(bp.recSecs) != len(used) {
		bp.recSecs = make([][]float64, len(used))
	}
	for p := range used {
		secs := bp.recSecs[p]
		if len(secs) != len(used[p]) { // (a row of its length already: as it is)
			secs = slices.Grow(secs, len(used[p]))[:len(used[p])]
			bp.recSecs[p] = secs
		}
		for r, x := range used[p] {
			if r == col && p < len(cpuSecs) {
				x = cpuSecs[p] / dt
			}
			secs[r] += x * dt
		}
	}
	if accountCheck != nil {
		accountCheck(doc, u, before, bp.recSecs)
	}
	// A task that ended counts for the whole step, scheduled as it still is when
	// adjust_rec totals the scheduled tasks' instance-seconds, and the first one
	// (handle_finished_apps's first, whose adjust_rec the later ones find done) for
	// the interval once more, which app_finished adds before that adjust_rec (cs_apps.cpp
	// CLIENT_STATE::app_finished, accumulate_inst_sec). handle_finished_apps walks its
	// list of active tasks, in the order they first started (job.started), so the
	// first is the one that started first, not the first in the document.
	first := 0
	for i, e := range u.ended {
		if e.started < u.ended[first].started {
			first = i
		}
	}
	for i, e := range u.ended {
		k := u.DT - e.run
		if i == first && bp.recStart != 0 {
			k += u.Now - bp.recStart
		}
		bp.creditScheduled(e, cpu, k)
	}
	// A coprocessor task that is scheduled but did not compute, its GPUs not active,
	// counts for the whole step too: adjust_rec totals every CPU_SCHED_SCHEDULED
	// task, and BOINC's emulator leaves such a task scheduled, only not computing
	// (client/sim.cpp ACTIVE_TASK_SET::poll skips it while !gpu_active), until a
	// scheduling pass sees gpu_suspend_reason and preempts it.
	for _, e := range u.stalled {
		bp.creditScheduled(e, cpu, u.DT)
	}
	bp.recLimit = 2 * u.DT
	if u.Ended > 0 {
		bp.adjustREC(doc, u.Now)
	}
}

// accountCheck, with the check on (tests only), is told of each step's instance-seconds
// accountEmulator added: the interval's before and after the usage.
var accountCheck func(doc *state.Document, u *StepUsage, before, after [][]float64)

func cloneRows(x [][]float64) [][]float64 {
	y := make([][]float64, len(x))
	for i := range x {
		y[i] = slices.Clone(x[i])
	}
	return y
}

// creditScheduled adds to policy boinc's REC instance-seconds what a task scheduled
// for secs more than it computed counts there (Account): its coprocessor instances on
// its resource, and its avg_ncpus on the CPU (cpu, -1 for none), as cpuSecs.
func (bp *boincPolicy) creditScheduled(e endedUse, cpu int, secs float64) {
	if e.project >= len(bp.recSecs) || e.res >= len(bp.recSecs[e.project]) {
		return
	}
	if e.res != cpu {
		bp.recSecs[e.project][e.res] += e.inst * secs
	}
	if cpu >= 0 {
		bp.recSecs[e.project][cpu] += e.ncpus * secs
	}
}

// recSpeeds sets bp.rel to the relative speeds of h's resources and returns its CPUs'
// FLOPS, as boincpolicy.RelativeSpeedsCPU finds them. Where h's resources are the
// slice they were last found for (its identity and length) they stand: the loop
// never changes the host's resources during a run (it finds each app version's
// resource and speed once, Sim.indexAppVersions), and a caller that gives another
// host gives another slice. On a host of CPUs alone whose speeds bp.rel already holds
// (the one resource's, 1) they stand too, and the FLOPS are that resource's. (Found
// afresh at every step they were a fifth of the REC accounting on corpus c063 under
// the emulator, and 1.8 % of seed002-gpu's run under bsim's conventions; the
// resources compared field by field cost as much as finding the speeds: issue 30,
// forty-third round.)
func (bp *boincPolicy) recSpeeds(h *state.Host) float64 {
	res := h.Resources
	if len(res) == 1 && res[0].Type == state.ResourceCPU && len(bp.rel) == 1 && bp.rel[0] == 1 {
		return res[0].Flops
	}
	if bp.relHost == unsafe.SliceData(res) && bp.relN == len(res) && bp.relHost != nil {
		return bp.relCPU
	}
	bp.rel, bp.relCPU = boincpolicy.RelativeSpeedsCPU(h, bp.rel)
	bp.relHost, bp.relN = unsafe.SliceData(res), len(res)
	return bp.relCPU
}

// adjustREC is BOINC's adjust_rec at now in BOINC's emulator (client/cpu_sched.cpp
// CLIENT_STATE::adjust_rec), which its client calls at each scheduling pass
// (schedule_cpus) and when a task has ended (cs_apps.cpp handle_finished_apps), the
// host on or off: the instance-seconds since the interval started go into REC, unless
// the interval is longer than two rec_adjust_periods (the emulator's step, client/sim.cpp)
// or negative, when they are dropped ("the host was suspended for a long time"); an
// interval under a second waits. The host's running tasks go on computing while it is
// off in BOINC's emulator, and what they do in a spell off of more than a step is not
// in REC. (Under bsim's convention nothing computes while the host is off, and REC is
// brought up to date after every step.)
func (bp *boincPolicy) adjustREC(doc *state.Document, now float64) {
	elapsed := now - bp.recStart
	switch {
	case bp.recStart == 0 || elapsed > bp.recLimit || elapsed < 0:
	case elapsed < 1:
		return
	default:
		// The mean instances used over the interval (the instance-seconds ÷ elapsed)
		// into REC, the rows cleared, in one walk (AccountDecayMeans); the CPU's FLOPS
		// as RelativeSpeedsCPU found them.
		cpu := bp.recSpeeds(&doc.Host)
		boincpolicy.AccountDecayMeans(doc, bp.recSecs, elapsed, now, bp.rel, cpu, &bp.decay)
		bp.recStart = now
		return
	}
	for _, row := range bp.recSecs {
		// (clear, or a range loop that zeroes, is a memclr call at every step for a
		// row of one or two resources.)
		for r := 0; r < len(row); r++ {
			row[r] = 0
		}
	}
	bp.recStart = now
}
