package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// testNow is the fixed clock of the tests' servers.
var testNow = time.Unix(1_700_000_000, 0)

type env struct {
	url    string
	st     *store.Store
	logs   *syncBuf
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve returned
	err    error         // what Serve returned
}

// start runs a real server on a loopback port over a fresh database with one CPU app
// ("cpuapp", 1 CPU, 1 GFLOPS) and one GPU app ("gpuapp", NVIDIA ×1, 0.5 CPU), and
// nwork workunits of each (1e12 FLOPs, delay bound 1000 s).
func start(t testing.TB, dsn string, cfg server.Config, nwork int) *env {
	t.Helper()
	st := storetest.Open(t, dsn)
	ctx := context.Background()
	for _, app := range []struct {
		name string
		av   store.AppVersion
	}{
		{"cpuapp", store.AppVersion{VersionNum: 1, AvgNCPUs: 1, Flops: 1e9}},
		{"gpuapp", store.AppVersion{VersionNum: 1, AvgNCPUs: 0.5, CoprocType: "NVIDIA", CoprocCount: 1, Flops: 1e11}},
	} {
		if _, err := st.AddApp(ctx, app.name, false, 1); err != nil {
			t.Fatal(err)
		}
		app.av.AppName = app.name
		if _, err := st.AddAppVersion(ctx, app.av, 1); err != nil {
			t.Fatal(err)
		}
		if nwork > 0 {
			if _, err := st.CreateWork(ctx, store.WorkSpec{App: app.name, Count: nwork, FpopsEst: 1e12, DelayBound: 1000,
				MinQuorum: 1, TargetNResults: 1, MaxErrorResults: 3, MaxTotalResults: 5, MaxSuccessResults: 3}, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuf{}
	srv := &server.Server{Store: st, Config: cfg, Now: func() time.Time { return testNow },
		Log: slog.New(slog.NewTextHandler(logs, nil))}
	sctx, cancel := context.WithCancel(context.Background())
	e := &env{url: server.URLFor(ln), st: st, logs: logs, cancel: cancel, done: make(chan struct{})}
	go func() {
		e.err = srv.Serve(sctx, ln)
		close(e.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-e.done
	})
	return e
}

// post sends a request and parses the reply.
func (e *env) post(t testing.TB, req *boincxml.SchedulerRequest) (*boincxml.SchedulerReply, int) {
	t.Helper()
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return e.postRaw(t, "scheduler", b)
}

func (e *env) postRaw(t testing.TB, path string, body []byte) (*boincxml.SchedulerReply, int) {
	t.Helper()
	resp, err := http.Post(e.url+path, "text/xml", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rep, err := boincxml.ParseSchedulerReply(resp.Body)
	if err != nil {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	return rep, resp.StatusCode
}

// newHost makes an account and its host's first request (asking for nothing), as a
// BOINC client attaches with an account key, and returns the host id and the account
// key, which the host presents from then on.
func (e *env) newHost(t testing.TB, ncpus int, gpus int) (int64, string) {
	t.Helper()
	u := e.newUser(t)
	req := &boincxml.SchedulerRequest{Authenticator: u.Authenticator, HostInfo: boincxml.HostInfo{PNCPUs: ncpus, PFpops: 1e9}}
	if gpus > 0 {
		req.HostInfo.Coprocs = boincxml.Coprocs{{Type: "NVIDIA", Count: gpus, PeakFlops: 1e11}}
	}
	rep, status := e.post(t, req)
	if status != 200 || rep.HostID == 0 || rep.UserID != u.ID {
		t.Fatalf("first contact: status %d, reply %+v", status, rep)
	}
	return rep.HostID, u.Authenticator
}

// newUser makes an account.
func (e *env) newUser(t testing.TB) *store.User {
	t.Helper()
	u, err := e.st.AddUser(context.Background(), "volunteer", "", float64(testNow.Unix()))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// anonymousHost makes a host of no account, as a server with AnonymousHosts (a
// testing feature) does for a request without a key, and returns its id.
func anonymousHost(t testing.TB, st *store.Store) int64 {
	t.Helper()
	srv := &server.Server{Store: st, Config: server.Config{AnonymousHosts: true}}
	rep, err := srv.Handle(context.Background(), &boincxml.SchedulerRequest{HostInfo: boincxml.HostInfo{PNCPUs: 1}}, float64(testNow.Unix()), "http://x/")
	if err != nil || rep.HostID == 0 {
		t.Fatalf("an anonymous host: %v, %+v", err, rep)
	}
	return rep.HostID
}

// accountKey makes an account and returns its key, which the scheduler requires.
func accountKey(t testing.TB, st *store.Store) string {
	t.Helper()
	return (&env{st: st}).newUser(t).Authenticator
}

// forEngine runs fn on a fresh database of each engine, the engines at once: each has
// its own database, and the tests mostly wait on commits and DDL.
func forEngine(t *testing.T, fn func(t *testing.T, dsn string)) {
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			fn(t, e.DSN)
		})
	}
}

func names(rs []boincxml.ReplyResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func messages(rep *boincxml.SchedulerReply) string {
	var out []string
	for _, m := range rep.Messages {
		out = append(out, m.Priority+": "+m.Text)
	}
	return strings.Join(out, "\n")
}

// syncBuf collects the server's log lines; the handler goroutines write while the
// test reads.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
