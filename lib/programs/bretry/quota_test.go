package bretry

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/bkit/bkit/lib/store"
)

// TestQuotasTimeoutAndValid: a pass takes one off a host's daily quota of an app
// version for each of its results that timed out, in the lost sweep and in the retry
// rules alike (BOINC's transitioner, result_timed_out), and doubles it for each result
// the validator finds valid (BOINC's validator, is_valid); a second pass, and a second
// validation of a workunit, change nothing more; the day's count of jobs sent (the
// scheduler's) is left as it was.
func TestQuotasTimeoutAndValid(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		av, err := s.AddAppVersion(context.Background(), store.AppVersion{AppName: "app", VersionNum: 1, AvgNCPUs: 1}, t0)
		if err != nil {
			t.Fatal(err)
		}
		f.exec(`UPDATE app SET daily_quota=100`)
		// Host 1: three results time out; host 2:
		// two valid results, from a quota of 3; host 3: a result that fails validation;
		// host 4: no host_app_version row (left alone).
		for i := range 3 {
			f.wu(fmt.Sprintf("late%d", i), 1, t0+1, inProg)
		}
		f.wu("ok0", 1, t0+1, success)
		f.wu("ok1", 2, t0+1, success, success)
		f.wu("bad", 1, t0+1, success)
		f.wu("norow", 1, t0+1, inProg)
		f.exec(`UPDATE result SET app_version_id=?`, av)
		f.exec(`UPDATE result SET hostid=1 WHERE name LIKE 'late%'`)
		f.exec(`UPDATE result SET hostid=2 WHERE name LIKE 'ok%'`)
		f.exec(`UPDATE result SET hostid=3, validate_state=? WHERE name LIKE 'bad%'`, store.ValidateInvalid)
		f.exec(`UPDATE result SET hostid=4 WHERE name LIKE 'norow%'`)
		f.exec(`UPDATE workunit SET need_validate=1 WHERE name LIKE 'ok%' OR name='bad'`)
		f.exec(`UPDATE result SET output_digest='sha256:aa' WHERE name LIKE 'ok%'`)
		f.exec(`UPDATE result SET output_digest='sha256:bb', outcome=? WHERE name='bad_0'`, store.OutcomeClientError)
		f.exec(`INSERT INTO host_app_version (host_id, app_version_id, max_jobs_per_day, n_jobs_today, jobs_day) VALUES
			(1, ?, 0, 7, 11), (2, ?, 3, 5, 11), (3, ?, 40, 0, 0)`, av, av, av)
		quotas := func() string {
			t.Helper()
			rows, err := s.DB.Query(`SELECT host_id, max_jobs_per_day, n_jobs_today, jobs_day FROM host_app_version ORDER BY host_id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out string
			for rows.Next() {
				var h, m, n, d int
				if err := rows.Scan(&h, &m, &n, &d); err != nil {
					t.Fatal(err)
				}
				out += fmt.Sprintf("%d:%d/%d@%d ", h, m, n, d)
			}
			return out
		}
		// 100 (the app's, for 0) − 3 timeouts; 3 × 2 × 2 × 2 (three valid results);
		// host 3 as it was.
		const want = "1:97/7@11 2:24/5@11 3:40/0@0 "
		sum := f.pass(params, t0+200, false)
		if sum.Lost != 4 || sum.Validated != 2 {
			t.Fatalf("first pass: %+v; want 4 lost (3 of host 1, 1 of host 4), 2 validated", sum)
		}
		if got := quotas(); got != want {
			t.Errorf("after a pass: %q, want %q", got, want)
		}
		f.pass(params, t0+300, false)
		f.exec(`UPDATE workunit SET need_validate=1 WHERE name LIKE 'ok%'`) // judged again
		f.pass(params, t0+400, false)
		if got := quotas(); got != want {
			t.Errorf("after two more passes, one validating again: %q, want %q", got, want)
		}
		// The retry rules' own marking of a lost result (when no sweep came first)
		// costs the host one too.
		f.wu("late3", 1, t0+1, inProg)
		f.exec(`UPDATE result SET hostid=1, app_version_id=? WHERE name='late3_0'`, av)
		ps := &Pass{Store: s, AppID: f.appID, App: "app", Params: params, Now: t0 + 500, Batch: 10, Log: slog.New(slog.DiscardHandler)}
		var rs Summary
		if err := ps.loop(context.Background(), &rs, ps.retryBatch); err != nil || rs.Lost != 1 {
			t.Fatalf("retry rules alone: %+v, %v; want 1 lost", rs, err)
		}
		if got, want := quotas(), "1:96/7@11 2:24/5@11 3:40/0@0 "; got != want {
			t.Errorf("after the retry rules marked one more lost: %q, want %q", got, want)
		}
	})
}
