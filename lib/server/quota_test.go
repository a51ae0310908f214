package server_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/programs/bretry"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// quotaProject is a database with one CPU app ("q", 1 GFLOPS) and n workunits of 1e12
// FLOPs, its quotas set as given, and a server on it (accounts required).
func quotaProject(t *testing.T, dsn string, n int, set store.AppRetrySet) (*store.Store, *server.Server) {
	t.Helper()
	st := storetest.Open(t, dsn)
	ctx := context.Background()
	if _, err := st.AddApp(ctx, "q", false, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "q", VersionNum: 1, AvgNCPUs: 1, Flops: 1e9}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "q", VersionNum: 2, AvgNCPUs: 0.5, CoprocType: "NVIDIA", CoprocCount: 1, Flops: 1e11}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetAppRetry(ctx, "q", set); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWork(ctx, store.WorkSpec{App: "q", Count: n, FpopsEst: 1e12, DelayBound: 86400,
		MinQuorum: 1, TargetNResults: 1, MaxErrorResults: 3, MaxTotalResults: 5, MaxSuccessResults: 3}, 1); err != nil {
		t.Fatal(err)
	}
	return st, &server.Server{Store: st}
}

func ptr(n int) *int { return &n }

// asker returns a function that sends req at a time and returns the reply: the host
// id the first reply gives is kept in req, and the reports req carried are cleared
// (the next request reports only what the test adds).
func asker(t *testing.T, srv *server.Server, req *boincxml.SchedulerRequest) func(now float64) *boincxml.SchedulerReply {
	return func(now float64) *boincxml.SchedulerReply {
		t.Helper()
		rep, err := srv.Handle(context.Background(), req, now, "http://x/")
		if err != nil {
			t.Fatal(err)
		}
		if req.HostID == 0 {
			req.HostID = rep.HostID
		}
		req.Results = nil
		return rep
	}
}

// TestQuotaProbe is issue 27's adversarial probe against the defaults: 200 requests
// without an account key, each claiming 65,536 CPUs and asking for the whole queue,
// take nothing and write nothing; one host of an account claiming 65,536 CPUs is taken
// at 64, and after 40 requests holds 640 jobs (10 in progress per CPU), not 2,100, and
// is told why it gets no more.
func TestQuotaProbe(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		st, srv := quotaProject(t, dsn, 2500, store.AppRetrySet{})
		ctx := context.Background()
		greedy := boincxml.SchedulerRequest{WorkReqSeconds: 1e9, CPUReqSecs: 1e9, CPUReqInstances: 65536, HostInfo: boincxml.HostInfo{PNCPUs: 65536, PFpops: 1e9}}
		for range 200 {
			req := greedy
			if _, err := srv.Handle(ctx, &req, 1000, "http://x/"); err == nil || !strings.Contains(err.Error(), "Invalid or missing account key") {
				t.Fatalf("a request without a key: %v", err)
			}
		}
		if s, err := st.Status(ctx); err != nil || s.Hosts != 0 || s.Results[0].ServerState != "unsent" || s.Results[0].Count != 2500 {
			t.Fatalf("after 200 requests without a key: %+v, %v", s, err)
		}
		req := greedy
		req.Authenticator = accountKey(t, st)
		held := 0
		var last *boincxml.SchedulerReply
		for i := range 40 {
			rep, err := srv.Handle(ctx, &req, 1000+float64(i), "http://x/")
			if err != nil {
				t.Fatal(err)
			}
			if req.HostID == 0 {
				req.HostID = rep.HostID
			}
			held += len(rep.ResultsSent)
			last = rep
		}
		if held != 640 {
			t.Errorf("one host claiming 65,536 CPUs holds %d jobs after 40 requests, want 640 (64 CPUs × 10)", held)
		}
		if got := messages(last); got != "low: This computer has reached a limit on tasks in progress" || len(last.ResultsSent) != 0 {
			t.Errorf("the 40th reply: %d jobs, messages %q", len(last.ResultsSent), got)
		}
	})
}

// TestDailyQuota: a host's daily quota of an app version (2 a CPU here, no limit in
// progress) holds it for the rest of the UTC day with BOINC's message; an error result
// takes one off its quota (1: not multiplied by its CPUs), a success found valid by
// bretry's validator doubles it back;
// a GPU version's quota is per GPU.
func TestDailyQuota(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		st, srv := quotaProject(t, dsn, 200, store.AppRetrySet{DailyQuota: ptr(2), DailyQuotaGPU: ptr(3), MaxInProgress: ptr(0), MaxInProgressGPU: ptr(0)})
		ctx := context.Background()
		const day = 86400.0
		t0 := 1000 * day // the start of a UTC day
		req := boincxml.SchedulerRequest{Authenticator: accountKey(t, st), CPUReqSecs: 1e6, CPUReqInstances: 2, HostInfo: boincxml.HostInfo{PNCPUs: 2, PFpops: 1e9}}
		ask := asker(t, srv, &req)
		if rep := ask(t0); len(rep.ResultsSent) != 4 {
			t.Fatalf("first request: %d jobs, want 4 (2 a CPU)", len(rep.ResultsSent))
		}
		rep := ask(t0 + 10)
		if got := messages(rep); len(rep.ResultsSent) != 0 || got != "low: This computer has finished a daily quota of 4 tasks" {
			t.Errorf("the same day: %d jobs, %q", len(rep.ResultsSent), got)
		}
		// Errors: 2 → 1, which is not multiplied.
		rep = ask(t0 + day)
		if len(rep.ResultsSent) != 4 {
			t.Fatalf("next day: %d jobs", len(rep.ResultsSent))
		}
		for _, r := range rep.ResultsSent[:2] {
			req.Results = append(req.Results, boincxml.ReportedResult{Name: r.Name, ExitStatus: 1, State: boincxml.ResultFilesUploaded})
		}
		if rep = ask(t0 + 2*day); len(rep.ResultsSent) != 1 {
			t.Errorf("after two errors: %d jobs, want 1", len(rep.ResultsSent))
		}
		// A reported success changes nothing until the validator finds it valid (BOINC's
		// validator, is_valid; docs/decisions.md, issue 27): then it doubles the quota,
		// 2 a CPU again.
		req.Results = []boincxml.ReportedResult{{Name: rep.ResultsSent[0].Name, FinalCPUTime: 10, State: boincxml.ResultFilesUploaded}}
		if rep = ask(t0 + 3*day); len(rep.ResultsSent) != 1 {
			t.Errorf("after a success not yet validated: %d jobs, want 1", len(rep.ResultsSent))
		}
		app, err := st.AppRetryByName(ctx, "q")
		if err != nil {
			t.Fatal(err)
		}
		validate := func() bretry.Summary {
			t.Helper()
			p := &bretry.Pass{Store: st, AppID: app.AppID, App: "q", Now: t0 + 3*day + 1, Log: slog.New(slog.DiscardHandler)}
			sum, err := p.Validate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return sum
		}
		if sum := validate(); sum.Validated != 1 {
			t.Fatalf("validated %d workunits, want 1", sum.Validated)
		}
		if rep = ask(t0 + 4*day); len(rep.ResultsSent) != 4 {
			t.Errorf("after a valid result: %d jobs, want 4", len(rep.ResultsSent))
		}
		// GPUs: 3 a GPU, two GPUs.
		gpu := boincxml.SchedulerRequest{Authenticator: accountKey(t, st), WorkReqSeconds: 1e6,
			Coprocs:  boincxml.Coprocs{{Type: "NVIDIA", Count: 2, ReqSecs: 1e6, ReqInstances: 2}},
			HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9, Coprocs: boincxml.Coprocs{{Type: "NVIDIA", Count: 2, PeakFlops: 1e11}}}}
		rep, err = srv.Handle(ctx, &gpu, t0, "http://x/")
		if err != nil || len(rep.ResultsSent) != 6 {
			t.Errorf("a host with two GPUs: %d jobs, %v; want 6", len(rep.ResultsSent), err)
		}
	})
}

// TestAbortedByProjectBelieved: an error reported as "aborted by project" (exit
// status 202) costs no quota only where the project had told the client to abort:
// the task's workunit done (validated or given up) or the task timed out. A host that
// reports its live tasks' errors so loses quota as for any error (issue 27's
// adversarial probe).
func TestAbortedByProjectBelieved(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		st, srv := quotaProject(t, dsn, 20, store.AppRetrySet{DailyQuota: ptr(2), MaxInProgress: ptr(0)})
		ctx := context.Background()
		const day = 86400.0
		t0 := 1000 * day
		run := func(done bool) int {
			t.Helper()
			req := boincxml.SchedulerRequest{Authenticator: accountKey(t, st), CPUReqSecs: 1e6, CPUReqInstances: 1, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9}}
			ask := asker(t, srv, &req)
			rep := ask(t0)
			if len(rep.ResultsSent) != 2 {
				t.Fatalf("first request: %d jobs, want 2", len(rep.ResultsSent))
			}
			for _, r := range rep.ResultsSent {
				if done { // what bretry does when the workunit is given up elsewhere
					if _, err := st.DB.ExecContext(ctx, `UPDATE workunit SET error_mask=1 WHERE id=(SELECT workunitid FROM result WHERE name=?)`, r.Name); err != nil {
						t.Fatal(err)
					}
				}
				req.Results = append(req.Results, boincxml.ReportedResult{Name: r.Name, ExitStatus: 202, State: 6}) // RESULT_ABORTED
			}
			ask(t0 + 10)
			return len(ask(t0 + day).ResultsSent)
		}
		if n := run(true); n != 2 {
			t.Errorf("aborts the project asked for: %d jobs the next day, want 2 (no quota lost)", n)
		}
		if n := run(false); n != 1 {
			t.Errorf("aborts of live tasks: %d jobs the next day, want 1 (two errors: 2 -> 1)", n)
		}
	})
}

// TestRetryDeadlineIsDresult: seed 003's "the deadline of these results is now +
// Dresult": a result a retry made (Dresult 1 h here) goes out with the deadline send
// time + 1 h, not + the workunit's delay bound (1 d), which the first result keeps.
func TestRetryDeadlineIsDresult(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		st, srv := quotaProject(t, dsn, 1, store.AppRetrySet{})
		ctx := context.Background()
		ask := func(now float64) *boincxml.SchedulerReply {
			t.Helper()
			req := boincxml.SchedulerRequest{Authenticator: accountKey(t, st), CPUReqSecs: 1, CPUReqInstances: 1, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9}}
			rep, err := srv.Handle(ctx, &req, now, "http://x/")
			if err != nil || len(rep.ResultsSent) != 1 {
				t.Fatalf("at %g: %v, %+v", now, err, rep)
			}
			return rep
		}
		if rep := ask(1000); float64(rep.ResultsSent[0].ReportDeadline) != 1000+86400 {
			t.Errorf("the first result's deadline %v, want send time + the delay bound %v", rep.ResultsSent[0].ReportDeadline, 1000+86400)
		}
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			var wu, app int64
			if err := tx.QueryRow(`SELECT id, appid FROM workunit`).Scan(&wu, &app); err != nil {
				return err
			}
			return tx.CreateResults(app, []store.NewResult{{WorkunitID: wu, Name: "q_retry", Deadline: 2000 + 3600}}, 2000)
		}); err != nil {
			t.Fatal(err)
		}
		rep := ask(5000)
		if r := rep.ResultsSent[0]; r.Name != "q_retry" || float64(r.ReportDeadline) != 5000+3600 {
			t.Errorf("the retry's result: %s, deadline %v; want q_retry, send time + Dresult %v", r.Name, r.ReportDeadline, 5000+3600)
		}
	})
}
