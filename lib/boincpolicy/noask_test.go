package boincpolicy

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestNoAskChangesNothing: on random queues of GPU hosts (randomGPUQueue), some
// projects' apps all GPU apps (no CPU version: never asked for the CPUs under bsim's
// convention), some projects and resources backed off or in RPC backoff for up to an
// hour, the quiet work fetch, which passes over the resources no project may be asked
// for (resAsked) and keeps its holds from moment to moment, asks for what the full
// one asks at every minute of an hour and a half, the tasks unchanged. It fails when
// a backoff's end does not end the hold, or when a resource a project may be asked
// for with its RPC backoff over is passed over.
func TestNoAskChangesNothing(t *testing.T) {
	var fullMem Workspace // renewed at each use: their memory reused
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 20))
	passed, asked := 0, 0
	for trial := range 3000 {
		doc := randomGPUQueue(rng)
		for p := range doc.Projects {
			pr := &doc.Projects[p]
			gpu := pr.Name + "/gpu"
			if rng.IntN(2) == 0 && slices.ContainsFunc(doc.AppVersions, func(v state.AppVersion) bool { return v.Name == gpu }) {
				doc.AppVersions = slices.DeleteFunc(doc.AppVersions, func(v state.AppVersion) bool {
					return v.Project == pr.Name && v.Coproc == nil
				})
				for i := range doc.Tasks {
					if doc.Tasks[i].Project == pr.Name {
						doc.Tasks[i].AppVersion = gpu
					}
				}
			}
			if rng.IntN(6) == 0 {
				pr.MinRPCTime = t0 + rng.Float64()*3600
			}
			for _, res := range doc.Host.Resources {
				if rng.IntN(3) == 0 {
					pr.ResourceState(res.Type).BackoffUntil = t0 + rng.Float64()*3600
				}
			}
		}
		if len(doc.Tasks) == 0 {
			continue
		}
		doc.Preferences.WorkBufMinDays = []float64{0.01, 0.05, 0.2}[rng.IntN(3)]
		qdoc, fdoc := doc, cloneDoc(doc)
		quiet := Workspace{Quiet: true}
		for now := t0; now <= t0+5400; now += 60 {
			q := quiet.ChooseProject(qdoc, now)
			full := renewed(&fullMem)
			f := full.ChooseProject(fdoc, now)
			if q.Project != f.Project || q.Request.CPUReqSecs != f.Request.CPUReqSecs || !slices.Equal(q.Request.Coprocs, f.Request.Coprocs) {
				t.Fatalf("trial %d at %.0f s: quiet asks %d (%+v), full %d (%+v)", trial, now-t0, q.Project, q.Request, f.Project, f.Request)
			}
			if f.Project >= 0 {
				asked++
			} else if slices.Contains(quiet.noAsk, true) {
				passed++
			}
		}
	}
	if passed < 20000 || asked < 5000 {
		t.Errorf("%d moments asking nobody with a resource passed over, %d asking: want more", passed, asked)
	}
	t.Logf("%d moments asking nobody with a resource passed over, %d asking", passed, asked)
}

// cloneDoc copies doc's projects (their resources' backoffs), app versions and tasks.
func cloneDoc(doc *state.Document) *state.Document {
	c := *doc
	c.Projects = slices.Clone(doc.Projects)
	for p := range c.Projects {
		c.Projects[p].Resources = slices.Clone(doc.Projects[p].Resources)
	}
	c.AppVersions = slices.Clone(doc.AppVersions)
	c.Tasks = slices.Clone(doc.Tasks)
	c.Host.Resources = slices.Clone(doc.Host.Resources)
	return &c
}
