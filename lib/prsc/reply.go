package prsc

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/bkit/bkit/lib/state"
)

// Reply is what a scheduler reply tells the work fetch: how many jobs of each resource
// type arrived and which types the project does not support at all.
type Reply struct {
	Project string
	Jobs    map[string]int // resource type -> jobs received; absent means 0
	// Unsupported are the types the project says it has no app version for (a reply's
	// <no_rsc_apps>, bserver serve --no-rsc-apps): "this resource is not supported".
	// They lose D(P,R) with or without the three-state reply (see ApplyReply).
	Unsupported []string
	// InstancesOnly are requested types asked for by req_instances alone (req_secs 0):
	// a reply without jobs does not clear their D(P,R), which the seed clears only "for
	// each resource R for which req_seconds(R)>0" (see InstancesOnly).
	InstancesOnly []string
}

// InstancesOnly returns the resource types req asks for by req_instances alone.
func InstancesOnly(req *state.WorkRequest) []string {
	var out []string
	if req.CPUReqSecs <= 0 && req.CPUReqInstances > 0 {
		out = append(out, state.ResourceCPU)
	}
	for _, c := range req.Coprocs {
		if c.ReqSecs <= 0 && c.ReqInstances > 0 {
			out = append(out, c.Type)
		}
	}
	return out
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
//   - A reply with no job at all clears D(P,R) of every type requested with req_secs
//     > 0 (seed 002: "for each resource R for which req_seconds(R)>0"); a type asked for
//     by req_instances alone (rep.InstancesOnly) keeps it.
//     With threeState (DESIGN.md: the seed's proposed change, off by default) this
//     rule is off: "no work but supported" keeps D(P,R), so a temporary outage does
//     not stop debt accumulating.
//   - A type the reply calls unsupported (rep.Unsupported) loses D(P,R), whether or
//     not jobs of other types came, in both modes: the project said it has no app
//     version for R, so the seed's reading of D, "P would likely supply a job for R
//     if we asked it", is false. In the three-state reply these are the only types
//     that lose it.
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
		if unsupported[r.Type] || !threeState && total == 0 && requested[r.Type] && !slices.Contains(rep.InstancesOnly, r.Type) {
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

// SetDFromAppVersions sets D(P,R) for every resource R project P has an app version
// for; with keep, not where the document already has an entry for P and R (a document
// bkit wrote records D there). Seed 002 sets D(P,R)
// when P supplies a job for R, and a client has an app version for R only because P
// sent it such a job; a document that never recorded D (a BOINC client's
// client_state.xml, a scenario) would otherwise leave every project unselectable.
func SetDFromAppVersions(doc *state.Document, keep bool) {
	for i := range doc.Projects {
		p := &doc.Projects[i]
		for _, r := range doc.Host.Resources {
			if keep && slices.ContainsFunc(p.Resources, func(pr state.ProjectResource) bool { return pr.Type == r.Type }) {
				continue
			}
			if slices.ContainsFunc(doc.AppVersions, func(av state.AppVersion) bool {
				return av.Project == p.Name && av.ResourceType() == r.Type
			}) {
				p.ResourceState(r.Type).AccumulateDebt = true
			}
		}
	}
}
