package sim

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/bkit/bkit/lib/glibcrand"
)

// TestBOINCStreamInit: under --emulate boinc seed N is srand(N), and reading the
// scenario draws what BOINC's emulator draws as it parses client_state.xml: two draws
// for each host process in <time_stats>'s order (on, connected, active, gpu_active),
// then two for each project's <available>.
func TestBOINCStreamInit(t *testing.T) {
	t.Parallel()
	sc := load(t, "testdata/noisy")
	s, err := New(sc, Config{Duration: 86400, Delta: 60, Policy: "seed", Seed: 3, EmulateBOINC: true})
	if err != nil {
		t.Fatal(err)
	}
	g := glibcrand.New(3)
	on, active, gpu, conn := sc.Lambdas.Means()
	ts := s.doc.Host.TimeStats
	// What BOINC's emulator makes, in its order.
	wOn := newBOINCProcess(ts.OnFrac, on, g)
	wConn := newBOINCProcess(ts.ConnectedFrac, conn, g)
	wActive := newBOINCProcess(ts.ActiveFrac, active, g)
	wGPU := newBOINCProcess(ts.GPUActiveFrac, gpu, g)
	var wServers []*onOff
	for _, proj := range s.doc.Projects {
		if hasServer(sc, proj.Name) {
			frac, lambda := sc.ServerAvailability(proj.Name)
			wServers = append(wServers, newBOINCProcess(frac, lambda, g))
		} else {
			wServers = append(wServers, nil)
		}
	}
	// New samples the first step, as simulate's loop does at once.
	if wOn.sampleBOINC(60) {
		if wActive.sampleBOINC(60) {
			wGPU.sampleBOINC(60)
		}
		wConn.sampleBOINC(60)
	}
	same := func(name string, p, w *onOff) {
		t.Helper()
		if p.on != w.on || p.next != w.next {
			t.Errorf("%s: on %v time left %g, want %v %g", name, p.on, p.next, w.on, w.next)
		}
	}
	same("on", s.on, wOn)
	same("connected", s.connected, wConn)
	same("active", s.active, wActive)
	same("gpu_active", s.gpuActive, wGPU)
	servers := 0
	for p, w := range wServers {
		if w != nil {
			same("server "+s.doc.Projects[p].Name, s.servers[p].up, w)
			servers++
		}
	}
	if servers == 0 {
		t.Fatal("the noisy scenario has no server process: the test tests nothing of them")
	}
	if a, b := s.g.Int31(), g.Int31(); a != b {
		t.Errorf("after the first sample the run's stream gives %d, want %d", a, b)
	}
}

// TestBOINCStreamCarried: a run under --emulate boinc carried through its World (the
// one stream's position, the processes' time left, a server's last RPC, the GPUs'
// suspension) goes on as the run held in memory.
func TestBOINCStreamCarried(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"testdata/noisy", seed002GPU} {
		t.Run(dir, func(t *testing.T) { carriedBOINC(t, dir) })
	}
}

func carriedBOINC(t *testing.T, dir string) {
	cfg := Config{Duration: 2 * 86400, Delta: 180, Policy: "seed", Seed: 5, EmulateBOINC: true}
	whole, err := Run(load(t, dir), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(load(t, dir), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 300 {
		s.Step()
	}
	w, err := s.World(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.BOINCRand) == 0 {
		t.Fatal("the world holds no BOINC stream")
	}
	b, err := EncodeWorld(w)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := DecodeWorld(bytes.NewReader(b), "world")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Restore(s.Doc(), w2)
	if err != nil {
		t.Fatal(err)
	}
	for r.Step() {
	}
	a, _ := json.Marshal(whole)
	c, _ := json.Marshal(r.Result())
	if !bytes.Equal(a, c) {
		t.Errorf("whole %s\ncarried %s", a, c)
	}
}
