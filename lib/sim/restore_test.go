package sim

import (
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
)

// Restore's steps, one by one: each takes up its part of a World written by a run
// in the middle of the noisy scenario (outages of host, network and servers, noisy
// estimates: every random stream has moved), and gives back what the run held.

// midRun is the noisy scenario's run after half a day, its World, and a copy of its
// document as the next program would read it.
func midRun(t *testing.T) (*Sim, *World, *state.Document) {
	t.Helper()
	s, err := New(load(t, "testdata/noisy"), Config{Duration: 2 * 86400, Delta: 180, Policy: "seed", Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	for range 240 {
		s.Step()
	}
	w, err := s.World("noisy")
	if err != nil {
		t.Fatal(err)
	}
	b, err := state.Encode(s.Doc(), state.JSON)
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := state.Decode(b, "doc")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.doc.Tasks) == 0 || s.m.rpcs == 0 || s.servers[0].seq == 0 {
		t.Fatalf("half a day of the noisy scenario did nothing: %d tasks, %d RPCs", len(s.doc.Tasks), s.m.rpcs)
	}
	return s, w, doc
}

// sameStream reports whether two streams give the same next numbers.
func sameStream(a, b stream) bool {
	for range 3 {
		if a.Uint64() != b.Uint64() {
			return false
		}
	}
	return true
}

// sameProcess reports whether two availability processes are at the same point.
func sameProcess(a, b *onOff) bool {
	return a.frac == b.frac && a.lambda == b.lambda && a.on == b.on && a.next == b.next && sameStream(a.rng, b.rng)
}

func TestRestoreRun(t *testing.T) {
	orig, w, doc := midRun(t)
	s, err := restoreRun(doc, w)
	if err != nil {
		t.Fatal(err)
	}
	if s.doc != doc || s.start != orig.start || s.now != orig.now || s.end != orig.end || s.avail != orig.avail || s.finishing != orig.finishing || s.cfg != orig.cfg {
		t.Errorf("run = start %g now %g end %g avail %+v cfg %+v, want %g %g %g %+v %+v", s.start, s.now, s.end, s.avail, s.cfg, orig.start, orig.now, orig.end, orig.avail, orig.cfg)
	}
	for _, c := range []struct {
		name   string
		change func(*World)
		want   string
	}{
		{"version", func(w *World) { w.Version = 2 }, "world version 2, want 1"},
		{"policy not carried", func(w *World) { w.Policy = "rr" }, `policy "rr" keeps state between steps`},
		{"delta", func(w *World) { w.Delta = 0 }, "delta must be > 0 seconds, got 0"},
		{"negative time", func(w *World) { w.Start = -1 }, "world times must be finite and >= 0"},
		{"clock", func(w *World) { w.Now = w.Start - 1 }, "world clock out of order"},
	} {
		bad := *w
		c.change(&bad)
		if _, err := restoreRun(doc, &bad); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestRestoreProcess(t *testing.T) {
	orig, w, _ := midRun(t)
	p, err := restoreProcess("on", w.On, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sameProcess(p, orig.on) {
		t.Errorf("restored process %+v, want %+v", *p, *orig.on)
	}
	for _, c := range []struct {
		name   string
		change func(*Process)
		want   string
	}{
		{"frac", func(p *Process) { p.Frac = 1.5 }, "x: an availability process needs frac in [0, 1]"},
		{"lambda", func(p *Process) { p.Frac, p.Lambda = 0.5, 0 }, "x: an availability process needs"},
		{"flips", func(p *Process) { p.Frac, p.Lambda = 0.5, 1e-9 }, "x: periods of"},
		{"stream", func(p *Process) { p.RNG = []byte("junk") }, "x: "},
	} {
		bad := w.On
		c.change(&bad)
		if _, err := restoreProcess("x", bad, w, nil); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestRestoreStreams(t *testing.T) {
	orig, w, doc := midRun(t)
	s, err := restoreRun(doc, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.restoreStreams(w); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want *onOff
	}{{"on", s.on, orig.on}, {"active", s.active, orig.active}, {"gpu_active", s.gpuActive, orig.gpuActive}, {"connected", s.connected, orig.connected}} {
		if !sameProcess(c.got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, *c.got, *c.want)
		}
	}
	if !sameStream(s.rng, orig.rng) {
		t.Errorf("the decisions' stream is elsewhere")
	}
	bad := *w
	bad.GPUActive.Frac = -1
	if err := s.restoreStreams(&bad); err == nil || !strings.HasPrefix(err.Error(), "gpu_active: ") {
		t.Errorf("bad gpu_active: error %v", err)
	}
	bad = *w
	bad.Decisions = nil
	if err := s.restoreStreams(&bad); err == nil || !strings.HasPrefix(err.Error(), "decisions: ") {
		t.Errorf("bad decisions: error %v", err)
	}
}

// restored is the run up to (not including) step, taken up from w.
func restored(t *testing.T, doc *state.Document, w *World) *Sim {
	t.Helper()
	s, err := restoreRun(doc, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.restoreStreams(w); err != nil {
		t.Fatal(err)
	}
	s.indexAppVersions()
	return s
}

func TestRestoreServers(t *testing.T) {
	orig, w, doc := midRun(t)
	s := restored(t, doc, w)
	if err := s.restoreServers(w); err != nil {
		t.Fatal(err)
	}
	if len(s.servers) != len(orig.servers) {
		t.Fatalf("%d servers, want %d", len(s.servers), len(orig.servers))
	}
	for i, srv := range s.servers {
		o := orig.servers[i]
		if srv.project != o.project || srv.index != i || srv.seq != o.seq || !sameProcess(srv.up, o.up) || !sameStream(srv.rng, o.rng) {
			t.Errorf("servers[%d] = %s #%d seq %d, want %s #%d seq %d (or its up process or stream differs)", i, srv.project, srv.index, srv.seq, o.project, i, o.seq)
		}
		if d := cmp.Diff(o.apps, srv.apps, cmp.AllowUnexported(genApp{})); d != "" {
			t.Errorf("servers[%d] apps (-want +got):\n%s", i, d)
		}
	}
	for _, c := range []struct {
		name   string
		change func(*World)
		want   string
	}{
		{"count", func(w *World) { w.Servers = w.Servers[1:] }, "the world has 1 project servers, the document 2 projects"},
		{"project", func(w *World) {
			w.Servers = append([]WorldServer(nil), w.Servers...)
			w.Servers[1].Project = "Z"
		}, `projects[1]: the world's server is for "Z", the document's project is "B"`},
		{"app", func(w *World) {
			w.Apps = append([]WorldAppList(nil), w.Apps...)
			w.Apps[0].Apps = append(w.Apps[0].Apps[:0:0], w.Apps[0].Apps...)
			w.Apps[0].Apps[0].Project = "Z"
		}, `servers[A]: an app of project "Z"`},
	} {
		bad := *w
		c.change(&bad)
		s := restored(t, doc, w)
		if err := s.restoreServers(&bad); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestRestoreJobs(t *testing.T) {
	orig, w, doc := midRun(t)
	s := restored(t, doc, w)
	if err := s.restoreJobs(w); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(orig.jobs, s.jobs, cmp.AllowUnexported(job{})); d != "" {
		t.Errorf("jobs (-want +got):\n%s", d)
	}
	bad := *w
	bad.Jobs = append([]WorldJob(nil), w.Jobs...)
	bad.Jobs[1].Task = "other"
	if err := restored(t, doc, w).restoreJobs(&bad); err == nil || !strings.HasPrefix(err.Error(), `tasks[1]: the world's task is "other"`) {
		t.Errorf("a task renamed: error %v", err)
	}
	bad.Jobs = bad.Jobs[1:]
	if err := restored(t, doc, w).restoreJobs(&bad); err == nil || !strings.HasPrefix(err.Error(), "the world knows") {
		t.Errorf("a task missing: error %v", err)
	}
}

func TestRestoreTallies(t *testing.T) {
	orig, w, doc := midRun(t)
	s := restored(t, doc, w)
	if err := s.restoreTallies(w); err != nil {
		t.Fatal(err)
	}
	got, err := s.World("noisy")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(w.Tallies, got.Tallies); d != "" {
		t.Errorf("tallies (-want +got):\n%s", d)
	}
	n, nr := len(doc.Projects), len(doc.Host.Resources)
	if len(s.su.Used) != n || len(s.su.Used[0]) != nr || len(s.su.CPUTime) != n || s.su.Finished != orig.su.Finished {
		t.Errorf("step usage %+v: want %d×%d, finished %d", s.su, n, nr, orig.su.Finished)
	}
	bad := *w
	bad.Tallies.ByResource = [][]float64{{1, 2, 3}}
	if err := restored(t, doc, w).restoreTallies(&bad); err == nil || err.Error() != "the world's tallies do not match the document's projects and resources" {
		t.Errorf("tallies of another host: error %v", err)
	}
}
