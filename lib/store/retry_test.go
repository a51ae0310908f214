package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bkit/bkit/lib/store"
	"github.com/google/go-cmp/cmp"
)

func TestAppRetry(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		appID, _ := setupWork(t, s, 1, 1)
		got, err := s.AppRetryByName(ctx, "sim")
		want := store.AppRetry{AppID: appID, DWU: 172800, Dresult: 86400, NError: 3, Ndet: 6, Nredundancy: 1,
			DailyQuota: 500, DailyQuotaGPU: 500, MaxInProgress: 10, MaxInProgressGPU: 10}
		if err != nil || got != want {
			t.Fatalf("defaults = %+v, %v; want %+v", got, err, want)
		}
		dwu, ndet := 3600.0, 2
		got, err = s.SetAppRetry(ctx, "sim", store.AppRetrySet{DWU: &dwu, Ndet: &ndet})
		want.DWU, want.Ndet = 3600, 2
		if err != nil || got != want {
			t.Fatalf("after set = %+v, %v; want %+v", got, err, want)
		}
		if _, err := s.SetAppRetry(ctx, "nosuch", store.AppRetrySet{DWU: &dwu}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("set of a missing app: %v", err)
		}
		if _, err := s.GiveUps(ctx, "nosuch", 0, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("give-ups of a missing app: %v", err)
		}
	})
}

// A reported success records its output digest and marks its workunit for the
// validator; an error does not.
func TestReportDigest(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		appID, avID := setupWork(t, s, 2, 1)
		h := &store.Host{Authenticator: store.NewAuthenticator(), PNCPUs: 2}
		err := s.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.CreateHost(h, 200); err != nil {
				return err
			}
			cands, err := tx.UnsentCandidates([]int64{appID}, h.ID, 0, 10)
			if err != nil {
				return err
			}
			for _, c := range cands {
				if _, err := tx.ClaimResult(c.ResultID, h.ID, avID, 200, 300); err != nil {
					return err
				}
			}
			if _, err := tx.RecordReport(h.ID, store.Report{Name: "sim_1_0", Success: true, OutputDigest: "sha256:ab"}, 250); err != nil {
				return err
			}
			_, err = tx.RecordReport(h.ID, store.Report{Name: "sim_2_0", Success: false}, 250)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			Digest       string
			NeedValidate int
		}
		var got []row
		rows, err := s.DB.QueryContext(ctx, `SELECT r.output_digest, w.need_validate FROM result r JOIN workunit w ON w.id=r.workunitid ORDER BY r.id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var r row
			rows.Scan(&r.Digest, &r.NeedValidate)
			got = append(got, r)
		}
		if d := cmp.Diff([]row{{"sha256:ab", 1}, {"", 0}}, got); d != "" {
			t.Errorf("(-want +got)\n%s", d)
		}
	})
}

// Seed 003: "Each workunit has a retry check time. This is initially set to now + DWU",
// DWU being the app's (bserver app set --dwu), the same the retry job adds at each
// check. A workunit made by create_work (without its own RetryDelay) or by the
// locality work generator gets it; an explicit RetryDelay still wins.
func TestFirstRetryCheckIsDWU(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, app := range []struct {
			name     string
			locality bool
			dwu      float64
		}{{"sim", false, 500}, {"loc", true, 900}} {
			if _, err := s.AddApp(ctx, app.name, app.locality, 1); err != nil {
				t.Fatal(err)
			}
			dwu := app.dwu
			if _, err := s.SetAppRetry(ctx, app.name, store.AppRetrySet{DWU: &dwu}); err != nil {
				t.Fatal(err)
			}
		}
		spec := store.WorkSpec{App: "sim", Count: 1, FpopsEst: 1e12, DelayBound: 3600, MinQuorum: 1, TargetNResults: 1,
			MaxErrorResults: 3, MaxTotalResults: 10, MaxSuccessResults: 6}
		if _, err := s.CreateWork(ctx, spec, 1000); err != nil { // 1000 + DWU 500
			t.Fatal(err)
		}
		spec.NamePrefix, spec.RetryDelay = "own", 7000
		if _, err := s.CreateWork(ctx, spec, 1000); err != nil { // 1000 + its own 7000
			t.Fatal(err)
		}
		if _, err := s.CreateBatch(ctx, testBatch("b"), 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Generate(ctx, 1, 2000); err != nil { // 2000 + DWU 900, one job per cursor
			t.Fatal(err)
		}
		got := map[string]float64{}
		rows, err := s.DB.QueryContext(ctx, `SELECT name, retry_check_time FROM workunit`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var check float64
			if err := rows.Scan(&name, &check); err != nil {
				t.Fatal(err)
			}
			got[name] = check
		}
		want := map[string]float64{"sim_1": 1500, "own_2": 8000, "b_j0": 2900, "b_j3": 2900}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("retry_check_time (-want +got)\n%s", d)
		}
	})
}

// Seed 003: "Each result has a deadline ... initially set to now + Dresult", the app's
// Dresult: the results create_work and the locality generator make have it (the
// scheduler replaces it by send time + delay_bound when it sends one).
func TestFirstResultDeadlineIsDresult(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, app := range []struct {
			name     string
			locality bool
			dresult  float64
		}{{"sim", false, 300}, {"loc", true, 400}} {
			if _, err := s.AddApp(ctx, app.name, app.locality, 1); err != nil {
				t.Fatal(err)
			}
			dresult := app.dresult
			if _, err := s.SetAppRetry(ctx, app.name, store.AppRetrySet{Dresult: &dresult}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CreateWork(ctx, store.WorkSpec{App: "sim", Count: 1, FpopsEst: 1e12, DelayBound: 3600, MinQuorum: 2,
			TargetNResults: 2, MaxErrorResults: 3, MaxTotalResults: 10, MaxSuccessResults: 6, RetryDelay: 5000}, 1000); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateBatch(ctx, testBatch("b"), 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Generate(ctx, 1, 2000); err != nil { // one job per cursor, 2 results each
			t.Fatal(err)
		}
		got := map[string]float64{}
		rows, err := s.DB.QueryContext(ctx, `SELECT name, report_deadline FROM result`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var deadline float64
			if err := rows.Scan(&name, &deadline); err != nil {
				t.Fatal(err)
			}
			got[name] = deadline
		}
		// 1000 + 300; 2000 + 400
		want := map[string]float64{"sim_1_0": 1300, "sim_1_1": 1300, "b_j0_0": 2400, "b_j0_1": 2400, "b_j3_0": 2400, "b_j3_1": 2400}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("report_deadline (-want +got)\n%s", d)
		}
	})
}
