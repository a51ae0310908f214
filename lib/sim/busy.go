package sim

import (
	"slices"

	"github.com/bkit/bkit/lib/state"
)

// busyEstimator is a policy that keeps its own estimate of how long each host resource
// is busy with jobs that would miss their deadline: the delay its client reports with
// a work request. BOINC's emulator's server checks a new job's deadline against its
// client's estimator (client/sim.cpp simulate_rpc: estimated_delay =
// busy_time_estimator.get_busy_time()), so under --emulate boinc the loop gives the
// server the policy's own (Sim.Serve); without one, the server takes prsc.BusyTimes.
type busyEstimator interface {
	// busyTimes is the delay per host resource at now, in a slice the caller may keep
	// until the next call.
	busyTimes(doc *state.Document, now float64) []float64
}

// asksWork reports whether req asks for any work.
func asksWork(req *state.WorkRequest) bool {
	if req.CPUReqSecs > 0 || req.CPUReqInstances > 0 {
		return true
	}
	return slices.ContainsFunc(req.Coprocs, func(c state.CoprocRequest) bool { return c.ReqSecs > 0 || c.ReqInstances > 0 })
}

// busyTimes is BOINC's client's BUSY_TIME_ESTIMATOR as its round-robin simulation
// fills it (client/rr_sim.cpp RR_SIM::simulate; client/work_fetch.h
// BUSY_TIME_ESTIMATOR), from policy boinc's own simulation at now (the one its work
// fetch ran; boincpolicy.Workspace.MissOrder): each job the simulation sees miss its
// computation deadline occupies the least busy instances of the CPUs for its
// estimated remaining run time ÷ the fraction of time the host computes on its
// resource (overall_cpu_frac, or overall_gpu_frac: on × GPU active, within [0.01, 1]),
// as many as its avg_ncpus, whole ones (a job of under one CPU, a GPU job's usual
// share, adds nothing there); a coprocessor job occupies its resource's instances
// likewise, as many as its coprocessor count. The delay is the least busy instance's
// time.
//
// The jobs are added in the order the simulation finished them, as BOINC adds them
// (boincpolicy.Workspace.MissOrder).
func (bp *boincPolicy) busyTimes(doc *state.Document, now float64) []float64 {
	bp.work.Simulate(doc, now)
	h := &doc.Host
	if len(bp.busy) < len(h.Resources) {
		bp.busy = append(bp.busy, make([][]float64, len(h.Resources)-len(bp.busy))...)
	}
	busy := bp.busy[:len(h.Resources)]
	for r, res := range h.Resources {
		busy[r] = append(busy[r][:0], make([]float64, res.Instances)...)
	}
	cpu := slices.IndexFunc(h.Resources, func(res state.Resource) bool { return res.Type == state.ResourceCPU })
	ts := &h.TimeStats
	started := bp.work.MissStarted()
	// The app version and project of the job before, with what is read of them: a
	// queue's late jobs mostly share both (a host of one project all of them), and the
	// look-ups by name, the speed and the fraction were half of busyTimes' time on
	// corpus c143 under the emulator (issue 30, forty-third round).
	v, p := -1, -1
	var av *state.AppVersion
	var speed, frac, dcf float64
	co := -1 // av's coprocessor resource, where it is not the CPU's
	for k, i := range bp.work.MissOrder() {
		t := &doc.Tasks[i]
		if v < 0 || doc.AppVersions[v].Name != t.AppVersion {
			if v = slices.IndexFunc(doc.AppVersions, func(av state.AppVersion) bool { return av.Name == t.AppVersion }); v < 0 {
				continue
			}
			av = &doc.AppVersions[v]
			speed = av.Speed(h)
			// overall_cpu_frac / overall_gpu_frac (client/work_fetch.cpp), as
			// boincpolicy's simulation runs its jobs.
			frac = ts.OnFrac * ts.ActiveFrac
			if av.Coproc != nil {
				frac = ts.OnFrac * ts.GPUActiveFrac
			}
			frac = min(1, max(0.01, frac))
			co = -1
			if r := resourceOf(h, av); av.Coproc != nil && r >= 0 && r != cpu {
				co = r
			}
		}
		if p < 0 || doc.Projects[p].Name != t.Project {
			if p = slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == t.Project }); p < 0 {
				continue
			}
			dcf = doc.Projects[p].DCF()
		}
		if speed <= 0 {
			continue
		}
		left := t.RemainingWork(dcf)
		if started[k] && t.EmulatorFlopsLeft > 0 {
			// BOINC's client has the task's ACTIVE_TASK once it has started, and
			// in its emulator takes its true remaining work then
			// (RESULT::estimated_runtime_remaining, #ifdef SIM), progress or not.
			left = t.EmulatorFlopsLeft
		}
		dur := left / speed / frac
		if cpu >= 0 {
			occupy(busy[cpu], dur, av.AvgNCPUs)
		}
		if co >= 0 {
			occupy(busy[co], dur, av.Instances())
		}
	}
	bp.delay = append(bp.delay[:0], make([]float64, len(h.Resources))...)
	for r, b := range busy {
		if len(b) > 0 {
			bp.delay[r] = slices.Min(b)
		}
	}
	return bp.delay
}

// occupy is BUSY_TIME_ESTIMATOR::update: a job of dur seconds on nused of the
// instances (busy, each one's busy time) goes on the least busy one (the first among
// equals) and the ones after it, nused counted in whole instances; under one it adds
// nothing.
func occupy(busy []float64, dur, nused float64) {
	if len(busy) == 0 || nused < 1 {
		return
	}
	// The least in a local: read through busy[best], each step's test was checked
	// against the slice's bounds again (issue 30, forty-third round).
	best, least := 0, busy[0]
	for k, b := range busy {
		if b < least {
			best, least = k, b
		}
	}
	for k := range int(nused) {
		busy[(best+k)%len(busy)] += dur
	}
}
