package prsc

import (
	"fmt"
	"math"

	"github.com/bkit/bkit/lib/state"
)

// Candidate is one project as select_project sees it for one resource.
type Candidate struct {
	Project      string
	OverallDebt  float64 // CPU seconds
	Shortfall    float64 // the project's shortfall on the resource, instance-seconds
	Score        float64 // OverallDebt + Shortfall
	MayHaveJobs  bool    // D(P,R): P would likely supply a job for the resource
	Eligible     bool    // D(P,R) set; not backed off for the resource, nor for RPCs (min_rpc_time)
	BackoffUntil float64 // the resource backoff's expiry, Unix seconds (0: none)
}

// Selection is select_project's answer for one resource.
type Selection struct {
	Type       string
	Project    string // the eligible candidate with the largest score; "" if none
	Candidates []Candidate
}

// Decision is the outcome of a work-fetch pass.
type Decision struct {
	Sim        *Sim
	Selections []Selection // per host resource, in host order
	Request    state.WorkRequest
}

// SelectProject is the seed's select_project for resource r of sim: among the projects
// that may have that type of job (D(P,R) set: seed 002, "when we need work for a
// resource, we ask the project that may have that type of job"), not backed off for the
// resource and whose seed 000 RPC backoff, min_rpc_time, has passed, the one whose
// overall debt plus shortfall on the resource is largest; ties go to the project listed
// first. Without the D(P,R) test a GPU-only project with the larger debt was asked for
// CPU work. The seed's "overworked projects etc." has no counterpart
// here: the overall debt already ranks them last.
func SelectProject(doc *state.Document, rs *ResourceSim, now float64) Selection {
	return selectProject(doc, rs, now, make([]Candidate, len(doc.Projects)))
}

// selectProject is SelectProject with cands (len(doc.Projects) of them) for the
// candidates.
func selectProject(doc *state.Document, rs *ResourceSim, now float64, cands []Candidate) Selection {
	sel := Selection{Type: rs.Type, Candidates: cands}
	best := math.Inf(-1)
	for i := range doc.Projects {
		p := &doc.Projects[i]
		c := Candidate{
			Project:     p.Name,
			OverallDebt: OverallDebt(&doc.Host, p),
			Shortfall:   rs.Projects[i].Shortfall,
		}
		c.Score = c.OverallDebt + c.Shortfall
		for _, pr := range p.Resources {
			if pr.Type == rs.Type {
				c.BackoffUntil, c.MayHaveJobs = pr.BackoffUntil, pr.AccumulateDebt
			}
		}
		c.Eligible = c.MayHaveJobs && c.BackoffUntil <= now && p.MinRPCTime <= now
		if c.Eligible && c.Score > best {
			best, sel.Project = c.Score, p.Name
		}
		sel.Candidates[i] = c
	}
	return sel
}

// Decide is seed 002's work fetch: the round-robin simulation, then the first of these
// that finds a project: an idle coprocessor (each type in host order), an idle CPU, a
// coprocessor shortfall, a CPU shortfall. The request asks the chosen project for every
// resource's shortfall (req_secs) and idle instances (req_instances), except:
//
//   - on an idle coprocessor the CPU's shortfall is not asked for, and on an idle CPU
//     no coprocessor's shortfall (the seed zeroes them); this changes only the request,
//     so a later step that finds no project still sees the true shortfalls (in the
//     seed's pseudocode the zeroing would leak into the later steps);
//   - nothing is asked for a resource the chosen project is backed off for, which
//     answers the seed's open question: a project is asked for the types whose backoffs
//     have passed, only.
//
// work_req_seconds is the largest req_secs. When no step finds a project, the request
// has an empty project and says why.
func Decide(doc *state.Document, now float64) *Decision {
	var w DecideWork
	return w.Decide(doc, now)
}

// DecideWork keeps Decide's buffers from one call to the next, for a caller that
// decides at every step (the emulator: rpc.Next asks for seed 002's request whenever
// there is no CPU request to send). The zero value is ready; w.Decide and Decide decide
// alike, to the last bit. The Decision w.Decide returns, its Sim, its Selections and
// its Request's Coprocs are w's, good until the next call; the rest of its Request is
// the caller's to keep.
type DecideWork struct {
	// Quiet: decide without writing the request's reason (Request.Reason stays empty);
	// the decision is the same. The emulator decides at nearly every step and sends
	// the request seldom; the reason's formatting was most of its allocations.
	Quiet bool

	sim     simWork
	d       Decision
	cands   [][]Candidate
	steps   []decideStep
	coprocs []state.CoprocRequest // the request's, one per coprocessor type
}

// decideStep is one of Decide's steps: an idle resource r, or r's shortfall.
type decideStep struct {
	r    int
	idle bool
}

// Decide is Decide with w's buffers.
func (w *DecideWork) Decide(doc *state.Document, now float64) *Decision {
	sim := simulate(doc, now, WorkBufPeriod(&doc.Preferences), nil, &w.sim)
	nr, np := len(sim.Resources), len(doc.Projects)
	if cap(w.d.Selections) < nr {
		w.d.Selections = make([]Selection, nr)
	}
	if len(w.cands) < nr {
		w.cands = append(w.cands, make([][]Candidate, nr-len(w.cands))...)
	}
	d := &w.d
	*d = Decision{Sim: sim, Selections: d.Selections[:nr]}
	for r := range sim.Resources {
		if cap(w.cands[r]) < np {
			w.cands[r] = make([]Candidate, np)
		}
		d.Selections[r] = selectProject(doc, &sim.Resources[r], now, w.cands[r][:np])
	}
	cpu := -1
	for r := range sim.Resources {
		if sim.Resources[r].Type == state.ResourceCPU {
			cpu = r
		}
	}
	steps := w.steps[:0]
	for _, idle := range []bool{true, false} {
		for r := range sim.Resources {
			if r != cpu {
				steps = append(steps, decideStep{r, idle})
			}
		}
		steps = append(steps, decideStep{cpu, idle})
	}
	w.steps = steps
	d.Request = state.WorkRequest{Time: now}
	for _, s := range steps {
		rs := &sim.Resources[s.r]
		if (s.idle && rs.NIdle <= 0) || (!s.idle && rs.Shortfall <= 0) {
			continue
		}
		sel := &d.Selections[s.r]
		if sel.Project == "" {
			continue
		}
		d.Request = request(doc, sim, sel.Project, s.r, cpu, s.idle, now, w.coprocs[:0])
		w.coprocs = d.Request.Coprocs
		if w.Quiet {
			return d
		}
		why := "shortfall"
		if s.idle {
			why = "idle"
		}
		c := sel.Candidates[projectIndex(doc, sel.Project)]
		d.Request.Reason = fmt.Sprintf("%s %s (%.6g idle instances, shortfall %.6g instance-s): %s has the largest debt+shortfall %.6g (overall debt %.6g + shortfall %.6g) among projects that may have its jobs (D(P,R)) and are not backed off for %s",
			rs.Type, why, rs.NIdle, rs.Shortfall, sel.Project, c.Score, c.OverallDebt, c.Shortfall, rs.Type)
		return d
	}
	if w.Quiet {
		return d
	}
	d.Request.Reason = "no request: no idle instances and no shortfall, or no project that may have the jobs (D(P,R)) and is not backed off"
	return d
}

// request is the request to project, its Coprocs appended to coprocs.
func request(doc *state.Document, sim *Sim, project string, trigger, cpu int, idle bool, now float64, coprocs []state.CoprocRequest) state.WorkRequest {
	p := &doc.Projects[projectIndex(doc, project)]
	req := state.WorkRequest{Time: now, Project: project, Coprocs: coprocs}
	for r := range sim.Resources {
		rs := &sim.Resources[r]
		secs, inst := rs.Shortfall, rs.NIdle
		if idle && r != trigger && (r == cpu || trigger == cpu) {
			secs = 0
		}
		if BackedOff(p, rs.Type, now) {
			secs, inst = 0, 0
		}
		req.WorkReqSeconds = math.Max(req.WorkReqSeconds, secs)
		if r == cpu {
			req.CPUReqSecs, req.CPUReqInstances = secs, inst
		} else {
			req.Coprocs = append(req.Coprocs, state.CoprocRequest{Type: rs.Type, ReqSecs: secs, ReqInstances: inst})
		}
	}
	return req
}

func projectIndex(doc *state.Document, name string) int {
	for i := range doc.Projects {
		if doc.Projects[i].Name == name {
			return i
		}
	}
	return -1
}
