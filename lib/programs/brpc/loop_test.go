package brpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/state"
	"github.com/bkit/bkit/lib/store"
)

// TestClientLoopLive runs scripts/client-loop.sh --server: the client loop of bkit's
// programs (bfetch, bdevices, brpc poll, brpc session, bsched, bsim's host and time)
// against a live 'bserver serve' on loopback (SQLite) whose clock follows the loop's
// (--clock-file), for one simulated hour of 10-minute jobs (six steps). Every document the loop
// writes is read back by its next stage, which refuses an invalid one (exit 2 stops the
// loop), so a clean exit means a valid document after every step; the final one is
// checked here too. The database must then hold every report the client made exactly
// once, every other job sent to the host must still be in the client's document (none
// lost), and every time the server stamped must be the loop's.
func TestClientLoopLive(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("SKIP: no bash to run scripts/client-loop.sh")
	}
	repo, _ := filepath.Abs("../../..")
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	admin := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := bserver.Main(append([]string{"bserver"}, args...), nil, &out, &errb); code != 0 {
			t.Fatalf("bserver %v: status %d: %s", args, code, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	admin("init", "--db", db)
	admin("app", "add", "--db", db, "work")
	admin("app-version", "add", "--db", db, "--app", "work", "--version", "1", "--avg-ncpus", "1")
	admin("work", "create", "--db", db, "--app", "work", "--count", "100", "--fpops-est", "6e11", "--delay-bound", "1d")
	key := admin("user", "add", "--db", db, "--name", "alice")
	const start, duration = 1700000000.0, 3600.0 // live-2cpu.yaml's start; one hour
	clock, urlFile := filepath.Join(dir, "clock"), filepath.Join(dir, "url.txt")
	os.WriteFile(clock, []byte("1700000000\n"), 0o644)
	bin, err := exec.LookPath("bserver")
	if err != nil {
		t.Fatal(err)
	}
	var serveLog bytes.Buffer
	serve := exec.Command(bin, "serve", "--db", db, "--addr", "127.0.0.1:0", "--url-file", urlFile, "--clock-file", clock)
	serve.Stderr = &serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	var url []byte
	for deadline := time.Now().Add(30 * time.Second); len(url) == 0; time.Sleep(50 * time.Millisecond) {
		if url, _ = os.ReadFile(urlFile); len(url) == 0 && time.Now().After(deadline) {
			t.Fatalf("bserver serve did not start: %s", serveLog.String())
		}
	}

	kept := filepath.Join(dir, "kept")
	loop := exec.Command(bash, filepath.Join(repo, "scripts/client-loop.sh"), filepath.Join(repo, "scenarios/live-2cpu.yaml"),
		"--server", strings.TrimSpace(string(url)), "--authenticator", key, "--clock-file", clock, "--duration", "1h", "--delta", "600", "--keep", kept, "-o", "json")
	var out, errb bytes.Buffer
	loop.Stdout, loop.Stderr = &out, &errb
	if err := loop.Run(); err != nil {
		t.Fatalf("client-loop.sh --server: %v\n%s\nserver:\n%s", err, errb.String(), serveLog.String())
	}
	var figures struct {
		Projects []struct {
			Name            string
			DeadlinesMet    int `json:"deadlines_met"`
			DeadlinesMissed int `json:"deadlines_missed"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &figures); err != nil || len(figures.Projects) != 1 {
		t.Fatalf("figures: %v: %s", err, out.String())
	}
	reported := figures.Projects[0].DeadlinesMet + figures.Projects[0].DeadlinesMissed
	b, err := os.ReadFile(filepath.Join(kept, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := state.Decode(b, "state.json")
	if err != nil {
		t.Fatalf("the final document: %v", err)
	}
	p := doc.Projects[0]
	if p.HostID == 0 || p.Authenticator == "" || p.RPCSeqno == 0 || len(p.SchedulerURLs) != 1 || p.NRPCFailures != 0 {
		t.Errorf("project after the loop: hostid %d, authenticator %q, rpc_seqno %d, scheduler URLs %v, failures %d",
			p.HostID, p.Authenticator, p.RPCSeqno, p.SchedulerURLs, p.NRPCFailures)
	}
	var holding []string
	for _, task := range doc.Tasks {
		holding = append(holding, task.Name)
	}

	st, err := store.Open("sqlite:" + db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rs, err := st.Results(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	over, sent := 0, 0
	for _, r := range rs {
		switch r.ServerState {
		case store.ServerStateOver:
			over++
			if r.Outcome != store.OutcomeSuccess || r.HostID != int64(p.HostID) || !(r.ReceivedTime >= start && r.ReceivedTime <= start+duration) {
				t.Errorf("result %s: outcome %s, host %d, received at %.0f; want success, host %d, within the loop's time", r.Name,
					store.OutcomeName[r.Outcome], r.HostID, r.ReceivedTime, p.HostID)
			}
			if slices.Contains(holding, r.Name) {
				t.Errorf("result %s is recorded as reported and still in the client's document", r.Name)
			}
		case store.ServerStateInProgress:
			if !slices.Contains(holding, r.Name) {
				t.Errorf("result %s was sent to the host and is neither reported nor in its document: lost", r.Name)
			}
		default:
			continue
		}
		sent++
		if !(r.SentTime >= start && r.SentTime <= start+duration) {
			t.Errorf("result %s sent at %.0f, not in the loop's time", r.Name, r.SentTime)
		}
	}
	if over != reported || over == 0 {
		t.Errorf("the database records %d reports, the client made %d (want equal and > 0)", over, reported)
	}
	if sent != over+len(holding) {
		t.Errorf("%d results sent, %d reported + %d held by the client", sent, over, len(holding))
	}
	t.Logf("%d RPCs, %d jobs sent, %d reported, %d held", p.RPCSeqno, sent, over, len(holding))
}
