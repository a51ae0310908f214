package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	return t.insertRowsN(head, ncols, n, 200, row)
}

// insertRowsN is insertRows with chunk rows a statement.
func (t *Tx) insertRowsN(head string, ncols, n, chunk int, row func(i int) []any) error {
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", ncols), ",") + ")"
	for lo := 0; lo < n; lo += chunk {
		hi := min(n, lo+chunk)
		args := make([]any, 0, (hi-lo)*ncols)
		for i := lo; i < hi; i++ {
			args = append(args, row(i)...)
		}
		q := head + " VALUES " + strings.TrimSuffix(strings.Repeat(one+",", hi-lo), ",")
		t.s.traced(q, args)
		if _, err := t.tx.ExecContext(t.ctx, q, args...); err != nil {
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
