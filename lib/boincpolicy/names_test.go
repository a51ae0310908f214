package boincpolicy

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestHasVersionTable: one workspace's hasVersion, asked of random GPU hosts'
// documents (randomGPUQueue) one after the other and of each as a run changes it (app
// versions dropped in place, added at the end, a copy of the document with its own
// slices and a project's versions moved to another resource, the projects reordered
// in a slice of their own, a view built), answers as hasVersionFor for every project
// and resource, each time. It fails when the table is kept across a change of the app
// versions' length or of the projects' slice.
func TestHasVersionTable(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 43))
	var w Workspace
	checks, none := 0, 0
	check := func(trial, step int, doc *state.Document) {
		t.Helper()
		// In a random order, so that the table is made at any project and resource.
		type pr struct{ p, r int }
		var all []pr
		for p := range doc.Projects {
			for r := range doc.Host.Resources {
				all = append(all, pr{p, r})
			}
		}
		rng.Shuffle(len(all), func(a, b int) { all[a], all[b] = all[b], all[a] })
		for _, x := range all {
			want := hasVersionFor(doc, doc.Projects[x.p].Name, doc.Host.Resources[x.r].Type)
			if got := w.hasVersion(doc, x.p, x.r); got != want {
				t.Fatalf("trial %d step %d: project %d resource %d: hasVersion %v, hasVersionFor %v", trial, step, x.p, x.r, got, want)
			}
			checks++
			if !want {
				none++
			}
		}
	}
	for trial := range 4000 {
		doc := randomGPUQueue(rng)
		check(trial, 0, doc)
		for step := 1; step <= 6; step++ {
			switch rng.IntN(6) {
			case 0: // a project's CPU versions dropped, in place (a shorter slice)
				n := doc.Projects[rng.IntN(len(doc.Projects))].Name
				doc.AppVersions = slices.DeleteFunc(doc.AppVersions, func(v state.AppVersion) bool {
					return v.Project == n && v.Coproc == nil
				})
			case 1: // a version added at the end (a reply's)
				n := doc.Projects[rng.IntN(len(doc.Projects))].Name
				av := state.AppVersion{Name: n + "/new", Project: n, AvgNCPUs: 1, Flops: 3e9}
				if len(doc.Host.Resources) > 1 && rng.IntN(2) == 0 {
					av.Coproc = &state.CoprocUsage{Type: doc.Host.Resources[1].Type, Count: 1}
				}
				doc.AppVersions = append(doc.AppVersions, av)
			case 2: // a copy with its own slices, a project's versions all on the CPUs
				c := cloneDoc(doc)
				c.Host.Resources = slices.Clone(doc.Host.Resources)
				n := c.Projects[rng.IntN(len(c.Projects))].Name
				for v := range c.AppVersions {
					if c.AppVersions[v].Project == n {
						c.AppVersions[v].Coproc = nil
					}
				}
				doc = c
			case 3: // the host's coprocessor gone (a shorter slice of resources)
				doc.Host.Resources = doc.Host.Resources[:1]
			case 5: // the projects in another order, in a slice of their own
				ps := slices.Clone(doc.Projects)
				rng.Shuffle(len(ps), func(a, b int) { ps[a], ps[b] = ps[b], ps[a] })
				doc.Projects = ps
			case 4: // a view built, of the same slices (no tasks: some lost their versions)
				c := *doc
				c.Tasks = nil
				w.view(&c)
			}
			check(trial, step, doc)
		}
	}
	if none < 10000 {
		t.Errorf("%d answers, %d of them no version: want more", checks, none)
	}
	t.Logf("%d answers, %d of them no version", checks, none)
}

// TestProjectFound: overdueReport's look-up by the string's storage (projectFound,
// where namesDistinct says no two projects have one name) finds every done task's
// project as projectOf does, and the report's answer is the one made with projectOf,
// on random projects whose names are often of one length and sometimes alike, and
// tasks that hold their project's very string, a copy of it, or a name of none. It
// fails with the distinct projects' check left out (the storage's match taken where
// an earlier project has the same name).
func TestProjectFound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 44))
	var w Workspace
	found, alike := 0, 0
	for trial := range 20000 {
		doc := &state.Document{}
		nP := 1 + rng.IntN(6)
		for range nP {
			name := "http://" + string(rune('a'+rng.IntN(4))) + ".example.org/"
			if rng.IntN(4) == 0 {
				name = strings.Repeat("x", 1+rng.IntN(3))
			}
			doc.Projects = append(doc.Projects, state.Project{Name: name, ResourceShare: 100})
		}
		for i := range doc.Projects {
			if rng.IntN(5) == 0 {
				doc.Projects[i].MinRPCTime = t0 + rng.Float64()*7200
			}
		}
		distinct := w.namesDistinct(doc)
		for i := range 1 + rng.IntN(30) {
			p := rng.IntN(nP)
			name := doc.Projects[p].Name // its very string
			switch rng.IntN(4) {
			case 0:
				name = strings.Clone(name)
			case 1:
				name = "none"
			}
			tk := task(string(rune('A'+i)), name, 600, t0+rng.Float64()*2*86400)
			tk.State = []state.TaskState{state.TaskDone, state.TaskDone, state.TaskReady}[rng.IntN(3)]
			tk.CompletedTime = t0 - rng.Float64()*7200
			doc.Tasks = append(doc.Tasks, tk)
			if got, want := projectFound(doc, name, distinct), projectOf(doc, name); got != want {
				t.Fatalf("trial %d: %q found at %d, projectOf %d (distinct %v)", trial, name, got, want, distinct)
			}
			found++
		}
		if !distinct {
			alike++
		}
		for _, now := range []float64{t0, t0 + 3600, t0 + 86400} {
			p1, f1, c1 := overdueReport(doc, now, nil, distinct)
			p2, f2, c2 := overdueReport(doc, now, nil, false)
			if p1 != p2 || f1 != f2 || !slices.Equal(c1, c2) {
				t.Fatalf("trial %d at %.0f s: report %d %v %v, with projectOf %d %v %v", trial, now-t0, p1, f1, c1, p2, f2, c2)
			}
		}
	}
	if alike < 2000 {
		t.Errorf("%d look-ups, %d documents with two projects of one name: want more", found, alike)
	}
	t.Logf("%d look-ups, %d documents with two projects of one name", found, alike)
}
