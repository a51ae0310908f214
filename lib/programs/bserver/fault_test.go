package bserver_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/scripttest"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// serveProc is a `bserver serve` process the test may SIGKILL.
type serveProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
}

func startServeProc(t *testing.T, db, projectDir string, flags ...string) *serveProc {
	t.Helper()
	cmd, line, stderr := scripttest.Launch(t, true, "bserver", append([]string{"serve", "--db", db, "--project-dir", projectDir, "--addr", "127.0.0.1:0"}, flags...)...)
	url, ok := strings.CutPrefix(line, "listening on ")
	if !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("serve said %q: %s", line, stderr)
	}
	return &serveProc{cmd: cmd, url: url + "scheduler", stderr: stderr}
}

// TestKilledUnderLoad SIGKILLs `bserver serve` while hosts make requests at full speed,
// three times, each time starting a new server on the same database, then checks what
// must hold whatever instant the kill came at (issue 18), on SQLite and on MariaDB:
// the database passes its integrity check; no result is both unsent and assigned; every
// report a host was acknowledged is recorded, exactly once (later duplicates change
// nothing); no result was sent to two hosts.
func TestKilledUnderLoad(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			testKilledUnderLoad(t, e.DSN)
		})
	}
}

func testKilledUnderLoad(t *testing.T, db string) {
	const hosts, kills = 8, 3
	pdir := t.TempDir() // a flag, not t.Setenv, so that the test runs beside the others
	// The schema from the template: init then has nothing to migrate.
	storetest.Migrated(t, db)
	run(t, "init", "--db", db, "--project-dir", pdir)
	run(t, "app", "add", "--db", db, "--project-dir", pdir, "sim")
	run(t, "app-version", "add", "--db", db, "--project-dir", pdir, "--app", "sim", "--version", "1")
	run(t, "work", "create", "--db", db, "--project-dir", pdir, "--app", "sim", "--count", "1500", "--fpops-est", "1e12", "--delay-bound", "1d")

	var url atomic.Value
	proc := startServeProc(t, db, pdir)
	url.Store(proc.url)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: hosts}, Timeout: 20 * time.Second}
	post := func(req *boincxml.SchedulerRequest) (*boincxml.SchedulerReply, error) {
		b, _ := req.Marshal()
		resp, err := client.Post(url.Load().(string), "text/xml", bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		rep, err := boincxml.ParseSchedulerReply(resp.Body)
		if err == nil && (resp.StatusCode != 200 || len(rep.Messages) > 0) {
			err = fmt.Errorf("status %d, messages %+v", resp.StatusCode, rep.Messages)
		}
		return rep, err
	}

	// What the hosts saw: a job counts as sent when its reply arrived, a report as
	// recorded when its acknowledgement did. cpuTime[name] is the CPU time of the report
	// that was acknowledged: each attempt reports a different one.
	var mu sync.Mutex
	sentTo := map[string]int64{}
	acked := map[string]float64{}
	var failures, requests atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	type hostState struct {
		req     boincxml.SchedulerRequest
		held    []string
		attempt float64
	}
	states := make([]*hostState, hosts)
	for h := range hosts {
		wg.Add(1)
		key := strings.TrimSpace(runOut(t, "user", "add", "--db", db, "--project-dir", pdir, "--name", fmt.Sprintf("volunteer %d", h)))
		states[h] = &hostState{req: boincxml.SchedulerRequest{Authenticator: key, CPUReqSecs: 1, CPUReqInstances: 1, WorkReqSeconds: 1, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9}}}
		go func() {
			defer wg.Done()
			hs := states[h]
			for {
				select {
				case <-stop:
					return
				default:
				}
				hs.attempt++
				hs.req.RPCSeqno++
				hs.req.Results = nil
				for _, name := range hs.held {
					hs.req.Results = append(hs.req.Results, boincxml.ReportedResult{Name: name, FinalCPUTime: hs.attempt, State: boincxml.ResultFilesUploaded})
				}
				requests.Add(1)
				rep, err := post(&hs.req)
				if err != nil {
					// The server died or is starting: try again, reports and all, as a
					// client does.
					failures.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if hs.req.HostID == 0 {
					hs.req.HostID = rep.HostID // it goes on with its account key
				}
				mu.Lock()
				ackedNow := map[string]bool{}
				for _, a := range rep.ResultAcks {
					acked[a.Name] = hs.attempt
					ackedNow[a.Name] = true
				}
				var still []string
				for _, name := range hs.held {
					if !ackedNow[name] {
						still = append(still, name)
					}
				}
				hs.held = still
				for _, r := range rep.ResultsSent {
					if prev, dup := sentTo[r.Name]; dup {
						t.Errorf("result %s sent twice: to hosts %d and %d", r.Name, prev, hs.req.HostID)
					}
					sentTo[r.Name] = hs.req.HostID
					hs.held = append(hs.held, r.Name)
				}
				mu.Unlock()
			}
		}()
	}
	for k := range kills {
		time.Sleep(time.Duration(150+50*k) * time.Millisecond)
		proc.cmd.Process.Signal(syscall.SIGKILL)
		proc.cmd.Wait()
		proc = startServeProc(t, db, pdir)
		url.Store(proc.url)
	}
	time.Sleep(150 * time.Millisecond)
	close(stop)
	wg.Wait()

	// Every acknowledged report sent again: a duplicate, which must change nothing.
	for _, hs := range states {
		req := hs.req
		req.RPCSeqno++
		req.Results = nil
		mu.Lock()
		for name, host := range sentTo {
			if _, ok := acked[name]; ok && host == req.HostID {
				req.Results = append(req.Results, boincxml.ReportedResult{Name: name, FinalCPUTime: 1e6, State: boincxml.ResultFilesUploaded})
			}
		}
		mu.Unlock()
		if req.HostID == 0 {
			continue
		}
		if rep, err := post(&req); err != nil || len(rep.ResultAcks) != len(req.Results) {
			t.Errorf("host %d: duplicate reports after the restarts: %v", req.HostID, err)
		}
	}
	proc.cmd.Process.Signal(syscall.SIGTERM)
	if err := proc.cmd.Wait(); err != nil {
		t.Errorf("last server: %v\n%s", err, proc.stderr)
	}
	if t.Failed() {
		return
	}

	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	checkIntegrity(t, s)
	var bad int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM result WHERE (server_state=? AND hostid<>0) OR (server_state<>? AND hostid=0)`,
		store.ServerStateUnsent, store.ServerStateUnsent).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Errorf("%d results both unsent and assigned (or sent to no host)", bad)
	}
	rows, err := s.Results(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]store.ResultRow{}
	lostReplies := 0
	for _, r := range rows {
		byName[r.Name] = r
		if r.ServerState != store.ServerStateUnsent {
			if want, ok := sentTo[r.Name]; !ok {
				lostReplies++ // committed, then the server died before the reply went out
			} else if r.HostID != want {
				t.Errorf("%s: host %d in the database, its reply went to host %d", r.Name, r.HostID, want)
			}
		}
	}
	for name, attempt := range acked {
		r := byName[name]
		switch {
		case r.ServerState != store.ServerStateOver || r.Outcome != store.OutcomeSuccess:
			t.Errorf("%s: acknowledged but %+v", name, r)
		case r.CPUTime == 1e6 || r.CPUTime > attempt || r.CPUTime < 1:
			t.Errorf("%s: recorded with CPU time %g, not from a report up to the acknowledged one (attempt %g)", name, r.CPUTime, attempt)
		}
	}
	t.Logf("%d hosts, %d requests (%d failed while a server was down), %d kills: %d jobs sent, %d reports acknowledged, %d jobs committed whose reply was lost",
		hosts, requests.Load(), failures.Load(), kills, len(sentTo), len(acked), lostReplies)
	if len(acked) == 0 || failures.Load() == 0 {
		t.Errorf("the load did not meet the kills: %d acknowledged, %d failed requests", len(acked), failures.Load())
	}
}

// checkIntegrity runs the engine's own consistency check.
func checkIntegrity(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	if s.Engine() == store.SQLite {
		var res string
		if err := s.DB.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
			t.Errorf("integrity_check: %q, %v", res, err)
		}
		var fk int
		rows, err := s.DB.QueryContext(ctx, `PRAGMA foreign_key_check`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			fk++
		}
		rows.Close()
		if fk != 0 {
			t.Errorf("foreign_key_check: %d violations", fk)
		}
		return
	}
	rows, err := s.DB.QueryContext(ctx, `CHECK TABLE host, result, workunit, app, app_version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, op, typ, msg string
		if err := rows.Scan(&table, &op, &typ, &msg); err != nil {
			t.Fatal(err)
		}
		if typ == "status" && msg != "OK" {
			t.Errorf("CHECK TABLE %s: %s", table, msg)
		}
	}
}
