package sim

import (
	"cmp"
	"errors"
	"math"
	"slices"

	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
)

// The scheduler RPCs between the client and the emulated servers, and the client's
// bookkeeping of the tasks they send and it reports.

// rpcs makes the scheduler RPCs the policy asks for at now, each project at most once,
// and reports whether a reply brought jobs.
func (s *Sim) rpcs(now float64) (got bool) {
	s.asked = s.asked[:0]
	for {
		r, ok := s.policy.NextRPC(s.doc, now, s.asked)
		if !ok || slices.Contains(s.asked, r.Project) {
			return got
		}
		r.Report = rpc.IsReportSession(s.doc, now, s.asked, r.Project)
		s.asked = append(s.asked, r.Project)
		rep := s.Serve(r, now)
		got = got || len(rep.Jobs) > 0
		s.policy.Replied(s.doc, r, rep, now)
	}
}

// boincClient reports whether the run is BOINC's client in BOINC's emulator (policy
// boinc under --emulate boinc): its failed RPCs back off as BOINC's client does and it
// reads no master file (boincBackoff). The other policies are bkit's clients, which
// follow seed 000 whatever the emulator's conventions: the backoff is the client's
// rule, not the world's, and a verdict "at least as good as BOINC" compares policies.
func (s *Sim) boincClient() bool {
	_, ok := s.policy.(*boincPolicy)
	return ok && s.cfg.EmulateBOINC
}

// Serve is the emulated servers' side of one scheduler RPC r at now ('bsim serve'): a
// down server fails it (seed 000's backoff, jitter from the decisions' stream; the
// master-fetch flag at a tenth failure in a row unless r is a report session's; for
// BOINC's client in BOINC's emulator its own backoff instead and no master file,
// boincClient;
// counted apart from the RPCs of the figures);
// otherwise the project's done tasks are reported, the server fills the request (under
// --emulate boinc with the delay from the policy's own estimator, busyEstimator, when
// it has one) and the project's RPC bookkeeping is reset. A successful reply carries a seed from the
// decisions' stream for whatever the client draws in answer to it (seed 002's backoff
// jitter: bdevices reply --seed).
func (s *Sim) Serve(r RPC, now float64) Reply {
	doc := s.doc
	p := &doc.Projects[r.Project]
	srv := s.servers[r.Project]
	up := srv.upAt(now)
	boincClient := s.boincClient()
	if p.MasterFetchPending && boincClient {
		// BOINC's emulator reads no master file: its projects have their scheduler
		// from the start, and a failure's flag is cleared at once (boincBackoff).
		rpc.MasterFetched(p, []string{schedulerURL(p)}, nil, now, nil)
	}
	if p.MasterFetchPending {
		// Seed 000: the master file is read again after every tenth failure in a row, and
		// first by a project that has no scheduler URL yet (as the emulated projects
		// start). The emulated project's master file names one scheduler, at its master
		// URL. A failed fetch is a failure with its backoff, and no RPC is made.
		s.m.masterFetches++
		if !up {
			rpc.MasterFetched(p, nil, errServerDown, now, s.rng.Rand)
			return Reply{Failed: true}
		}
		rpc.MasterFetched(p, []string{schedulerURL(p)}, nil, now, s.rng.Rand)
	}
	if !up {
		// Not a scheduler RPC in the figures: BOINC's emulator counts an RPC only
		// when the server answers it (simulate_rpc), so r compares.
		s.m.failedRPCs++
		if boincClient {
			srv.boincBackoff(p, now, s.rng.Rand)
			return Reply{Failed: true}
		}
		if r.Report {
			rpc.ReportFailed(p, now, s.rng.Rand)
		} else {
			rpc.RPCFailed(p, now, s.rng.Rand)
		}
		return Reply{Failed: true}
	}
	s.m.rpcs++
	tasks := false    // whether the RPC reported or received a task
	received := false // whether it received one
	defer func() {
		// (A policy that hears of every RPC apart, rpcWatcher, is told in Replied
		// when it changed no task.)
		// (One that hears apart of an RPC that only reported, reportWatcher, is
		// told that in Replied too.)
		_, rw := s.policy.(rpcWatcher)
		_, pw := s.policy.(reportWatcher)
		switch {
		case !rw || received || tasks && (!pw || noReportWatch):
			s.tasksChanged() // reported and received
		case tasks:
			s.runningHold = false // the tasks reported are dropped (the policy hears in Replied)
		}
	}()
	// The delay the request reports, from the client's own estimator where the policy
	// has one (BOINC's emulator's server reads its client's; busyEstimator), taken
	// before the reports change the tasks the policy's simulation saw.
	var busy []float64
	if be, ok := s.policy.(busyEstimator); ok && s.cfg.EmulateBOINC && asksWork(&r.Request) {
		busy = be.busyTimes(doc, now)
	}

	reported := false
	s.reports = rpc.AppendReportTasks(s.reports[:0], doc, p.Name)
	for _, i := range s.reports {
		t := &doc.Tasks[i]
		s.m.report(r.Project, t.ReportDeadline < now || !s.jobs[i].finished, s.jobs[i].peak)
		t.State = state.TaskReported
		reported = true
	}
	if reported {
		s.dropReported()
	}
	var jobs map[string]int
	if !s.cfg.ExistingJobsOnly {
		from := len(s.jobs)
		jobs = srv.fill(doc, s.avIndex, &r.Request, now, busy, &s.jobs)
		s.noteJobs(from)
	}
	for _, n := range jobs {
		s.m.jobs += n
		received = received || n > 0
	}
	tasks = received || reported
	rpc.RPCSucceeded(p, now, 0)
	return Reply{Jobs: jobs, Seed: s.rng.Uint64(), ThreeState: s.cfg.ThreeState, tasks: tasks, received: received}
}

var errServerDown = errors.New("the project's server is down")

// schedulerURL is the emulated project's one scheduler: it answers at the master URL.
func schedulerURL(p *state.Project) string {
	if p.MasterURL != "" {
		return p.MasterURL
	}
	return "emulated:" + p.Name
}

// Settle marks the tasks that finished their work in the last step done, and returns
// how many ('bsim settle'). Each teaches its project's duration correction factor how
// long it ran against its estimate (state.Project.LearnDuration), as BOINC's client
// learns when a task completes. Until now they stayed running, so that the policy's
// scheduler saw their last CPU time: seed 001's pass counts the work of RUNNING tasks
// only, and a task that had become done before the pass would take its work since the
// previous pass out of the debts. With 30-minute jobs that finish at the pass they
// trigger, one project's work was never counted and it kept both CPUs (the public
// example gave 87 % to the 2/3 project).
//
// For BOINC's client in BOINC's emulator (boincClient) they are taken in the order they
// first started, as its handle_finished_apps walks its list of active tasks
// (client/cs_apps.cpp; job.started): the factor's rule is not symmetric (a task far over its estimate sets the factor), so
// two tasks that end in one step teach it differently in the other order.
func (s *Sim) Settle() int {
	n := 0
	s.settling = s.settling[:0]
	for i := range s.doc.Tasks {
		if s.jobs[i].finished && s.doc.Tasks[i].State != state.TaskDone && s.doc.Tasks[i].State != state.TaskReported {
			s.settling = append(s.settling, i)
		}
	}
	if s.boincClient() && len(s.settling) > 1 {
		slices.SortStableFunc(s.settling, func(a, b int) int { return cmp.Compare(s.jobs[a].started, s.jobs[b].started) })
	}
	for _, i := range s.settling {
		t := &s.doc.Tasks[i]
		t.State = state.TaskDone
		if sp := s.avSpeed[s.jobs[i].av]; sp > 0 {
			elapsed := t.ElapsedTime
			if s.cfg.EmulateBOINC {
				// BOINC's emulator adds each step to a running task's elapsed
				// time twice (client/sim.cpp: ACTIVE_TASK_SET::poll adds diff,
				// simulate() adds delta again), whole steps, so its correction
				// factors learn twice the truth (docs/decisions.md, issue 30);
				// a step a coprocessor task stayed scheduled while the GPUs did
				// not compute once (poll skips it, simulate() does not).
				elapsed = 2*math.Ceil(elapsed/s.cfg.Delta-1e-9)*s.cfg.Delta + float64(s.jobs[i].stalled)*s.cfg.Delta
			}
			p := &s.doc.Projects[s.jobs[i].project]
			if uncorrected := t.EstimatedFlops / sp; !(uncorrected > 0) && elapsed > 0 && s.boincClient() {
				// BOINC's client divides by the estimate (client/cpu_sched.cpp
				// PROJECT::update_duration_correction_factor): a task its emulator
				// made with an estimate of 0 (client/sim.cpp make_job: a sample
				// below 0 is 0) gives an infinite ratio, and the factor its bound.
				p.DurationCorrectionFactor = state.MaxDCF
			} else {
				p.LearnDuration(elapsed, uncorrected)
			}
		}
		if s.live != nil {
			s.doc.Tasks[i].OutputDigest = s.digest(&s.doc.Tasks[i])
		}
		s.su.Finished++
		n++
	}
	s.finishing = 0
	if n > 0 {
		s.tasksChanged()
	}
	return n
}

// overestimator is a policy whose skips need to know how fast a task's estimated
// remaining work can fall (seed's): a started task's is (1 − progress) × its estimate ×
// its project's correction factor (state.Task.RemainingWork), which falls estimate ÷
// real work times faster than the work is done.
type overestimator interface {
	overestimate(x float64)
}

// noteJobs brings overest up to date with the jobs from index from on, and tells an
// overestimator policy.
func (s *Sim) noteJobs(from int) {
	x := max(1, s.overest)
	for i := from; i < len(s.jobs); i++ {
		if r := s.jobs[i].real; r > 0 {
			x = max(x, s.doc.Tasks[i].EstimatedFlops/r)
		}
	}
	s.overest = x
	if o, ok := s.policy.(overestimator); ok {
		o.overestimate(x)
	}
}

// taskFinished is tasksChanged for a task that finished its work in compute (it stays
// running until Settle): a finishWatcher policy hears of it apart.
func (s *Sim) taskFinished() {
	if f, ok := s.policy.(finishWatcher); ok {
		s.runningHold = false
		f.taskFinished()
		return
	}
	s.tasksChanged()
}

// noReportWatch: an RPC that only reported tasks is told as tasksChanged to every
// watcher (a test's, to check reportWatcher against).
var noReportWatch bool

// tasksChanged tells a watcher policy that the loop changed the tasks, and lets go of
// the running tasks' list.
func (s *Sim) tasksChanged() {
	s.runningHold = false
	if w, ok := s.policy.(watcher); ok {
		w.tasksChanged()
	}
}

// dropReported removes reported tasks: their story is told in the tallies, and a
// document that grew for 1,000 simulated days would slow every policy down.
//
// The tasks kept move down run by run (copy): the reported ones are the oldest, near
// the front, so nearly every task moves, and thousands of short jobs' tasks moved one
// by one took longer.
func (s *Sim) dropReported() {
	tasks, n, k := s.doc.Tasks, len(s.doc.Tasks), 0
	for i := 0; i < n; {
		if tasks[i].State == state.TaskReported {
			i++
			continue
		}
		j := i + 1
		for j < n && tasks[j].State != state.TaskReported {
			j++
		}
		if k != i {
			copy(tasks[k:], tasks[i:j])
			copy(s.jobs[k:], s.jobs[i:j])
		}
		k += j - i
		i = j
	}
	s.doc.Tasks, s.jobs = tasks[:k], s.jobs[:k]
}
