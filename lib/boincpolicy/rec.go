package boincpolicy

import (
	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/state"
)

// Constants of BOINC's client (client_state.h, lib/common_defs.h, log_flags.cpp).
const (
	// RECHalfLife is the default half-life of REC, seconds (cc_config rec_half_life:
	// 10 days).
	RECHalfLife = 10 * 86400
	// CobblestoneScale turns FLOPs into credits (200 credits per day of a
	// 1-GFLOPS host).
	CobblestoneScale = credit.PerFlop
	// MinBackoff and MaxBackoff bound a (project, resource) work-fetch backoff
	// (WF_MIN_BACKOFF_INTERVAL, WF_MAX_BACKOFF_INTERVAL).
	MinBackoff = 600
	MaxBackoff = 86400
	// EstFetchTime is the least work_buf_min, seconds (WF_EST_FETCH_TIME).
	EstFetchTime = 180
	// DeadlineCushion is kept between a job's simulated finish and its report
	// deadline beside work_buf_min (DEADLINE_CUSHION; 0 in BOINC).
	DeadlineCushion = 0
	// MaxRunnableJobs: a project holding more is not asked for work
	// (WF_MAX_RUNNABLE_JOBS).
	MaxRunnableJobs = 1000
	// WackyDCFLow and WackyDCFHigh: outside them a project's correction factor makes
	// its estimates useless, and it is asked for 1 second (work_fetch.cpp wacky_dcf).
	WackyDCFLow  = 0.02
	WackyDCFHigh = 80
	// EDFDCF: a project whose correction factor is above it has all its jobs treated
	// as deadline misses (cpu_sched.cpp earliest_deadline_result).
	EDFDCF = 90
)

// UpdateAverage is BOINC's exponentially decaying average (lib/util.cpp
// update_average), the one the server keeps credit with (credit.DecayedAverage): work
// done between start and now is added to avg, a rate per day, last brought up to date
// at avgTime, after decaying it by the half-life. It returns the new average and its
// time (now). The first work (avgTime 0) makes the average work ÷ the days it took.
func UpdateAverage(now, start, work, halfLife, avg, avgTime float64) (float64, float64) {
	return credit.DecayedAverage(now, start, work, halfLife, avg, avgTime)
}

// RelativeSpeeds is each host resource's speed relative to one CPU, as BOINC's work
// fetch values it (work_fetch.cpp WORK_FETCH::init): 1 for the CPU, and for a
// coprocessor its instances × their FLOPS ÷ the CPU's. (BOINC takes 0.2 × peak_flops
// for a GPU instance; the document's flops is already what an instance gives.)
func RelativeSpeeds(h *state.Host, out []float64) []float64 {
	out, _ = RelativeSpeedsCPU(h, out)
	return out
}

// RelativeSpeedsCPU is RelativeSpeeds, with the CPU's FLOPS it read (h.CPU().Flops),
// for AccountDecayCPU: a caller that accounts at every step finds the CPU once
// there, not twice (the search was about a tenth of the step's REC accounting in
// part-time-4cpu's profile, issue 30's eighteenth round).
func RelativeSpeedsCPU(h *state.Host, out []float64) ([]float64, float64) {
	out = out[:0]
	cpu := h.CPU().Flops
	for _, r := range h.Resources {
		switch {
		case r.Type == state.ResourceCPU:
			out = append(out, 1)
		case cpu > 0:
			out = append(out, float64(r.Instances)*r.Flops/cpu)
		default:
			out = append(out, 0)
		}
	}
	return out, cpu
}

// Credit is the credit BOINC's client estimates a project earned with instSecs[r]
// instance-seconds of host resource r (cpu_sched.cpp update_rec): each
// instance-second at the CPU's FLOPS × the resource's relative speed, in cobblestones.
func Credit(instSecs, relSpeed []float64, cpuFlops float64) float64 {
	var x float64
	for r, s := range instSecs {
		x += s * cpuFlops * relSpeed[r]
	}
	return x * CobblestoneScale
}

// UpdateREC adds the credit a project earned between start and now to its REC
// (cpu_sched.cpp update_rec): a REC never brought up to date starts at start, with
// REC 0, so that it grows from the first interval's rate.
func UpdateREC(p *state.Project, start, now, earned float64) {
	var d credit.Decay
	updateREC(p, start, now, earned, &d)
}

// updateREC is UpdateREC with d kept from call to call: credit.Decay.Again first, which
// is inlined, where d keeps the interval's weight (a REC brought up to date at every
// step of a run: AccountDecayCPU on hosts with coprocessors, and adjust_rec under
// BOINC's emulator; issue 30, forty-third round; TestUpdateRECKept).
func updateREC(p *state.Project, start, now, work float64, d *credit.Decay) {
	if rec, ok := d.Again(now, work, RECHalfLife, p.REC, p.RECTime); ok {
		p.REC, p.RECTime = rec, now
		return
	}
	if p.RECTime == 0 {
		p.RECTime = start
	}
	p.REC, p.RECTime = d.Average(now, start, work, RECHalfLife, p.REC, p.RECTime)
}

// Priority is a project's scheduling priority from its REC (rec) and share
// (cpu_sched.cpp PROJECT::compute_sched_priority): minus its fraction of the REC sum
// over its fraction of the share sum, so that a project that got less than its share
// recently comes first; a project with no share is below every project with one.
func Priority(rec, recSum, share, shareFrac float64) float64 {
	f := rec / recSum
	switch {
	case share == 0:
		return -1e3 - f
	case shareFrac > 0:
		return -f / shareFrac
	}
	return -f
}

// Priorities sets prio[i] for every project from recs (REC or a temporary REC) and the
// projects' shares, the sums taken over the eligible projects (project_priority_init):
// those with a runnable job for scheduling, those that may be asked for work for work
// fetch. A REC sum of 0 counts as 1. It returns the REC sum, which adjustments of the
// temporary REC are scaled by. A project outside the eligible ones still gets a
// priority, its share fraction taken against the eligible ones' sum.
func Priorities(doc *state.Document, recs []float64, eligible []bool, prio, shareFrac []float64) float64 {
	var shareSum, recSum float64
	for i := range doc.Projects {
		if eligible[i] {
			shareSum += doc.Projects[i].ResourceShare
			recSum += recs[i]
		}
	}
	if recSum == 0 {
		recSum = 1
	}
	for i := range doc.Projects {
		share := doc.Projects[i].ResourceShare
		shareFrac[i] = 0
		if shareSum == 0 {
			prio[i] = 0
			continue
		}
		shareFrac[i] = share / shareSum
		prio[i] = Priority(recs[i], recSum, share, shareFrac[i])
	}
	return recSum
}

// SchedBump is what choosing a job to run adds to its project's temporary REC
// (cpu_sched.cpp adjust_rec_sched): the job's share of the host's peak FLOPS × an
// hour's worth of the REC sum (recSum ÷ 24), so that the next job tends to come from
// another project.
func SchedBump(jobPeak, totalPeak, recSum float64) float64 {
	if totalPeak <= 0 {
		return 0
	}
	return jobPeak / totalPeak * recSum / 24
}

// Account brings every project's REC up to date at now with what it used during the
// dt seconds before (used[p][r]: instances of host resource r its tasks used, averaged
// over the interval), as BOINC's adjust_rec does at each scheduling pass
// (cpu_sched.cpp CLIENT_STATE::adjust_rec, WORK_FETCH::accumulate_inst_sec). relSpeed
// is RelativeSpeeds of the host.
func Account(doc *state.Document, used [][]float64, dt, now float64, relSpeed []float64) {
	var d credit.Decay
	AccountDecay(doc, used, dt, now, relSpeed, &d)
}

// AccountDecay is Account for a caller that accounts step after step (the emulator):
// d keeps the decay of the last step's length (credit.Decay), the figures Account's to
// the last bit.
func AccountDecay(doc *state.Document, used [][]float64, dt, now float64, relSpeed []float64, d *credit.Decay) {
	if dt <= 0 {
		return
	}
	AccountDecayCPU(doc, used, dt, now, relSpeed, doc.Host.CPU().Flops, d)
}

// AccountDecayMeans is AccountDecayCPU of the mean instances used over an interval of
// dt > 0 seconds, given as the interval's instance-seconds: each secs[p][r] ÷ dt, the
// same quotient, enters the same sums in the same order, and every row is cleared
// (to +0) after. BOINC's emulator's adjust_rec (lib/sim) divided, accounted and
// cleared in three walks of the rows at every step (issue 30, thirty-second round).
func AccountDecayMeans(doc *state.Document, secs [][]float64, dt, now float64, relSpeed []float64, cpu float64, d *credit.Decay) {
	for p := range doc.Projects {
		var x float64
		if p < len(secs) {
			row := secs[p]
			for r := 0; r < len(row); r++ {
				u := row[r] / dt // the mean instances used
				x += u * dt * cpu * relSpeed[r]
				row[r] = 0
			}
		}
		updateREC(&doc.Projects[p], now-dt, now, x*CobblestoneScale, d)
	}
	for p := len(doc.Projects); p < len(secs); p++ {
		row := secs[p]
		for r := 0; r < len(row); r++ {
			row[r] = 0
		}
	}
}

// AccountDecayCPU is AccountDecay with the host's CPU FLOPS given (doc.Host.CPU().Flops,
// as RelativeSpeedsCPU returns it).
func AccountDecayCPU(doc *state.Document, used [][]float64, dt, now float64, relSpeed []float64, cpu float64, d *credit.Decay) {
	if dt <= 0 {
		return
	}
	for p := range doc.Projects {
		var x float64
		if p < len(used) {
			for r, u := range used[p] {
				x += u * dt * cpu * relSpeed[r]
			}
		}
		updateREC(&doc.Projects[p], now-dt, now, x*CobblestoneScale, d)
	}
}

// AccountDecayCPUTime is AccountDecayCPU of used with column col of each row p
// replaced by cpuTime[p] ÷ dt (where p < len(cpuTime); col -1 for none): the same
// quotient enters the same sums in the same order. lib/sim's Account on hosts with
// coprocessors (BOINC counts a task's CPUs on the CPU) copied every row at every step
// to replace that column, about a fifth of its accounting on seed002-gpu (issue 30,
// forty-third round; TestAccountDecayCPUTime).
func AccountDecayCPUTime(doc *state.Document, used [][]float64, col int, cpuTime []float64, dt, now float64, relSpeed []float64, cpu float64, d *credit.Decay) {
	if dt <= 0 {
		return
	}
	for p := range doc.Projects {
		var x float64
		if p < len(used) {
			c := col
			if p >= len(cpuTime) {
				c = -1
			}
			for r, u := range used[p] {
				if r == c {
					u = cpuTime[p] / dt
				}
				x += u * dt * cpu * relSpeed[r]
			}
		}
		updateREC(&doc.Projects[p], now-dt, now, x*CobblestoneScale, d)
	}
}

// AccountDecayOnlyCPU is AccountDecayCPU on a host whose one resource is the CPU
// (cpu its FLOPS; each row of used one column, or none): the CPU's relative speed is
// 1, and a product × 1 is the product bit for bit, so no speeds are made; each REC
// is decayed by credit.Decay.Again, inlined, where the decay keeps the step's weight
// (every step but the first of a run and those of another length), else by
// updateREC. Account runs at every step, the host off too: on part-time-4cpu under
// bsim's conventions the speeds made afresh and a call of Average per project were
// about 40 % of it (issue 30, forty-third round; TestAccountDecayOnlyCPU).
func AccountDecayOnlyCPU(doc *state.Document, used [][]float64, dt, now, cpu float64, d *credit.Decay) {
	if dt <= 0 {
		return
	}
	projects, start := doc.Projects, now-dt
	for p := range projects {
		var x float64
		if p < len(used) {
			for _, u := range used[p] {
				x += u * dt * cpu
			}
		}
		pr := &projects[p]
		if rec, ok := d.Again(now, x*CobblestoneScale, RECHalfLife, pr.REC, pr.RECTime); ok {
			pr.REC, pr.RECTime = rec, now
		} else {
			updateREC(pr, start, now, x*CobblestoneScale, d)
		}
	}
}
