package sim

import "github.com/bkit/bkit/lib/state"

// The decisions of a step under BOINC's emulator's conventions (--emulate boinc): its
// order within a step and the list of active tasks its client keeps.

// boincStep is the decisions of a step at now under --emulate boinc, the host on
// (Step).
func (s *Sim) boincStep(now float64) {
	// BOINC's emulator's order (client/sim.cpp simulate): the tasks that
	// finished are handled first (ACTIVE_TASK_SET::poll, handle_finished_apps:
	// ready to report, the correction factor taught), then a scheduling pass,
	// whose round-robin simulation the RPC's work request and its busy time
	// read (rr_simulation runs once a moment), then the RPC (scheduler_rpc_poll,
	// which reports what finished in this step), then another pass when it
	// brought jobs.
	//
	// Its scheduler reads the GPUs' suspension as the last step the host was on
	// left it (simulate sets gpu_suspend_reason after schedule_cpus, from that
	// step's sample, and only while on; not suspended at the start): a coprocessor
	// task runs in this step only if the GPUs were active at the last sample the
	// host was on, and it computes only if they are at the next one (Advance), so
	// each spell of GPU inactivity leaves the GPUs idle a step more, counted as
	// available in the figures.
	s.gpuSuspended = !s.gpuPrev
	s.gpuRun = !s.gpuSuspended
	if s.knowsGPUSuspension() && s.doc.GPUsSuspended != s.gpuSuspended {
		// BOINC's client knows the suspension (gpu_suspend_reason): its
		// scheduler runs no coprocessor job while it holds, and its simulation
		// counts no coprocessor job's CPUs (state.Document.GPUsSuspended).
		s.doc.GPUsSuspended = s.gpuSuspended
		s.gpusChanged()
	}
	if s.finishing > 0 {
		s.Settle()
	}
	if s.policy.Schedule(s.doc, now) {
		s.runningHold = false
		s.noteStarts()
	}
	if s.avail.Connected && s.rpcs(now) {
		// simulate's loop goes round again after an RPC, and it set
		// gpu_suspend_reason from this step's sample at the end of the first round:
		// the second pass sees this step's suspension (client/sim.cpp simulate).
		if s.knowsGPUSuspension() && s.gpuSuspended != !s.avail.GPUActive {
			s.gpuSuspended = !s.avail.GPUActive
			s.gpuRun = !s.gpuSuspended
			s.doc.GPUsSuspended = s.gpuSuspended
		}
		if s.policy.Schedule(s.doc, now) {
			s.runningHold = false
			s.noteStarts()
		}
	}
	// simulate sets gpu_suspend_reason from this step's sample once its
	// scheduler has run (inside if (on): an off step leaves it as it was).
	s.gpuPrev = s.avail.GPUActive
}

// gpusChanged tells the policy that the loop changed doc.GPUsSuspended: a gpuWatcher
// apart, any other watcher as tasksChanged.
func (s *Sim) gpusChanged() {
	if g, ok := s.policy.(gpuWatcher); ok && !noGPUWatch {
		s.runningHold = false
		g.gpusChanged(s.doc)
		return
	}
	s.tasksChanged()
}

// noGPUWatch: every change of the GPUs' suspension is told as tasksChanged (a test's,
// to check gpuWatcher against).
var noGPUWatch bool

// knowsGPUSuspension reports whether the run's client is told when its GPU computing is
// suspended (state.Document.GPUsSuspended), as BOINC's client knows it
// (gpu_suspend_reason): policy boinc and policy goals under --emulate boinc.
func (s *Sim) knowsGPUSuspension() bool {
	switch s.policy.(type) {
	case *boincPolicy, *goalsPolicy:
		return s.cfg.EmulateBOINC
	}
	return false
}

// noteStarts numbers the tasks a pass started for the first time (job.started), in the
// order BOINC's client appends their ACTIVE_TASKs to its list of active tasks: the
// run list's order (client/cpu_sched.cpp enforce_run_list, CLIENT_STATE::get_task), for
// a policy that tells it (runLister), else the document's. A task keeps its place
// when preempted and resumed; it leaves the list when it ends (cs_apps.cpp
// handle_finished_apps). The order says which task handle_finished_apps finds first
// when several end in a step (boincPolicy.Account).
func (s *Sim) noteStarts() {
	if rl, ok := s.policy.(runLister); ok {
		for _, i := range rl.runList() {
			if i < len(s.jobs) && s.jobs[i].started == 0 && s.doc.Tasks[i].State == state.TaskRunning {
				s.starts++
				s.jobs[i].started = s.starts
				s.doc.Tasks[i].EmulatorActiveSeq = s.starts
			}
		}
	}
	for i := range s.jobs {
		if s.jobs[i].started == 0 && s.doc.Tasks[i].State == state.TaskRunning {
			s.starts++
			s.jobs[i].started = s.starts
			s.doc.Tasks[i].EmulatorActiveSeq = s.starts
		}
	}
}
