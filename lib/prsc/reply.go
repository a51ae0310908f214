package prsc

import (
	"fmt"
	"math/rand/v2"

	"github.com/bkit/bkit/lib/state"
)

// Reply is what a scheduler reply tells the work fetch: how many jobs of each resource
// type arrived and, with the three-state reply, which requested types the project does
// not support at all.
type Reply struct {
	Project     string
	Jobs        map[string]int // resource type -> jobs received; absent means 0
	Unsupported []string       // three-state only: "this resource is not supported"
}

// Requested returns the resource types req asked for: those with req_secs or
// req_instances above 0.
func Requested(req *state.WorkRequest) map[string]bool {
	m := map[string]bool{}
	if req.CPUReqSecs > 0 || req.CPUReqInstances > 0 {
		m[state.ResourceCPU] = true
	}
	for _, c := range req.Coprocs {
		if c.ReqSecs > 0 || c.ReqInstances > 0 {
			m[c.Type] = true
		}
	}
	return m
}

// ApplyReply applies a reply to a request for the resource types in requested to the
// project's backoffs and D flags, at time now, drawing backoff jitter from rng (in host
// resource order, so the result is repeatable).
//
//   - A type with a job: D(P,R) is set and its backoff cleared (seed 002).
//   - A requested type without a job: its backoff grows (BackOff). The seed's
//     pseudocode backs off only when the reply has no job at all, but its text says the
//     interval doubles "whenever we ask for work of that type and don't get any"; the
//     text is followed, so a project that sends CPU jobs but never GPU jobs does not get
//     asked for GPU work at every contact.
//   - A reply with no job at all clears D(P,R) of every requested type (seed 002).
//     With threeState (DESIGN.md: the seed's proposed change, off by default) only the
//     types the reply calls unsupported lose D(P,R), whether or not jobs came, and "no
//     work but supported" keeps it: a temporary outage does not stop debt accumulating.
func ApplyReply(doc *state.Document, requested map[string]bool, rep Reply, threeState bool, now float64, rng *rand.Rand) error {
	i := projectIndex(doc, rep.Project)
	if i < 0 {
		return fmt.Errorf("unknown project %q", rep.Project)
	}
	p := &doc.Projects[i]
	total := 0
	for t, n := range rep.Jobs {
		if _, ok := doc.Host.Resource(t); !ok {
			return fmt.Errorf("unknown resource type %q (the host has %s)", t, typeList(&doc.Host))
		}
		if n < 0 {
			return fmt.Errorf("%s: jobs must be >= 0, got %d", t, n)
		}
		total += n
	}
	unsupported := map[string]bool{}
	for _, t := range rep.Unsupported {
		if _, ok := doc.Host.Resource(t); !ok {
			return fmt.Errorf("unknown resource type %q (the host has %s)", t, typeList(&doc.Host))
		}
		if !threeState {
			return fmt.Errorf("an unsupported resource type (%s) needs the three-state reply option", t)
		}
		if rep.Jobs[t] > 0 {
			return fmt.Errorf("%s: jobs arrived, so it cannot be unsupported", t)
		}
		unsupported[t] = true
	}
	for _, r := range doc.Host.Resources {
		if rep.Jobs[r.Type] > 0 {
			pr := p.ResourceState(r.Type)
			pr.AccumulateDebt = true
			ClearBackoff(pr)
		} else if requested[r.Type] {
			BackOff(p.ResourceState(r.Type), now, rng)
		}
		switch {
		case threeState:
			if unsupported[r.Type] {
				p.ResourceState(r.Type).AccumulateDebt = false
			}
		case total == 0 && requested[r.Type]:
			p.ResourceState(r.Type).AccumulateDebt = false
		}
	}
	return nil
}

func typeList(h *state.Host) string {
	s := ""
	for i, r := range h.Resources {
		if i > 0 {
			s += ", "
		}
		s += r.Type
	}
	return s
}
