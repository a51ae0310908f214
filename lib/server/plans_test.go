package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/lifecycle"
	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/programs/bretry"
	"github.com/bkit/bkit/lib/retry"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// planScale is the database the plan test runs on: large enough that MariaDB's
// optimizer prefers a scan where a statement offers it no key (the report's workunit
// UPDATE planned as a full index scan of 3,000 workunits; issue 28), small enough to
// fill in a second. BKIT_PLAN_WORKUNITS sets another number of workunits (the
// finished ones grow).
var planScale = store.PopulateSpec{App: "bench", Hosts: 100, Done: 7000, InProgress: 500, Unsent: 500, DoneAssimilated: true}

// TestSchedulerPlans runs every path whose plans matter on a database of planScale
// (planPaths: the scheduler's kinds of requests, a locality app's, a bretry pass,
// blocality's daemons and the lifecycle jobs), records every statement they run, and
// fails on any whose plan reads the whole of workunit or result (store.FullScans): one
// such statement makes each RPC or each batch of a pass cost the table's size. At this
// size MariaDB's plans are those of a large table only where a statement offers no key
// (a scan of 8,000 rows looks cheap next to an index); TestPlansAtScale checks them on
// 1,000,000 workunits.
func TestSchedulerPlans(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		scale := planScale
		if v := os.Getenv("BKIT_PLAN_WORKUNITS"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 6000 {
				t.Fatalf("BKIT_PLAN_WORKUNITS=%q: want a number of workunits of at least 6000", v)
			}
			scale.Done = n - scale.InProgress - scale.Unsent
		}
		checkPlans(t, storetest.Open(t, dsn), scale)
	})
}

// TestPlansAtScale is TestSchedulerPlans on MariaDB with tables of a real project's
// size: 1,000,000 workunits and 2,000,000 results (two per workunit), 10,000 hosts,
// analysed as InnoDB would some time after. Filling them takes minutes, so it runs
// only with BKIT_TEST_SCALE=1 (and BKIT_TEST_MYSQL_DSN); it says so when skipped.
func TestPlansAtScale(t *testing.T) {
	if os.Getenv("BKIT_TEST_SCALE") == "" {
		t.Skip("BKIT_TEST_SCALE is not set: the plans at 1,000,000 workunits (minutes to fill) are not checked; " +
			"BKIT_TEST_SCALE=1 BKIT_TEST_MYSQL_DSN=mysql://root@127.0.0.1:3306/test go test ./lib/server -run TestPlansAtScale -timeout 0")
	}
	st := storetest.Open(t, storetest.MySQLDSN(t))
	checkPlans(t, st, store.PopulateSpec{App: "bench", Hosts: 10000, Done: 998000, InProgress: 1000, Unsent: 1000, ResultsPerWorkunit: 2, DoneAssimilated: true})
}

// checkPlans fills st with scale (app "bench") and fails on every statement of
// planPaths whose plan reads the whole of workunit or result.
func checkPlans(t *testing.T, st *store.Store, scale store.PopulateSpec) {
	ctx := context.Background()
	if _, err := st.AddApp(ctx, "bench", false, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "bench", VersionNum: 1, AvgNCPUs: 1}, 1); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := st.Populate(ctx, scale, 1000); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d workunits made in %v", scale.Done+scale.InProgress+scale.Unsent, time.Since(t0).Round(time.Millisecond))
	order, seen := planPaths(t, st, scale)
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
		t.Errorf("%d statements read all of workunit or result:\n%s", len(scans), strings.Join(scans, "\n"))
	}
	// The statements checked include the reports' workunit update and each cron path's.
	for _, want := range []string{"UPDATE workunit SET transition_time", "FROM workunit WHERE appid=? AND need_validate=1",
		"SELECT id FROM result WHERE appid=? AND server_state=? AND report_deadline<?", "SET file_delete_state=?, file_delete_time=?",
		"UPDATE workunit SET assimilate_state", "locality_cursor"} {
		if !slices.ContainsFunc(order, func(q string) bool { return strings.Contains(strings.Join(strings.Fields(q), " "), want) }) {
			t.Errorf("no statement with %q among the %d recorded", want, len(order))
		}
	}
	t.Logf("%d distinct statements checked", len(order))
}

// planPaths runs, on st filled with scale, every path whose statements the plan
// tests check, and returns each distinct statement with the arguments of its first
// run, in order: the scheduler's kinds of requests (a new bkit host; reports of
// successes, failures, duplicates, unknown and others' results, with stderr and a
// list of held tasks; a host that lost tasks; a BOINC client attaching by account
// key, again by host_cpid, then by host id); a locality app's batch, generated, sent
// and transitioned; a bretry pass (lost results, the validator, the retry rules);
// blocality's generator, transitioner and credit passes; and the lifecycle jobs
// (assimilation into a tree, file deletion).
func planPaths(t *testing.T, st *store.Store, scale store.PopulateSpec) ([]string, map[string][]any) {
	ctx := context.Background()
	locID, err := st.AddApp(ctx, "loc", true, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "loc", VersionNum: 1, AvgNCPUs: 1}, 1); err != nil {
		t.Fatal(err)
	}
	spec := store.BatchSpec{Name: "plan", App: "loc", DelayBound: 86400, MinQuorum: 1, TargetNResults: 1, MaxErrorResults: 3,
		MaxTotalResults: 5, MaxSuccessResults: 3}
	credit := make([]float64, 100)
	for j := range credit {
		spec.Files = append(spec.Files, store.BatchFile{Name: fmt.Sprintf("plan_f%d", j), NBytes: 1e6})
		spec.Jobs = append(spec.Jobs, store.BatchJob{FirstFileNum: int64(j), LastFileNum: int64(j), FpopsEst: 1e13})
		credit[j] = 1e13 * locality.CreditPerFlop
	}
	spec.Cursors = locality.PlanCursors(credit, 10, 2)
	if _, err := st.CreateBatch(ctx, spec, 1); err != nil {
		t.Fatal(err)
	}
	user, err := st.AddUser(ctx, "alice", "alice@example.org", 1)
	if err != nil {
		t.Fatal(err)
	}
	// A populated host's task in progress, and the apps (read before the trace starts).
	var hostID, benchID int64
	var result string
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRow(`SELECT id FROM app WHERE name=?`, "bench").Scan(&benchID); err != nil {
			return err
		}
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
	defer st.TraceStatements(nil)
	now := 2000.0
	// blocality's work generator makes the locality jobs first.
	if _, err := st.Generate(ctx, 20, now); err != nil {
		t.Fatal(err)
	}
	srv := &server.Server{Store: st}
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

	// A new host of an account gets an identity and jobs (locality jobs first).
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
		{Name: fmt.Sprintf("populate_%d_0", scale.Done+1), FinalCPUTime: 1},
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

	// blocality's daemons.
	if _, _, err := st.Transition(ctx, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Credit(ctx, 3600, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Generate(ctx, 20, now); err != nil {
		t.Fatal(err)
	}
	// A bretry pass three days on: the tasks in progress are lost, their workunits
	// and the unsent ones due, the successes reported above wait for the validator.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for app, id := range map[string]int64{"bench": benchID, "loc": locID} {
		p := &bretry.Pass{Store: st, AppID: id, App: app, Now: now + 3*86400, Log: quiet, Batch: 200,
			Params: retry.Params{DWU: 86400, Dresult: 3600, NError: 3, Ndet: 6, Nredundancy: 2}}
		if _, err := p.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The lifecycle jobs: one batch of assimilation (the populated workunits are all
	// done), then file deletion of what it assimilated.
	clock := lifecycle.NewClock(now + 3*86400)
	batches := 0
	a := &lifecycle.Assimilator{Store: st, UploadDir: t.TempDir(), To: t.TempDir(), Batch: 100, Clock: clock, Owner: "plans",
		Lease: 600, Log: quiet, Stop: func() bool { batches++; return batches > 1 }}
	if _, err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	d := &lifecycle.FileDeleter{Store: st, UploadDir: t.TempDir(), DownloadDir: t.TempDir(), Batch: 100, Clock: clock, Log: quiet}
	if _, err := d.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return order, seen
}
