package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/bkit/bkit/lib/locality"
)

// Generate is one pass of seed 004's work generator: for each cursor of each open
// batch, in its own transaction with the cursor row locked, it counts the cursor's
// unsent jobs and creates workunits (and their results) for the next jobs from
// first_ungenerated_job_num until cushion jobs are unsent, then advances
// first_ungenerated_job_num. Workunit names are BATCH_jJOBNUM, unique, so even a lost
// lock could not make a job twice. It returns how many workunits it made.
func (s *Store) Generate(ctx context.Context, cushion int, now float64) (int, error) {
	return s.GenerateCursors(ctx, cushion, now, nil)
}

// GenerateCursors is Generate's pass over the cursors only (all when only is nil): a
// caller that knows which cursors had jobs sent since its last pass (blocality
// simulate) skips the others, which have nothing to top up.
func (s *Store) GenerateCursors(ctx context.Context, cushion int, now float64, only map[int64]bool) (int, error) {
	// A cursor whose jobs are all generated has nothing to do (counting its unsent
	// jobs every pass was most of the generator's time once a batch was out).
	cursors, err := s.openCursors(ctx, true, only)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, ref := range cursors {
		made := 0
		err := s.InTx(ctx, func(tx *Tx) error {
			made = 0
			c, err := tx.lockCursor(ref.id)
			if err != nil || c.FirstUngeneratedJobNum > c.LastJobNum {
				return err
			}
			var unsent int
			// Jobs with an unsent result: one index range over the unsent results.
			if err := tx.queryRow(`SELECT COUNT(DISTINCT job_num) FROM result WHERE cursor_id=? AND server_state=? AND job_num>=?`,
				c.ID, ServerStateUnsent, c.FirstUnfinishedJobNum).Scan(&unsent); err != nil {
				return err
			}
			n := locality.GenerateCount(unsent, cushion, c.FirstUngeneratedJobNum, c.LastJobNum)
			if n == 0 {
				return nil
			}
			var b struct {
				appid                                        int64
				delay, dwu, dresult                          float64
				quorum, target, maxErr, maxTotal, maxSuccess int
			}
			// Seed 003, as for create_work's: a workunit's first retry check is its
			// creation + the app's DWU, a result's deadline its creation + Dresult.
			if err := tx.queryRow(`SELECT b.appid, b.delay_bound, b.min_quorum, b.target_nresults, b.max_error_results, b.max_total_results,
				b.max_success_results, a.retry_dwu, a.retry_dresult FROM batch b JOIN app a ON a.id=b.appid WHERE b.id=?`, c.BatchID).Scan(
				&b.appid, &b.delay, &b.quorum, &b.target, &b.maxErr, &b.maxTotal, &b.maxSuccess, &b.dwu, &b.dresult); err != nil {
				return err
			}
			rows, err := tx.query(`SELECT job_num, first_file_num, last_file_num, rsc_fpops_est FROM batch_job
				WHERE batch_id=? AND job_num>=? AND job_num<? ORDER BY job_num`, c.BatchID, c.FirstUngeneratedJobNum, c.FirstUngeneratedJobNum+int64(n))
			if err != nil {
				return err
			}
			var jobs []BatchJob
			for rows.Next() {
				var j BatchJob
				if err := rows.Scan(&j.JobNum, &j.FirstFileNum, &j.LastFileNum, &j.FpopsEst); err != nil {
					rows.Close()
					return err
				}
				jobs = append(jobs, j)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if len(jobs) == 0 {
				return nil
			}
			// transition_time 0: a fresh job is unfinished and its credit is in
			// remaining_credit, so the transitioner has nothing to look at yet.
			// Multi-row INSERTs: the first pass of a big batch makes tens of thousands
			// of workunits, and one statement per row was most of it.
			names := make([]string, len(jobs))
			for i, j := range jobs {
				names[i] = ref.batchName + "_j" + strconv.FormatInt(j.JobNum, 10)
			}
			err = tx.insertRows(`INSERT INTO workunit (create_time, appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound,
				min_quorum, target_nresults, max_error_results, max_total_results, max_success_results, transition_time,
				retry_check_time, batch_id, cursor_id, job_num, first_file_num, last_file_num)`, 18, len(jobs), func(i int) []any {
				j := jobs[i]
				return []any{now, b.appid, names[i], j.FpopsEst, 10 * j.FpopsEst, b.delay, b.quorum, b.target, b.maxErr, b.maxTotal, b.maxSuccess,
					0, now + b.dwu, c.BatchID, c.ID, j.JobNum, j.FirstFileNum, j.LastFileNum}
			})
			if err != nil {
				if isUniqueViolation(err) {
					return fmt.Errorf("a workunit of %s..%s generated twice: %w", names[0], names[len(names)-1], ErrExists)
				}
				return err
			}
			// The new workunits' ids, by job (the cursor's lock keeps every other
			// generator out of this range).
			wuids := make(map[int64]int64, len(jobs))
			rows, err = tx.query(`SELECT id, job_num FROM workunit WHERE cursor_id=? AND job_num>=? AND job_num<=?`,
				c.ID, jobs[0].JobNum, jobs[len(jobs)-1].JobNum)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id, num int64
				if err := rows.Scan(&id, &num); err != nil {
					rows.Close()
					return err
				}
				wuids[num] = id
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for i, j := range jobs {
				if wuids[j.JobNum] == 0 {
					return fmt.Errorf("workunit %s: not found after its INSERT", names[i])
				}
			}
			// Results in the order one INSERT per row gave them: by job, then replica.
			err = tx.insertRows(`INSERT INTO result (create_time, workunitid, appid, name, server_state, cursor_id, job_num, report_deadline)`, 8,
				len(jobs)*b.target, func(i int) []any {
					w, k := i/b.target, i%b.target
					return []any{now, wuids[jobs[w].JobNum], b.appid, names[w] + "_" + strconv.Itoa(k), ServerStateUnsent, c.ID, jobs[w].JobNum,
						now + b.dresult}
				})
			if err != nil {
				return err
			}
			made = len(jobs)
			_, err = tx.exec(`UPDATE locality_cursor SET first_ungenerated_job_num=? WHERE id=?`, c.FirstUngeneratedJobNum+int64(len(jobs)), c.ID)
			return err
		})
		if err != nil {
			return total, err
		}
		total += made
	}
	return total, nil
}
