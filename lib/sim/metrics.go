package sim

import (
	"fmt"
	"math"

	"github.com/bkit/bkit/lib/state"
)

// Result holds the figures of merit of a run, defined as BOINC's emulator defines them
// (../shared/boinc-emulator.md), plus Jain's fairness index. The JSON names are bsim's
// output format.
type Result struct {
	WastedFraction float64          `json:"wasted_fraction"`
	IdleFraction   float64          `json:"idle_fraction"`
	ShareViolation float64          `json:"share_violation"`
	Monotony       float64          `json:"monotony"`
	RPCsPerJob     float64          `json:"rpcs_per_job"`
	JainIndex      float64          `json:"jain_index"`
	Projects       []ProjectResult  `json:"projects"`
	Resources      []ResourceResult `json:"resources"`

	// Counts behind the fractions, for tables; not part of the JSON format.
	RPCs          int     `json:"-"` // the RPCs a server answered (BOINC's emulator counts no other)
	FailedRPCs    int     `json:"-"` // RPCs to a down server`
	MasterFetches int     `json:"-"`
	Jobs          int     `json:"-"`
	TotalFlops    float64 `json:"-"` // peak FLOPs the host could have given
	UsedFlops     float64 `json:"-"`
	SimulatedSec  float64 `json:"-"`
	WallFlops     float64 `json:"-"` // peak FLOPS of every resource × the simulated time
	WastedFlops   float64 `json:"-"`
}

// OnWallTime returns the wasted and idle fractions with BOINC's emulator's total: the
// peak FLOPs of the whole simulated time, on or off (client/sim.cpp adds every step to
// active_time whatever the host's state, and its running tasks go on computing while
// the host is off or inactive). bsim's own total counts only the time the host could
// compute; the two agree on a host that is always on.
func (r *Result) OnWallTime() (wasted, idle float64) {
	if r.WallFlops <= 0 {
		return 0, 0
	}
	return r.WastedFlops / r.WallFlops, math.Max(0, (r.WallFlops-r.UsedFlops)/r.WallFlops)
}

// ProjectResult is one project's part: Share is its resource share as a fraction of all
// shares, UsedFraction its fraction of the FLOPs used; deadlines are counted when the
// results are reported.
type ProjectResult struct {
	Name            string  `json:"name"`
	Share           float64 `json:"share"`
	UsedFraction    float64 `json:"used_fraction"`
	DeadlinesMet    int     `json:"deadlines_met"`
	DeadlinesMissed int     `json:"deadlines_missed"`

	ResourceShare float64 `json:"-"` // as the scenario gives it
}

// ResourceResult is each project's fraction of one resource type's use (FLOPs).
type ResourceResult struct {
	Type     string             `json:"type"`
	Projects []ResourceProjects `json:"projects"`
}

// ResourceProjects is one project's fraction of a resource's use.
type ResourceProjects struct {
	Name         string  `json:"name"`
	UsedFraction float64 `json:"used_fraction"`
}

// ResourceFraction is project's fraction of resource's use, and whether the result has
// that resource and project.
func (r *Result) ResourceFraction(resource, project string) (float64, bool) {
	for _, rr := range r.Resources {
		if rr.Type != resource {
			continue
		}
		for _, p := range rr.Projects {
			if p.Name == project {
				return p.UsedFraction, true
			}
		}
	}
	return 0, false
}

// OneLine is the emulator's one-line form: wf W if I sv S m M r R.
func (r *Result) OneLine() string {
	return fmt.Sprintf("wf %f if %f sv %f m %f r %f", r.WastedFraction, r.IdleFraction, r.ShareViolation, r.Monotony, r.RPCsPerJob)
}

// metrics are the running tallies.
type metrics struct {
	total       float64     // peak FLOPs available: CPUs while active, GPUs while GPU-active
	used        []float64   // per project, peak FLOPs credited to its running tasks
	wasted      float64     // peak FLOPs of results reported after their deadline or given up unfinished
	byResource  [][]float64 // [resource][project] peak FLOPs
	met, missed []int
	ran         []bool // per project: computed in the current step

	// Monotony: per project the time since it last ran (R) and the integral of R²;
	// runningTime is the time the host was on.
	sinceRan, sumSq []float64
	runningTime     float64

	rpcs, jobs    int
	failedRPCs    int     // RPCs to a down server (not in the figures: see Serve)
	masterFetches int     // seed 000's master file reads (not scheduler RPCs: not in the figures)
	cpuPeak       float64 // FLOPS of all CPUs
	coPeak        float64 // FLOPS of all coprocessor instances
	cpu           int     // the CPU's resource index (a validated host has exactly one)
}

func (m *metrics) init(doc *state.Document) {
	n := len(doc.Projects)
	m.used, m.met, m.missed, m.ran = make([]float64, n), make([]int, n), make([]int, n), make([]bool, n)
	m.sinceRan, m.sumSq = make([]float64, n), make([]float64, n)
	for i, r := range doc.Host.Resources {
		m.byResource = append(m.byResource, make([]float64, n))
		if r.Type == state.ResourceCPU {
			m.cpu = i
			m.cpuPeak += float64(r.Instances) * r.Flops
		} else {
			m.coPeak += float64(r.Instances) * r.Flops
		}
	}
}

// stepClear forgets which projects ran in the last step (element by element, as
// compute clears the step's use: fewer instructions than clear's memclr call).
func (m *metrics) stepClear() {
	for p := 0; p < len(m.ran); p++ {
		m.ran[p] = false
	}
}

// credit adds a running task's peak FLOPs for a step: cpu on the CPU (resource index
// of the CPU), co on its coprocessor (resource index r).
func (m *metrics) credit(p, r int, cpu, co float64) {
	m.used[p] += cpu + co
	m.ran[p] = true
	if co > 0 {
		m.byResource[r][p] += co
		r = m.cpu
	}
	if cpu > 0 && r >= 0 {
		m.byResource[r][p] += cpu
	}
}

// step closes a step of dt seconds: availability into the total, and the monotony sums.
func (m *metrics) step(doc *state.Document, dt float64, on, active, gpuActive bool) {
	if active {
		m.total += dt * m.cpuPeak
	}
	if gpuActive {
		m.total += dt * m.coPeak
	}
	if !on {
		return
	}
	m.runningTime += dt
	for p := range m.sinceRan {
		if m.ran[p] {
			m.sinceRan[p] = 0
			continue
		}
		m.sinceRan[p] += dt
		m.sumSq[p] += dt * m.sinceRan[p] * m.sinceRan[p]
	}
}

// report counts a result reported by project p: one missed (reported after its
// deadline, or given up unfinished: the goals policy abandons a task that can no longer
// meet its deadline) wastes its FLOPs.
func (m *metrics) report(p int, late bool, peak float64) {
	if late {
		m.missed[p]++
		m.wasted += peak
	} else {
		m.met[p]++
	}
}

// Result computes the figures of merit as the run stands.
func (s *Sim) Result() *Result {
	doc, m := s.doc, &s.m
	res := &Result{RPCs: m.rpcs, FailedRPCs: m.failedRPCs, MasterFetches: m.masterFetches, Jobs: m.jobs, TotalFlops: m.total, SimulatedSec: s.now - s.start,
		WallFlops: (m.cpuPeak + m.coPeak) * (s.now - s.start), WastedFlops: m.wasted}
	var usedSum, shareSum float64
	for p := range doc.Projects {
		usedSum += m.used[p]
		shareSum += doc.Projects[p].ResourceShare
	}
	res.UsedFlops = usedSum
	if m.total > 0 {
		res.WastedFraction = m.wasted / m.total
		res.IdleFraction = math.Max(0, (m.total-usedSum)/m.total)
	}
	// share violation = Σ |used_p − share_p/Σshare × Σused| ÷ Σused
	var viol, jainSum, jainSq float64
	nJain := 0
	for p := range doc.Projects {
		pr := ProjectResult{Name: doc.Projects[p].Name, ResourceShare: doc.Projects[p].ResourceShare,
			DeadlinesMet: m.met[p], DeadlinesMissed: m.missed[p]}
		if shareSum > 0 {
			pr.Share = pr.ResourceShare / shareSum
		}
		if usedSum > 0 {
			pr.UsedFraction = m.used[p] / usedSum
			viol += math.Abs(m.used[p] - pr.Share*usedSum)
		}
		if pr.Share > 0 {
			x := pr.UsedFraction / pr.Share
			jainSum += x
			jainSq += x * x
			nJain++
		}
		res.Projects = append(res.Projects, pr)
	}
	if usedSum > 0 {
		res.ShareViolation = viol / usedSum
	}
	res.JainIndex = 1
	if jainSq > 0 {
		res.JainIndex = jainSum * jainSum / (float64(nJain) * jainSq)
	}
	// monotony = X/(X+1), X = mean over projects of RMS(time since last ran) ÷ (MV × n)
	if n := len(doc.Projects); n > 0 && m.runningTime > 0 {
		var sum float64
		for p := range doc.Projects {
			sum += math.Sqrt(m.sumSq[p] / m.runningTime)
		}
		x := sum / float64(n) / (doc.Preferences.CPUSchedulingPeriod * float64(n))
		res.Monotony = x / (x + 1)
	}
	switch {
	case m.jobs > 0:
		res.RPCsPerJob = float64(m.rpcs) / (2 * float64(m.jobs))
	case m.rpcs > 0:
		res.RPCsPerJob = float64(m.rpcs) / 2 // as if one job came: finite, and still bad
	}
	for r, rsc := range doc.Host.Resources {
		rr := ResourceResult{Type: rsc.Type}
		var sum float64
		for _, x := range m.byResource[r] {
			sum += x
		}
		for p := range doc.Projects {
			f := 0.0
			if sum > 0 {
				f = m.byResource[r][p] / sum
			}
			rr.Projects = append(rr.Projects, ResourceProjects{Name: doc.Projects[p].Name, UsedFraction: f})
		}
		res.Resources = append(res.Resources, rr)
	}
	return res
}
