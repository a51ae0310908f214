package server_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

// setupBatch makes a locality app with one batch of 4 files and 2 cursors; cursor c
// (1, 2) has jobs 2c-2 and 2c-1, and job j uses files j and j+1.
func setupBatch(t *testing.T, st *store.Store) {
	ctx := context.Background()
	if _, err := st.AddApp(ctx, "einstein", true, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "einstein", VersionNum: 3, AvgNCPUs: 1, Flops: 1e9}, 1); err != nil {
		t.Fatal(err)
	}
	err := st.InTx(ctx, func(tx *store.Tx) error {
		stmts := []string{
			`INSERT INTO batch (id, appid, name, state, njobs, nfiles) VALUES (1, 1, 'b1', 1, 4, 5)`,
			`INSERT INTO locality_cursor (id, batch_id, first_job_num, last_job_num, remaining_credit, first_ungenerated_job_num) VALUES (1, 1, 0, 1, 100, 2)`,
			`INSERT INTO locality_cursor (id, batch_id, first_job_num, last_job_num, remaining_credit, first_ungenerated_job_num) VALUES (2, 1, 2, 3, 100, 4)`,
		}
		for f := 0; f < 5; f++ {
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO batch_file (batch_id, file_num, name, url, nbytes) VALUES (1, %d, 'b1_f%d', 'http://files/b1_f%d', 1e6)`, f, f, f))
		}
		for j := 0; j < 4; j++ {
			stmts = append(stmts,
				fmt.Sprintf(`INSERT INTO workunit (id, appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound, batch_id, cursor_id, job_num, first_file_num, last_file_num)
					VALUES (%d, 1, 'b1_j%d', 1e12, 1e13, 500, 1, %d, %d, %d, %d)`, 100+j, j, j/2+1, j, j, j+1),
				// A locality result carries its cursor and job (as the generator writes it).
				fmt.Sprintf(`INSERT INTO result (workunitid, appid, name, cursor_id, job_num) VALUES (%d, 1, 'b1_j%d_0', %d, %d)`, 100+j, j, j/2+1, j))
		}
		for _, s := range stmts {
			if _, err := tx.Exec(s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// startBatch serves a database holding setupBatch's batch on a loopback port, at
// testNow, until the test ends.
func startBatch(t *testing.T, dsn string) *env {
	t.Helper()
	st := storetest.Open(t, dsn)
	setupBatch(t, st)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&server.Server{Store: st, Now: func() time.Time { return testNow }}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return &env{url: server.URLFor(ln), st: st}
}

func TestLocalityScheduling(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := startBatch(t, dsn)
		st, ctx := e.st, context.Background()

		// Host A (credit 10) joins cursor 1, the first of two with no team credit.
		a, aauth := e.newHost(t, 1, 0)
		b, bauth := e.newHost(t, 1, 0)
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(`UPDATE host SET expavg_credit=10`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		ask := func(id int64, auth string, files ...string) *boincxml.SchedulerReply {
			req := &boincxml.SchedulerRequest{HostID: id, Authenticator: auth, CPUReqInstances: 2, CPUReqSecs: 1}
			for _, f := range files {
				req.FileInfos = append(req.FileInfos, boincxml.NameRef{Name: f})
			}
			rep, status := e.post(t, req)
			if status != 200 {
				t.Fatalf("status %d: %s", status, messages(rep))
			}
			return rep
		}
		rep := ask(a, aauth)
		if d := cmp.Diff([]string{"b1_j0_0", "b1_j1_0"}, names(rep.ResultsSent)); d != "" {
			t.Errorf("host A's jobs (-want +got)\n%s", d)
		}
		var files []string
		for _, f := range rep.FileInfos {
			if !f.Sticky || f.URL != "http://files/"+f.Name {
				t.Errorf("file_info %+v", f)
			}
			files = append(files, f.Name)
		}
		if d := cmp.Diff([]string{"b1_f0", "b1_f1", "b1_f2"}, files); d != "" {
			t.Errorf("host A's files (-want +got)\n%s", d)
		}
		if d := cmp.Diff([]boincxml.ReplyFileRef{{FileName: "b1_f1"}, {FileName: "b1_f2"}}, rep.Workunits[1].FileRefs); d != "" {
			t.Errorf("job 1's file refs (-want +got)\n%s", d)
		}
		// Host B joins cursor 2, whose team has no credit (infinite time left).
		rep = ask(b, bauth)
		if d := cmp.Diff([]string{"b1_j2_0", "b1_j3_0"}, names(rep.ResultsSent)); d != "" {
			t.Errorf("host B's jobs (-want +got)\n%s", d)
		}
		// Job 0 finishes: host A may delete file 0 but must keep 1 and 2, and an unknown file
		// is left alone.
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(`UPDATE workunit SET canonical_resultid=1 WHERE id=100`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		rep = ask(a, aauth, "b1_f0", "b1_f1", "b1_f2", "other")
		if d := cmp.Diff([]boincxml.NameRef{{Name: "b1_f0"}}, rep.DeleteFiles); d != "" {
			t.Errorf("delete_file_info (-want +got)\n%s", d)
		}
	})
}

// TestLocalityResend: a host that lost its locality jobs (it lists neither in
// <other_results>: a lost reply, a reset) gets them again, deadlines unchanged, with
// their runs of batch files (sticky, so it fetches those it no longer has); jobs it
// still lists are not sent twice.
func TestLocalityResend(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := startBatch(t, dsn)
		a, aauth := e.newHost(t, 1, 0)
		ask := func(others ...string) *boincxml.SchedulerReply {
			t.Helper()
			req := &boincxml.SchedulerRequest{HostID: a, Authenticator: aauth, OtherResults: boincxml.OtherResultList{}}
			for _, o := range others {
				req.OtherResults = append(req.OtherResults, boincxml.NameRef{Name: o})
			}
			rep, status := e.post(t, req)
			if status != 200 {
				t.Fatalf("status %d: %s", status, messages(rep))
			}
			return rep
		}
		first, status := e.post(t, &boincxml.SchedulerRequest{HostID: a, Authenticator: aauth, CPUReqInstances: 2, CPUReqSecs: 1})
		if status != 200 || len(first.ResultsSent) != 2 {
			t.Fatalf("first request: status %d, %d jobs", status, len(first.ResultsSent))
		}
		// Still held: nothing is sent (the request asks for no work).
		if rep := ask("b1_j0_0", "b1_j1_0"); len(rep.ResultsSent) != 0 {
			t.Errorf("jobs the host holds sent again: %v", names(rep.ResultsSent))
		}
		// Job 1 lost: it alone comes back, with files 1 and 2.
		rep := ask("b1_j0_0")
		if d := cmp.Diff([]string{"b1_j1_0"}, names(rep.ResultsSent)); d != "" {
			t.Fatalf("resent jobs (-want +got)\n%s", d)
		}
		if rep.ResultsSent[0].ReportDeadline != first.ResultsSent[1].ReportDeadline {
			t.Errorf("deadline %g on resending, %g when sent", rep.ResultsSent[0].ReportDeadline, first.ResultsSent[1].ReportDeadline)
		}
		var files []string
		for _, f := range rep.FileInfos {
			if f.URL == "http://files/"+f.Name {
				if !f.Sticky {
					t.Errorf("batch file %s resent without <sticky/>", f.Name)
				}
				files = append(files, f.Name)
			}
		}
		if d := cmp.Diff([]string{"b1_f1", "b1_f2"}, files); d != "" {
			t.Errorf("resent batch files (-want +got)\n%s", d)
		}
		if d := cmp.Diff([]boincxml.ReplyFileRef{{FileName: "b1_f1"}, {FileName: "b1_f2"}}, rep.Workunits[0].FileRefs); d != "" {
			t.Errorf("resent job's file refs (-want +got)\n%s", d)
		}
		// Both lost: both come back.
		if d := cmp.Diff([]string{"b1_j0_0", "b1_j1_0"}, names(ask().ResultsSent)); d != "" {
			t.Errorf("both lost: resent (-want +got)\n%s", d)
		}
	})
}

// TestLocalityStreams: with per-host streams of 4 jobs and 2 results per job, the
// second host follows the first on stream 0, the third starts stream 1 (two hosts
// serve stream 0 already), the first continues its own stream, and a fourth follows
// the third. Without streams (seed 004's plain job order) the third host would get
// jobs 2 and 3.
func TestLocalityStreams(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := storetest.Open(t, dsn)
		if _, err := st.AddApp(ctx, "loc", true, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "loc", VersionNum: 1, AvgNCPUs: 1, Flops: 1e9}, 1); err != nil {
			t.Fatal(err)
		}
		spec := store.BatchSpec{Name: "s", App: "loc", DelayBound: 86400, MinQuorum: 2, TargetNResults: 2, MaxErrorResults: 3,
			MaxTotalResults: 6, MaxSuccessResults: 4, StreamJobs: 4, Cursors: []locality.Range{{First: 0, Last: 7}}}
		for f := 0; f < 9; f++ {
			spec.Files = append(spec.Files, store.BatchFile{FileNum: int64(f), Name: fmt.Sprintf("s_f%d", f), NBytes: 1})
		}
		for j := 0; j < 8; j++ {
			spec.Jobs = append(spec.Jobs, store.BatchJob{JobNum: int64(j), FirstFileNum: int64(j), LastFileNum: int64(j + 1), FpopsEst: 1e12})
		}
		if _, err := st.CreateBatch(ctx, spec, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Generate(ctx, 8, 1); err != nil {
			t.Fatal(err)
		}
		srv := &server.Server{Store: st}
		type host struct {
			id   int64
			auth string
		}
		var hosts []host
		for range 4 {
			key := accountKey(t, st)
			rep, err := srv.Handle(ctx, &boincxml.SchedulerRequest{Authenticator: key, HostInfo: boincxml.HostInfo{PNCPUs: 2, PFpops: 1e9}}, 10, "http://x/")
			if err != nil {
				t.Fatal(err)
			}
			hosts = append(hosts, host{rep.HostID, key})
		}
		ask := func(h host) []string {
			rep, err := srv.Handle(ctx, &boincxml.SchedulerRequest{HostID: h.id, Authenticator: h.auth, CPUReqInstances: 2, CPUReqSecs: 1,
				HostInfo: boincxml.HostInfo{PNCPUs: 2, PFpops: 1e9}}, 20, "http://x/")
			if err != nil {
				t.Fatal(err)
			}
			return names(rep.ResultsSent)
		}
		for i, want := range [][]string{
			{"s_j0_0", "s_j1_0"}, // A starts stream 0
			{"s_j0_1", "s_j1_1"}, // B follows A
			{"s_j4_0", "s_j5_0"}, // C: stream 0 has two holders; stream 1
			{"s_j2_0", "s_j3_0"}, // A continues its stream
			{"s_j4_1", "s_j5_1"}, // D: B serves stream 0's trail; stream 1 needs a follower
		} {
			if d := cmp.Diff(want, ask(hosts[[]int{0, 1, 2, 0, 3}[i]])); d != "" {
				t.Errorf("request %d (-want +got)\n%s", i, d)
			}
		}
	})
}

// cursorRows reads the cursors' team credit and size, and the batch_host rows, as
// "cursor: expavg nhosts" and "host→cursor" strings.
func cursorRows(t *testing.T, st *store.Store) (cursors, members []string) {
	t.Helper()
	rows, err := st.DB.Query(`SELECT id, expavg_credit, nhosts FROM locality_cursor ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, n int64
		var credit float64
		if err := rows.Scan(&id, &credit, &n); err != nil {
			t.Fatal(err)
		}
		cursors = append(cursors, fmt.Sprintf("%d: %g %d", id, credit, n))
	}
	rows.Close()
	rows, err = st.DB.Query(`SELECT host_id, cursor_id, credit FROM batch_host ORDER BY batch_id, host_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var h, c int64
		var credit float64
		if err := rows.Scan(&h, &c, &credit); err != nil {
			t.Fatal(err)
		}
		members = append(members, fmt.Sprintf("%d→%d (%g)", h, c, credit))
	}
	rows.Close()
	return cursors, members
}

// TestLocalityJoinMoveDelete: seed 004's host assignment and file deletion in one
// request. A new host (expavg_credit 10) joins the cursor with the greatest
// est_time_left (both infinite: the lowest id), a batch_host row is made and its
// credit is added to the cursor's. When its cursor is finished (est_time_left 0 <
// 0.5 × infinite) it moves to cursor 2, whose credit it takes with it, and gets
// cursor 2's jobs 2 (files 2-3) and 3 (files 3-4). In that reply, files 0 and 1 are
// to be deleted (no unfinished job of its cursor, now cursor 2, uses them) but not
// file 2, which job 2 uses.
func TestLocalityJoinMoveDelete(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := storetest.Open(t, dsn)
		setupBatch(t, st)
		srv := &server.Server{Store: st}
		auth := accountKey(t, st)
		rep, err := srv.Handle(ctx, &boincxml.SchedulerRequest{Authenticator: auth, HostInfo: boincxml.HostInfo{PNCPUs: 2, PFpops: 1e9}}, 10, "http://x/")
		if err != nil {
			t.Fatal(err)
		}
		a := rep.HostID
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(`UPDATE host SET expavg_credit=10`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		ask := func(files ...string) *boincxml.SchedulerReply {
			req := &boincxml.SchedulerRequest{HostID: a, Authenticator: auth, CPUReqInstances: 2, CPUReqSecs: 1,
				HostInfo: boincxml.HostInfo{PNCPUs: 2, PFpops: 1e9}}
			for _, f := range files {
				req.FileInfos = append(req.FileInfos, boincxml.NameRef{Name: f})
			}
			rep, err := srv.Handle(ctx, req, 20, "http://x/")
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		if d := cmp.Diff([]string{"b1_j0_0", "b1_j1_0"}, names(ask().ResultsSent)); d != "" {
			t.Errorf("jobs on joining (-want +got)\n%s", d)
		}
		cs, ms := cursorRows(t, st)
		if d := cmp.Diff([]string{"1: 10 1", "2: 0 0"}, cs); d != "" {
			t.Errorf("cursors after joining (-want +got)\n%s", d)
		}
		if d := cmp.Diff([]string{fmt.Sprintf("%d→1 (10)", a)}, ms); d != "" {
			t.Errorf("batch_host after joining (-want +got)\n%s", d)
		}
		// Jobs 0 and 1 are done and the transitioner has finished cursor 1.
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(`UPDATE workunit SET canonical_resultid=1 WHERE id IN (100, 101)`); err != nil {
				return err
			}
			_, err := tx.Exec(`UPDATE locality_cursor SET first_unfinished_job_num=2, remaining_credit=0 WHERE id=1`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		rep = ask("b1_f0", "b1_f1", "b1_f2")
		if d := cmp.Diff([]string{"b1_j2_0", "b1_j3_0"}, names(rep.ResultsSent)); d != "" {
			t.Errorf("jobs after moving (-want +got)\n%s", d)
		}
		if d := cmp.Diff([]boincxml.NameRef{{Name: "b1_f0"}, {Name: "b1_f1"}}, rep.DeleteFiles); d != "" {
			t.Errorf("delete_file_info after moving (-want +got)\n%s", d)
		}
		cs, ms = cursorRows(t, st)
		if d := cmp.Diff([]string{"1: 0 0", "2: 10 1"}, cs); d != "" {
			t.Errorf("cursors after moving (-want +got)\n%s", d)
		}
		if d := cmp.Diff([]string{fmt.Sprintf("%d→2 (10)", a)}, ms); d != "" {
			t.Errorf("batch_host after moving (-want +got)\n%s", d)
		}
	})
}

// locBatch creates a batch of app of nJobs jobs, job j on file j, one cursor, in seed
// 004's plain job order (no streams), with redundancy results per job, all generated.
func locBatch(t *testing.T, st *store.Store, name, app string, nJobs, redundancy int) {
	t.Helper()
	ctx := context.Background()
	spec := store.BatchSpec{Name: name, App: app, DelayBound: 86400, MinQuorum: redundancy, TargetNResults: redundancy, MaxErrorResults: 3,
		MaxTotalResults: 2*redundancy + 2, MaxSuccessResults: 2 * redundancy, Cursors: []locality.Range{{First: 0, Last: int64(nJobs - 1)}}}
	for j := 0; j < nJobs; j++ {
		spec.Files = append(spec.Files, store.BatchFile{FileNum: int64(j), Name: fmt.Sprintf("%s_f%d", name, j), NBytes: 1})
		spec.Jobs = append(spec.Jobs, store.BatchJob{JobNum: int64(j), FirstFileNum: int64(j), LastFileNum: int64(j), FpopsEst: 1e12})
	}
	if _, err := st.CreateBatch(ctx, spec, 1); err != nil {
		t.Fatal(err)
	}
}

// handleHost makes a host of 4 CPUs through srv and returns a function that asks for
// n CPU instances for it and returns the names of the results sent.
func handleHost(t *testing.T, srv *server.Server) (id int64, ask func(n int) []string) {
	t.Helper()
	ctx := context.Background()
	info := boincxml.HostInfo{PNCPUs: 4, PFpops: 1e9}
	key := accountKey(t, srv.Store)
	rep, err := srv.Handle(ctx, &boincxml.SchedulerRequest{Authenticator: key, HostInfo: info}, 10, "http://x/")
	if err != nil {
		t.Fatal(err)
	}
	return rep.HostID, func(n int) []string {
		r, err := srv.Handle(ctx, &boincxml.SchedulerRequest{HostID: rep.HostID, Authenticator: key,
			CPUReqInstances: float64(n), CPUReqSecs: 1, HostInfo: info}, 20, "http://x/")
		if err != nil {
			t.Fatal(err)
		}
		return names(r.ResultsSent)
	}
}

// TestLocalityJobOrder: seed 004's "Assigning jobs" without streams: the unsent
// results of the host's cursor in order of increasing job number, old jobs first. Host
// A takes the first results of jobs 0 and 1; host B, on the same cursor, asking for
// three, gets the second results of jobs 0 and 1 before job 2's first.
func TestLocalityJobOrder(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := storetest.Open(t, dsn)
		if _, err := st.AddApp(ctx, "loc", true, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "loc", VersionNum: 1, AvgNCPUs: 1, Flops: 1e9}, 1); err != nil {
			t.Fatal(err)
		}
		locBatch(t, st, "o", "loc", 4, 2)
		if _, err := st.Generate(ctx, 4, 1); err != nil {
			t.Fatal(err)
		}
		srv := &server.Server{Store: st}
		_, askA := handleHost(t, srv)
		_, askB := handleHost(t, srv)
		if d := cmp.Diff([]string{"o_j0_0", "o_j1_0"}, askA(2)); d != "" {
			t.Errorf("host A (-want +got)\n%s", d)
		}
		if d := cmp.Diff([]string{"o_j0_1", "o_j1_1", "o_j2_0"}, askB(3)); d != "" {
			t.Errorf("host B (-want +got)\n%s", d)
		}
	})
}

// TestLocalitySeveralBatches: seed 004's "several batches may be in progress
// concurrently, for the same or different applications", and the scheduler's "for
// each batch": a host asking for three jobs gets the only job of batch p (app loc,
// the older batch) and then two of batch q (app loc2), and is on a cursor of each.
func TestLocalitySeveralBatches(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := storetest.Open(t, dsn)
		for _, app := range []string{"loc", "loc2"} {
			if _, err := st.AddApp(ctx, app, true, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: app, VersionNum: 1, AvgNCPUs: 1, Flops: 1e9}, 1); err != nil {
				t.Fatal(err)
			}
		}
		locBatch(t, st, "p", "loc", 1, 1)
		locBatch(t, st, "q", "loc2", 3, 1)
		if _, err := st.Generate(ctx, 4, 1); err != nil {
			t.Fatal(err)
		}
		srv := &server.Server{Store: st}
		h, ask := handleHost(t, srv)
		if d := cmp.Diff([]string{"p_j0_0", "q_j0_0", "q_j1_0"}, ask(3)); d != "" {
			t.Errorf("jobs (-want +got)\n%s", d)
		}
		_, ms := cursorRows(t, st)
		if d := cmp.Diff([]string{fmt.Sprintf("%d→1 (800)", h), fmt.Sprintf("%d→2 (800)", h)}, ms); d != "" {
			t.Errorf("batch_host (-want +got)\n%s", d)
		}
	})
}
