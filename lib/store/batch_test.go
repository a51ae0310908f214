package store_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/store"
)

// testBatch is 4 files, 6 jobs (job j uses files j/2..j/2+1) in cursors 0–2 and 3–5,
// each job's workunit with two results and a quorum of two.
func testBatch(name string) store.BatchSpec {
	spec := store.BatchSpec{Name: name, App: "loc", DelayBound: 1000, MinQuorum: 2, TargetNResults: 2,
		MaxErrorResults: 3, MaxTotalResults: 6, MaxSuccessResults: 4, Cursors: []locality.Range{{First: 0, Last: 2}, {First: 3, Last: 5}}}
	for f := 0; f < 4; f++ {
		spec.Files = append(spec.Files, store.BatchFile{Name: fmt.Sprintf("%s_f%d", name, f), URL: "http://f/", NBytes: 1e6})
	}
	for j := int64(0); j < 6; j++ {
		spec.Jobs = append(spec.Jobs, store.BatchJob{FirstFileNum: j / 2, LastFileNum: j/2 + 1, FpopsEst: 1e12 * float64(j+1)})
	}
	return spec
}

func execAll(t *testing.T, s *store.Store, stmts ...string) {
	t.Helper()
	err := s.InTx(context.Background(), func(tx *store.Tx) error {
		for _, q := range stmts {
			if _, err := tx.Exec(q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func cursors(t *testing.T, s *store.Store, name string) []store.CursorStatus {
	t.Helper()
	bs, err := s.BatchStatuses(context.Background(), []string{name})
	if err != nil {
		t.Fatal(err)
	}
	return bs[0].Cursors
}

func TestBatchLifecycle(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.AddApp(ctx, "loc", true, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddApp(ctx, "plain", false, 1); err != nil {
			t.Fatal(err)
		}
		bad := testBatch("b")
		bad.App = "plain"
		if _, err := s.CreateBatch(ctx, bad, 1); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("batch of a non-locality app: %v", err)
		}
		if _, err := s.CreateBatch(ctx, testBatch("b"), 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateBatch(ctx, testBatch("b"), 1); !errors.Is(err, store.ErrExists) {
			t.Fatalf("second batch b: %v", err)
		}
		// A batch whose file names clash with b's writes nothing.
		clash := testBatch("c")
		clash.Files[3].Name = "b_f0"
		if _, err := s.CreateBatch(ctx, clash, 1); !errors.Is(err, store.ErrExists) {
			t.Fatalf("clashing file: %v", err)
		}
		if all, err := s.BatchStatuses(ctx, nil); err != nil || len(all) != 1 {
			t.Fatalf("batches after refusals: %v, %v", all, err)
		}
		if _, err := s.BatchStatuses(ctx, []string{"nosuch"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("status of an unknown batch: %v", err)
		}
		cs := cursors(t, s, "b")
		credit := func(jobs ...int) float64 {
			sum := 0.0
			for _, j := range jobs {
				sum += 1e12 * float64(j+1) * locality.CreditPerFlop
			}
			return sum
		}
		if len(cs) != 2 || math.Abs(cs[0].RemainingCredit-credit(0, 1, 2)) > 1e-9 || cs[1].FirstUnfinishedJobNum != 3 {
			t.Fatalf("cursors %+v", cs)
		}

		// Generator: a cushion of 2 unsent jobs per cursor, twice is once.
		for range 2 {
			if _, err := s.Generate(ctx, 2, 10); err != nil {
				t.Fatal(err)
			}
		}
		var wus []string
		rows, err := s.DB.Query(`SELECT name FROM workunit ORDER BY cursor_id, job_num`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n string
			rows.Scan(&n)
			wus = append(wus, n)
		}
		rows.Close()
		if fmt.Sprint(wus) != "[b_j0 b_j1 b_j3 b_j4]" {
			t.Fatalf("generated %v", wus)
		}
		// One job of cursor 1 sent: one unsent job left, so one more is generated.
		execAll(t, s, `UPDATE result SET server_state=4, hostid=1 WHERE name IN ('b_j0_0', 'b_j0_1')`)
		if n, err := s.Generate(ctx, 2, 20); err != nil || n != 1 {
			t.Fatalf("generate after sending: %d, %v", n, err)
		}
		if cs := cursors(t, s, "b"); cs[0].FirstUngeneratedJobNum != 3 || cs[1].FirstUngeneratedJobNum != 5 {
			t.Fatalf("cursors after generating %+v", cs)
		}

		// Transitioner: job 1 finished (canonical result) but job 0 in progress: nothing
		// moves, but job 1's credit is no longer remaining.
		execAll(t, s, `UPDATE workunit SET canonical_resultid=1, transition_time=30 WHERE name='b_j1'`) // marked, as the validator does
		if _, _, err := s.Transition(ctx, 30); err != nil {
			t.Fatal(err)
		}
		if cs := cursors(t, s, "b"); cs[0].FirstUnfinishedJobNum != 0 || math.Abs(cs[0].RemainingCredit-credit(0, 2)) > 1e-9 {
			t.Fatalf("after job 1: %+v", cs[0])
		}
		// Job 0's two results succeed (no validator: quorum of successes): past 0 and 1.
		execAll(t, s, `UPDATE result SET server_state=5, outcome=1 WHERE name IN ('b_j0_0', 'b_j0_1')`)
		if _, _, err := s.Transition(ctx, 40); err != nil {
			t.Fatal(err)
		}
		if cs := cursors(t, s, "b"); cs[0].FirstUnfinishedJobNum != 2 || math.Abs(cs[0].RemainingCredit-credit(2)) > 1e-9 {
			t.Fatalf("after job 0: %+v", cs[0])
		}
		// Every job fails or finishes: cursors finish and the batch completes.
		if _, err := s.Generate(ctx, 10, 50); err != nil {
			t.Fatal(err)
		}
		execAll(t, s, `UPDATE workunit SET error_mask=2`)
		if _, done, err := s.Transition(ctx, 60); err != nil || done != 1 {
			t.Fatalf("transition: %d batches completed, %v", done, err)
		}
		bs, _ := s.BatchStatuses(ctx, nil)
		if bs[0].State != "completed" || bs[0].CompletionTime != 60 || bs[0].Cursors[1].RemainingCredit != 0 || bs[0].Cursors[1].FirstUnfinishedJobNum != 6 {
			t.Fatalf("completed batch %+v", bs[0])
		}
		if n, err := s.Generate(ctx, 10, 70); err != nil || n != 0 {
			t.Fatalf("generate on a completed batch: %d, %v", n, err)
		}
	})
}

// TestCreditDaemon: the team's credit is recomputed from its members; a silent host
// leaves its team and its cursor, left empty, waits with no credit.
func TestCreditDaemon(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.AddApp(ctx, "loc", true, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateBatch(ctx, testBatch("b"), 1); err != nil {
			t.Fatal(err)
		}
		execAll(t, s,
			`INSERT INTO host (id, authenticator, rpc_time, expavg_credit, p_fpops, p_ncpus) VALUES (1, 'a', 1000, 50, 1e9, 1), (2, 'b', 1000, 0, 2e9, 2), (3, 'c', 100, 70, 1e9, 1)`,
			`INSERT INTO batch_host (batch_id, host_id, cursor_id, credit) VALUES (1, 1, 1, 1), (1, 2, 1, 1), (1, 3, 2, 1)`,
			`UPDATE locality_cursor SET expavg_credit=3, nhosts=2`)
		left, err := s.Credit(ctx, 500, 1000)
		if err != nil || left != 1 {
			t.Fatalf("credit: %d left, %v", left, err)
		}
		cs := cursors(t, s, "b")
		// Host 2 has no credit yet: 2 GFLOPS × 2 CPUs is 800 credits a day.
		if math.Abs(cs[0].ExpavgCredit-850) > 1e-6 || cs[0].NHosts != 2 || math.Abs(cs[0].MaxHostCredit-800) > 1e-6 {
			t.Errorf("team 1: %+v", cs[0])
		}
		if cs[1].ExpavgCredit != 0 || cs[1].NHosts != 0 || cs[1].EstTimeLeft != -1 {
			t.Errorf("team 2 after its host left: %+v", cs[1])
		}
		// Running it again changes nothing.
		if left, err := s.Credit(ctx, 500, 1000); err != nil || left != 0 {
			t.Fatalf("second pass: %d, %v", left, err)
		}
	})
}

// TestTransitionDisagreement: a job is completed only when a quorum of its successes
// agree (as the validator judges them). Two successes that disagree are not a
// completed job: the validator finds no canonical result and the retry job adds
// results, which the scheduler must still send, so first_unfinished_job_num ("all
// jobs before this have been completed") must not pass the job.
func TestTransitionDisagreement(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.AddApp(ctx, "loc", true, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateBatch(ctx, testBatch("b"), 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Generate(ctx, 2, 10); err != nil {
			t.Fatal(err)
		}
		// Job 0 (quorum 2): two successes with different output digests, none left out.
		execAll(t, s, `UPDATE result SET server_state=5, outcome=1, hostid=1, output_digest='a' WHERE name='b_j0_0'`,
			`UPDATE result SET server_state=5, outcome=1, hostid=2, output_digest='b' WHERE name='b_j0_1'`,
			`UPDATE workunit SET transition_time=20 WHERE name='b_j0'`)
		if _, _, err := s.Transition(ctx, 20); err != nil {
			t.Fatal(err)
		}
		// Cursor 1's jobs 0, 1, 2 have 1, 2, 3 × 1e12 FLOPs: (1+2+3)e12 × 200/(86400e9) credits.
		all := 6e12 * 200 / (86400 * 1e9)
		if cs := cursors(t, s, "b"); cs[0].FirstUnfinishedJobNum != 0 || math.Abs(cs[0].RemainingCredit-all) > 1e-9 {
			t.Fatalf("disagreeing successes: first unfinished %d remaining %g, want 0 %g", cs[0].FirstUnfinishedJobNum, cs[0].RemainingCredit, all)
		}
		// A third success agrees with the first: a quorum of two, the job is completed.
		execAll(t, s, `INSERT INTO result (workunitid, appid, name, server_state, outcome, hostid, output_digest, cursor_id, job_num)
			SELECT id, appid, 'b_j0_2', 5, 1, 3, 'a', cursor_id, job_num FROM workunit WHERE name='b_j0'`,
			`UPDATE workunit SET transition_time=30 WHERE name='b_j0'`)
		if _, _, err := s.Transition(ctx, 30); err != nil {
			t.Fatal(err)
		}
		if cs := cursors(t, s, "b"); cs[0].FirstUnfinishedJobNum != 1 || math.Abs(cs[0].RemainingCredit-5e12*200/(86400*1e9)) > 1e-9 {
			t.Fatalf("agreeing quorum: first unfinished %d remaining %g, want 1 %g", cs[0].FirstUnfinishedJobNum, cs[0].RemainingCredit, 5e12*200/(86400*1e9))
		}
	})
}
