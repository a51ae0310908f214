package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	"github.com/google/go-cmp/cmp"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := start(t, dsn, server.Config{RequestDelay: 30}, 3)
		id, auth := e.newHost(t, 2, 0)
		ask := boincxml.SchedulerRequest{CPUReqSecs: 1000, WorkReqSeconds: 1000, HostInfo: boincxml.HostInfo{PNCPUs: 2}}
		const key = "Invalid or missing account key.  To fix, remove and add this project."
		for _, tc := range []struct {
			name   string
			hostID int64
			auth   string
			want   string
		}{
			{"wrong authenticator", id, "0123456789abcdef0123456789abcdef", "wrong authenticator for host " + fmt.Sprint(id)},
			{"unknown host", id + 100, "0123456789abcdef0123456789abcdef", fmt.Sprintf("unknown host %d", id+100)},
			{"unknown authenticator", 0, "nope", "unknown authenticator"},
			{"host id without authenticator", id, "", fmt.Sprintf("host %d: the request has no authenticator", id)},
			{"no account key", 0, "", "the request has no account key"},
		} {
			req := ask
			req.HostID, req.Authenticator = tc.hostID, tc.auth
			rep, status := e.post(t, &req)
			// BOINC's notice and its hour's delay (DELAY_MISSING_KEY), not the project's 30 s.
			if want := "notice: " + key + " (" + tc.want + ")"; status != 200 || messages(rep) != want || len(rep.ResultsSent) != 0 || rep.RequestDelay != 3600 {
				t.Errorf("%s: status %d, messages %q, %d jobs, request_delay %v; want 200, %q, no jobs, 3600",
					tc.name, status, messages(rep), len(rep.ResultsSent), rep.RequestDelay, want)
			}
		}
		// Nothing changed: one host, no result sent.
		st, err := e.st.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Hosts != 1 || st.Results[0].ServerState != "unsent" || st.Results[0].Count != 3 {
			t.Errorf("after refusals: %+v", st)
		}
		if !strings.Contains(e.logs.String(), "wrong authenticator") {
			t.Errorf("no log line for a refusal:\n%s", e.logs)
		}
		// The host id with its account's key gets work.
		req := ask
		req.HostID, req.Authenticator = id, auth
		rep, _ := e.post(t, &req)
		if rep.HostID != 0 || len(rep.ResultsSent) != 1 || messages(rep) != "" {
			t.Errorf("host id and account key: hostid %d, %d jobs, %q; want none (it has one), 1, no message", rep.HostID, len(rep.ResultsSent), messages(rep))
		}
	})
}

// TestAccountsRequired: without Config.AnonymousHosts a request without an account key
// (the adversarial probe of issue 27: an empty request, or one asking for the whole
// queue on 65,536 CPUs) is refused with BOINC's notice and writes nothing, not even a
// host row; with it the same request creates a host of no account, which gets work
// and an authenticator. That host's authenticator is refused again by a server that
// requires accounts.
func TestAccountsRequired(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := start(t, dsn, server.Config{}, 3)
		greedy := boincxml.SchedulerRequest{CPUReqSecs: 1e7, CPUReqInstances: 65536, WorkReqSeconds: 1e7, HostInfo: boincxml.HostInfo{PNCPUs: 65536}}
		for name, req := range map[string]*boincxml.SchedulerRequest{"empty": {}, "greedy": &greedy} {
			before := snapshot(t, e.st, allTables)
			rep, status := e.post(t, req)
			if status != 200 || !strings.Contains(messages(rep), "Invalid or missing account key") || rep.HostID != 0 || len(rep.ResultsSent) != 0 || rep.RequestDelay != 3600 {
				t.Errorf("%s request without a key: status %d, hostid %d, %d jobs, %q, delay %v", name, status, rep.HostID, len(rep.ResultsSent), messages(rep), rep.RequestDelay)
			}
			if after := snapshot(t, e.st, allTables); after != before {
				t.Errorf("%s request without a key changed the database:\nbefore %s\nafter  %s", name, before, after)
			}
		}

		anon := &server.Server{Store: e.st, Config: server.Config{AnonymousHosts: true}}
		rep, err := anon.Handle(context.Background(), &greedy, float64(testNow.Unix()), "http://x/")
		if err != nil || rep.HostID == 0 || len(rep.Authenticator) != 32 || len(rep.ResultsSent) == 0 {
			t.Fatalf("with AnonymousHosts: %v, %+v", err, rep)
		}
		before := snapshot(t, e.st, allTables)
		again := greedy
		again.HostID, again.Authenticator = rep.HostID, rep.Authenticator
		rep2, status := e.post(t, &again)
		if want := fmt.Sprintf("host %d belongs to no account", rep.HostID); status != 200 || !strings.Contains(messages(rep2), want) || len(rep2.ResultsSent) != 0 {
			t.Errorf("an anonymous host without AnonymousHosts: status %d, %q, %d jobs; want a refusal naming %q", status, messages(rep2), len(rep2.ResultsSent), want)
		}
		again.HostID = 0 // its authenticator alone
		if rep2, _ := e.post(t, &again); !strings.Contains(messages(rep2), "belongs to no account") {
			t.Errorf("an anonymous host's authenticator alone: %q", messages(rep2))
		}
		if after := snapshot(t, e.st, allTables); after != before {
			t.Errorf("an anonymous host's refused request changed the database:\nbefore %s\nafter  %s", before, after)
		}
	})
}

func TestWorkSending(t *testing.T) {
	t.Parallel()
	deadline := float64(testNow.Unix()) + 1000
	for _, tc := range []struct {
		name   string
		ncpus  int
		gpus   int
		req    boincxml.SchedulerRequest
		want   []string // apps of the jobs sent, in order
		notice string
	}{
		{name: "nothing asked, nothing sent", ncpus: 4},
		// 1e12 FLOPs at 1 GFLOPS is 1000 s: 2500 s needs three jobs.
		{name: "CPU seconds", ncpus: 4, req: boincxml.SchedulerRequest{CPUReqSecs: 2500, WorkReqSeconds: 2500},
			want: []string{"cpuapp", "cpuapp", "cpuapp"}},
		{name: "CPU instances", ncpus: 4, req: boincxml.SchedulerRequest{CPUReqSecs: 1, CPUReqInstances: 2, WorkReqSeconds: 1},
			want: []string{"cpuapp", "cpuapp"}},
		{name: "old client without a GPU: work_req_seconds takes CPU jobs", ncpus: 4, req: boincxml.SchedulerRequest{WorkReqSeconds: 1500},
			want: []string{"cpuapp", "cpuapp"}},
		// 1e12 at 1e11 is 10 s per GPU job: 15 s needs two; no CPU job since the CPU
		// request is zero.
		{name: "GPU only", ncpus: 4, gpus: 1, req: boincxml.SchedulerRequest{WorkReqSeconds: 15,
			Coprocs: boincxml.Coprocs{{Type: "NVIDIA", Count: 1, ReqSecs: 15}}}, want: []string{"gpuapp", "gpuapp"}},
		{name: "GPU and CPU", ncpus: 4, gpus: 2, req: boincxml.SchedulerRequest{WorkReqSeconds: 5, CPUReqSecs: 5,
			Coprocs: boincxml.Coprocs{{Type: "cuda", Count: 2, ReqSecs: 5, ReqInstances: 2}}},
			want: []string{"gpuapp", "gpuapp", "cpuapp"}},
		{name: "GPU asked but host has none", ncpus: 4, req: boincxml.SchedulerRequest{WorkReqSeconds: 15,
			Coprocs: boincxml.Coprocs{{Type: "ATI", ReqSecs: 15}}},
			notice: "low: work requested for ATI, which this host does not report"},
		{name: "more instances than the host has: its CPUs are filled", ncpus: 3, req: boincxml.SchedulerRequest{CPUReqSecs: 1, CPUReqInstances: 8, WorkReqSeconds: 1},
			want: []string{"cpuapp", "cpuapp", "cpuapp"}},
		{name: "capped at MaxJobsPerRPC", ncpus: 4, req: boincxml.SchedulerRequest{CPUReqSecs: 1e9, WorkReqSeconds: 1e9},
			want: []string{"cpuapp", "cpuapp", "cpuapp", "cpuapp", "cpuapp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEngine(t, func(t *testing.T, dsn string) {
				e := start(t, dsn, server.Config{MaxJobsPerRPC: 5}, 10)
				id, auth := e.newHost(t, tc.ncpus, tc.gpus)
				req := tc.req
				req.HostID, req.Authenticator = id, auth
				req.HostInfo = boincxml.HostInfo{PNCPUs: tc.ncpus, PFpops: 1e9}
				if tc.gpus > 0 {
					req.HostInfo.Coprocs = boincxml.Coprocs{{Type: "NVIDIA", Count: tc.gpus, PeakFlops: 1e11}}
				}
				rep, status := e.post(t, &req)
				if status != 200 {
					t.Fatalf("status %d: %s", status, messages(rep))
				}
				var apps []string
				for i, r := range rep.ResultsSent {
					apps = append(apps, rep.Workunits[i].AppName)
					if float64(r.ReportDeadline) != deadline || r.WUName != rep.Workunits[i].Name || r.VersionNum != 1 {
						t.Errorf("job %d: %+v", i, r)
					}
				}
				if d := cmp.Diff(tc.want, apps); d != "" {
					t.Errorf("apps of jobs sent (-want +got)\n%s", d)
				}
				if got := messages(rep); got != tc.notice {
					t.Errorf("messages %q, want %q", got, tc.notice)
				}
				for _, av := range rep.AppVersions {
					if (av.AppName == "gpuapp") != (av.Coproc != nil && av.Coproc.Type == "NVIDIA" && av.Coproc.Count == 1) {
						t.Errorf("app version %+v", av)
					}
				}
			})
		})
	}
}

// TestAppVersionPerResource: seed 002's get_app_version. cpuapp also has a GPU version
// (version 2, NVIDIA ×1, 1e11 FLOPS: 1e12 FLOPs in 10 s) besides its CPU one (version
// 1, 1 GFLOPS: 1000 s). A request for CPU work only ("send_only_cpu") ignores the GPU
// version, though it is faster: 1500 s takes two CPU jobs. A request for GPU work only
// ignores the CPU version: 15 s takes two GPU jobs of cpuapp (its results are the
// oldest). An old client's request (work_req_seconds alone: seconds_to_fill, used "if
// !coproc_request", which neither send_only flag restricts) is filled with the fastest
// version the host can run, whatever its resource: 15 s takes two GPU jobs too; on a
// host without a GPU, 1500 s takes two CPU jobs.
func TestAppVersionPerResource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		gpus int
		req  boincxml.SchedulerRequest
		want []string // app/version of the jobs sent, in order
	}{
		{"CPU only: the CPU version", 1, boincxml.SchedulerRequest{CPUReqSecs: 1500, WorkReqSeconds: 1500,
			Coprocs: boincxml.Coprocs{{Type: "NVIDIA", Count: 1}}}, []string{"cpuapp/1", "cpuapp/1"}},
		{"GPU only: the GPU version", 1, boincxml.SchedulerRequest{WorkReqSeconds: 15,
			Coprocs: boincxml.Coprocs{{Type: "NVIDIA", Count: 1, ReqSecs: 15}}}, []string{"cpuapp/2", "cpuapp/2"}},
		{"old client with a GPU: the fastest version", 1, boincxml.SchedulerRequest{WorkReqSeconds: 15},
			[]string{"cpuapp/2", "cpuapp/2"}},
		{"old client without a GPU: the CPU version", 0, boincxml.SchedulerRequest{WorkReqSeconds: 1500},
			[]string{"cpuapp/1", "cpuapp/1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEngine(t, func(t *testing.T, dsn string) {
				e := start(t, dsn, server.Config{MaxJobsPerRPC: 5}, 10)
				if _, err := e.st.AddAppVersion(context.Background(), store.AppVersion{AppName: "cpuapp", VersionNum: 2, AvgNCPUs: 0.5,
					CoprocType: "NVIDIA", CoprocCount: 1, Flops: 1e11}, 1); err != nil {
					t.Fatal(err)
				}
				id, auth := e.newHost(t, 4, tc.gpus)
				req := tc.req
				req.HostID, req.Authenticator = id, auth
				req.HostInfo = boincxml.HostInfo{PNCPUs: 4, PFpops: 1e9}
				if tc.gpus > 0 {
					req.HostInfo.Coprocs = boincxml.Coprocs{{Type: "NVIDIA", Count: tc.gpus, PeakFlops: 1e11}}
				}
				rep, status := e.post(t, &req)
				if status != 200 {
					t.Fatalf("status %d: %s", status, messages(rep))
				}
				var got []string
				for i, r := range rep.ResultsSent {
					got = append(got, fmt.Sprintf("%s/%d", rep.Workunits[i].AppName, r.VersionNum))
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("jobs sent (-want +got)\n%s", d)
				}
			})
		})
	}
}

// TestNoRscApps: with the option on, a request for a resource no app version uses is
// answered with <no_rsc_apps>; a resource with versions but no work is not.
func TestNoRscApps(t *testing.T) {
	e := start(t, "sqlite:"+t.TempDir()+"/p.db", server.Config{NoRscApps: true}, 0)
	id, auth := e.newHost(t, 2, 1)
	rep, _ := e.post(t, &boincxml.SchedulerRequest{HostID: id, Authenticator: auth, CPUReqSecs: 10, WorkReqSeconds: 10,
		Coprocs:  boincxml.Coprocs{{Type: "ATI", Count: 1, ReqSecs: 10}, {Type: "NVIDIA", Count: 1, ReqSecs: 10}},
		HostInfo: boincxml.HostInfo{PNCPUs: 2, Coprocs: boincxml.Coprocs{{Type: "ATI", Count: 1}, {Type: "NVIDIA", Count: 1}}}})
	if d := cmp.Diff([]string{"ATI"}, rep.NoRscApps); d != "" {
		t.Errorf("no_rsc_apps (-want +got)\n%s", d)
	}
}

func TestReports(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := start(t, dsn, server.Config{}, 4)
		id, auth := e.newHost(t, 1, 0)
		rep, _ := e.post(t, &boincxml.SchedulerRequest{HostID: id, Authenticator: auth, CPUReqInstances: 1, CPUReqSecs: 2000})
		sent := names(rep.ResultsSent)
		if len(sent) != 2 {
			t.Fatalf("sent %v, want 2 jobs", sent)
		}
		report := &boincxml.SchedulerRequest{HostID: id, Authenticator: auth, Results: []boincxml.ReportedResult{
			{Name: sent[0], FinalCPUTime: 900, State: boincxml.ResultFilesUploaded},
			{Name: sent[1], FinalCPUTime: 5, ExitStatus: -1, State: 3},
			{Name: "cpuapp_999_0"},
		}}
		for i := 0; i < 2; i++ { // the second time is a duplicate of the first
			rep, _ = e.post(t, report)
			if d := cmp.Diff([]boincxml.NameRef{{Name: sent[0]}, {Name: sent[1]}, {Name: "cpuapp_999_0"}}, rep.ResultAcks); d != "" {
				t.Errorf("acks (-want +got)\n%s", d)
			}
			if got := messages(rep); got != "low: no result named cpuapp_999_0; report ignored" {
				t.Errorf("messages %q", got)
			}
			report.Results[0].FinalCPUTime = 1 // must not overwrite the first report
		}
		rows, err := e.st.Results(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]store.ResultRow{}
		for _, r := range rows {
			byName[r.Name] = r
		}
		r0, r1 := byName[sent[0]], byName[sent[1]]
		if r0.Outcome != store.OutcomeSuccess || r0.CPUTime != 900 || r0.ServerState != store.ServerStateOver {
			t.Errorf("success report recorded as %+v", r0)
		}
		if r1.Outcome != store.OutcomeClientError || r1.CPUTime != 5 {
			t.Errorf("error report recorded as %+v", r1)
		}
		// Another host cannot report this host's results.
		other, oauth := e.newHost(t, 1, 0)
		rep, _ = e.post(t, &boincxml.SchedulerRequest{HostID: other, Authenticator: oauth,
			Results: []boincxml.ReportedResult{{Name: byName["cpuapp_3_0"].Name}}})
		if got := messages(rep); got != "low: result cpuapp_3_0 was not sent to this host; report ignored" {
			t.Errorf("foreign report: messages %q", got)
		}
	})
}

func TestBadInput(t *testing.T) {
	e := start(t, "sqlite:"+t.TempDir()+"/p.db", server.Config{MaxBodyBytes: 1000}, 1)
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"malformed", "<scheduler_request><hostid>", 400, "bad scheduler request: malformed XML at line 1: unexpected EOF"},
		{"not a number", "<scheduler_request><cpu_req_secs>x</cpu_req_secs></scheduler_request>", 400,
			`bad scheduler request: scheduler_request: cpu_req_secs: want a number, got "x"`},
		{"negative", "<scheduler_request><cpu_req_instances>-2</cpu_req_instances></scheduler_request>", 400,
			"bad scheduler request: scheduler_request: cpu_req_instances: must be a number in [0, 65536], got -2"},
		{"oversized", "<scheduler_request>" + strings.Repeat("<x/>", 500) + "</scheduler_request>", 413,
			"request body larger than 1000 bytes"},
	} {
		rep, status := e.postRaw(t, "scheduler", []byte(tc.body))
		if status != tc.status || messages(rep) != "notice: "+tc.want {
			t.Errorf("%s: status %d, %q; want %d, %q", tc.name, status, messages(rep), tc.status, tc.want)
		}
	}
	resp, err := http.Get(e.url + "scheduler")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("GET /scheduler: status %d, want 405", resp.StatusCode)
	}
	st, _ := e.st.Status(context.Background())
	if st.Hosts != 0 {
		t.Errorf("bad requests created %d hosts", st.Hosts)
	}
}

func TestMasterFile(t *testing.T) {
	e := start(t, "sqlite:"+t.TempDir()+"/p.db", server.Config{ProjectName: "Test"}, 0)
	resp, err := http.Get(e.url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	urls, err := boincxml.ParseMasterFile(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{e.url + "scheduler"}, urls); d != "" {
		t.Errorf("scheduler URLs (-want +got)\n%s", d)
	}
	// POST / is the scheduler too.
	rep, status := e.postRaw(t, "", []byte("<scheduler_request><authenticator>"+e.newUser(t).Authenticator+"</authenticator></scheduler_request>"))
	if status != 200 || rep.HostID == 0 || rep.ProjectName != "Test" || rep.MasterURL != e.url {
		t.Errorf("POST /: %d %+v", status, rep)
	}
}

// TestNewHostsPerAccount: an account makes at most Config.MaxNewHostsPerDay hosts in
// 24 hours (issue 27's adversarial probe made 53,000 hosts of one account in 90 s):
// one more is refused with a notice and an hour's delay and writes nothing; a client
// attaching again with its host CPID still gets its host back; another account is not
// held; a day after the first host the account may make one more; a negative limit
// is none.
func TestNewHostsPerAccount(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := start(t, dsn, server.Config{MaxNewHostsPerDay: 3}, 0)
		u := e.newUser(t)
		attach := func(u *store.User, cpid string) *boincxml.SchedulerReply {
			t.Helper()
			rep, status := e.post(t, &boincxml.SchedulerRequest{Authenticator: u.Authenticator, HostInfo: boincxml.HostInfo{PNCPUs: 1, HostCPID: cpid}})
			if status != 200 {
				t.Fatalf("attach %q: status %d", cpid, status)
			}
			return rep
		}
		var first int64
		for i := range 3 {
			rep := attach(u, fmt.Sprintf("cpid%d", i))
			if rep.HostID == 0 {
				t.Fatalf("host %d of 3: refused: %q", i+1, messages(rep))
			}
			if i == 0 {
				first = rep.HostID
			}
		}
		before := snapshot(t, e.st, allTables)
		for _, cpid := range []string{"cpid3", ""} {
			rep := attach(u, cpid)
			if want := "This account has attached 3 new computers in the last 24 hours"; rep.HostID != 0 || !strings.Contains(messages(rep), want) || rep.RequestDelay != 3600 {
				t.Errorf("a fourth host (cpid %q): hostid %d, %q, delay %v; want a refusal saying %q and an hour's delay", cpid, rep.HostID, messages(rep), rep.RequestDelay, want)
			}
		}
		if after := snapshot(t, e.st, allTables); after != before {
			t.Errorf("a refused new host changed the database:\nbefore %s\nafter  %s", before, after)
		}
		if rep := attach(u, "cpid0"); rep.HostID != first {
			t.Errorf("attaching again with its CPID: hostid %d (%q), want %d", rep.HostID, messages(rep), first)
		}
		if rep := attach(e.newUser(t), "cpid3"); rep.HostID == 0 {
			t.Errorf("another account's first host refused: %q", messages(rep))
		}

		// 24 hours after the first three, they no longer count: three more, not four.
		later := &server.Server{Store: e.st, Config: server.Config{MaxNewHostsPerDay: 3}}
		req := &boincxml.SchedulerRequest{Authenticator: u.Authenticator, HostInfo: boincxml.HostInfo{PNCPUs: 1}}
		for i := range 4 {
			req.HostInfo.HostCPID = fmt.Sprintf("next%d", i)
			rep, err := later.Handle(context.Background(), req, float64(testNow.Unix())+86400, "http://x/")
			if i < 3 && (err != nil || rep.HostID == 0) {
				t.Errorf("a day later, host %d of 3: %v", i+1, err)
			}
			if i == 3 && (err == nil || !strings.Contains(err.Error(), "attached 3 new computers")) {
				t.Errorf("a day later, one more than the limit: %v", err)
			}
		}
		unlimited := &server.Server{Store: e.st, Config: server.Config{MaxNewHostsPerDay: -1}}
		for i := range 5 {
			req.HostInfo.HostCPID = fmt.Sprintf("free%d", i)
			if rep, err := unlimited.Handle(context.Background(), req, float64(testNow.Unix())+86400, "http://x/"); err != nil || rep.HostID == 0 {
				t.Fatalf("no limit, host %d: %v", i+1, err)
			}
		}
	})
}
