package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/bkit/bkit/lib/store"
)

// TestStickyFileUnneeded: a cursor with jobs 0 (files 0–1, finished) and 1 (files 1–2,
// unfinished), and jobs still to generate.
func TestStickyFileUnneeded(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.AddApp(ctx, "loc", true, 1); err != nil {
			t.Fatal(err)
		}
		exec := func(stmts ...string) {
			t.Helper()
			err := s.InTx(ctx, func(tx *store.Tx) error {
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
		exec(`INSERT INTO host (id, authenticator) VALUES (7, 'k')`,
			`INSERT INTO batch (id, appid, name, state) VALUES (1, 1, 'b', 1)`,
			`INSERT INTO locality_cursor (id, batch_id, first_job_num, last_job_num, remaining_credit, first_ungenerated_job_num) VALUES (1, 1, 0, 9, 1, 2)`,
			`INSERT INTO batch_host (batch_id, host_id, cursor_id) VALUES (1, 7, 1)`,
			`INSERT INTO batch_file (batch_id, file_num, name) VALUES (1, 0, 'f0'), (1, 1, 'f1'), (1, 2, 'f2'), (1, 3, 'f3')`,
			`INSERT INTO workunit (appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound, batch_id, cursor_id, job_num, first_file_num, last_file_num, canonical_resultid)
				VALUES (1, 'j0', 1, 1, 1, 1, 1, 0, 0, 1, 99), (1, 'j1', 1, 1, 1, 1, 1, 1, 1, 2, 0)`)
		check := func(want map[string]bool) {
			t.Helper()
			err := s.InTx(ctx, func(tx *store.Tx) error {
				for name, w := range want {
					got, err := tx.StickyFileUnneeded(7, name)
					if err != nil {
						return err
					}
					if got != w {
						t.Errorf("StickyFileUnneeded(%s) = %v, want %v", name, got, w)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// f0: behind every unfinished job; f1, f2: used by job 1; f3: ahead, jobs to come
		// may use it; unknown files are never deleted.
		check(map[string]bool{"f0": true, "f1": false, "f2": false, "f3": false, "nope": false})
		// Job 1 finishes and jobs remain to be generated: nothing is known to be unneeded
		// past the cursor's progress.
		exec(`UPDATE workunit SET canonical_resultid=98 WHERE name='j1'`)
		check(map[string]bool{"f0": false, "f2": false})
		// Every job generated and finished: all files go.
		exec(`UPDATE locality_cursor SET first_ungenerated_job_num=10`)
		check(map[string]bool{"f0": true, "f3": true})
		// Another host (no cursor in the batch) is told nothing.
		exec(`INSERT INTO host (id, authenticator) VALUES (8, 'k8')`)
		err := s.InTx(ctx, func(tx *store.Tx) error {
			got, err := tx.StickyFileUnneeded(8, "f0")
			if got || err != nil {
				t.Errorf("host without a cursor: %v, %v", got, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
