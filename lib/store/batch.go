package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/locality"
)

// BatchSpec is a locality batch as blocality batch create makes it (seed 004): the
// file sequence, the jobs (each a contiguous run of files), the cursors (contiguous
// job ranges covering every job once) and the redundancy of every job's workunit.
// The caller has validated it; CreateBatch checks only what the database knows.
type BatchSpec struct {
	Name              string
	App               string
	Files             []BatchFile // FileNum is the index; BatchID is ignored
	Jobs              []BatchJob  // JobNum is the index
	Cursors           []locality.Range
	DelayBound        float64
	MinQuorum         int
	TargetNResults    int
	MaxErrorResults   int
	MaxTotalResults   int
	MaxSuccessResults int
	// StreamJobs is the length of the per-host streams cursors are cut into (0: none,
	// seed 004's plain job order; docs/decisions.md).
	StreamJobs int64
}

// BatchJob is one job of a batch: the files it uses and its estimated FLOPs.
type BatchJob struct {
	JobNum                    int64
	FirstFileNum, LastFileNum int64
	FpopsEst                  float64
}

// insertRows inserts rows in statements of up to 200 rows: a batch of a million jobs
// is written in seconds, not minutes.
func (t *Tx) insertRows(head string, ncols int, n int, row func(i int) []any) error {
	const chunk = 200
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", ncols), ",") + ")"
	for lo := 0; lo < n; lo += chunk {
		hi := min(n, lo+chunk)
		args := make([]any, 0, (hi-lo)*ncols)
		for i := lo; i < hi; i++ {
			args = append(args, row(i)...)
		}
		q := head + " VALUES " + strings.TrimSuffix(strings.Repeat(one+",", hi-lo), ",")
		if _, err := t.tx.Exec(q, args...); err != nil {
			return err
		}
	}
	return nil
}

// CreateBatch writes a batch, its files, jobs and cursors in one transaction, so a
// failure writes nothing. No workunit is made: the work generator makes them.
func (s *Store) CreateBatch(ctx context.Context, spec BatchSpec, now float64) (int64, error) {
	var id int64
	err := s.InTx(ctx, func(tx *Tx) error {
		appid, err := tx.appID(spec.App)
		if err != nil {
			return err
		}
		var loc int
		if err := tx.queryRow(`SELECT locality_scheduling FROM app WHERE id=?`, appid).Scan(&loc); err != nil {
			return err
		}
		if loc == 0 {
			return fmt.Errorf("app %q does not use locality scheduling (bserver app add --locality): %w", spec.App, ErrNotFound)
		}
		var n int
		if err := tx.queryRow(`SELECT COUNT(*) FROM batch WHERE name=?`, spec.Name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("batch %q: %w", spec.Name, ErrExists)
		}
		r, err := tx.exec(`INSERT INTO batch (create_time, appid, name, state, njobs, nfiles, delay_bound, min_quorum, target_nresults,
			max_error_results, max_total_results, max_success_results, stream_jobs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			now, appid, spec.Name, BatchInProgress, len(spec.Jobs), len(spec.Files), spec.DelayBound, spec.MinQuorum, spec.TargetNResults,
			spec.MaxErrorResults, spec.MaxTotalResults, spec.MaxSuccessResults, max(spec.StreamJobs, 0))
		if err != nil {
			return err
		}
		if id, err = r.LastInsertId(); err != nil {
			return err
		}
		err = tx.insertRows(`INSERT INTO batch_file (batch_id, file_num, name, url, nbytes)`, 5, len(spec.Files), func(i int) []any {
			f := spec.Files[i]
			return []any{id, i, f.Name, f.URL, f.NBytes}
		})
		if err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("a file name of batch %q is another batch's: %w", spec.Name, ErrExists)
			}
			return err
		}
		err = tx.insertRows(`INSERT INTO batch_job (batch_id, job_num, first_file_num, last_file_num, rsc_fpops_est)`, 5, len(spec.Jobs), func(i int) []any {
			j := spec.Jobs[i]
			return []any{id, i, j.FirstFileNum, j.LastFileNum, j.FpopsEst}
		})
		if err != nil {
			return err
		}
		return tx.insertRows(`INSERT INTO locality_cursor (batch_id, first_job_num, last_job_num, remaining_credit,
			first_unfinished_job_num, first_ungenerated_job_num)`, 6, len(spec.Cursors), func(i int) []any {
			c := spec.Cursors[i]
			credit := 0.0
			for j := c.First; j <= c.Last; j++ {
				credit += spec.Jobs[j].FpopsEst * locality.CreditPerFlop
			}
			return []any{id, c.First, c.Last, credit, c.First, c.First}
		})
	})
	return id, err
}

// ActiveHosts counts the hosts that contacted the scheduler at or after since.
func (s *Store) ActiveHosts(ctx context.Context, since float64) (int, error) {
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM host WHERE rpc_time>=?`, since).Scan(&n)
	return n, err
}

// CursorStatus is one cursor as blocality batch status shows it.
type CursorStatus struct {
	ID                     int64   `json:"id"`
	NHosts                 int64   `json:"team_size"`
	FirstJobNum            int64   `json:"first_job_num"`
	LastJobNum             int64   `json:"last_job_num"`
	FirstUnfinishedJobNum  int64   `json:"first_unfinished_job_num"`
	FirstUngeneratedJobNum int64   `json:"first_ungenerated_job_num"`
	RemainingCredit        float64 `json:"remaining_credit"`
	ExpavgCredit           float64 `json:"expavg_credit"`
	MaxHostCredit          float64 `json:"max_host_credit"`
	// EstTimeLeft is in days; -1 stands for infinite (a team with no credit), which
	// JSON cannot hold.
	EstTimeLeft float64 `json:"est_time_left_days"`
}

// BatchStatus is a batch and its cursors.
type BatchStatus struct {
	ID             int64          `json:"id"`
	Name           string         `json:"name"`
	App            string         `json:"app"`
	State          string         `json:"state"`
	NJobs          int64          `json:"njobs"`
	NFiles         int64          `json:"nfiles"`
	CompletionTime float64        `json:"completion_time,omitempty"`
	Cursors        []CursorStatus `json:"cursors"`
}

// BatchStateName names batch states for people.
var BatchStateName = map[int]string{BatchInit: "init", BatchInProgress: "in_progress", BatchCompleted: "completed", BatchAborted: "aborted"}

// BatchStatuses returns the batches named (all when names is empty), with their
// cursors; ErrNotFound names a batch that does not exist.
func (s *Store) BatchStatuses(ctx context.Context, names []string) ([]BatchStatus, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT b.id, b.name, a.name, b.state, b.njobs, b.nfiles, b.completion_time
		FROM batch b JOIN app a ON a.id=b.appid ORDER BY b.id`)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []BatchStatus
	for rows.Next() {
		var b BatchStatus
		var state int
		if err := rows.Scan(&b.ID, &b.Name, &b.App, &state, &b.NJobs, &b.NFiles, &b.CompletionTime); err != nil {
			rows.Close()
			return nil, err
		}
		b.State = nameOr(BatchStateName, state)
		if len(want) == 0 || want[b.Name] {
			delete(want, b.Name)
			out = append(out, b)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if want[n] {
			return nil, fmt.Errorf("batch %q: %w", n, ErrNotFound)
		}
	}
	for i := range out {
		b := &out[i]
		b.Cursors = []CursorStatus{}
		rows, err := s.DB.QueryContext(ctx, `SELECT id, nhosts, first_job_num, last_job_num, first_unfinished_job_num,
			first_ungenerated_job_num, remaining_credit, expavg_credit, max_host_credit FROM locality_cursor WHERE batch_id=? ORDER BY id`, b.ID)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c CursorStatus
			if err := rows.Scan(&c.ID, &c.NHosts, &c.FirstJobNum, &c.LastJobNum, &c.FirstUnfinishedJobNum, &c.FirstUngeneratedJobNum,
				&c.RemainingCredit, &c.ExpavgCredit, &c.MaxHostCredit); err != nil {
				rows.Close()
				return nil, err
			}
			c.EstTimeLeft = locality.EstTimeLeft(locality.Cursor{RemainingCredit: c.RemainingCredit, ExpavgCredit: c.ExpavgCredit})
			if c.EstTimeLeft > 1e300 {
				c.EstTimeLeft = -1
			}
			b.Cursors = append(b.Cursors, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// cursorRef is a cursor of a batch the daemons work on.
type cursorRef struct {
	id, batchID int64
	batchName   string
}

// openCursors lists the cursors of batches jobs may still be sent from that have
// unfinished jobs (remaining_credit > 0) and, when ungenerated is set, jobs still to
// generate, among only when only is not nil.
func (s *Store) openCursors(ctx context.Context, ungenerated bool, only map[int64]bool) ([]cursorRef, error) {
	q := `SELECT c.id, b.id, b.name FROM locality_cursor c JOIN batch b ON b.id=c.batch_id WHERE b.state<=? AND c.remaining_credit>0`
	if ungenerated {
		q += ` AND c.first_ungenerated_job_num<=c.last_job_num`
	}
	rows, err := s.DB.QueryContext(ctx, q+` ORDER BY c.id`, BatchInProgress)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []cursorRef
	for rows.Next() {
		var c cursorRef
		if err := rows.Scan(&c.id, &c.batchID, &c.batchName); err != nil {
			return nil, err
		}
		if only == nil || only[c.id] {
			out = append(out, c)
		}
	}
	return out, rows.Err()
}

// lockCursor reads a cursor and locks it until the transaction ends.
func (t *Tx) lockCursor(id int64) (Cursor, error) {
	var c Cursor
	err := t.queryRow(`SELECT id, batch_id, first_job_num, last_job_num, expavg_credit, remaining_credit,
		first_unfinished_job_num, first_ungenerated_job_num, nhosts, max_host_credit FROM locality_cursor WHERE id=?`+t.s.dialect.forUpdate, id).
		Scan(&c.ID, &c.BatchID, &c.FirstJobNum, &c.LastJobNum, &c.ExpavgCredit, &c.RemainingCredit,
			&c.FirstUnfinishedJobNum, &c.FirstUngeneratedJobNum, &c.NHosts, &c.MaxHostCredit)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("cursor %d: %w", id, ErrNotFound)
	}
	return c, err
}

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
				delay                                        float64
				quorum, target, maxErr, maxTotal, maxSuccess int
			}
			if err := tx.queryRow(`SELECT appid, delay_bound, min_quorum, target_nresults, max_error_results, max_total_results,
				max_success_results FROM batch WHERE id=?`, c.BatchID).Scan(&b.appid, &b.delay, &b.quorum, &b.target, &b.maxErr, &b.maxTotal, &b.maxSuccess); err != nil {
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
					0, now + b.delay, c.BatchID, c.ID, j.JobNum, j.FirstFileNum, j.LastFileNum}
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
			err = tx.insertRows(`INSERT INTO result (create_time, workunitid, appid, name, server_state, cursor_id, job_num)`, 7,
				len(jobs)*b.target, func(i int) []any {
					w, k := i/b.target, i%b.target
					return []any{now, wuids[jobs[w].JobNum], b.appid, names[w] + "_" + strconv.Itoa(k), ServerStateUnsent, c.ID, jobs[w].JobNum}
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

// jobFinished is the SQL condition for a workunit whose job is completed, successfully
// or not: it has a canonical result or an error (set by validation and the retry job),
// or, where no validator runs, min_quorum of its results succeeded and none is still
// unsent or in progress.
// (Most jobs a pass looks at still have a result out, so that test comes first and the
// count is rarely made.)
const jobFinished = `(w.canonical_resultid<>0 OR w.error_mask<>0 OR
	(NOT EXISTS (SELECT 1 FROM result r WHERE r.workunitid=w.id AND r.server_state IN (2, 4))
	AND (SELECT COUNT(*) FROM result r WHERE r.workunitid=w.id AND r.server_state=5 AND r.outcome=1)>=w.min_quorum))`

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
// (WorkunitsChanged).
func (t *Tx) ResultsChanged(ids []int64, now float64) error {
	for lo := 0; lo < len(ids); lo += 500 {
		part := ids[lo:min(len(ids), lo+500)]
		args := []any{ChangedAt(now)}
		for _, id := range part {
			args = append(args, id)
		}
		if _, err := t.exec(`UPDATE workunit SET transition_time=? WHERE id IN (SELECT workunitid FROM result WHERE id IN (?`+
			strings.Repeat(",?", len(part)-1)+`))`, args...); err != nil {
			return err
		}
	}
	return nil
}

// ResultsJoinJobs gives the results of workunits ids their workunit's cursor and job
// number (result.cursor_id, job_num: the scheduler's and the generator's index of a
// cursor's unsent results in job order). Whatever adds results to a locality
// workunit calls it in the same transaction (the generator writes them itself), or
// the scheduler never sends those results.
func (t *Tx) ResultsJoinJobs(ids []int64) error {
	for lo := 0; lo < len(ids); lo += 500 {
		part := ids[lo:min(len(ids), lo+500)]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		if _, err := t.exec(`UPDATE result SET cursor_id=(SELECT w.cursor_id FROM workunit w WHERE w.id=result.workunitid),
			job_num=(SELECT w.job_num FROM workunit w WHERE w.id=result.workunitid)
			WHERE cursor_id=0 AND workunitid IN (SELECT id FROM workunit WHERE cursor_id<>0 AND id IN (?`+strings.Repeat(",?", len(part)-1)+`))`,
			args...); err != nil {
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

// Credit is one pass of seed 004's locality daemon over the open batches, each batch
// in one transaction with its cursor rows locked: hosts silent since before
// now−timeout leave their teams (an empty team's cursor waits, with infinite
// est_time_left, for the next host), and each cursor's expavg_credit, team size and
// fastest member are recomputed from its members' current rates (locality.HostRate).
// It returns how many hosts left teams.
func (s *Store) Credit(ctx context.Context, timeout, now float64) (left int, err error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT id FROM batch WHERE state<=? ORDER BY id`, BatchInProgress)
	if err != nil {
		return 0, err
	}
	var batches []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		batches = append(batches, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, batch := range batches {
		n := 0
		err := s.InTx(ctx, func(tx *Tx) error {
			cursors, err := tx.LockCursors(batch)
			if err != nil {
				return err
			}
			r, err := tx.exec(`DELETE FROM batch_host WHERE batch_id=? AND host_id IN (SELECT id FROM host WHERE rpc_time<?)`, batch, now-timeout)
			if err != nil {
				return err
			}
			gone, err := r.RowsAffected()
			if err != nil {
				return err
			}
			n = int(gone)
			type member struct {
				host   int64
				cursor int64
				rate   float64
				stored float64 // batch_host.credit
			}
			rows, err := tx.query(`SELECT bh.host_id, bh.cursor_id, bh.credit, h.expavg_credit, h.p_fpops, h.p_ncpus, h.on_frac, h.active_frac
				FROM batch_host bh JOIN host h ON h.id=bh.host_id WHERE bh.batch_id=?`, batch)
			if err != nil {
				return err
			}
			var members []member
			for rows.Next() {
				var m member
				var expavg, fpops, on, active float64
				var ncpus int
				if err := rows.Scan(&m.host, &m.cursor, &m.stored, &expavg, &fpops, &ncpus, &on, &active); err != nil {
					rows.Close()
					return err
				}
				m.rate = locality.HostRate(expavg, fpops, ncpus, on, active)
				members = append(members, m)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			// Only rows whose values change are written: most members' rates and most
			// teams are the same from one pass to the next.
			rates := map[int64][]float64{}
			for _, m := range members {
				rates[m.cursor] = append(rates[m.cursor], m.rate)
				if m.rate == m.stored {
					continue
				}
				if _, err := tx.exec(`UPDATE batch_host SET credit=? WHERE batch_id=? AND host_id=?`, m.rate, batch, m.host); err != nil {
					return err
				}
			}
			for _, c := range cursors {
				sum, fastest := locality.TeamCredit(rates[c.ID])
				if sum == c.ExpavgCredit && len(rates[c.ID]) == c.NHosts && fastest == c.MaxHostCredit {
					continue
				}
				if _, err := tx.exec(`UPDATE locality_cursor SET expavg_credit=?, nhosts=?, max_host_credit=? WHERE id=?`,
					sum, len(rates[c.ID]), fastest, c.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return left, err
		}
		left += n
	}
	return left, nil
}
