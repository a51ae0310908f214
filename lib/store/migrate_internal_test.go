package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/bkit/bkit/lib/locality"
)

// oldDatabase is a SQLite database migrated to version (the first version
// migrations), closed at the test's end. Its callers are not parallel: it shortens the
// package's migration list for a moment.
func oldDatabase(t *testing.T, version int) *Store {
	t.Helper()
	s, err := Open("sqlite:" + filepath.Join(t.TempDir(), "old.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	saved := migrations
	migrations = saved[:version]
	_, err = s.Migrate(context.Background(), 1)
	migrations = saved
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestUpgradeKeepsAppVersions: a database made by migration 1 with app versions in it
// keeps them through migration 2's rebuild of app_version (SQLite; the MySQL path runs
// the same statements on every fresh test database).
//
// Not parallel: it shortens the package's migration list for a moment.
func TestUpgradeKeepsAppVersions(t *testing.T) {
	ctx := context.Background()
	s := oldDatabase(t, 1)
	for _, q := range []string{
		`INSERT INTO app (id, name) VALUES (1, 'a')`,
		`INSERT INTO app_version (id, appid, version_num, plan_class, avg_ncpus, coproc_type, coproc_count, flops) VALUES (7, 1, 3, 'cuda', 0.5, 'NVIDIA', 1, 2e11)`,
	} {
		if _, err := s.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if applied, err := s.Migrate(ctx, 2); err != nil || len(applied) == 0 || applied[0] != 2 {
		t.Fatalf("upgrade: applied %v, %v", applied, err)
	}
	var avs []AppVersion
	if err := s.InTx(ctx, func(tx *Tx) (err error) { avs, err = tx.AppVersions(); return err }); err != nil {
		t.Fatal(err)
	}
	if len(avs) != 1 || avs[0].ID != 7 || avs[0].VersionNum != 3 || avs[0].PlanClass != "cuda" || avs[0].CoprocCount != 1 || avs[0].Flops != 2e11 || avs[0].Platform != "" {
		t.Fatalf("app versions after the upgrade: %+v", avs)
	}
	// The platform is part of the key now: version 3 "cuda" for a platform is new.
	if _, err := s.AddAppVersion(ctx, AppVersion{AppName: "a", VersionNum: 3, PlanClass: "cuda", Platform: "x86_64-pc-linux-gnu", AvgNCPUs: 1}, 2); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeRecountsCursors: a batch part-way through under migration 5 (whose
// transitioner kept remaining_credit without marks) is recounted once after migration
// 6: the finished job beyond the front is taken off once, not twice, and the front
// moves as before. Not parallel: it shortens the migration list for a moment.
func TestUpgradeRecountsCursors(t *testing.T) {
	ctx := context.Background()
	s := oldDatabase(t, 5)
	if _, err := s.AddApp(ctx, "loc", true, 1); err != nil {
		t.Fatal(err)
	}
	spec := BatchSpec{Name: "b", App: "loc", DelayBound: 1000, MinQuorum: 1, TargetNResults: 1, MaxErrorResults: 3,
		MaxTotalResults: 6, MaxSuccessResults: 4, Cursors: []locality.Range{{First: 0, Last: 3}}}
	spec.Files = []BatchFile{{Name: "b_f0", NBytes: 1}}
	for j := range 4 {
		spec.Jobs = append(spec.Jobs, BatchJob{FpopsEst: 1e12 * float64(j+1)})
	}
	if _, err := s.CreateBatch(ctx, spec, 1); err != nil {
		t.Fatal(err)
	}
	credit := func(jobs ...int) float64 {
		sum := 0.0
		for _, j := range jobs {
			sum += 1e12 * float64(j+1) * locality.CreditPerFlop
		}
		return sum
	}
	// Under migration 5: all jobs generated (as its generator did, transition_time
	// set), job 2 finished and already off remaining_credit.
	var qs []string
	for j := range 4 {
		qs = append(qs, fmt.Sprintf(`INSERT INTO workunit (id, appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound, transition_time,
			batch_id, cursor_id, job_num) VALUES (%d, 1, 'b_j%d', %g, 0, 1000, 2, 1, 1, %d)`, j+1, j, 1e12*float64(j+1), j),
			fmt.Sprintf(`INSERT INTO result (workunitid, appid, name) VALUES (%d, 1, 'b_j%d_0')`, j+1, j))
	}
	qs = append(qs, `UPDATE locality_cursor SET first_ungenerated_job_num=4`)
	for _, q := range append(qs, `UPDATE workunit SET canonical_resultid=1 WHERE job_num=2`,
		fmt.Sprintf(`UPDATE locality_cursor SET remaining_credit=%v`, credit(0, 1, 3))) {
		if _, err := s.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if applied, err := s.Migrate(ctx, 3); err != nil || len(applied) != SchemaVersion-5 || applied[0] != 6 {
		t.Fatalf("upgrade: applied %v, %v", applied, err)
	}
	// Migration 7: the results know their cursor and job.
	var bad int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM result r JOIN workunit w ON w.id=r.workunitid
		WHERE r.cursor_id<>w.cursor_id OR r.job_num<>w.job_num OR r.cursor_id=0`).Scan(&bad); err != nil || bad != 0 {
		t.Fatalf("%d results without their cursor and job after the upgrade (%v)", bad, err)
	}
	// A result added later (the retry job's) gets them from its workunit.
	if err := s.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.exec(`INSERT INTO result (workunitid, appid, name) SELECT id, appid, 'late' FROM workunit WHERE job_num=3`); err != nil {
			return err
		}
		var wu int64
		if err := tx.queryRow(`SELECT id FROM workunit WHERE job_num=3`).Scan(&wu); err != nil {
			return err
		}
		return tx.ResultsJoinJobs([]int64{wu})
	}); err != nil {
		t.Fatal(err)
	}
	var late int64
	if err := s.DB.QueryRowContext(ctx, `SELECT job_num FROM result WHERE name='late' AND cursor_id<>0`).Scan(&late); err != nil || late != 3 {
		t.Fatalf("a late result: job %d, %v", late, err)
	}
	check := func(front int64, remaining float64) {
		t.Helper()
		if _, _, err := s.Transition(ctx, 4); err != nil {
			t.Fatal(err)
		}
		var f int64
		var r float64
		if err := s.DB.QueryRowContext(ctx, `SELECT first_unfinished_job_num, remaining_credit FROM locality_cursor`).Scan(&f, &r); err != nil {
			t.Fatal(err)
		}
		if f != front || math.Abs(r-remaining) > 1e-9*credit(0, 1, 2, 3) || (r == 0) != (remaining == 0) {
			t.Fatalf("front %d remaining %g, want %d %g", f, r, front, remaining)
		}
	}
	check(0, credit(0, 1, 3))
	check(0, credit(0, 1, 3)) // a second pass changes nothing
	// Job 0 finishes unmarked (the front is tested whatever the marks), job 3 marked.
	if _, err := s.DB.ExecContext(ctx, `UPDATE workunit SET canonical_resultid=1, transition_time=CASE WHEN job_num=3 THEN 5 ELSE 0 END WHERE job_num IN (0, 3)`); err != nil {
		t.Fatal(err)
	}
	check(1, credit(1))
	if _, err := s.DB.ExecContext(ctx, `UPDATE workunit SET error_mask=2 WHERE job_num=1`); err != nil {
		t.Fatal(err)
	}
	check(4, 0)
}

// TestUpgradeKeysPasswordEmails: accounts with passwords made before migration 9 get
// their address as password_email, the first of an address shared (it could be, as the
// check was not atomic) keeping it, so the unique index can be made; accounts without
// a password keep NULL. Not parallel: it shortens the migration list for a moment.
func TestUpgradeKeysPasswordEmails(t *testing.T) {
	ctx := context.Background()
	s := oldDatabase(t, 8)
	for _, q := range []string{
		`INSERT INTO user (id, name, email_addr, authenticator, passwd_hash) VALUES (1, 'a', 'a@x.org', 'k1', 'h1')`,
		`INSERT INTO user (id, name, email_addr, authenticator, passwd_hash) VALUES (2, 'a2', 'a@x.org', 'k2', 'h2')`,
		`INSERT INTO user (id, name, email_addr, authenticator, passwd_hash) VALUES (3, 'b', 'b@x.org', 'k3', '')`,
	} {
		if _, err := s.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if applied, err := s.Migrate(ctx, 2); err != nil || len(applied) != SchemaVersion-8 || applied[0] != 9 {
		t.Fatalf("upgrade: applied %v, %v", applied, err)
	}
	got := ""
	rows, err := s.DB.QueryContext(ctx, `SELECT id, COALESCE(password_email, 'NULL') FROM user ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int
		var pe string
		rows.Scan(&id, &pe)
		got += fmt.Sprintf("%d:%s ", id, pe)
	}
	rows.Close()
	if want := "1:a@x.org 2:NULL 3:NULL "; got != want {
		t.Errorf("password_email after the upgrade: %q, want %q", got, want)
	}
}

// TestUpgradeKeysHostCPIDs: a user's hosts made before migration 10 with one cpid (two
// first requests at once could make them) keep their rows; the latest gets the cpid
// as cpid_key, which the unique key then holds; bkit's own hosts (no user) and hosts
// without a cpid keep NULL. Not parallel: it shortens the migration list for a moment.
func TestUpgradeKeysHostCPIDs(t *testing.T) {
	ctx := context.Background()
	s := oldDatabase(t, 9)
	for _, q := range []string{
		`INSERT INTO host (id, userid, authenticator, host_cpid) VALUES (1, 7, 'a1', 'c1')`,
		`INSERT INTO host (id, userid, authenticator, host_cpid) VALUES (2, 7, 'a2', 'c1')`,
		`INSERT INTO host (id, userid, authenticator, host_cpid) VALUES (3, 8, 'a3', 'c1')`,
		`INSERT INTO host (id, userid, authenticator, host_cpid) VALUES (4, 0, 'a4', 'c1')`,
		`INSERT INTO host (id, userid, authenticator, host_cpid) VALUES (5, 7, 'a5', '')`,
		`INSERT INTO host (id, userid, authenticator, host_cpid) VALUES (6, 0, 'a6', '')`,
	} {
		if _, err := s.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if applied, err := s.Migrate(ctx, 2); err != nil || len(applied) != SchemaVersion-9 || applied[0] != 10 {
		t.Fatalf("upgrade: applied %v, %v", applied, err)
	}
	got := ""
	rows, err := s.DB.QueryContext(ctx, `SELECT id, COALESCE(cpid_key, 'NULL') FROM host ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int
		var k string
		rows.Scan(&id, &k)
		got += fmt.Sprintf("%d:%s ", id, k)
	}
	rows.Close()
	if want := "1:NULL 2:c1 3:c1 4:NULL 5:NULL 6:NULL "; got != want {
		t.Errorf("cpid_key after the upgrade: %q, want %q", got, want)
	}
	if _, err := s.DB.ExecContext(ctx, `INSERT INTO host (userid, authenticator, host_cpid, cpid_key) VALUES (7, 'a7', 'c1', 'c1')`); err == nil {
		t.Error("a second host of user 7 with cpid c1 and its key: inserted")
	}
}

// TestUpgradeLowersEmails: addresses 'bserver user add' stored as typed before
// migration 11 are lower case after it. Not parallel: it shortens the migration list.
func TestUpgradeLowersEmails(t *testing.T) {
	ctx := context.Background()
	s := oldDatabase(t, 10)
	if _, err := s.DB.ExecContext(ctx, `INSERT INTO user (id, name, email_addr, authenticator) VALUES (1, 'b', 'Bob@Example.ORG', 'k1'), (2, 'c', '', 'k2')`); err != nil {
		t.Fatal(err)
	}
	if applied, err := s.Migrate(ctx, 2); err != nil || len(applied) != SchemaVersion-10 || applied[0] != 11 {
		t.Fatalf("upgrade: applied %v, %v", applied, err)
	}
	if _, _, err := s.CreateAccount(ctx, "Bob", "bob@example.org", PasswdHash("pw-bob", "bob@example.org"), 3); !errors.Is(err, ErrExists) {
		t.Errorf("create_account for an address user add stored as Bob@Example.ORG: %v, want ErrExists", err)
	}
}

// TestUpgradeAssimilateReady: after migration 13, the workunits validated or given up
// before it wait for the assimilator, and the others do not.
//
// Not parallel: it shortens the package's migration list for a moment.
func TestUpgradeAssimilateReady(t *testing.T) {
	ctx := context.Background()
	s := oldDatabase(t, 12)
	for _, q := range []string{
		`INSERT INTO app (id, name) VALUES (1, 'a')`,
		`INSERT INTO workunit (id, appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound, canonical_resultid) VALUES (1, 1, 'valid', 1, 1, 1, 7)`,
		`INSERT INTO workunit (id, appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound, error_mask) VALUES (2, 1, 'given_up', 1, 1, 1, 2)`,
		`INSERT INTO workunit (id, appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound) VALUES (3, 1, 'waiting', 1, 1, 1)`,
	} {
		if _, err := s.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Migrate(ctx, 2); err != nil {
		t.Fatal(err)
	}
	var ready string
	if err := s.DB.QueryRowContext(ctx, `SELECT GROUP_CONCAT(name) FROM (SELECT name FROM workunit WHERE assimilate_ready=1 ORDER BY id)`).Scan(&ready); err != nil {
		t.Fatal(err)
	}
	if ready != "valid,given_up" {
		t.Errorf("ready for assimilation: %q, want valid,given_up", ready)
	}
}
