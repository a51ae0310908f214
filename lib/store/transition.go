package store

import (
	"context"
	"slices"
	"strings"

	"github.com/bkit/bkit/lib/locality"
)

// jobFinished is the SQL condition for a workunit whose job is completed, successfully
// or not: it has a canonical result or an error (set by validation and the retry job),
// or, where no validator runs (or before it has run), none of its results is still
// unsent or in progress and min_quorum of its successes agree as the validator judges
// agreement (lib/retry.Validate: equal output digests, and a success without one
// agrees with every other), so the validator will find a canonical result. Successes
// that disagree are not a completed job: the validator finds no canonical result and
// the retry job adds results, which the front must not have passed (the scheduler
// and the generator look from first_unfinished_job_num on).
// (Most jobs a pass looks at still have a result out, so that test comes first and the
// agreement is rarely counted.)
const jobFinished = `(w.canonical_resultid<>0 OR w.error_mask<>0 OR
	(NOT EXISTS (SELECT 1 FROM result r WHERE r.workunitid=w.id AND r.server_state IN (2, 4))
	AND EXISTS (SELECT 1 FROM result r WHERE r.workunitid=w.id AND r.server_state=5 AND r.outcome=1
		AND (SELECT COUNT(*) FROM result r2 WHERE r2.workunitid=w.id AND r2.server_state=5 AND r2.outcome=1
			AND (r2.output_digest='' OR r2.output_digest=r.output_digest))>=w.min_quorum)))`

// ChangedAt is the transition_time that marks a locality workunit changed for the
// transitioner (0 means nothing new; a clock at 0 still marks).
func ChangedAt(now float64) float64 {
	if now > 0 {
		return now
	}
	return 1
}

// WorkunitsChanged marks workunits for the transitioner: whatever may finish a job or
// make it unfinished again (a report, a canonical result, an error, a result lost or
// withdrawn, a new result) marks its workunit, in the same transaction, or the
// cursor's remaining_credit misses it (its first_unfinished_job_num does not: the
// transitioner tests the jobs at the front whatever their mark).
func (t *Tx) WorkunitsChanged(ids []int64, now float64) error {
	for lo := 0; lo < len(ids); lo += 500 {
		part := ids[lo:min(len(ids), lo+500)]
		args := []any{ChangedAt(now)}
		for _, id := range part {
			args = append(args, id)
		}
		if _, err := t.exec(`UPDATE workunit SET transition_time=? WHERE id IN (?`+strings.Repeat(",?", len(part)-1)+`)`, args...); err != nil {
			return err
		}
	}
	return nil
}

// ResultsChanged marks the workunits of results ids for the transitioner
// (WorkunitsChanged). The workunits are read first: MariaDB plans an UPDATE of
// workunit through a subquery on result (… WHERE id IN (SELECT workunitid FROM result
// …)) as a scan of the whole workunit index (issue 33).
func (t *Tx) ResultsChanged(ids []int64, now float64) error {
	for lo := 0; lo < len(ids); lo += 500 {
		list, args := inList(ids[lo:min(len(ids), lo+500)])
		wus, err := t.ids(`SELECT workunitid FROM result WHERE id IN `+list, args...) // a repeat is harmless in WorkunitsChanged; DISTINCT would sort
		if err != nil {
			return err
		}
		if err := t.WorkunitsChanged(wus, now); err != nil {
			return err
		}
	}
	return nil
}

// ResultsJoinJobs gives the results of workunits ids their workunit's cursor and job
// number (result.cursor_id, job_num: the scheduler's and the generator's index of a
// cursor's unsent results in job order). Whatever adds results to a locality
// workunit calls it in the same transaction (the generator writes them itself), or
// the scheduler never sends those results. The results are named by their workunit
// (the result_wu_state index), each reading its own workunit by key: a condition on
// workunit in a subquery (workunitid IN (SELECT id FROM workunit WHERE cursor_id<>0
// …)) planned as a scan of all of result on MariaDB (issue 33). A result of a
// workunit outside locality batches keeps cursor 0 and job number 0. (The unary plus
// keeps SQLite off the result_cursor index, where cursor 0 is every result outside
// batches: it read them all, 2 of a 3 s pass's CPU seconds at 200,000 workunits.)
func (t *Tx) ResultsJoinJobs(ids []int64) error {
	for lo := 0; lo < len(ids); lo += 500 {
		list, args := inList(ids[lo:min(len(ids), lo+500)])
		if _, err := t.exec(`UPDATE result SET cursor_id=(SELECT w.cursor_id FROM workunit w WHERE w.id=result.workunitid),
			job_num=(SELECT w.job_num FROM workunit w WHERE w.id=result.workunitid)
			WHERE +cursor_id=0 AND workunitid IN `+list, args...); err != nil {
			return err
		}
	}
	return nil
}

// Transition is one pass of seed 004's transitioner over every unfinished cursor of
// the open batches: first_unfinished_job_num moves past finished jobs and
// remaining_credit becomes the estimated credit of the cursor's unfinished jobs
// (locality.TransitionStep), each cursor in its own transaction with its row locked.
// A batch whose cursors are all finished is marked completed. The pass is idempotent,
// so a cron job may run it at any time, twice at once, or be killed mid-way. It
// returns how many cursors changed and how many batches completed.
func (s *Store) Transition(ctx context.Context, now float64) (changed, completed int, err error) {
	return s.TransitionCursors(ctx, now, nil)
}

// transitionJobs reads the workunits a query selects (id, job_num, rsc_fpops_est,
// locality_counted, and jobFinished) as the transitioner sees them.
func (t *Tx) transitionJobs(q string, args ...any) (ids []int64, jobs []locality.Job, err error) {
	rows, err := t.query(`SELECT w.id, w.job_num, w.rsc_fpops_est, w.locality_counted, `+jobFinished+` FROM workunit w `+q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var j locality.Job
		var counted, fin int
		if err := rows.Scan(&id, &j.Num, &j.Credit, &counted, &fin); err != nil {
			return nil, nil, err
		}
		j.Credit *= locality.CreditPerFlop
		j.Finished, j.Counted = fin != 0, counted != 0
		ids = append(ids, id)
		jobs = append(jobs, j)
	}
	return ids, jobs, rows.Err()
}

// TransitionCursors is Transition's pass over the cursors only (all when only is nil):
// a caller that knows which cursors had results reported since its last pass
// (blocality simulate) skips the others, which cannot have changed.
//
// A cursor's step reads only its workunits marked changed (transition_time > 0,
// locked on MySQL, so a report that commits meanwhile marks again after this
// transaction) and the jobs at its front up to the first unfinished one, not every
// generated job: the cushion of unsent jobs made that most of a pass
// (docs/decisions.md).
func (s *Store) TransitionCursors(ctx context.Context, now float64, only map[int64]bool) (changed, completed int, err error) {
	cursors, err := s.openCursors(ctx, false, only)
	if err != nil {
		return 0, 0, err
	}
	batches := map[int64]bool{}
	for _, ref := range cursors {
		batches[ref.batchID] = true
		err := s.InTx(ctx, func(tx *Tx) error {
			c, err := tx.lockCursor(ref.id)
			if err != nil {
				return err
			}
			ids, changedJobs, err := tx.transitionJobs(`WHERE w.cursor_id=? AND w.transition_time>0`+tx.s.dialect.forUpdate, c.ID)
			if err != nil {
				return err
			}
			// The front, a page at a time, up to the first job not finished or not
			// generated; nothing to read when the changed jobs just read say the first
			// one is unfinished (most passes: one replica of it reported).
			var front []locality.Job
			from := c.FirstUnfinishedJobNum
			if slices.ContainsFunc(changedJobs, func(j locality.Job) bool { return j.Num == c.FirstUnfinishedJobNum && !j.Finished }) {
				from = c.LastJobNum + 1
			}
			for page := 8; from <= c.LastJobNum; page = min(4*page, 512) {
				_, jobs, err := tx.transitionJobs(`WHERE w.cursor_id=? AND w.job_num>=? ORDER BY w.job_num LIMIT ?`, c.ID, from, page)
				if err != nil {
					return err
				}
				stop := len(jobs) < page
				for _, j := range jobs {
					if j.Num != from || !j.Finished {
						stop = true
						break
					}
					front = append(front, j)
					from++
				}
				if stop {
					break
				}
			}
			next, remaining, counted := locality.TransitionStep(c.FirstUnfinishedJobNum, c.LastJobNum, c.RemainingCredit, changedJobs, front)
			var now0, now1 []int64
			for i, id := range ids {
				if counted[i] {
					now1 = append(now1, id)
				} else {
					now0 = append(now0, id)
				}
			}
			for flag, part := range [][]int64{now0, now1} {
				for lo := 0; lo < len(part); lo += 500 {
					p := part[lo:min(len(part), lo+500)]
					args := []any{flag}
					for _, id := range p {
						args = append(args, id)
					}
					if _, err := tx.exec(`UPDATE workunit SET transition_time=0, locality_counted=? WHERE id IN (?`+strings.Repeat(",?", len(p)-1)+`)`, args...); err != nil {
						return err
					}
				}
			}
			if next == c.FirstUnfinishedJobNum && remaining == c.RemainingCredit {
				return nil
			}
			changed++
			_, err = tx.exec(`UPDATE locality_cursor SET first_unfinished_job_num=?, remaining_credit=? WHERE id=?`, next, remaining, c.ID)
			return err
		})
		if err != nil {
			return changed, completed, err
		}
	}
	for id := range batches {
		err := s.InTx(ctx, func(tx *Tx) error {
			r, err := tx.exec(`UPDATE batch SET state=?, completion_time=? WHERE id=? AND state<=? AND NOT EXISTS
				(SELECT 1 FROM locality_cursor c WHERE c.batch_id=? AND c.remaining_credit>0)`, BatchCompleted, now, id, BatchInProgress, id)
			if err != nil {
				return err
			}
			n, err := r.RowsAffected()
			completed += int(n)
			return err
		})
		if err != nil {
			return changed, completed, err
		}
	}
	return changed, completed, nil
}
