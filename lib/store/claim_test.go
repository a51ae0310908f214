package store_test

import (
	"context"
	"testing"

	"github.com/bkit/bkit/lib/store"
	"github.com/google/go-cmp/cmp"
)

// TestClaimResultsAllOrNone: a page of results is claimed in one UPDATE, all of them
// or none; a result among them that another host holds fails the transaction (InTx
// runs it again, then gives up), and the others stay unsent.
func TestClaimResultsAllOrNone(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		appID, avID := setupWork(t, s, 3, 1)
		a := &store.Host{Authenticator: store.NewAuthenticator(), PNCPUs: 1}
		b := &store.Host{Authenticator: store.NewAuthenticator(), PNCPUs: 1}
		var ids []int64
		err := s.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.CreateHost(a, 200); err != nil {
				return err
			}
			if err := tx.CreateHost(b, 200); err != nil {
				return err
			}
			cands, err := tx.UnsentCandidates([]int64{appID}, a.ID, 0, 10)
			if err != nil || len(cands) != 3 {
				t.Fatalf("candidates = %v, %v; want 3", cands, err)
			}
			ids = nil
			for _, c := range cands {
				ids = append(ids, c.ResultID)
			}
			return tx.ClaimResults(ids[:1], a.ID, avID, 200, 300)
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.InTx(ctx, func(tx *store.Tx) error { return tx.ClaimResults(ids, b.ID, avID, 210, 310) })
		if err == nil {
			t.Fatal("claiming a result another host holds succeeded")
		}
		err = s.InTx(ctx, func(tx *store.Tx) error { return tx.ClaimResults(ids[1:], b.ID, avID, 220, 320) })
		if err != nil {
			t.Fatal(err)
		}
		rows, err := s.Results(ctx)
		if err != nil {
			t.Fatal(err)
		}
		type claim struct {
			Host     int64
			State    int
			Sent     float64
			Deadline float64
		}
		var got []claim
		for _, r := range rows {
			got = append(got, claim{r.HostID, r.ServerState, r.SentTime, r.ReportDeadline})
		}
		want := []claim{{a.ID, store.ServerStateInProgress, 200, 300}, {b.ID, store.ServerStateInProgress, 220, 320},
			{b.ID, store.ServerStateInProgress, 220, 320}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("results (-want +got)\n%s", d)
		}
	})
}

// TestRecordReportsOneRequest: a request's reports recorded together get each the
// status RecordReport gives it alone, in order, a name reported twice in one request
// included.
func TestRecordReportsOneRequest(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		appID, avID := setupWork(t, s, 2, 2)
		h := &store.Host{Authenticator: store.NewAuthenticator(), PNCPUs: 2}
		var cands []store.Candidate
		err := s.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.CreateHost(h, 200); err != nil {
				return err
			}
			var err error
			if cands, err = tx.UnsentCandidates([]int64{appID}, h.ID, 0, 10); err != nil {
				return err
			}
			for _, c := range cands {
				if c.WUName == "sim_1" && c.ResultName == "sim_1_0" || c.WUName == "sim_2" && c.ResultName == "sim_2_0" {
					if err := tx.ClaimResults([]int64{c.ResultID}, h.ID, avID, 200, 300); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []store.ReportStatus
		err = s.InTx(ctx, func(tx *store.Tx) error {
			var err error
			got, err = tx.RecordReports(h.ID, []store.Report{
				{Name: "sim_1_0", Success: true, CPUTime: 5}, {Name: "sim_2_0", Success: false}, {Name: "sim_1_0", Success: true},
				{Name: "sim_1_1"}, {Name: "nope"}}, 400)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.ReportStatus{store.ReportRecorded, store.ReportRecorded, store.ReportDuplicate, store.ReportNotYours, store.ReportUnknown}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("statuses (-want +got)\n%s", d)
		}
		rows, err := s.Results(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]store.ResultRow{}
		for _, r := range rows {
			byName[r.Name] = r
		}
		if r := byName["sim_1_0"]; r.Outcome != store.OutcomeSuccess || r.CPUTime != 5 || r.ReceivedTime != 400 {
			t.Errorf("sim_1_0 = %+v", r)
		}
		if r := byName["sim_2_0"]; r.Outcome != store.OutcomeClientError || r.ServerState != store.ServerStateOver {
			t.Errorf("sim_2_0 = %+v", r)
		}
	})
}
