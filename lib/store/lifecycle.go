package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// The lifecycle after validation (issue 27): BOINC's assimilate_state and
// file_delete_state values.
const (
	AssimilateInit   = 0
	AssimilateDone   = 2
	FileDeleteInit   = 0
	FileDeleteDone   = 2
	maxMessageLength = 254
)

// Outcomes of a workunit handed to the scientist.
const (
	AssimilateSuccess = "success" // it has a canonical result
	AssimilateError   = "error"   // it was given up; Error says why
)

// AssimilateJob is a workunit an assimilator hands over: its canonical result's
// output files, or the reason it was given up.
type AssimilateJob struct {
	WorkunitID int64  `json:"workunit_id"`
	Workunit   string `json:"workunit"`
	App        string `json:"app"`
	Batch      string `json:"batch"` // "" outside locality batches
	Outcome    string `json:"outcome"`
	Error      string `json:"error,omitempty"`
	// Canonical is the canonical result's name ("" when given up); Files its output
	// files as uploaded (Name in the upload tree), by file number.
	Canonical string           `json:"canonical_result,omitempty"`
	Files     []AssimilateFile `json:"files"`
	Errors    int              `json:"-"` // failed hand-overs so far (not in the --to tree: a rerun writes the same)
}

// AssimilateFile is an output file of a canonical result.
type AssimilateFile struct {
	FileNum  int     `json:"file_num"`
	Name     string  `json:"name"`      // in the upload tree
	OpenName string  `json:"open_name"` // what the app called it ("" when unknown)
	NBytes   float64 `json:"nbytes"`
	MD5      string  `json:"md5_cksum"`
}

// ClaimAssimilation claims up to n workunits that wait for assimilation (a canonical
// result or given up, not assimilated, not backing off from a failure at now, not
// claimed by a live lease), with ids above after, in id order, for owner until
// leaseUntil, and returns them. A pass goes on from the last id returned; fewer than
// n means it has seen the whole backlog. Two assimilators at once claim different
// workunits; a killed one's claims lapse at their lease (or ReleaseClaims).
func (s *Store) ClaimAssimilation(ctx context.Context, owner string, after int64, n int, now, leaseUntil float64) ([]AssimilateJob, error) {
	var claimed []int64
	err := s.InTx(ctx, func(tx *Tx) error {
		claimed = nil
		// MariaDB walked the primary key from id>? past every assimilated workunit
		// (issue 33's plan test) once workunit_assimilate_app was there: the hint.
		ids, err := tx.ids(`SELECT id FROM workunit`+tx.s.dialect.assimilateIndex+` WHERE assimilate_ready=1 AND id>? AND assimilate_retry_time<=? AND lifecycle_lease<?
			ORDER BY id LIMIT ?`+tx.ForUpdateSkipLocked(), after, now, now, n)
		if err != nil || len(ids) == 0 {
			return err
		}
		claimed = ids
		return tx.claimIDs(`lifecycle_owner=?, lifecycle_lease=?`, []any{owner, leaseUntil},
			`assimilate_ready=1 AND lifecycle_lease<?`, []any{now}, ids)
	})
	if err != nil || len(claimed) == 0 {
		return nil, err
	}
	// Read after the claim's commit, outside the write lock: what is handed over of a
	// claimed workunit (its canonical result's files, its give-up) no longer changes,
	// and the joins were most of the claim's time under the lock (issue 33).
	return assimilateJobs(func(q string, args ...any) (*sql.Rows, error) { return s.DB.QueryContext(ctx, q, args...) }, claimed)
}

// assimilateJobs reads what the assimilator hands over of workunits ids, in id order.
func assimilateJobs(query func(string, ...any) (*sql.Rows, error), ids []int64) ([]AssimilateJob, error) {
	list, args := inList(ids)
	rows, err := query(`SELECT w.id, w.name, a.name, COALESCE(b.name, ''), w.canonical_resultid, COALESCE(r.name, ''), w.error_mask, w.assimilate_errors
		FROM workunit w JOIN app a ON a.id=w.appid LEFT JOIN batch b ON b.id=w.batch_id AND w.batch_id<>0
		LEFT JOIN result r ON r.id=w.canonical_resultid WHERE w.id IN `+list+` ORDER BY w.id`, args...)
	if err != nil {
		return nil, err
	}
	var jobs []AssimilateJob
	byID := map[int64]int{}
	masks := map[int64]int{}
	canon := map[int64]int64{}
	for rows.Next() {
		var j AssimilateJob
		var canonical int64
		var mask int
		if err := rows.Scan(&j.WorkunitID, &j.Workunit, &j.App, &j.Batch, &canonical, &j.Canonical, &mask, &j.Errors); err != nil {
			rows.Close()
			return nil, err
		}
		j.Files = []AssimilateFile{}
		j.Outcome = AssimilateSuccess
		if canonical == 0 {
			j.Outcome, j.Canonical = AssimilateError, ""
			masks[j.WorkunitID] = mask
		} else {
			canon[canonical] = j.WorkunitID
		}
		byID[j.WorkunitID] = len(jobs)
		jobs = append(jobs, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(canon) > 0 {
		rids := make([]int64, 0, len(canon))
		for r := range canon {
			rids = append(rids, r)
		}
		list, args := inList(rids)
		rows, err := query(`SELECT f.resultid, f.file_num, f.name, COALESCE(o.open_name, ''), f.nbytes, f.md5_cksum
			FROM result_file f JOIN result r ON r.id=f.resultid LEFT JOIN wu_output o ON o.workunitid=r.workunitid AND o.file_num=f.file_num
			WHERE f.resultid IN `+list+` ORDER BY f.resultid, f.file_num`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var rid int64
			var f AssimilateFile
			if err := rows.Scan(&rid, &f.FileNum, &f.Name, &f.OpenName, &f.NBytes, &f.MD5); err != nil {
				rows.Close()
				return nil, err
			}
			j := &jobs[byID[canon[rid]]]
			j.Files = append(j.Files, f)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	if len(masks) > 0 {
		wids := make([]int64, 0, len(masks))
		for w := range masks {
			wids = append(wids, w)
		}
		list, args := inList(wids)
		rows, err := query(`SELECT workunitid, reason, message FROM wu_giveup WHERE workunitid IN `+list+` ORDER BY id`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var wid int64
			var reason, msg string
			if err := rows.Scan(&wid, &reason, &msg); err != nil {
				rows.Close()
				return nil, err
			}
			// The latest give-up says it.
			jobs[byID[wid]].Error = reason + ": " + msg
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		for wid, mask := range masks {
			if j := &jobs[byID[wid]]; j.Error == "" {
				j.Error = ErrorMaskText(mask)
			}
		}
	}
	return jobs, nil
}

// ErrorMaskText names the bits of a workunit's error_mask (BOINC's names).
func ErrorMaskText(mask int) string {
	var out []string
	for _, b := range []struct {
		bit  int
		name string
	}{
		{WUErrorCouldntSendResult, "couldnt_send_result"}, {WUErrorTooManyErrorResults, "too_many_error_results"},
		{WUErrorTooManySuccessResults, "too_many_success_results"}, {WUErrorTooManyTotalResults, "too_many_total_results"},
		{WUErrorCancelled, "cancelled"}, {WUErrorNoCanonicalResult, "no_canonical_result"},
	} {
		if mask&b.bit != 0 {
			out = append(out, b.name)
			mask &^= b.bit
		}
	}
	if mask != 0 || len(out) == 0 {
		out = append(out, fmt.Sprintf("error_mask %d", mask))
	}
	return strings.Join(out, ", ")
}

// AssimilateOutcome is what became of one claimed workunit: handed over (Failed
// false), or not, to be tried again at RetryAt with Message saying why.
type AssimilateOutcome struct {
	WorkunitID int64
	Failed     bool
	RetryAt    float64
	Message    string
}

// FinishAssimilation records what became of workunits owner claimed, in one
// transaction: handed over ones are assimilated at now (exactly once: a workunit
// whose claim another assimilator has taken over since is left to it), failed ones
// count a failure and wait until their RetryAt. It returns how many of each it
// recorded.
func (s *Store) FinishAssimilation(ctx context.Context, owner string, outs []AssimilateOutcome, now float64) (done, failed int, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		done, failed = 0, 0
		var ok []int64
		for _, o := range outs {
			if !o.Failed {
				ok = append(ok, o.WorkunitID)
				continue
			}
			msg := o.Message
			if len(msg) > maxMessageLength {
				msg = msg[:maxMessageLength]
			}
			r, err := tx.exec(`UPDATE workunit SET assimilate_errors=assimilate_errors+1, assimilate_retry_time=?, assimilate_message=?,
				lifecycle_owner='', lifecycle_lease=0 WHERE id=? AND assimilate_state=? AND lifecycle_owner=?`,
				o.RetryAt, msg, o.WorkunitID, AssimilateInit, owner)
			if err != nil {
				return err
			}
			n, err := r.RowsAffected()
			if err != nil {
				return err
			}
			failed += int(n)
		}
		for lo := 0; lo < len(ok); lo += 500 {
			list, args := inList(ok[lo:min(len(ok), lo+500)])
			// By the ids alone (the unary + keeps SQLite off the indexes of the other
			// columns): SQLite walked workunit_file_delete's every unassimilated
			// workunit, a project's whole queue, for each batch (issue 27's benchmark).
			r, err := tx.exec(`UPDATE workunit SET assimilate_state=?, assimilate_time=?, assimilate_message='', lifecycle_owner='', lifecycle_lease=0
				WHERE +assimilate_state=? AND +lifecycle_owner=? AND id IN `+list, append([]any{AssimilateDone, now, AssimilateInit, owner}, args...)...)
			if err != nil {
				return err
			}
			n, err := r.RowsAffected()
			if err != nil {
				return err
			}
			done += int(n)
		}
		return nil
	})
	return done, failed, err
}

// LifecycleOwners lists the owners that hold claims on workunits now, so a job can
// release those of processes that died (ReleaseClaims).
func (s *Store) LifecycleOwners(ctx context.Context) ([]string, error) {
	return s.sortedStrings(ctx, `SELECT DISTINCT lifecycle_owner FROM workunit WHERE lifecycle_owner<>''`)
}

// ReleaseClaims drops every claim owner holds (a process known to be dead), so the
// workunits are claimable at once instead of at their lease's end.
func (s *Store) ReleaseClaims(ctx context.Context, owner string) (int, error) {
	return s.execCount(ctx, `UPDATE workunit SET lifecycle_owner='', lifecycle_lease=0 WHERE lifecycle_owner=?`, owner)
}

// sortedStrings runs a query of one string column and returns its values sorted.
func (s *Store) sortedStrings(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := s.DB.QueryContext(ctx, query, args...)
	out, err := collect(rows, err, func(rows *sql.Rows, o *string) error { return rows.Scan(o) })
	sort.Strings(out)
	return out, err
}

// execCount runs one statement in its own transaction and returns the rows it changed.
func (s *Store) execCount(ctx context.Context, query string, args ...any) (int, error) {
	var n int64
	err := s.InTx(ctx, func(tx *Tx) error {
		r, err := tx.exec(query, args...)
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	return int(n), err
}

// ids runs a query of one id column.
func (t *Tx) ids(query string, args ...any) ([]int64, error) { return idsOf(t.query, query, args...) }

// claimIDs sets set on the workunits ids where where still holds, and fails the
// transaction (InTx retries it) unless it holds for every one: the candidates were
// read under a lock (MySQL's FOR UPDATE SKIP LOCKED; SQLite's one writer), so a
// difference means another claim won a race.
func (t *Tx) claimIDs(set string, setArgs []any, where string, whereArgs []any, ids []int64) error {
	list, idArgs := inList(ids)
	args := append(append(append([]any{}, setArgs...), whereArgs...), idArgs...)
	r, err := t.exec(`UPDATE workunit SET `+set+` WHERE `+where+` AND id IN `+list, args...)
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return err
	}
	if int(n) != len(ids) {
		return fmt.Errorf("%w: %d of %d workunits", errClaimRace, n, len(ids))
	}
	return nil
}

// inList is "(?,?,…)" and the arguments for ids.
func inList(ids []int64) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return "(?" + strings.Repeat(",?", len(ids)-1) + ")", args
}

// LifecycleStatus is the lifecycle's backlog, for bserver status.
type LifecycleStatus struct {
	// AssimilateReady: workunits with a canonical result or given up, not yet
	// handed over; of them, AssimilateFailing have failed at least once (they wait
	// for their backoff; AssimilateFailures counts the failures).
	AssimilateReady    int64 `json:"assimilate_ready"`
	AssimilateFailing  int64 `json:"assimilate_failing"`
	AssimilateFailures int64 `json:"assimilate_failures"`
	Assimilated        int64 `json:"assimilated"`
	// FileDeletePending: assimilated workunits whose files are not deleted yet (some
	// wait for --delay or for results still out); FilesDeleted: workunits whose
	// files are, which wait for purge (some for --older-than); DeletePending: files
	// decided on and not yet gone.
	FileDeletePending int64 `json:"file_delete_pending"`
	FilesDeleted      int64 `json:"files_deleted"`
	DeletePending     int64 `json:"delete_pending"`
	// PurgeBatches: batches a purger claimed and has not finished (PurgeWriting of
	// them are being written into the archive, or were when their purger died; the
	// next purge pass with that archive cuts them back).
	PurgeBatches int64 `json:"purge_batches"`
	PurgeWriting int64 `json:"purge_writing"`
}

// Lifecycle counts the lifecycle's backlog.
func (s *Store) Lifecycle(ctx context.Context) (*LifecycleStatus, error) {
	st := &LifecycleStatus{}
	for _, c := range []struct {
		q string
		n *int64
	}{
		{`SELECT COUNT(*), COALESCE(SUM(CASE WHEN assimilate_errors>0 THEN 1 ELSE 0 END), 0), COALESCE(SUM(assimilate_errors), 0) FROM workunit WHERE assimilate_ready=1`, nil},
		{`SELECT COUNT(*) FROM workunit WHERE assimilate_state=2 AND file_delete_state=0`, &st.FileDeletePending},
		{`SELECT COUNT(*) FROM workunit WHERE assimilate_state=2 AND file_delete_state=2`, &st.FilesDeleted},
		{`SELECT COUNT(*) FROM deleted_file WHERE done=0`, &st.DeletePending},
		{`SELECT COUNT(*) FROM purge_batch`, &st.PurgeBatches},
		{`SELECT COUNT(*) FROM purge_batch WHERE state=1`, &st.PurgeWriting},
	} {
		var err error
		if c.n == nil {
			err = s.DB.QueryRowContext(ctx, c.q).Scan(&st.AssimilateReady, &st.AssimilateFailing, &st.AssimilateFailures)
		} else {
			err = s.DB.QueryRowContext(ctx, c.q).Scan(c.n)
		}
		if err != nil {
			return nil, err
		}
	}
	st.Assimilated = st.FileDeletePending + st.FilesDeleted
	return st, nil
}

// errNoRows tells sql.ErrNoRows.
func errNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
