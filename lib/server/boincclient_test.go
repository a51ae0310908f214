package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// recorded parses a scheduler request Debian's BOINC client 7.20.5 sent to bserver
// serve (testdata/boinc-7.20.5/README.md says how each was made).
func recorded(t *testing.T, name string) *boincxml.SchedulerRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "boinc-7.20.5", name))
	if err != nil {
		t.Fatal(err)
	}
	req, err := boincxml.ParseSchedulerRequest(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return req
}

// recordedProject is a project like the one the recordings were made against: app
// upper for x86_64-pc-linux-gnu, the workunits named (one of each prefix per
// count, in order), each with an input file and an output, and user alice holding
// the account key the client presented.
func recordedProject(t *testing.T, dsn, key string, work ...store.WorkSpec) (*server.Server, *store.Store, *syncBuf) {
	t.Helper()
	st := storetest.Open(t, dsn)
	ctx := context.Background()
	if _, err := st.AddApp(ctx, "upper", false, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "upper", VersionNum: 1, Platform: linux, AvgNCPUs: 1,
		Files: []store.AppVersionFile{{Name: "upper_1_" + linux + "_boinc-app", OpenName: "boinc-app", MainProgram: true, NBytes: 17, MD5: "m", Signature: "5151"}}}, 1); err != nil {
		t.Fatal(err)
	}
	for _, w := range work {
		w.App, w.FpopsEst, w.DelayBound = "upper", 1e8, 86400
		w.MinQuorum, w.MaxErrorResults, w.MaxTotalResults, w.MaxSuccessResults = 1, 3, 10, 6
		w.TargetNResults = max(w.TargetNResults, 1)
		w.Inputs = []store.WUFile{{Name: "input.txt", OpenName: "in", NBytes: 16, MD5: "x"}}
		w.Outputs = []store.WUOutput{{OpenName: "out", MaxNBytes: 100000}}
		if _, err := st.CreateWork(ctx, w, 1); err != nil {
			t.Fatal(err)
		}
	}
	u, err := st.AddUser(ctx, "alice", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB.ExecContext(ctx, `UPDATE user SET authenticator=? WHERE id=?`, key, u.ID); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuf{}
	srv := &server.Server{Store: st, Log: slog.New(slog.NewTextHandler(logs, nil)),
		Config: server.Config{UploadKey: []byte("0123456789abcdef0123456789abcdef"), CodeSignKey: "1024\nabcdef\n.\n"}}
	return srv, st, logs
}

// TestRecordedBOINCClient feeds a real BOINC client's requests to the scheduler: a
// client that detaches and attaches again with the same account key gets its host
// back (BOINC's scheduler finds it by <host_cpid>), and the tasks in progress on the
// host that the client no longer holds (detached, reset) are sent again while their
// deadline is ahead; a restarted client listing its tasks gets nothing twice.
func TestRecordedBOINCClient(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		attach := recorded(t, "attach.xml")
		srv, st, logs := recordedProject(t, dsn, attach.Authenticator, store.WorkSpec{Count: 2, NamePrefix: "job"})
		ctx := context.Background()
		now := float64(testNow.Unix())
		const base = "http://127.0.0.1:18091/"
		ask := func(name string, at float64) *boincxml.SchedulerReply {
			t.Helper()
			rep, err := srv.Handle(ctx, recorded(t, name), at, base)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return rep
		}
		both := []string{"job_1_0", "job_2_0"}
		if rep := ask("attach.xml", now); rep.HostID != 1 || !slices.Equal(names(rep.ResultsSent), both) {
			t.Fatalf("attach: host %d, jobs %v; want host 1, %v", rep.HostID, names(rep.ResultsSent), both)
		}
		if rep := ask("restart.xml", now+10); len(rep.ResultsSent) != 0 {
			t.Errorf("restart, both tasks listed: jobs %v, want none", names(rep.ResultsSent))
		}
		rep := ask("reattach.xml", now+20)
		if rep.HostID != 1 || rep.UserName != "alice" {
			t.Errorf("attach again after a detach: host %d of %q, want host 1 of alice", rep.HostID, rep.UserName)
		}
		if !slices.Equal(names(rep.ResultsSent), both) {
			t.Errorf("attach again: jobs %v, want %v resent", names(rep.ResultsSent), both)
		}
		for _, r := range rep.ResultsSent {
			if r.ReportDeadline != boincxml.UnixTime(now+86400) {
				t.Errorf("resent %s: deadline %v, want the original %v", r.Name, r.ReportDeadline, now+86400)
			}
		}
		if len(rep.AppVersions) != 1 || len(rep.Workunits) != 2 || len(rep.FileInfos) != 4 {
			t.Errorf("resent jobs come with their app version, workunits and files: %d, %d, %d", len(rep.AppVersions), len(rep.Workunits), len(rep.FileInfos))
		}
		if users, err := st.Users(ctx); err != nil || len(users) != 1 || users[0].Hosts != 1 {
			t.Errorf("users after attaching again: %+v, %v; want alice with one host", users, err)
		}
		// The reply tells the client its account's and host's credit, as BOINC's does.
		for _, q := range []string{`UPDATE user SET total_credit=12.5, expavg_credit=3.25`, `UPDATE host SET total_credit=7, expavg_credit=1.5`} {
			if _, err := st.DB.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if rep := ask("restart.xml", now+25); rep.UserTotalCredit != 12.5 || rep.UserExpavgCredit != 3.25 || rep.HostTotalCredit != 7 || rep.HostExpavgCredit != 1.5 {
			t.Errorf("credit in the reply: user %g/%g, host %g/%g; want 12.5/3.25, 7/1.5", rep.UserTotalCredit, rep.UserExpavgCredit, rep.HostTotalCredit, rep.HostExpavgCredit)
		}
		if rep := ask("reset.xml", now+30); !slices.Equal(names(rep.ResultsSent), both) {
			t.Errorf("after a project reset: jobs %v, want %v resent", names(rep.ResultsSent), both)
		}
		// Without <other_results> (a client that does not list what it holds) nothing
		// is resent.
		req := recorded(t, "reset.xml")
		req.OtherResults = nil
		if rep, err := srv.Handle(ctx, req, now+40, base); err != nil || len(rep.ResultsSent) != 0 {
			t.Errorf("no <other_results>: jobs %v (%v), want none", names(rep.ResultsSent), err)
		}
		// Past the deadline the retry job's: not resent.
		if rep := ask("reset.xml", now+86401); len(rep.ResultsSent) != 0 {
			t.Errorf("after the deadline: jobs %v, want none", names(rep.ResultsSent))
		}
		if !strings.Contains(logs.String(), "resending tasks the client no longer holds") {
			t.Errorf("no log line for the resent tasks:\n%s", logs)
		}
	})
}

// TestRecordedBOINCClientErrors: a real client's report of a task aborted by its
// user and of one whose app exited 1 are client errors with the client's state and
// exit status; the tasks done are successes.
func TestRecordedBOINCClientErrors(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		attach := recorded(t, "errors-attach.xml")
		srv, st, _ := recordedProject(t, dsn, attach.Authenticator,
			store.WorkSpec{Count: 3, NamePrefix: "good"}, store.WorkSpec{Count: 1, NamePrefix: "bad"})
		ctx := context.Background()
		now := float64(testNow.Unix())
		rep, err := srv.Handle(ctx, attach, now, "http://127.0.0.1:18081/")
		if err != nil || len(rep.ResultsSent) != 4 {
			t.Fatalf("attach: %v, jobs %v", err, names(rep.ResultsSent))
		}
		// The client uploaded the outputs of the tasks done before it reported them.
		for _, r := range []string{"good_1_0", "good_3_0"} {
			if err := st.InTx(ctx, func(tx *store.Tx) error {
				t, err := tx.OutputFile(r, 0)
				if err != nil {
					return err
				}
				return tx.RecordUpload(store.UploadedFile{ResultID: t.ResultID, Name: r + "_0", NBytes: 15, MD5: "m", SHA256: "s", UploadTime: now + 50})
			}); err != nil {
				t.Fatal(err)
			}
		}
		rep, err = srv.Handle(ctx, recorded(t, "errors-report.xml"), now+100, "http://127.0.0.1:18081/")
		if err != nil || len(rep.ResultAcks) != 4 || len(rep.Messages) != 0 {
			t.Fatalf("report: %v, %d acks, messages %q", err, len(rep.ResultAcks), messages(rep))
		}
		rows, err := st.DB.QueryContext(ctx, `SELECT name, server_state, outcome, client_state, exit_status FROM result ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var name string
			var ss, outcome, cs, exit int
			if err := rows.Scan(&name, &ss, &outcome, &cs, &exit); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s %s %d %d %d", name, store.OutcomeName[outcome], ss, cs, exit))
		}
		want := []string{"bad_4_0 client_error 5 3 1", "good_1_0 success 5 5 0", "good_2_0 client_error 5 6 203", "good_3_0 success 5 5 0"}
		if !slices.Equal(got, want) {
			t.Errorf("results (name outcome server_state client_state exit_status):\n got %q\nwant %q", got, want)
		}
	})
}

// TestAccountLookup: the e-mail and password attach of BOINC clients (the Manager's
// wizard, boinccmd --get_project_config and --lookup_account). The lookup URL is the
// one Debian's BOINC client 7.20.5 requested for carol@example.org, password
// "secret-pw" (it sends the address in lower case and MD5(password + address)).
func TestAccountLookup(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := start(t, dsn, server.Config{ProjectName: "Upper & Co"}, 0)
		ctx := context.Background()
		if _, err := e.st.AddAppVersion(ctx, store.AppVersion{AppName: "cpuapp", VersionNum: 2, Platform: linux, AvgNCPUs: 1,
			Files: []store.AppVersionFile{{Name: "cpuapp_2", OpenName: "cpuapp", MainProgram: true, NBytes: 1, MD5: "m", Signature: "5151"}}}, 1); err != nil {
			t.Fatal(err)
		}
		u, err := e.st.AddUserWithPassword(ctx, "carol", "Carol@Example.org", "secret-pw", 1)
		if err != nil {
			t.Fatal(err)
		}
		get := func(path string) string { t.Helper(); return getOK(t, e.url+path) }
		const recordedLookup = "lookup_account.php?email_addr=carol%40example%2Eorg&passwd_hash=3132ce81b7994459ebbad6021f6eb600"
		if got, want := get(recordedLookup), "<account_out>\n    <authenticator>"+u.Authenticator+"</authenticator>\n</account_out>\n"; got != want {
			t.Errorf("lookup: got %q, want %q", got, want)
		}
		if got := get("lookup_account.php?email_addr=carol%40example%2Eorg&passwd_hash=00000000000000000000000000000000"); !strings.Contains(got, "<error_num>-206</error_num>") {
			t.Errorf("wrong password: %q, want error -206 (ERR_BAD_PASSWD)", got)
		}
		if got := get("lookup_account.php?email_addr=nobody%40example%2Eorg&passwd_hash=3132ce81b7994459ebbad6021f6eb600"); !strings.Contains(got, "<error_num>-136</error_num>") {
			t.Errorf("unknown address: %q, want error -136 (ERR_DB_NOT_FOUND)", got)
		}
		cfg := get("get_project_config.php")
		for _, want := range []string{"<name>Upper &amp; Co</name>", "<master_url>" + e.url + "</master_url>", "<account_creation_disabled/>",
			"<platform_name>" + linux + "</platform_name>", "<min_passwd_length>6</min_passwd_length>"} {
			if !strings.Contains(cfg, want) {
				t.Errorf("project config lacks %s:\n%s", want, cfg)
			}
		}
	})
}

// TestAccountCreation: BOINC's create_account.php (boinccmd --create_account, the
// Manager's new-account page). The creation URL is the one Debian's BOINC client
// 7.20.5 requested for alice@example.org, password "secret123", name Alice. Without
// Config.AccountCreation the project refuses, as get_project_config.php says; with it
// the account is made, found by a lookup, given again to the same request, and
// refused to another password; bad names, addresses and hashes get BOINC's errors.
func TestAccountCreation(t *testing.T) {
	t.Parallel()
	const recorded = "create_account.php?email_addr=alice%40example%2Eorg&passwd_hash=adde85aad2eea5e6109eade26ab1b9d0&user_name=Alice"
	t.Run("disabled", func(t *testing.T) {
		e := start(t, storetest.SQLiteDSN(t), server.Config{}, 0)
		if got := getOK(t, e.url+recorded); !strings.Contains(got, "<error_num>-1</error_num>") || !strings.Contains(got, "not accepting new accounts") {
			t.Errorf("creation while disabled: %q", got)
		}
		if users, _ := e.st.Users(context.Background()); len(users) != 0 {
			t.Errorf("accounts made while disabled: %+v", users)
		}
	})
	forEngine(t, func(t *testing.T, dsn string) {
		e := start(t, dsn, server.Config{AccountCreation: true, AccountRequestsPerMinute: -1}, 0)
		if cfg := getOK(t, e.url+"get_project_config.php"); strings.Contains(cfg, "account_creation_disabled") {
			t.Errorf("project config says creation is disabled:\n%s", cfg)
		}
		got := getOK(t, e.url+recorded)
		auth, ok := strings.CutPrefix(got, "<account_out>\n    <authenticator>")
		auth, ok2 := strings.CutSuffix(auth, "</authenticator>\n</account_out>\n")
		if !ok || !ok2 || auth == "" {
			t.Fatalf("creation: %q", got)
		}
		if again := getOK(t, e.url+recorded); again != got {
			t.Errorf("the same request again: %q, want the same account %q", again, got)
		}
		if lookup := getOK(t, e.url+"lookup_account.php?email_addr=alice%40example%2Eorg&passwd_hash=adde85aad2eea5e6109eade26ab1b9d0"); lookup != got {
			t.Errorf("lookup of the created account: %q, want %q", lookup, got)
		}
		users, err := e.st.Users(context.Background())
		if err != nil || len(users) != 1 || users[0].Name != "Alice" || users[0].EmailAddr != "alice@example.org" || users[0].Authenticator != auth {
			t.Errorf("accounts: %+v, %v", users, err)
		}
		// An address 'bserver user add' took (no password, typed in another case).
		if _, err := e.st.AddUser(context.Background(), "carol", "Carol@Example.org", 1); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ query, errNum string }{
			{"email_addr=alice%40example.org&passwd_hash=00000000000000000000000000000000&user_name=Alice", "-137"},
			{"email_addr=carol%40example.org&passwd_hash=adde85aad2eea5e6109eade26ab1b9d0&user_name=Carol", "-137"},
			{"email_addr=bob%40example.org&passwd_hash=adde85aad2eea5e6109eade26ab1b9d0&user_name=+Bob", "-188"},
			{"email_addr=bob%40example.org&passwd_hash=adde85aad2eea5e6109eade26ab1b9d0&user_name=", "-188"},
			{"email_addr=bob%40example.org&passwd_hash=adde85aad2eea5e6109eade26ab1b9d0&user_name=1234", "-188"},
			{"email_addr=bob%40example.org&passwd_hash=adde85aad2eea5e6109eade26ab1b9d0&user_name=%3Cb%3EBob", "-188"},
			{"email_addr=bob&passwd_hash=adde85aad2eea5e6109eade26ab1b9d0&user_name=Bob", "-205"},
			{"email_addr=Bob+%3Cbob%40example.org%3E&passwd_hash=adde85aad2eea5e6109eade26ab1b9d0&user_name=Bob", "-205"},
			{"email_addr=bob%40example.org&passwd_hash=short&user_name=Bob", "-1"},
		} {
			if got := getOK(t, e.url+"create_account.php?"+tc.query); !strings.Contains(got, "<error_num>"+tc.errNum+"</error_num>") {
				t.Errorf("%s: %q, want error %s", tc.query, got, tc.errNum)
			}
		}
		if users, _ := e.st.Users(context.Background()); len(users) != 2 {
			t.Errorf("refused requests made accounts: %+v", users)
		}
	})
}

// TestAccountRateLimit: one address may make AccountRequestsPerMinute account requests
// (lookups and creations together) at once and then one every 60/N seconds; the next
// is refused with BOINC's error form, which the client shows; other endpoints are not
// counted.
func TestAccountRateLimit(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.SQLiteDSN(t), server.Config{AccountCreation: true, AccountRequestsPerMinute: 3}, 0)
	get := func(path string) string { t.Helper(); return getOK(t, e.url+path) }
	const lookup = "lookup_account.php?email_addr=x%40example.org&passwd_hash=00000000000000000000000000000000"
	for i := range 3 {
		if got := get(lookup); !strings.Contains(got, "<error_num>-136</error_num>") {
			t.Fatalf("request %d: %q, want an answer (no such account)", i+1, got)
		}
	}
	if got := get("get_project_config.php"); !strings.Contains(got, "<project_config>") {
		t.Errorf("project config refused: %q", got)
	}
	for _, path := range []string{lookup, "create_account.php?email_addr=y%40example.org&passwd_hash=00000000000000000000000000000000&user_name=Y"} {
		if got := get(path); !strings.Contains(got, "<error_num>-1</error_num>") || !strings.Contains(got, "too many account requests") {
			t.Errorf("%s past the limit: %q, want refused", path, got)
		}
	}
	if users, _ := e.st.Users(context.Background()); len(users) != 0 {
		t.Errorf("a refused creation made an account: %+v", users)
	}
}

// TestRecordedBOINCClientAborts: a client holding a task the project no longer wants
// is told to abort it (BOINC's send_result_abort): a replica whose workunit another
// host's result validated, if it has not started; a task the project never sent to
// this host, outright. The client's report of the abort is recorded like a user's.
func TestRecordedBOINCClientAborts(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		attach := recorded(t, "replica-attach-1.xml")
		srv, st, logs := recordedProject(t, dsn, attach.Authenticator, store.WorkSpec{Count: 1, NamePrefix: "rep", TargetNResults: 2})
		ctx := context.Background()
		now := float64(testNow.Unix())
		const base = "http://127.0.0.1:18111/"
		ask := func(req *boincxml.SchedulerRequest, at float64) *boincxml.SchedulerReply {
			t.Helper()
			rep, err := srv.Handle(ctx, req, at, base)
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		if rep := ask(attach, now); rep.HostID != 1 || !slices.Equal(names(rep.ResultsSent), []string{"rep_1_0"}) {
			t.Fatalf("first client: host %d, jobs %v", rep.HostID, names(rep.ResultsSent))
		}
		if rep := ask(recorded(t, "replica-attach-2.xml"), now+1); rep.HostID != 2 || !slices.Equal(names(rep.ResultsSent), []string{"rep_1_1"}) {
			t.Fatalf("second client: host %d, jobs %v", rep.HostID, names(rep.ResultsSent))
		}
		ask(recorded(t, "replica-report-2.xml"), now+10)
		aborts := func(rep *boincxml.SchedulerReply) string {
			return fmt.Sprintf("abort %v, abort if not started %v", rep.ResultAborts, rep.ResultAbortsIfNotStarted)
		}
		if rep := ask(recorded(t, "replica-held-1.xml"), now+20); len(rep.ResultAborts)+len(rep.ResultAbortsIfNotStarted) != 0 {
			t.Errorf("before validation: %s, want none", aborts(rep))
		}
		// What bretry validate does: rep_1_1 is canonical.
		if _, err := st.DB.ExecContext(ctx, `UPDATE workunit SET canonical_resultid=(SELECT id FROM result WHERE name='rep_1_1'), need_validate=0`); err != nil {
			t.Fatal(err)
		}
		rep := ask(recorded(t, "replica-held-1.xml"), now+30)
		if got, want := aborts(rep), "abort [], abort if not started [{rep_1_0}]"; got != want {
			t.Errorf("validated elsewhere: %s, want %s", got, want)
		}
		// A task this host was never sent (another host's, or unknown) is aborted.
		req := recorded(t, "replica-held-1.xml")
		req.OtherResults = append(req.OtherResults, boincxml.NameRef{Name: "rep_1_1"}, boincxml.NameRef{Name: "nosuch_0"})
		if got, want := aborts(ask(req, now+40)), "abort [{rep_1_1} {nosuch_0}], abort if not started [{rep_1_0}]"; got != want {
			t.Errorf("foreign tasks: %s, want %s", got, want)
		}
		if rep := ask(recorded(t, "replica-report-1.xml"), now+50); len(rep.ResultAcks) != 1 {
			t.Errorf("report of the abort: acks %v", rep.ResultAcks)
		}
		var outcome, cs, exit int
		if err := st.DB.QueryRowContext(ctx, `SELECT outcome, client_state, exit_status FROM result WHERE name='rep_1_0'`).Scan(&outcome, &cs, &exit); err != nil ||
			outcome != store.OutcomeClientError || cs != 6 || exit != 202 {
			t.Errorf("rep_1_0 after its report: outcome %d, client state %d, exit status %d (%v); want client error, 6, 202", outcome, cs, exit, err)
		}
		// A result the retry job marked lost is aborted if not started.
		if _, err := st.DB.ExecContext(ctx, `UPDATE result SET server_state=?, outcome=? WHERE name='rep_1_1'`, store.ServerStateOver, store.OutcomeNoReply); err != nil {
			t.Fatal(err)
		}
		req = recorded(t, "replica-attach-2.xml")
		req.HostID, req.OtherResults = 2, boincxml.OtherResultList{{Name: "rep_1_1"}}
		if got, want := aborts(ask(req, now+70)), "abort [], abort if not started [{rep_1_1}]"; got != want {
			t.Errorf("timed out: %s, want %s", got, want)
		}
		if !strings.Contains(logs.String(), "telling the client to abort a task") {
			t.Errorf("no log line for the aborts:\n%s", logs)
		}
	})
}

// TestRecordedBOINCClientStderr: the report of a task whose app printed colour
// escapes to stderr (which the client copies into <stderr_out> unescaped) is received,
// recorded as a client error, and its stderr kept for the project (result_stderr).
func TestRecordedBOINCClientStderr(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		attach := recorded(t, "attach.xml")
		srv, st, _ := recordedProject(t, dsn, attach.Authenticator,
			store.WorkSpec{Count: 3, NamePrefix: "job"}, store.WorkSpec{Count: 1, NamePrefix: "esc"})
		ctx := context.Background()
		now := float64(testNow.Unix())
		const base = "http://127.0.0.1:18091/"
		if rep, err := srv.Handle(ctx, attach, now, base); err != nil || len(rep.ResultsSent) != 4 {
			t.Fatalf("attach: %v, jobs %v", err, names(rep.ResultsSent))
		}
		rep, err := srv.Handle(ctx, recorded(t, "stderr-escape-report.xml"), now+10, base)
		if err != nil || len(rep.ResultAcks) != 1 {
			t.Fatalf("report: %v, acks %v", err, rep.ResultAcks)
		}
		var outcome int
		var stderr string
		if err := st.DB.QueryRowContext(ctx, `SELECT r.outcome, s.stderr_out FROM result r JOIN result_stderr s ON s.resultid=r.id
			WHERE r.name='esc_4_0'`).Scan(&outcome, &stderr); err != nil {
			t.Fatal(err)
		}
		if outcome != store.OutcomeClientError || !strings.Contains(stderr, "\uFFFD[31merror:\uFFFD[0m something failed") ||
			!strings.Contains(stderr, "process exited with code 1") {
			t.Errorf("esc_4_0: outcome %d, stderr %q", outcome, stderr)
		}
	})
}

// TestMasterURLConfigured: behind a proxy that terminates TLS or rewrites the Host
// header, the URL volunteers attach to is not the one the server sees. Replies must
// carry the configured one, or a BOINC client tells its user at every request that
// "this project seems to have changed its URL" (seen with 7.20.5 behind a proxy that
// rewrote Host), and its files' URLs must start with it.
func TestMasterURLConfigured(t *testing.T) {
	t.Parallel()
	attach := recorded(t, "attach.xml")
	srv, _, _ := recordedProject(t, storetest.SQLiteDSN(t), attach.Authenticator, store.WorkSpec{Count: 1, NamePrefix: "job"})
	const master = "https://project.example/"
	srv.Config.MasterURL = master
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	e := &env{url: server.URLFor(ln)}
	b, err := os.ReadFile(filepath.Join("testdata", "boinc-7.20.5", "attach.xml"))
	if err != nil {
		t.Fatal(err)
	}
	rep, status := e.postRaw(t, "scheduler", b)
	if status != 200 || rep.MasterURL != master || len(rep.ResultsSent) != 1 {
		t.Fatalf("attach: status %d, master_url %q, jobs %v", status, rep.MasterURL, names(rep.ResultsSent))
	}
	for _, f := range rep.FileInfos {
		if !strings.HasPrefix(f.URL, master) {
			t.Errorf("file %s: URL %q, want it under %s", f.Name, f.URL, master)
		}
	}
	resp, err := http.Get(e.url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "<scheduler>"+master+"scheduler</scheduler>") {
		t.Errorf("master file does not name %sscheduler:\n%s", master, page)
	}
}

// TestRecordedBOINCClientRetrySameHost: a host whose task failed or was aborted may
// get another result of that workunit (BOINC's default), so that a project with one
// host reruns it; one whose task succeeded may not (that would defeat validation).
func TestRecordedBOINCClientRetrySameHost(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		attach := recorded(t, "errors-attach.xml")
		srv, _, _ := recordedProject(t, dsn, attach.Authenticator,
			store.WorkSpec{Count: 3, NamePrefix: "good", TargetNResults: 2}, store.WorkSpec{Count: 1, NamePrefix: "bad", TargetNResults: 2})
		ctx := context.Background()
		now := float64(testNow.Unix())
		const base = "http://127.0.0.1:18081/"
		rep, err := srv.Handle(ctx, attach, now, base)
		if want := []string{"good_1_0", "good_2_0", "good_3_0", "bad_4_0"}; err != nil || !slices.Equal(names(rep.ResultsSent), want) {
			t.Fatalf("attach: %v, jobs %v, want %v", err, names(rep.ResultsSent), want)
		}
		// The report (good_2_0 aborted, bad_4_0 failed, the others done) asks for work.
		rep, err = srv.Handle(ctx, recorded(t, "errors-report.xml"), now+100, base)
		if want := []string{"good_2_1", "bad_4_1"}; err != nil || !slices.Equal(names(rep.ResultsSent), want) {
			t.Errorf("after the report: %v, jobs %v, want %v (the failed ones' other results only)", err, names(rep.ResultsSent), want)
		}
	})
}

// getOK GETs url and returns the body, failing t unless the status is 200 (BOINC's web
// RPCs answer errors in the body).
func getOK(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d: %s", url, resp.StatusCode, b)
	}
	return string(b)
}
