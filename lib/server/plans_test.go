package server_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// planScale is the database the plan test runs on: large enough that MariaDB's
// optimizer prefers a scan where a statement offers it no key (the report's workunit
// UPDATE planned as a full index scan of 3,000 workunits; issue 28), small enough to
// fill in a second. BKIT_PLAN_WORKUNITS sets another number of workunits (the
// finished ones grow).
var planScale = store.PopulateSpec{App: "bench", Hosts: 100, Done: 7000, InProgress: 500, Unsent: 500}

// TestSchedulerPlans runs the scheduler's kinds of requests on a database of planScale
// (a new bkit host; reports of successes, failures, duplicates, unknown and others'
// results, with stderr and a list of held tasks; a host that lost tasks; a BOINC
// client attaching by account key, again by host_cpid, then by host id), records every
// statement they run, and fails on any whose plan reads the whole of workunit or
// result (store.FullScans): one such statement makes each RPC cost the table's size.
func TestSchedulerPlans(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := storetest.Open(t, dsn)
		if _, err := st.AddApp(ctx, "bench", false, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "bench", VersionNum: 1, AvgNCPUs: 1}, 1); err != nil {
			t.Fatal(err)
		}
		scale := planScale
		if v := os.Getenv("BKIT_PLAN_WORKUNITS"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 6000 {
				t.Fatalf("BKIT_PLAN_WORKUNITS=%q: want a number of workunits of at least 6000", v)
			}
			scale.Done = n - scale.InProgress - scale.Unsent
		}
		if err := st.Populate(ctx, scale, 1000); err != nil {
			t.Fatal(err)
		}
		user, err := st.AddUser(ctx, "alice", "alice@example.org", 1)
		if err != nil {
			t.Fatal(err)
		}
		// A populated host's task in progress (read before the trace starts).
		var hostID int64
		var result string
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			return tx.QueryRow(`SELECT hostid, name FROM result WHERE server_state=? ORDER BY id LIMIT 1`, store.ServerStateInProgress).
				Scan(&hostID, &result)
		}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		seen := map[string][]any{}
		var order []string
		st.TraceStatements(func(q string, args []any) {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := seen[q]; !ok {
				seen[q] = slices.Clone(args)
				order = append(order, q)
			}
		})
		srv := &server.Server{Store: st}
		now := 2000.0
		rpc := func(req *boincxml.SchedulerRequest) *boincxml.SchedulerReply {
			t.Helper()
			rep, err := srv.Handle(ctx, req, now, "http://127.0.0.1/")
			if err != nil {
				t.Fatal(err)
			}
			now++
			return rep
		}
		hostInfo := boincxml.HostInfo{PNCPUs: 4, PFpops: 1e9}
		ask := func(req boincxml.SchedulerRequest) boincxml.SchedulerRequest {
			req.CPUReqSecs, req.CPUReqInstances, req.WorkReqSeconds, req.HostInfo = 3*86400, 4, 3*86400, hostInfo
			return req
		}

		// A new host of an account gets an identity and jobs.
		first := ask(boincxml.SchedulerRequest{Authenticator: user.Authenticator})
		rep := rpc(&first)
		if len(rep.ResultsSent) < 3 {
			t.Fatalf("first request: %d jobs, want at least 3", len(rep.ResultsSent))
		}
		jobs := names(rep.ResultsSent)
		// It reports a success with stderr, a failure, an unknown result and another
		// host's, and lists what it still holds, with one it never had.
		req := ask(boincxml.SchedulerRequest{HostID: rep.HostID, Authenticator: user.Authenticator, RPCSeqno: 2})
		req.Results = []boincxml.ReportedResult{
			{Name: jobs[0], FinalCPUTime: 10, State: boincxml.ResultFilesUploaded, StderrOut: &boincxml.InnerXML{Text: "done"}},
			{Name: jobs[1], FinalCPUTime: 10, ExitStatus: 1, State: boincxml.ResultFilesUploaded},
			{Name: "no_such_result"},
			{Name: "populate_7001_0", FinalCPUTime: 1},
		}
		for _, j := range jobs[2:] {
			req.OtherResults = append(req.OtherResults, boincxml.NameRef{Name: j})
		}
		req.OtherResults = append(req.OtherResults, boincxml.NameRef{Name: "populate_1_0"})
		rpc(&req)
		// The same reports again (duplicates), listing nothing: the host lost its
		// other tasks, which are resent.
		req.RPCSeqno++
		req.OtherResults = boincxml.OtherResultList{}
		if rep := rpc(&req); len(rep.ResultsSent) == 0 {
			t.Error("lost tasks not resent")
		}
		// A populated host reports one of its tasks in progress.
		old := ask(boincxml.SchedulerRequest{HostID: hostID, Authenticator: fmt.Sprintf("populate_%d", hostID), RPCSeqno: 1})
		old.Results = []boincxml.ReportedResult{{Name: result, FinalCPUTime: 10, State: boincxml.ResultFilesUploaded}}
		if rep := rpc(&old); len(rep.ResultAcks) != 1 {
			t.Fatalf("populated host's report: %d acks", len(rep.ResultAcks))
		}
		// A BOINC client attaches with the account key, again with its host_cpid, then
		// presents its host id.
		hostInfo.HostCPID = "0123456789abcdef0123456789abcdef"
		boinc := ask(boincxml.SchedulerRequest{Authenticator: user.Authenticator, RPCSeqno: 1})
		rep = rpc(&boinc)
		rpc(&boinc)
		boinc.HostID = rep.HostID
		rpc(&boinc)
		st.TraceStatements(nil)

		var scans []string
		for _, q := range order {
			found, err := st.FullScans(ctx, q, seen[q], "workunit", "result")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range found {
				scans = append(scans, fmt.Sprintf("%s\n    %s", strings.Join(strings.Fields(q), " "), f))
			}
		}
		if len(scans) > 0 {
			t.Errorf("%d statements of the scheduler path read all of workunit or result:\n%s", len(scans), strings.Join(scans, "\n"))
		}
		// The statements the plans are checked on include the reports' workunit update.
		if !slices.ContainsFunc(order, func(q string) bool { return strings.HasPrefix(strings.TrimSpace(q), "UPDATE workunit") }) {
			t.Errorf("no UPDATE of workunit among the %d statements recorded", len(order))
		}
		t.Logf("%d distinct statements checked", len(order))
	})
}
