package state

// Run-time estimates as BOINC's client makes them (issue 29), read in BOINC's client at
// c5c6cb79b9: the correction factor's rule in client/cpu_sched.cpp
// (PROJECT::update_duration_correction_factor), its use in client/result.cpp
// (RESULT::estimated_runtime, estimated_runtime_remaining) and a started task's
// duration in client/work_fetch.cpp (ACTIVE_TASK::est_dur). docs/decisions.md says
// what bkit does differently and why.

// DCF is the project's duration correction factor: how much longer than estimated its
// tasks run. 1 until one is learned.
func (p *Project) DCF() float64 {
	if p.DurationCorrectionFactor > 0 {
		return p.DurationCorrectionFactor
	}
	return 1
}

// ProjectDCF is the correction factor of the project named name, 1 when there is none
// (a validated document names known ones). Projects are few: a look-up one by one is
// cheaper than an index for the stages that ask once per task.
func (d *Document) ProjectDCF(name string) float64 {
	for i := range d.Projects {
		if SameName(d.Projects[i].Name, name) {
			return d.Projects[i].DCF()
		}
	}
	return 1
}

// DCF bounds, BOINC's: a factor outside them says more about a broken estimate than
// about the host.
const (
	MinDCF = 0.01
	MaxDCF = 100
)

// LearnDuration brings the project's correction factor up to date when one of its
// tasks has completed successfully after running elapsed seconds, uncorrected being
// the task's estimated run time without the factor (its estimate ÷ its app version's
// speed). BOINC's rule: an estimate is safe too long and harmful too short, so when the
// task ran more than 1.1 times its corrected estimate the factor becomes the task's
// ratio (elapsed ÷ uncorrected) at once; otherwise it moves a tenth of the way to the
// ratio, and a hundredth when the task took less than a tenth of its corrected estimate
// (one much earlier than expected says little). The factor stays within [MinDCF,
// MaxDCF]. A task without an estimate teaches nothing.
func (p *Project) LearnDuration(elapsed, uncorrected float64) {
	if !(uncorrected > 0) || !(elapsed >= 0) {
		return
	}
	old := p.DCF()
	raw := elapsed / uncorrected
	adj := raw / old
	dcf := raw
	switch {
	case adj > 1.1:
	case adj < 0.1:
		dcf = 0.99*old + 0.01*raw
	default:
		dcf = 0.9*old + 0.1*raw
	}
	p.DurationCorrectionFactor = min(MaxDCF, max(MinDCF, dcf))
}

// RemainingWork is the work task t is estimated still to need, as FLOPs at its app
// version's speed (its estimated remaining run time × that speed, so that each stage
// divides by the speed its rule names), dcf being its project's correction factor:
//
//   - not started: its estimate × dcf (RESULT::estimated_runtime);
//   - started: BOINC's est_dur − elapsed, with the work done standing for the elapsed
//     time. est_dur weights the duration the progress gives (done ÷ progress) by the
//     progress and the corrected estimate by the rest, which leaves (1 − progress) ×
//     the corrected estimate to go; once the work done passes the corrected estimate,
//     the progress alone: done ÷ progress − done. The progress is what the app reports
//     (FractionDone); without a report, work done ÷ estimate, which makes the first
//     case (estimate − done) × dcf: with dcf 1, the seeds' "estimate minus work done";
//   - done (progress 1), or without an estimate: 0.
//
// Under BOINC's emulator's convention a started task not done has its true remaining
// work, EmulatorFlopsLeft, estimate or not: RESULT::estimated_runtime_remaining
// (client/result.cpp, #ifdef SIM) reads sim_flops_left for any task with an active
// task, and the emulator's jobs' estimates are samples that can be 0 (client/sim.cpp
// make_job).
//
// A task whose estimate is short no longer reads as nearly finished near the end of its
// estimate: its progress says how far it really is.
func (t *Task) RemainingWork(dcf float64) float64 {
	if t.EmulatorFlopsLeft > 0 && t.FlopsDone > 0 && t.FractionDone < 1 {
		return t.EmulatorFlopsLeft
	}
	if t.EstimatedFlops <= 0 {
		return 0
	}
	est := t.EstimatedFlops * dcf
	fd := t.FractionDone
	if fd <= 0 {
		if t.FlopsDone <= 0 {
			return est
		}
		if t.FlopsDone <= est {
			return max(0, t.EstimatedFlops-t.FlopsDone) * dcf
		}
		fd = t.FlopsDone / t.EstimatedFlops
	}
	switch {
	case fd >= 1:
		return 0
	case t.FlopsDone > est:
		return t.FlopsDone * (1 - fd) / fd
	}
	return (1 - fd) * est
}
