package sim

import "github.com/bkit/bkit/lib/state"

// The host computing during a step: each running task's progress at its app version's
// real speed, and where the step ends.

// compute lets the running tasks work from now for dt seconds: a CPU task while the host
// is active, a coprocessor task while the GPUs are active too. A task advances by its
// app version's real speed; it is done when its real work is.
//
// With shorten (bsim's conventions), the step ends when the first running task finishes
// (endEarly), and the step returned is that much shorter: the next step starts then, so
// that the scheduler hands the task's processor on at once, as a real client does
// when a task exits. Each step otherwise left the processor idle from the task's end to
// the step's (BOINC's emulator charges that rest to the finished task instead: under
// --emulate boinc, shorten is off and the step keeps its length).
func (s *Sim) compute(now, dt float64, active, gpuActive, shorten bool) float64 {
	doc := s.doc
	su := &s.su
	for p, u := range su.Used {
		// Element by element: a range loop of zeroes (or clear) calls memclr, which
		// for the few resources of a host costs more than the stores.
		for r := 0; r < len(u); r++ {
			u[r] = 0
		}
		su.CPUTime[p] = 0
	}
	su.Ended = 0
	su.ended = su.ended[:0]
	su.stalled = su.stalled[:0]
	if s.cfg.EmulateBOINC {
		if len(su.cpuSecs) != len(su.Used) {
			su.cpuSecs = make([]float64, len(su.Used))
		}
		clear(su.cpuSecs)
	}
	s.m.stepClear()
	if !active {
		return dt
	}
	cpuFlops := doc.Host.CPU().Flops
	if !s.runningHold {
		s.running = s.running[:0]
		for i := range doc.Tasks {
			if doc.Tasks[i].State == state.TaskRunning {
				s.running = append(s.running, i)
			}
		}
		s.runningHold = true
	}
	cpuScale, coScale := s.cpuScales(gpuActive)
	if shorten {
		dt = s.endEarly(dt, gpuActive, cpuScale)
	}
	for _, i := range s.running {
		t := &doc.Tasks[i]
		j := &s.jobs[i]
		v := j.av
		av := &doc.AppVersions[v]
		if av.Coproc != nil && !gpuActive {
			if s.cfg.EmulateBOINC && !j.finished {
				// Still scheduled, so in BOINC's REC for the step all the same.
				su.stalled = append(su.stalled, endedUse{j.project, s.avRes[v], av.Instances(), av.AvgNCPUs, 0, j.started})
				j.stalled++
			}
			continue
		}
		speed := s.avSpeed[v]
		if speed <= 0 {
			continue
		}
		if j.finished {
			continue
		}
		// The CPUs a task gets: all it takes, unless the running tasks overcommit them.
		scale := coScale
		if av.Coproc == nil {
			scale = cpuScale
			speed *= cpuScale
			if speed <= 0 {
				continue
			}
		}
		cpus := av.AvgNCPUs * scale
		run := dt
		finished := false
		// (A step that endEarly cut ends as a task's work does: left ÷ speed is dt, and
		// speed × dt may round below left.)
		left := j.real - t.FlopsDone
		if s.cfg.EmulateBOINC {
			// BOINC's emulator keeps what is left of a task by taking each step's
			// work off it (ACTIVE_TASK_SET::poll: sim_flops_left -= diff × flops),
			// not as the real work less the work done, and its round-robin
			// simulation starts from that: jobs that tie in exact arithmetic then
			// part in the last bit as they do there, which decides the order they
			// end in the simulation and so the busy time its work request reports
			// (c078).
			left = t.EmulatorFlopsLeft
		}
		if left <= speed*dt || shorten && left/speed <= dt {
			run, finished = max(0, left/speed), true
		}
		if finished {
			t.FlopsDone = j.real
		} else {
			t.FlopsDone += speed * run
		}
		// The progress the app reports: its real work done (what BOINC's client reads
		// as fraction_done; its estimates of a started task rest on it).
		if j.real > 0 {
			t.FractionDone = min(1, t.FlopsDone/j.real)
		}
		if s.cfg.EmulateBOINC {
			t.EmulatorCheckpoint = now + dt // checkpoint_wall_time (state.Task.EmulatorRunStart)
			// BOINC's emulator's client knows a started task's true remaining time
			// (client/result.cpp RESULT::estimated_runtime_remaining, #ifdef SIM;
			// state.Task.EmulatorFlopsLeft). Finished, its sim_flops_left goes below 0
			// by what the step's interval would have done past its end, and BOINC's
			// work fetch reads that until the result is reported (boincpolicy setup).
			t.EmulatorFlopsLeft = left - speed*dt
		}
		t.CPUTime += cpus * run
		t.ElapsedTime += run
		p := j.project
		r := s.avRes[v]
		// The figures' peak FLOPs: the CPUs the task takes at the CPU's peak, its
		// coprocessor instances at theirs (boinc-emulator.md).
		charged := run
		if s.cfg.EmulateBOINC {
			charged = dt
		}
		peakCPUs := cpus
		if s.cfg.EmulateBOINC && av.Coproc != nil {
			// BOINC's emulator scales every running task's CPUs by its CPU scale
			// when the CPUs are overcommitted, a coprocessor task's too, though it
			// scaled only the CPU tasks to make room for them (client/sim.cpp
			// app_peak_flops, ACTIVE_TASK_SET::poll): the CPUs then count as partly
			// idle in its figures.
			peakCPUs = av.AvgNCPUs * cpuScale
		}
		cpuPeak := charged * peakCPUs * cpuFlops
		var coPeak float64
		if av.Coproc != nil {
			coPeak = charged * av.Coproc.Count * doc.Host.Resources[r].Flops
		}
		j.peak += cpuPeak + coPeak
		s.m.credit(p, r, cpuPeak, coPeak)
		if s.tr != nil {
			s.tr.ran(t.Name, p, r, av.Instances(), now, now+run)
			s.tr.used(now, p, s.m.cpu, cpuPeak)
			s.tr.used(now, p, r, coPeak)
		}
		// What the policies account: the instances of the task's own resource type
		// (the rule of prsc.Usage), averaged over the step.
		inst := av.Instances()
		if av.Coproc == nil {
			inst = cpus
		}
		su.Used[p][r] += inst * run / dt
		su.CPUTime[p] += cpus * run
		if s.cfg.EmulateBOINC {
			su.cpuSecs[p] += av.AvgNCPUs * run
		}
		if finished {
			j.finished = true
			t.CompletedTime = now + run
			if s.cfg.EmulateBOINC {
				// BOINC's emulator finds the task exited at the next step's start
				// (client/sim.cpp ACTIVE_TASK_SET::poll, then cs_apps.cpp
				// handle_finished_apps), and app_finished sets its completed_time
				// then: the report that waits an hour after it
				// (cs_scheduler.cpp MAX_REPORT_DELAY) waits from the step's end.
				t.CompletedTime = now + dt
			}
			s.finishing++
			su.Ended++
			if s.cfg.EmulateBOINC {
				su.ended = append(su.ended, endedUse{p, r, inst, av.AvgNCPUs, run, j.started})
			}
			s.taskFinished()
		}
	}
	return dt
}

// minStepPart is the shortest part of a step that a task's end may cut it to: a task
// that ends earlier in the step leaves its processor idle to the step's end. Jobs of a
// few seconds would otherwise make a step each.
const minStepPart = 1.0 / 8

// endEarly is the step's length when it ends as the first running task finishes, if
// one finishes within dt but not before minStepPart of the step; dt otherwise.
func (s *Sim) endEarly(dt float64, gpuActive bool, cpuScale float64) float64 {
	end := dt
	for _, i := range s.running {
		j := &s.jobs[i]
		if j.finished {
			continue
		}
		av := &s.doc.AppVersions[j.av]
		speed := s.avSpeed[j.av]
		if av.Coproc == nil {
			speed *= cpuScale
		} else if !gpuActive {
			continue
		}
		if speed <= 0 {
			continue
		}
		if run := (j.real - s.doc.Tasks[i].FlopsDone) / speed; run >= minStepPart*dt && run < end {
			end = run
		}
	}
	return end
}

// cpuScales is the part of its CPUs each running task gets in a step: all of them while
// the running tasks commit no more CPUs than the host has. When they commit more (the
// schedulers overcommit the CPUs beside coprocessor tasks, as BOINC's client does:
// state.CPUsFit), the coprocessor tasks keep theirs and the CPU tasks share what is
// left, each running slower by that ratio (BOINC's emulator's cpu_scale,
// ACTIVE_TASK_SET::poll in client/sim.cpp). Coprocessor tasks that alone commit more
// than the host has share its CPUs (coScale; their speed is their coprocessor's).
// BOINC's emulator also credits a coprocessor task's CPUs at cpu_scale, so that an
// overcommitted host shows a little idle CPU; bsim credits what each task got, the
// CPUs' whole peak.
func (s *Sim) cpuScales(gpuActive bool) (cpuScale, coScale float64) {
	var cpu, co float64
	for _, i := range s.running {
		if s.jobs[i].finished {
			continue
		}
		v := s.jobs[i].av
		av := &s.doc.AppVersions[v]
		if s.avSpeed[v] <= 0 {
			continue
		}
		if av.Coproc == nil {
			cpu += av.AvgNCPUs
		} else if gpuActive {
			co += av.AvgNCPUs
		}
	}
	n := float64(s.doc.Host.Resources[s.m.cpu].Instances)
	if cpu+co <= n {
		return 1, 1
	}
	if co > n {
		return 0, n / co
	}
	return (n - co) / cpu, 1
}
