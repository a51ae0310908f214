package brpc

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/state"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

const t0 = 1_700_000_000.0

// project is a real bserver endpoint (lib/server over SQLite) on a loopback port, with
// one CPU app ("cpuapp", 1 CPU, 1 GFLOPS) and nwork workunits of 1e13 FLOPs (10,000 s).
type project struct {
	url   string
	key   string // an account's key, which the server requires
	st    *store.Store
	cfg   server.Config
	ln    net.Listener
	clock atomic.Int64 // the server's clock, Unix seconds
	stop  func()
}

func startProject(t testing.TB, cfg server.Config, nwork int) *project {
	t.Helper()
	st := storetest.Open(t, storetest.SQLiteDSN(t))
	ctx := context.Background()
	if _, err := st.AddApp(ctx, "cpuapp", false, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "cpuapp", VersionNum: 1, AvgNCPUs: 1, Flops: 1e9}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWork(ctx, store.WorkSpec{App: "cpuapp", Count: nwork, FpopsEst: 1e13, DelayBound: 10 * 86400,
		MinQuorum: 1, TargetNResults: 1, MaxErrorResults: 3, MaxTotalResults: 5, MaxSuccessResults: 3}, t0); err != nil {
		t.Fatal(err)
	}
	u, err := st.AddUser(ctx, "alice", "", t0)
	if err != nil {
		t.Fatal(err)
	}
	p := &project{st: st, cfg: cfg, key: u.Authenticator}
	p.clock.Store(int64(t0))
	p.start(t, "127.0.0.1:0")
	p.url = server.URLFor(p.ln)
	return p
}

// start serves the project on addr until stop (or the test's end).
func (p *project) start(t testing.TB, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p.ln = ln
	srv := &server.Server{Store: p.st, Config: p.cfg, Now: func() time.Time { return time.Unix(p.clock.Load(), 0) },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(sctx, ln); close(done) }()
	var once sync.Once
	p.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(p.stop)
}

// clientDoc is a 2-CPU host (1 GFLOPS each) attached to the given projects (name →
// master URL, scheduler URLs), buffer 0.1 + 0.5 days: the high-water mark is 0.6 days,
// 103,680 CPU seconds.
func clientDoc(t testing.TB, projects ...state.Project) *state.Document {
	t.Helper()
	d := &state.Document{
		Version:     state.Version,
		Host:        state.Host{Resources: []state.Resource{{Type: state.ResourceCPU, Instances: 2, Flops: 1e9}}, TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1}},
		Preferences: state.Preferences{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5, ConnectionPeriodDays: 0.1, CPUSchedulingPeriod: 3600},
		Projects:    projects,
	}
	if err := state.Validate(d); err != nil {
		t.Fatal(err)
	}
	return d
}

// session polls at now (seed 000 alone) and performs the session with seed 1 and short
// time-outs.
func session(t *testing.T, doc *state.Document, now float64) *Session {
	t.Helper()
	res := poll(doc, now, nil, cliutil.PolicySeed)
	if !res.planned {
		t.Fatalf("poll at %g planned nothing: %s", now, res.decision.Reason)
	}
	s := &Session{Doc: doc, Now: now, Rand: prsc.NewRand(1), Client: NewClient(time.Second, 300*time.Millisecond),
		Log: func(string, ...any) {}}
	s.Run(context.Background())
	if err := state.Validate(doc); err != nil {
		t.Fatalf("session left an invalid document: %v", err)
	}
	if doc.RPCSession != nil {
		t.Fatal("session not ended")
	}
	return s
}

func count(doc *state.Document, st state.TaskState) int {
	n := 0
	for _, t := range doc.Tasks {
		if t.State == st {
			n++
		}
	}
	return n
}

// backoff is what RPCFailed draws for the n-th failure from a fresh source of seed 1
// after k earlier draws.
func backoff(n, k int) float64 {
	r := prsc.NewRand(1)
	for range k {
		r.Float64()
	}
	return rpc.Backoff(n, r)
}

func TestSessionGetWorkFillsToHighWater(t *testing.T) {
	t.Parallel()
	pj := startProject(t, server.Config{ProjectName: "A"}, 40)
	doc := clientDoc(t, state.Project{Name: "A", MasterURL: pj.url, ResourceShare: 100, Authenticator: pj.key})
	s := session(t, doc, t0)
	// No scheduler URL yet: the master file first (bserver's GET /), then the RPC.
	if len(s.Attempts) != 2 || !s.Attempts[0].Master || !s.Attempts[1].OK {
		t.Fatalf("attempts: %+v", s.Attempts)
	}
	p := &doc.Projects[0]
	if p.HostID == 0 || p.Authenticator == "" || p.RPCSeqno != 1 || p.NRPCFailures != 0 {
		t.Fatalf("identity after the first contact: %+v", p)
	}
	// 103,680 s asked of 10,000-s jobs: 11 jobs, 110,000 s = 0.637 days >= 0.6.
	if n := len(doc.Tasks); n != 11 {
		t.Fatalf("got %d tasks, want 11", n)
	}
	if _, high := rpc.WaterMarks(&doc.Preferences); rpc.EstimatedWorkDays(doc) < high {
		t.Fatalf("estimated work %g days, below the high-water mark %g", rpc.EstimatedWorkDays(doc), high)
	}
	// Full: poll has nothing to do now.
	if res := poll(doc, t0, nil, cliutil.PolicySeed); res.planned {
		t.Fatalf("poll after filling: %+v", res.plan)
	}
}

// Two projects: the session asks the one of greatest debt first, then the next while
// the buffer is short; a project that is down does not block the other.
func TestSessionGetWorkTwoProjectsOneDown(t *testing.T) {
	t.Parallel()
	b := startProject(t, server.Config{ProjectName: "B"}, 40)
	down := deadURL(t)
	doc := clientDoc(t,
		state.Project{Name: "A", MasterURL: down, SchedulerURLs: []string{down + "scheduler"}, ResourceShare: 100},
		state.Project{Name: "B", MasterURL: b.url, SchedulerURLs: []string{b.url + "scheduler"}, ResourceShare: 50, Authenticator: b.key})
	s := session(t, doc, t0)
	a := &doc.Projects[0]
	if a.NRPCFailures != 1 || a.MinRPCTime != t0+backoff(1, 0) {
		t.Fatalf("A after a refused connection: failures %d, min_rpc_time %g, want 1, %g", a.NRPCFailures, a.MinRPCTime, t0+backoff(1, 0))
	}
	if len(s.Attempts) != 2 || s.Attempts[0].Project != "A" || s.Attempts[0].Outcome[:26] != "failed: connection refused" || s.Attempts[1].Project != "B" || !s.Attempts[1].OK {
		t.Fatalf("attempts: %+v", s.Attempts)
	}
	if len(doc.Tasks) != 11 {
		t.Fatalf("B sent %d tasks, want 11", len(doc.Tasks))
	}
}

// deadURL is a loopback URL nobody listens on.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := server.URLFor(ln)
	ln.Close()
	return u
}

// Faults: each failing server in turn; nrpc_failures and min_rpc_time after each, from
// seed 1's draws; the reports stay pending.
func TestSessionFaults(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	handlers := []struct {
		name, outcome string
		h             http.HandlerFunc
	}{
		{"hangs", "failed: timed out", func(w http.ResponseWriter, r *http.Request) {
			// With the request read, the server watches the connection, so the
			// client's giving up ends the request (and the test) at once.
			io.Copy(io.Discard, r.Body)
			select {
			case <-hang:
			case <-r.Context().Done():
			case <-time.After(2 * time.Second): // past the client's 300 ms
			}
		}},
		{"500", "failed: HTTP status 500 Internal Server Error", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", 500)
		}},
		{"garbage", "failed: bad reply: malformed XML", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<scheduler_reply><result_ack><name>x</scheduler_reply>"))
		}},
		{"html", "failed: bad reply: scheduler_reply", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<html><body>maintenance</body></html>"))
		}},
	}
	for _, h := range handlers {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(h.h)
			t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
			doc := clientDoc(t, state.Project{Name: "A", MasterURL: ts.URL + "/", SchedulerURLs: []string{ts.URL + "/scheduler"},
				ResourceShare: 100, NRPCFailures: 2})
			doc.AppVersions = []state.AppVersion{{Name: "A/cpuapp/1", Project: "A", AvgNCPUs: 1}}
			doc.Tasks = []state.Task{{Name: "r1", Project: "A", AppVersion: "A/cpuapp/1", State: state.TaskDone, EstimatedFlops: 1e12, FlopsDone: 1e12, ReportDeadline: t0 + 3600}}
			s := session(t, doc, t0)
			p := &doc.Projects[0]
			if len(s.Attempts) != 1 || len(s.Attempts[0].Outcome) < len(h.outcome) || s.Attempts[0].Outcome[:len(h.outcome)] != h.outcome {
				t.Fatalf("attempts: %+v", s.Attempts)
			}
			if p.NRPCFailures != 3 || p.MinRPCTime != t0+backoff(3, 0) || p.MasterFetchPending {
				t.Fatalf("failures %d min_rpc_time %g flag %v; want 3, %g, false", p.NRPCFailures, p.MinRPCTime, p.MasterFetchPending, t0+backoff(3, 0))
			}
			if doc.Tasks[0].State != state.TaskDone {
				t.Fatalf("report lost: %+v", doc.Tasks[0])
			}
		})
	}
}

// The tenth failure in a row sets the master-fetch flag; the master file, now naming a
// live scheduler, replaces the URLs and clears failures and min_rpc_time; the next
// session reports to it. The report is recorded once although its first reply was
// lost, and a reply with request_delay sets min_rpc_time.
func TestSessionMasterFetchAndRecovery(t *testing.T) {
	t.Parallel()
	pj := startProject(t, server.Config{ProjectName: "A", RequestDelay: 120}, 40)
	// The master page is served where the project's master URL points; it first names
	// a dead scheduler, then the live one.
	dead := deadURL(t) + "scheduler"
	var master atomic.Value
	master.Store(dead)
	ms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(boincxml.MasterFile("A", []string{master.Load().(string)}))
	}))
	t.Cleanup(ms.Close)
	doc := clientDoc(t, state.Project{Name: "A", MasterURL: ms.URL + "/", SchedulerURLs: []string{dead}, ResourceShare: 100, NRPCFailures: 8, Authenticator: pj.key})

	// Ninth failure: no flag.
	session(t, doc, t0)
	if p := doc.Projects[0]; p.NRPCFailures != 9 || p.MasterFetchPending {
		t.Fatalf("after the 9th failure: %+v", p)
	}
	// Tenth: the flag, and the master file is read at the session's end: it names the
	// same dead URL, so nothing changes but the flag.
	now := doc.Projects[0].MinRPCTime
	s := session(t, doc, now)
	p := &doc.Projects[0]
	if len(s.Attempts) != 2 || !s.Attempts[1].Master || s.Attempts[1].Outcome != "unchanged" || p.NRPCFailures != 10 || p.MasterFetchPending {
		t.Fatalf("after the 10th failure: %+v, %+v", s.Attempts, p)
	}
	// The project moves its scheduler; ten more failures later the master file names it.
	master.Store(pj.url + "scheduler")
	p.NRPCFailures = 19
	now = p.MinRPCTime
	s = session(t, doc, now)
	if len(s.Attempts) != 2 || s.Attempts[1].Outcome != "new_schedulers" || p.NRPCFailures != 0 || p.MinRPCTime != 0 ||
		len(p.SchedulerURLs) != 1 || p.SchedulerURLs[0] != pj.url+"scheduler" {
		t.Fatalf("after the master read: %+v, %+v", s.Attempts, p)
	}

	// Recovery: the live server sends work, with request_delay 120 s.
	s = session(t, doc, now)
	if !s.Attempts[0].OK || len(doc.Tasks) != 11 || p.MinRPCTime != now+120 || p.NRPCFailures != 0 {
		t.Fatalf("recovery: %+v, %d tasks, %+v", s.Attempts, len(doc.Tasks), p)
	}

	// Two tasks finish; the reply to their report is lost (the document is not kept):
	// they are reported again and acknowledged, and the server records them once, at
	// its time of the first report.
	for i := range 2 {
		doc.Tasks[i].State, doc.Tasks[i].FlopsDone, doc.Tasks[i].CPUTime = state.TaskDone, 1e13, 10000
		doc.Tasks[i].ReportDeadline = now + 3600 // overdue
	}
	lost := cloneDoc(t, doc)
	now += 1000
	pj.clock.Store(int64(now))
	session(t, lost, now) // recorded, reply discarded with the document
	pj.clock.Store(int64(now + 500))
	s = session(t, doc, now+500)
	if doc.RPCSession != nil || count(doc, state.TaskReported) != 2 || count(doc, state.TaskDone) != 0 {
		t.Fatalf("after the report: %+v; %d reported, %d done", s.Attempts, count(doc, state.TaskReported), count(doc, state.TaskDone))
	}
	rows, err := pj.st.Results(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for _, r := range rows {
		if r.Name == doc.Tasks[0].Name || r.Name == doc.Tasks[1].Name {
			recorded++
			if r.ReceivedTime != float64(int64(now)) {
				t.Errorf("%s: received_time %g, want the first report's %g", r.Name, r.ReceivedTime, float64(int64(now)))
			}
		}
	}
	if recorded != 2 {
		t.Fatalf("%d of the reported results found", recorded)
	}
	// Reported tasks are not reported again.
	if req := rpc.BuildRequest(doc, 0, nil); len(req.Results) != 0 {
		t.Fatalf("reported again: %+v", req.Results)
	}
}

// Seed 000's report_result_session, failing, counts the failure and backs off but does
// not set fetch_master_flag, even at the tenth failure in a row (its pseudocode has no
// such line; get_work_session's has), and reads no master file. The next failure, the
// eleventh, is a get-work session's: 11 mod 10 is not 0, so no flag either.
func TestSessionReportFailureSetsNoMasterFlag(t *testing.T) {
	t.Parallel()
	var masterReads atomic.Int32
	ms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		masterReads.Add(1)
		w.Write(boincxml.MasterFile("A", []string{"http://elsewhere/scheduler"}))
	}))
	t.Cleanup(ms.Close)
	dead := deadURL(t) + "scheduler"
	doc := clientDoc(t, state.Project{Name: "A", MasterURL: ms.URL + "/", SchedulerURLs: []string{dead}, ResourceShare: 100, NRPCFailures: 9})
	doc.AppVersions = []state.AppVersion{{Name: "A/cpuapp/1", Project: "A", AvgNCPUs: 1}}
	// 1e14 FLOPs ready = 100,000 CPU s = 0.58 days on 2 CPUs: above the low-water mark
	// 0.1, so the overdue result (deadline in an hour) starts a report session.
	doc.Tasks = []state.Task{
		{Name: "work", Project: "A", AppVersion: "A/cpuapp/1", State: state.TaskReady, EstimatedFlops: 1e14, ReportDeadline: t0 + 10*86400},
		{Name: "r1", Project: "A", AppVersion: "A/cpuapp/1", State: state.TaskDone, EstimatedFlops: 1e12, FlopsDone: 1e12, ReportDeadline: t0 + 3600},
	}
	if d := rpc.Poll(doc, t0); d.Action != rpc.Report {
		t.Fatalf("poll: %+v, want a report session", d)
	}
	s := session(t, doc, t0)
	p := &doc.Projects[0]
	if s.Kind != "report" || len(s.Attempts) != 1 || s.Attempts[0].OK {
		t.Fatalf("report session: kind %q, attempts %+v", s.Kind, s.Attempts)
	}
	if p.NRPCFailures != 10 || p.MinRPCTime != t0+backoff(10, 0) || p.MasterFetchPending || masterReads.Load() != 0 {
		t.Fatalf("after the report session's 10th failure: failures %d, min_rpc_time %g (want %g), master flag %v, %d master reads; want 10, no flag, no read",
			p.NRPCFailures, p.MinRPCTime, t0+backoff(10, 0), p.MasterFetchPending, masterReads.Load())
	}
	// The work is gone: below the low-water mark, a get-work session, its 11th failure.
	doc.Tasks = doc.Tasks[1:]
	now := p.MinRPCTime
	s = session(t, doc, now)
	if s.Kind != "get_work" || len(s.Attempts) != 1 || p.NRPCFailures != 11 || p.MasterFetchPending || masterReads.Load() != 0 {
		t.Fatalf("get-work session's 11th failure: kind %q, attempts %+v, failures %d, flag %v, %d master reads",
			s.Kind, s.Attempts, p.NRPCFailures, p.MasterFetchPending, masterReads.Load())
	}
}

// Seed 000's get_work_session, its master file step: "read and parse master file; if
// error: P.nrpc_failures++, P.min_rpc_time = exponential_backoff". The tenth failure sets
// the flag, the master page answers 500: the eleventh failure, a new backoff of
// min(60·2^11, 14400) = 14400 s × [0.5, 1) from the session's second draw, and the flag
// stays for the next session.
func TestSessionMasterFetchError(t *testing.T) {
	t.Parallel()
	ms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusInternalServerError)
	}))
	t.Cleanup(ms.Close)
	dead := deadURL(t) + "scheduler"
	doc := clientDoc(t, state.Project{Name: "A", MasterURL: ms.URL + "/", SchedulerURLs: []string{dead}, ResourceShare: 100, NRPCFailures: 9})
	s := session(t, doc, t0)
	p := &doc.Projects[0]
	if len(s.Attempts) != 2 || s.Attempts[0].OK || !s.Attempts[1].Master || s.Attempts[1].OK ||
		!strings.HasPrefix(s.Attempts[1].Outcome, "failed: HTTP status 500") {
		t.Fatalf("attempts: %+v", s.Attempts)
	}
	want := t0 + backoff(11, 1)
	if p.NRPCFailures != 11 || p.MinRPCTime != want || !(p.MinRPCTime >= t0+7200 && p.MinRPCTime < t0+14400) || !p.MasterFetchPending ||
		p.SchedulerURLs[0] != dead {
		t.Fatalf("after the master file error: %+v; want 11 failures, min_rpc_time %g in [t0+7200, t0+14400), the flag, the old URL", p, want)
	}
}

func cloneDoc(t *testing.T, d *state.Document) *state.Document {
	t.Helper()
	b, err := state.Encode(d, state.JSON)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := state.Read(bytes.NewReader(b), "clone")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A reply with no work is a success (the project has nothing to send): nrpc_failures
// back to 0, no RPC backoff, and seed 002's CPU backoff as bdevices reply sets it for a
// request that got nothing. bserver with no work left sends a bare reply; a BOINC
// server adds a message, which the session passes on.
func TestSessionNoWork(t *testing.T) {
	t.Parallel()
	pj := startProject(t, server.Config{ProjectName: "A"}, 0)
	msg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<scheduler_reply><message priority="low">No tasks are available for cpuapp</message></scheduler_reply>`))
	}))
	t.Cleanup(msg.Close)
	for _, url := range []string{pj.url, msg.URL + "/"} {
		doc := clientDoc(t, state.Project{Name: "A", MasterURL: url, SchedulerURLs: []string{url + "scheduler"}, ResourceShare: 100, NRPCFailures: 2, Authenticator: pj.key})
		s := session(t, doc, t0)
		p := &doc.Projects[0]
		if len(s.Attempts) != 1 || !s.Attempts[0].OK || len(doc.Tasks) != 0 || p.NRPCFailures != 0 || p.MinRPCTime != 0 {
			t.Fatalf("%s: attempts %+v, %d tasks, project %+v", url, s.Attempts, len(doc.Tasks), p)
		}
		if len(p.Resources) == 0 || p.Resources[0].BackoffUntil <= t0 {
			t.Fatalf("%s: no CPU work-fetch backoff after an empty reply: %+v", url, p.Resources)
		}
		if url != pj.url && !strings.Contains(s.Attempts[0].Outcome, "message: No tasks are available") {
			t.Errorf("outcome %q does not pass on the server's message", s.Attempts[0].Outcome)
		}
	}
}

// The server goes down while the client holds finished work, and comes back on the
// same address: the failed session keeps the reports pending (nrpc_failures 1, backed
// off), the next one after min_rpc_time reports them, the server records each once,
// and they are not sent again.
func TestSessionServerReturns(t *testing.T) {
	t.Parallel()
	pj := startProject(t, server.Config{ProjectName: "A"}, 40)
	doc := clientDoc(t, state.Project{Name: "A", MasterURL: pj.url, SchedulerURLs: []string{pj.url + "scheduler"}, ResourceShare: 100, Authenticator: pj.key})
	session(t, doc, t0)
	if len(doc.Tasks) != 11 {
		t.Fatalf("%d tasks", len(doc.Tasks))
	}
	now := t0 + 20000
	for i := range 3 {
		doc.Tasks[i].State, doc.Tasks[i].FlopsDone, doc.Tasks[i].CPUTime = state.TaskDone, 1e13, 10000
		doc.Tasks[i].ReportDeadline = now + 3600 // overdue: a report session
	}
	addr := pj.ln.Addr().String()
	pj.stop()
	s := session(t, doc, now)
	p := &doc.Projects[0]
	if len(s.Attempts) != 1 || s.Attempts[0].OK || p.NRPCFailures != 1 || p.MinRPCTime != now+backoff(1, 0) || count(doc, state.TaskDone) != 3 {
		t.Fatalf("server down: attempts %+v, failures %d, min_rpc_time %g (want %g), %d done", s.Attempts, p.NRPCFailures, p.MinRPCTime,
			now+backoff(1, 0), count(doc, state.TaskDone))
	}
	if res := poll(doc, now+1, nil, cliutil.PolicySeed); res.planned {
		t.Fatalf("planned an RPC before min_rpc_time: %+v", res.plan)
	}
	pj.start(t, addr)
	now = p.MinRPCTime
	pj.clock.Store(int64(now))
	s = session(t, doc, now)
	if !s.Attempts[0].OK || s.Attempts[0].Reported != 3 || count(doc, state.TaskReported) != 3 || count(doc, state.TaskDone) != 0 || p.NRPCFailures != 0 {
		t.Fatalf("server back: attempts %+v, %d reported, %d done, failures %d", s.Attempts, count(doc, state.TaskReported),
			count(doc, state.TaskDone), p.NRPCFailures)
	}
	rows, err := pj.st.Results(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	over := 0
	for _, r := range rows {
		if r.ServerState == store.ServerStateOver {
			over++
			if r.ReceivedTime != float64(int64(now)) || r.Outcome != store.OutcomeSuccess {
				t.Errorf("%s: received %g, outcome %d", r.Name, r.ReceivedTime, r.Outcome)
			}
		}
	}
	if over != 3 {
		t.Fatalf("%d results recorded over, want 3", over)
	}
	if req := rpc.BuildRequest(doc, 0, nil); len(req.Results) != 0 {
		t.Fatalf("reported again: %+v", req.Results)
	}
}

// TestNoRscApps: a reply's <no_rsc_apps> names are taken in bkit's names (CUDA is
// NVIDIA), each once; a type the host lacks, or one jobs came for, is ignored with a
// note.
func TestNoRscApps(t *testing.T) {
	doc := clientDoc(t)
	doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 2e9})
	types, ignored := noRscApps(doc, []string{"CUDA", "NVIDIA", "ATI", "CPU"}, map[string]int{"cpu": 1})
	if want := []string{"NVIDIA"}; !slices.Equal(types, want) {
		t.Errorf("types %q, want %q", types, want)
	}
	want := []string{`no_rsc_apps "ATI" ignored: not a resource of this host`, `no_rsc_apps "CPU" ignored: jobs of it came`}
	if !slices.Equal(ignored, want) {
		t.Errorf("ignored %q, want %q", ignored, want)
	}
}
