package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/bkit/bkit/lib/store"
)

// TestStickyFileUnneeded is seed 004's "Deleting files": a host's sticky file is to be
// deleted when no unfinished job of its cursor uses it. Files f0..f9; job k uses
// files k and k+1 (job 9: f9); cursor 1 has jobs 0-4 (files 0-5), cursor 2 jobs 5-9;
// host 7 is on cursor 1, whose jobs 0 and 1 are generated (quorum 2). A job not yet
// generated is unfinished; a generated one is finished as the transitioner says (a
// canonical result, an error, or a quorum of agreeing successes with none out).
func TestStickyFileUnneeded(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.AddApp(ctx, "loc", true, 1); err != nil {
			t.Fatal(err)
		}
		stmts := []string{`INSERT INTO host (id, authenticator) VALUES (7, 'k'), (8, 'k8')`,
			`INSERT INTO batch (id, appid, name, state) VALUES (1, 1, 'b', 1)`,
			`INSERT INTO locality_cursor (id, batch_id, first_job_num, last_job_num, remaining_credit, first_unfinished_job_num, first_ungenerated_job_num)
				VALUES (1, 1, 0, 4, 1, 0, 2), (2, 1, 5, 9, 1, 5, 5)`,
			`INSERT INTO batch_host (batch_id, host_id, cursor_id) VALUES (1, 7, 1)`,
			`INSERT INTO workunit (id, appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound, min_quorum, batch_id, cursor_id, job_num, first_file_num, last_file_num, canonical_resultid)
				VALUES (10, 1, 'j0', 1, 1, 1, 2, 1, 1, 0, 0, 1, 99), (11, 1, 'j1', 1, 1, 1, 2, 1, 1, 1, 1, 2, 0)`,
			`INSERT INTO result (id, workunitid, appid, name, server_state, hostid) VALUES (1, 11, 1, 'j1_0', 4, 7), (2, 11, 1, 'j1_1', 4, 9)`}
		for k := 0; k < 10; k++ {
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO batch_file (batch_id, file_num, name) VALUES (1, %d, 'f%d')`, k, k),
				fmt.Sprintf(`INSERT INTO batch_job (batch_id, job_num, first_file_num, last_file_num, rsc_fpops_est) VALUES (1, %d, %d, %d, 1)`, k, k, min(k+1, 9)))
		}
		execAll(t, s, stmts...)
		check := func(step string, host int64, want map[string]bool) {
			t.Helper()
			err := s.InTx(ctx, func(tx *store.Tx) error {
				for name, w := range want {
					got, err := tx.StickyFileUnneeded(host, name)
					if err != nil {
						return err
					}
					if got != w {
						t.Errorf("%s: StickyFileUnneeded(%d, %s) = %v, want %v", step, host, name, got, w)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// f0: job 0 only, finished. f1: job 1, in progress. f2: job 1, and job 2 (not
		// generated). f3: jobs 2 and 3, not generated. f5: job 4 of this cursor. f6, f9:
		// jobs of cursor 2 only, which is not the host's. Unknown files stay.
		check("start", 7, map[string]bool{"f0": true, "f1": false, "f2": false, "f3": false, "f5": false, "f6": true, "f9": true, "nope": false})
		// Job 1's two results succeed but disagree: not finished, f1 stays.
		execAll(t, s, `UPDATE result SET server_state=5, outcome=1, output_digest='a' WHERE id=1`,
			`UPDATE result SET server_state=5, outcome=1, output_digest='b' WHERE id=2`)
		check("disagreeing successes", 7, map[string]bool{"f1": false})
		// They agree (no validator has run yet): job 1 is finished, f1 goes; f2 stays
		// for job 2, still to be generated.
		execAll(t, s, `UPDATE result SET output_digest='a' WHERE id=2`)
		check("quorum of agreeing successes", 7, map[string]bool{"f0": true, "f1": true, "f2": false, "f3": false})
		// The transitioner passes jobs 0 and 1; every generated job is finished and jobs
		// 2-4 remain to be generated: files behind them go.
		execAll(t, s, `UPDATE workunit SET canonical_resultid=1 WHERE id=11`, `UPDATE locality_cursor SET first_unfinished_job_num=2 WHERE id=1`)
		check("nothing unfinished generated", 7, map[string]bool{"f0": true, "f1": true, "f2": false, "f5": false})
		// The cursor's jobs all done: every file of the batch goes, f5 too (job 5 is
		// cursor 2's).
		execAll(t, s, `UPDATE locality_cursor SET first_unfinished_job_num=5, first_ungenerated_job_num=5, remaining_credit=0 WHERE id=1`)
		check("cursor finished", 7, map[string]bool{"f2": true, "f3": true, "f5": true})
		// A host with no cursor in the batch is told nothing.
		check("no cursor", 8, map[string]bool{"f0": false, "f9": false})
	})
}
