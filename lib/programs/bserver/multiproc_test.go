package bserver_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/scripttest"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// run runs bserver in-process and fails t unless it exits 0.
func run(t *testing.T, args ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := bserver.Main(append([]string{"bserver"}, args...), nil, &out, &errb); code != 0 {
		t.Fatalf("bserver %v: status %d: %s", args, code, errb.String())
	}
}

// TestTwoServers runs two server processes on one database (a SQLite file, and a
// MariaDB database when BKIT_TEST_MYSQL_DSN is set). Hosts make their requests at
// once, each round sending the same report to both servers concurrently and asking
// both for a job. No result may be sent twice, and every report must be recorded
// exactly once.
func TestTwoServers(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			testTwoServers(t, e.DSN)
		})
	}
}

func testTwoServers(t *testing.T, db string) {
	const hosts, rounds = 30, 6 // 30 + 30×6×2 = 390 requests
	// One project directory for both servers (a MySQL project names it; SQLite's is the
	// database's directory), given as a flag: t.Setenv would keep the test from running
	// beside the others.
	pdir := t.TempDir()
	// The schema from the template: init then has nothing to migrate.
	storetest.Migrated(t, db)
	run(t, "init", "--db", db, "--project-dir", pdir)
	run(t, "app", "add", "--db", db, "--project-dir", pdir, "sim")
	run(t, "app-version", "add", "--db", db, "--project-dir", pdir, "--app", "sim", "--version", "1")
	run(t, "work", "create", "--db", db, "--project-dir", pdir, "--app", "sim", "--count", "1000", "--fpops-est", "1e12", "--delay-bound", "1d")
	urls := []string{scripttest.StartServe(t, db, pdir) + "scheduler", scripttest.StartServe(t, db, pdir) + "scheduler"}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}
	post := func(url string, req *boincxml.SchedulerRequest) (*boincxml.SchedulerReply, error) {
		b, _ := req.Marshal()
		resp, err := client.Post(url, "text/xml", bytes.NewReader(b))
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

	var mu sync.Mutex
	sentTo := map[string]int64{} // result name → host it was sent to
	reported := map[string]bool{}
	var wg sync.WaitGroup
	for h := 0; h < hosts; h++ {
		key := strings.TrimSpace(runOut(t, "user", "add", "--db", db, "--project-dir", pdir, "--name", fmt.Sprintf("volunteer %d", h)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := boincxml.SchedulerRequest{Authenticator: key, CPUReqSecs: 1, CPUReqInstances: 1, WorkReqSeconds: 1, HostInfo: boincxml.HostInfo{PNCPUs: 1}}
			rep, err := post(urls[h%2], &req)
			if err != nil {
				t.Error(err)
				return
			}
			req.HostID = rep.HostID // it goes on with its account key
			var held []string
			note := func(rep *boincxml.SchedulerReply) {
				mu.Lock()
				defer mu.Unlock()
				for _, r := range rep.ResultsSent {
					if prev, dup := sentTo[r.Name]; dup {
						t.Errorf("result %s sent twice: to hosts %d and %d", r.Name, prev, req.HostID)
					}
					sentTo[r.Name] = req.HostID
					held = append(held, r.Name)
				}
			}
			note(rep)
			for round := 0; round < rounds; round++ {
				req.RPCSeqno++
				req.Results = nil
				for _, name := range held {
					req.Results = append(req.Results, boincxml.ReportedResult{Name: name, FinalCPUTime: 100, State: boincxml.ResultFilesUploaded})
				}
				mu.Lock()
				for _, name := range held {
					reported[name] = true
				}
				mu.Unlock()
				held = nil
				// The same report to both servers at once.
				var reps [2]*boincxml.SchedulerReply
				var errs [2]error
				var both sync.WaitGroup
				for i := range 2 {
					both.Add(1)
					go func() {
						defer both.Done()
						r := req
						reps[i], errs[i] = post(urls[i], &r)
					}()
				}
				both.Wait()
				for i := range 2 {
					if errs[i] != nil {
						t.Error(errs[i])
						return
					}
					if len(reps[i].ResultAcks) != len(req.Results) {
						t.Errorf("host %d: %d acks for %d reports", req.HostID, len(reps[i].ResultAcks), len(req.Results))
					}
					note(reps[i])
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.Results(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sentRows, overRows := 0, 0
	for _, r := range rows {
		want, sent := sentTo[r.Name]
		switch {
		case r.ServerState == store.ServerStateUnsent:
			if sent {
				t.Errorf("%s: sent to host %d but unsent in the database", r.Name, want)
			}
			continue
		case !sent:
			t.Errorf("%s: %+v in the database but never in a reply", r.Name, r)
		case r.HostID != want:
			t.Errorf("%s: host %d in the database, sent to %d", r.Name, r.HostID, want)
		}
		sentRows++
		if reported[r.Name] {
			overRows++
			if r.ServerState != store.ServerStateOver || r.Outcome != store.OutcomeSuccess || r.CPUTime != 100 {
				t.Errorf("%s: reported but %+v", r.Name, r)
			}
		} else if r.ServerState != store.ServerStateInProgress {
			t.Errorf("%s: not reported but %+v", r.Name, r)
		}
	}
	if sentRows != len(sentTo) || overRows != len(reported) {
		t.Errorf("database: %d sent, %d over; replies: %d sent, %d reported", sentRows, overRows, len(sentTo), len(reported))
	}
	t.Logf("%d hosts, %d requests, %d results sent, %d reported", hosts, hosts+hosts*rounds*2, len(sentTo), len(reported))
}
