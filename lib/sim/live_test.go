package sim

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
)

// liveDoc is a client of one real project with one CPU app version and no tasks yet.
func liveDoc() *state.Document {
	return &state.Document{Version: 1,
		Host:        state.Host{Resources: []state.Resource{{Type: state.ResourceCPU, Instances: 1, Flops: 1e9}}, TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1}},
		Preferences: state.Preferences{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5, ConnectionPeriodDays: 0.1, CPUSchedulingPeriod: 3600},
		Projects:    []state.Project{{Name: "A", MasterURL: "http://127.0.0.1:1/", ResourceShare: 100}},
		Apps:        []state.App{{Name: "nd", Project: "A"}},
		AppVersions: []state.AppVersion{{Name: "A/nd/1", Project: "A", App: "nd", VersionNum: 1, AvgNCPUs: 1}},
		Tasks:       []state.Task{},
	}
}

// roundTrip writes s's world and document to bytes and restores them, as the next
// stage program would, after edit (what brpc session does in between) changes the
// document.
func roundTrip(t *testing.T, s *Sim, edit func(doc *state.Document)) *Sim {
	t.Helper()
	w, err := s.World("live")
	if err != nil {
		t.Fatal(err)
	}
	wb, err := EncodeWorld(w)
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Encode(s.Doc(), state.JSON)
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := state.Decode(db, "doc")
	if err != nil {
		t.Fatal(err)
	}
	edit(doc)
	w2, err := DecodeWorld(bytes.NewReader(wb), "world")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Restore(doc, w2)
	if err != nil {
		t.Fatal(err)
	}
	return s2
}

// TestLive follows two tasks of a live run through the stages: a reply brings them
// (two jobs, one RPC), one finishes with its digest and is reported on time, the other
// is lost with the host's work; figures count what 'bsim serve' would have counted.
func TestLive(t *testing.T) {
	s, err := New(&scenario.Scenario{Doc: liveDoc()}, Config{Duration: 86400, Delta: 600, Policy: "seed", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetLive([]NondeterministicApp{{App: "nd", P: 1}}); err != nil {
		t.Fatal(err)
	}
	now := s.Now()
	// brpc session: one RPC, two jobs of 600 s and 6000 s.
	s = roundTrip(t, s, func(doc *state.Document) {
		doc.Projects[0].RPCSeqno = 1
		for _, n := range []struct {
			name  string
			flops float64
		}{{"wu_1_0", 6e11}, {"wu_2_0", 6e12}} {
			doc.Tasks = append(doc.Tasks, state.Task{Name: n.name, Project: "A", AppVersion: "A/nd/1", State: state.TaskReady,
				EstimatedFlops: n.flops, ReportDeadline: now + 3600, ReceivedTime: now})
		}
		doc.Tasks[0].State = state.TaskRunning // the host's one CPU
	})
	if got := s.Result(); got.RPCs != 1 || got.Jobs != 2 {
		t.Fatalf("after the reply: %d RPCs, %d jobs; want 1, 2", got.RPCs, got.Jobs)
	}
	s.Advance() // wu_1_0's 600 s of work are done in the step
	if n := s.Settle(); n != 1 {
		t.Fatalf("settle: %d tasks done, want 1", n)
	}
	done := s.doc.Tasks[0]
	if done.State != state.TaskDone || done.OutputDigest != digestOf("result:wu_1_0") {
		t.Fatalf("wu_1_0: state %s digest %q; want done with its own digest (P = 1)", done.State, done.OutputDigest)
	}
	// The next session reports it; the host then loses wu_2_0.
	s = roundTrip(t, s, func(doc *state.Document) {
		doc.Projects[0].RPCSeqno = 2
		doc.Tasks[0].State = state.TaskReported
	})
	if len(s.doc.Tasks) != 1 || s.doc.Tasks[0].Name != "wu_2_0" {
		t.Fatalf("after the report: tasks %v, want only wu_2_0", s.doc.Tasks)
	}
	s = roundTrip(t, s, func(doc *state.Document) { doc.Tasks = doc.Tasks[:0] })
	res := s.Result()
	if res.RPCs != 2 || res.Jobs != 2 || res.Projects[0].DeadlinesMet != 1 || res.Projects[0].DeadlinesMissed != 0 || res.UsedFlops <= 0 {
		t.Fatalf("figures: %d RPCs, %d jobs, met %d, missed %d, used %g; want 2, 2, 1, 0, > 0",
			res.RPCs, res.Jobs, res.Projects[0].DeadlinesMet, res.Projects[0].DeadlinesMissed, res.UsedFlops)
	}
}

// TestLiveDigest: replicas of a deterministic app agree (the workunit's digest); a
// nondeterministic app's disagree with about its probability, the same way every time.
func TestLiveDigest(t *testing.T) {
	s := &Sim{doc: liveDoc(), avIndex: map[string]int{"A/nd/1": 0}, cfg: Config{Seed: 1}}
	s.live = &Live{}
	a := s.digest(&state.Task{Name: "wu_7_0", AppVersion: "A/nd/1"})
	b := s.digest(&state.Task{Name: "wu_7_1", AppVersion: "A/nd/1"})
	if a != b || !strings.HasPrefix(a, "sha256:") {
		t.Fatalf("deterministic replicas: %q and %q, want one sha256 digest", a, b)
	}
	s.live.Nondeterministic = []NondeterministicApp{{App: "nd", P: 0.3}}
	own := 0
	for i := range 1000 {
		tk := &state.Task{Name: fmt.Sprintf("wu_%d_1", i), AppVersion: "A/nd/1"}
		d := s.digest(tk)
		if d != s.digest(tk) {
			t.Fatal("a digest changed between calls")
		}
		if d == digestOf("result:"+tk.Name) {
			own++
		}
	}
	if own < 250 || own > 350 {
		t.Fatalf("%d of 1000 results of a P = 0.3 app have their own digest, want about 300", own)
	}
}

// TestLiveRefusesEmulatedApps: a live run's projects are real, so a scenario that
// makes up jobs for one is refused.
func TestLiveRefusesEmulatedApps(t *testing.T) {
	sc := &scenario.Scenario{Doc: liveDoc(), Apps: []scenario.App{{Project: "A", Name: "nd", LatencyBound: 86400, FpopsEst: 1e12}}}
	s, err := New(sc, Config{Duration: 86400, Delta: 600, Policy: "seed", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetLive(nil); err == nil || !strings.Contains(err.Error(), "must give no emulated apps") {
		t.Fatalf("SetLive on a scenario with apps: %v", err)
	}
}
