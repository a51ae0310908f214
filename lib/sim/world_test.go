package sim

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/cpusched"
	"github.com/bkit/bkit/lib/goals"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
	"github.com/bkit/bkit/lib/workfetch"
)

// piecewise runs a scenario as scripts/client-loop.sh does, but in one process: every
// stage starts from the document and the World as written to bytes by the one before,
// and calls what its program calls (bfetch, bdevices request, brpc poll, bsim serve,
// bdevices reply, bsched --if-due, bsim settle, bsim advance).
func piecewise(t *testing.T, dir string, cfg Config) *Result {
	t.Helper()
	s, err := New(load(t, dir), cfg)
	if err != nil {
		t.Fatal(err)
	}
	docBytes, err := state.Encode(s.Doc(), state.JSON)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.World(dir)
	if err != nil {
		t.Fatal(err)
	}
	worldBytes, err := EncodeWorld(w)
	if err != nil {
		t.Fatal(err)
	}
	// stage runs f on the document (and, with world, the restored run) and writes both back.
	stage := func(world bool, f func(doc *state.Document, s *Sim)) {
		t.Helper()
		doc, _, err := state.Decode(docBytes, "doc")
		if err != nil {
			t.Fatal(err)
		}
		var s *Sim
		if world {
			w, err := DecodeWorld(bytes.NewReader(worldBytes), "world")
			if err != nil {
				t.Fatal(err)
			}
			if s, err = Restore(doc, w); err != nil {
				t.Fatal(err)
			}
		}
		f(doc, s)
		if docBytes, err = state.Encode(doc, state.JSON); err != nil {
			t.Fatal(err)
		}
		if world {
			w, err := s.World(dir)
			if err != nil {
				t.Fatal(err)
			}
			if worldBytes, err = EncodeWorld(w); err != nil {
				t.Fatal(err)
			}
		}
	}
	goalsPolicy := cfg.Policy == goals.Name
	bsched := func(now float64) {
		stage(false, func(doc *state.Document, _ *Sim) {
			if due, _ := cpusched.Due(doc, now); due {
				if goalsPolicy {
					goals.Schedule(doc, now)
				} else {
					cpusched.Schedule(doc, now)
				}
			}
		})
	}
	var res *Result
	for {
		var w *World
		var err error
		if w, err = DecodeWorld(bytes.NewReader(worldBytes), "world"); err != nil {
			t.Fatal(err)
		}
		if w.Now >= w.End {
			stage(true, func(_ *state.Document, s *Sim) { res = s.Result() })
			return res
		}
		now, a := w.Now, w.Avail
		if a.On {
			if a.Connected {
				var asked []int
				for {
					var r RPC
					var ok bool
					if goalsPolicy {
						stage(false, func(doc *state.Document, _ *Sim) { goals.Apply(doc, goals.Decide(doc, now), now) })
						stage(false, func(doc *state.Document, _ *Sim) {
							var p rpc.Plan
							p, ok = goals.Next(doc, now, asked)
							r = RPC{Project: p.Project, Request: p.Request, Why: p.Why}
							r.Report = ok && rpc.IsReportSession(doc, now, asked, p.Project) // brpc poll's record
						})
					} else {
						stage(false, func(doc *state.Document, _ *Sim) { workfetch.Apply(doc, workfetch.Compute(doc), now) })
						stage(false, func(doc *state.Document, _ *Sim) { r := prsc.Decide(doc, now).Request; doc.Request = &r })
						stage(false, func(doc *state.Document, _ *Sim) {
							var p rpc.Plan
							p, ok = rpc.Next(doc, now, asked, func() state.WorkRequest { return *doc.Request })
							r = RPC{Project: p.Project, Request: p.Request, Why: p.Why}
							r.Report = ok && rpc.IsReportSession(doc, now, asked, p.Project) // brpc poll's record
						})
					}
					if !ok {
						break
					}
					asked = append(asked, r.Project)
					var rep Reply
					stage(true, func(doc *state.Document, s *Sim) {
						rep = s.Serve(RPC{Project: r.Project, Request: *doc.Request, Report: r.Report}, now)
					})
					if !rep.Failed {
						stage(false, func(doc *state.Document, _ *Sim) {
							err := prsc.ApplyReply(doc, prsc.Requested(doc.Request), prsc.Reply{Project: doc.Request.Project, Jobs: rep.Jobs, InstancesOnly: prsc.InstancesOnly(doc.Request)}, false, now, prsc.NewRand(rep.Seed))
							if err != nil {
								t.Fatal(err)
							}
						})
					}
				}
			}
			bsched(now)
			n := 0
			stage(true, func(_ *state.Document, s *Sim) { n = s.Settle() })
			if n > 0 {
				bsched(now)
			}
		}
		stage(true, func(_ *state.Document, s *Sim) { s.Advance() })
	}
}

// TestPiecewiseIsWhole: a run carried from stage to stage through bytes gives the
// figures of the run held in memory, to the last bit. Every stage decodes and encodes
// the document and the world, so the runs are short; the noisy one spans three days of
// outages in steps of three minutes.
func TestPiecewiseIsWhole(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir         string
		days, delta float64
		policy      string
	}{
		{publicExample, 0.5, 60, "seed"},
		{seed002GPU, 0.5, 60, "seed"},
		{share7525, 0.25, 60, "seed"},
		// Host, network and server outages, and noisy estimates: every random stream.
		{"testdata/noisy", 3, 180, "seed"},
		// The goals policy: deadline mode, abandoned jobs, and both resources.
		{"../../scenarios/deadlines-4cpu", 1, 300, "goals"},
		{seed002GPU, 0.5, 300, "goals"},
	} {
		t.Run(filepath.Base(tc.dir)+"/"+tc.policy, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Duration: tc.days * 86400, Delta: tc.delta, Policy: tc.policy, Seed: 5}
			whole, err := Run(load(t, tc.dir), cfg)
			if err != nil {
				t.Fatal(err)
			}
			parts := piecewise(t, tc.dir, cfg)
			a, _ := json.Marshal(whole)
			b, _ := json.Marshal(parts)
			if !bytes.Equal(a, b) {
				t.Errorf("%s:\nwhole     %s\npiecewise %s", tc.dir, a, b)
			} else {
				t.Logf("%s: %s (%d RPCs, %d jobs, %d master file reads)", tc.dir, whole.OneLine(), whole.RPCs, whole.Jobs, whole.MasterFetches)
			}
		})
	}
}

// TestMasterFetch: a project whose RPC failed has no scheduler URL (the emulated
// projects start without one), so seed 000 reads its master file before the next RPC;
// once read, the project has its scheduler and the flag is down until ten failures in
// a row.
func TestMasterFetch(t *testing.T) {
	s, err := New(load(t, "testdata/noisy"), Config{Duration: 3 * 86400, Delta: 60, Policy: "seed", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	a := &s.doc.Projects[0]
	if len(a.SchedulerURLs) != 0 || a.MasterFetchPending {
		t.Fatalf("project A starts with %v, pending %v", a.SchedulerURLs, a.MasterFetchPending)
	}
	fetched := false
	for s.Step() {
		a := &s.doc.Projects[0]
		if len(a.SchedulerURLs) > 0 {
			fetched = true
			if a.SchedulerURLs[0] != a.MasterURL {
				t.Fatalf("scheduler %v, want the master URL %s", a.SchedulerURLs, a.MasterURL)
			}
			if a.MasterFetchPending && a.NRPCFailures%10 != 0 {
				t.Fatalf("master fetch pending after %d failures", a.NRPCFailures)
			}
		}
	}
	res := s.Result()
	if !fetched || res.MasterFetches == 0 {
		t.Fatalf("no master file read in 3 days of a server up 80 %% of the time (%d fetches)", res.MasterFetches)
	}
	t.Logf("%d master file fetches, %d RPCs", res.MasterFetches, res.RPCs)
}

// FuzzRestore: whatever a world file holds, taking the run up and stepping it either
// fails with an error or works; it never panics or hangs.
func FuzzRestore(f *testing.F) {
	s, err := New(load(f, "testdata/noisy"), Config{Duration: 3600, Delta: 60, Policy: "seed", Seed: 1})
	if err != nil {
		f.Fatal(err)
	}
	for s.Now() < 1800+s.start && s.Step() {
	}
	docBytes, err := state.Encode(s.Doc(), state.JSON)
	if err != nil {
		f.Fatal(err)
	}
	w, err := s.World("noisy")
	if err != nil {
		f.Fatal(err)
	}
	good, err := EncodeWorld(w)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version": 1, "policy": "seed", "delta": 60}`))
	f.Add(bytes.Replace(good, []byte(`"lambda": 7200`), []byte(`"lambda": 0`), 1))
	f.Add(bytes.Replace(good, []byte(`"delta": 60`), []byte(`"delta": 1e-300`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := DecodeWorld(bytes.NewReader(data), "world")
		if err != nil {
			return
		}
		doc, _, err := state.Decode(docBytes, "doc")
		if err != nil {
			t.Fatal(err)
		}
		s, err := Restore(doc, w)
		if err != nil {
			return
		}
		for i := 0; i < 5 && !s.Done(); i++ {
			s.Settle()
			s.Advance()
		}
		_ = s.Result()
	})
}

// TestRunsThatWouldNeverEnd are refused: availability periods far too short for the
// run, and more steps than a run can take.
func TestRunsThatWouldNeverEnd(t *testing.T) {
	sc := load(t, "testdata/noisy")
	tiny := 1e-3
	sc.Lambdas.Connected = &tiny
	if _, err := New(sc, Config{Duration: 86400, Delta: 60, Policy: "seed", Seed: 1}); err == nil ||
		!strings.Contains(err.Error(), "connected: periods of 0.000428") {
		t.Errorf("tiny lambda: %v", err)
	}
	if _, err := New(load(t, "testdata/noisy"), Config{Duration: 86400, Delta: 1e-9, Policy: "seed", Seed: 1}); err == nil ||
		!strings.Contains(err.Error(), "more than 1e+10 steps") {
		t.Errorf("tiny delta: %v", err)
	}
}

// TestTinyJobsRefused: jobs estimated at next to nothing would fill the work buffer
// with jobs without end (fpops mean 1e-300 ran past a minute for one simulated day):
// refused up front, naming the app and the bound. Ten-second jobs run.
func TestTinyJobsRefused(t *testing.T) {
	t.Parallel()
	sc := load(t, publicExample)
	for i := range sc.Apps {
		sc.Apps[i].FpopsEst, sc.Apps[i].Fpops = 1e-300, estimates(sc.Apps[i].Fpops)
	}
	if _, err := New(sc, Config{Duration: 86400, Delta: 60, Policy: "seed", Seed: 1}); err == nil ||
		!strings.Contains(err.Error(), "project X app x_app: jobs estimated at 5e-310 s") || !strings.Contains(err.Error(), "more than the 200000") {
		t.Errorf("fpops 1e-300: %v", err)
	}
	sc = load(t, publicExample)
	for i := range sc.Apps {
		sc.Apps[i].FpopsEst, sc.Apps[i].Fpops = 2e10, estimates(sc.Apps[i].Fpops) // 10 s at 2 GFLOPS
	}
	if _, err := New(sc, Config{Duration: 86400, Delta: 60, Policy: "seed", Seed: 1}); err != nil {
		t.Errorf("10-second jobs for a day: %v", err)
	}
	// 20,000 days of them: 2.9e7 steps with about 20,000 jobs held in each, estimated
	// at 4 hours of CPU time, are refused without Force and made with it.
	long := Config{Duration: 20000 * 86400, Delta: 60, Policy: "seed", Seed: 1}
	if _, err := New(sc, long); err == nil || !strings.Contains(err.Error(), "this run is estimated at 4h") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("10-second jobs for 20,000 days: %v", err)
	}
	long.Force = true
	s, err := New(sc, long)
	if err != nil {
		t.Fatalf("10-second jobs for 20,000 days with Force: %v", err)
	}
	if est := s.EstimatedRunTime(); est < 4*3600 || est > 5*3600 {
		t.Errorf("estimated %g s, want 4-5 hours", est)
	}
	// Force never lifts the memory bound.
	sc = load(t, publicExample)
	for i := range sc.Apps {
		sc.Apps[i].FpopsEst, sc.Apps[i].Fpops = 1e-300, estimates(sc.Apps[i].Fpops)
	}
	if _, err := New(sc, Config{Duration: 86400, Delta: 60, Policy: "seed", Seed: 1, Force: true}); err == nil || !strings.Contains(err.Error(), "more than the 200000") {
		t.Errorf("fpops 1e-300 with Force: %v", err)
	}
}

// TestEstimateKeepsScenariosRunning: every scenario the project ships (the public
// ones and the corpus) is estimated well under MaxEstimatedRun for ten simulated
// days, so no one needs --force for them.
func TestEstimateKeepsScenariosRunning(t *testing.T) {
	t.Parallel()
	dirs, _ := filepath.Glob("../../scenarios/*/client_state.xml")
	corpus, _ := filepath.Glob("../../scenarios/corpus/*/client_state.xml")
	dirs = append(dirs, corpus...)
	if len(dirs) < 100 {
		t.Fatalf("found %d scenarios, want the public ones and the corpus", len(dirs))
	}
	for _, f := range dirs {
		sc := load(t, filepath.Dir(f))
		s, err := New(sc, Config{Duration: 10 * 86400, Delta: 60, Policy: "seed", Seed: 1})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if est := s.EstimatedRunTime(); est > MaxEstimatedRun/4 {
			t.Errorf("%s: estimated %g s for ten days, want under %g", f, est, MaxEstimatedRun/4)
		}
	}
}

// TestServeFailureMasterFlag: an RPC the down server fails is counted and backed off
// either way, but only a get-work RPC's tenth failure in a row sets the master-fetch
// flag; a report session's does not (seed 000's report_result_session has no such
// line), as brpc session does.
func TestServeFailureMasterFlag(t *testing.T) {
	for _, report := range []bool{false, true} {
		s, err := New(load(t, "testdata/noisy"), Config{Duration: 10 * 86400, Delta: 60, Policy: "seed", Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		now := s.now
		for s.servers[0].up.at(now) {
			now += 60
		}
		a := &s.doc.Projects[0]
		a.SchedulerURLs, a.NRPCFailures, a.MasterFetchPending = []string{schedulerURL(a)}, 9, false
		if rep := s.Serve(RPC{Project: 0, Report: report}, now); !rep.Failed {
			t.Fatalf("report %v: the down server answered", report)
		}
		if a.NRPCFailures != 10 || !(a.MinRPCTime > now) || a.MasterFetchPending == report {
			t.Errorf("report %v: failures %d, min_rpc_time %g (now %g), master flag %v; want 10, later, %v",
				report, a.NRPCFailures, a.MinRPCTime, now, a.MasterFetchPending, !report)
		}
	}
}

// TestFailedRPCsNotCounted: an RPC to a down server is no scheduler RPC in the figures:
// BOINC's emulator counts an RPC (sim_results.nrpcs, the r of RPCs per job) only when
// the server answered it (simulate_rpc returns early for a down project). bsim counts
// the failures apart.
func TestFailedRPCsNotCounted(t *testing.T) {
	s, err := New(load(t, "testdata/noisy"), Config{Duration: 10 * 86400, Delta: 60, Policy: "seed", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	down := s.now
	for s.servers[0].up.at(down) {
		down += 60
	}
	a := &s.doc.Projects[0]
	a.SchedulerURLs, a.MasterFetchPending = []string{schedulerURL(a)}, false
	if rep := s.Serve(RPC{Project: 0}, down); !rep.Failed {
		t.Fatal("the down server answered")
	}
	up := down
	for !s.servers[0].up.at(up) {
		up += 60
	}
	if rep := s.Serve(RPC{Project: 0}, up); rep.Failed {
		t.Fatal("the up server failed the RPC")
	}
	if res := s.Result(); res.RPCs != 1 || res.FailedRPCs != 1 {
		t.Errorf("%d RPCs, %d failed; want 1 and 1", res.RPCs, res.FailedRPCs)
	}
}
