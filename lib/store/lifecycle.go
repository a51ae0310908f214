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
	var jobs []AssimilateJob
	err := s.InTx(ctx, func(tx *Tx) error {
		jobs = nil
		// MariaDB walked the primary key from id>? past every assimilated workunit
		// (issue 33's plan test) once workunit_assimilate_app was there: the hint.
		ids, err := tx.ids(`SELECT id FROM workunit`+tx.s.dialect.assimilateIndex+` WHERE assimilate_ready=1 AND id>? AND assimilate_retry_time<=? AND lifecycle_lease<?
			ORDER BY id LIMIT ?`+tx.ForUpdateSkipLocked(), after, now, now, n)
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := tx.claimIDs(`lifecycle_owner=?, lifecycle_lease=?`, []any{owner, leaseUntil},
			`assimilate_ready=1 AND lifecycle_lease<?`, []any{now}, ids); err != nil {
			return err
		}
		jobs, err = tx.assimilateJobs(ids)
		return err
	})
	return jobs, err
}

// assimilateJobs reads what the assimilator hands over of workunits ids, in id order.
func (t *Tx) assimilateJobs(ids []int64) ([]AssimilateJob, error) {
	list, args := inList(ids)
	rows, err := t.query(`SELECT w.id, w.name, a.name, COALESCE(b.name, ''), w.canonical_resultid, COALESCE(r.name, ''), w.error_mask, w.assimilate_errors
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
		rows, err := t.query(`SELECT f.resultid, f.file_num, f.name, COALESCE(o.open_name, ''), f.nbytes, f.md5_cksum
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
		rows, err := t.query(`SELECT workunitid, reason, message FROM wu_giveup WHERE workunitid IN `+list+` ORDER BY id`, args...)
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
			r, err := tx.exec(`UPDATE workunit SET assimilate_state=?, assimilate_time=?, assimilate_message='', lifecycle_owner='', lifecycle_lease=0
				WHERE assimilate_state=? AND lifecycle_owner=? AND id IN `+list, append([]any{AssimilateDone, now, AssimilateInit, owner}, args...)...)
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
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	sort.Strings(out)
	return out, rows.Err()
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

// PendingFile is a file the file deleter decided to delete (a deleted_file row): in
// the upload tree (Directory "upload") or the download directory ("download").
type PendingFile struct {
	ID        int64
	Directory string
	Name      string
	NBytes    float64
}

// Directories of PendingFile.
const (
	UploadDirectory   = "upload"
	DownloadDirectory = "download"
)

// FileDeletionDecision is what one DecideFileDeletion transaction did.
type FileDeletionDecision struct {
	Last      int64 // the last workunit id looked at: the next call goes on from there
	Scanned   int   // workunits looked at (fewer than n: the backlog is seen)
	Workunits int   // of them, marked file-deleted
	Files     []PendingFile
}

// DecideFileDeletion looks at up to n assimilated workunits whose files are not
// deleted, with ids above after, and for each assimilated at or before before
// (now − --delay), not waiting for validation and with no result unsent or in
// progress, marks it file-deleted at now and records (deleted_file, done=0) what is
// to be deleted: every output file its results uploaded, and each input file no other
// workunit whose files are not deleted reads. The caller deletes the files and then
// calls FilesDeleted; one killed in between leaves the rows for PendingFiles.
func (s *Store) DecideFileDeletion(ctx context.Context, after int64, n int, before, now float64) (*FileDeletionDecision, error) {
	d := &FileDeletionDecision{}
	err := s.InTx(ctx, func(tx *Tx) error {
		*d = FileDeletionDecision{Last: after}
		// Locked and waited for, not skipped: a pass goes through the ids once, so a
		// row another transaction held a moment (a deleter's look at the readers of
		// a shared input locks them) would be passed over by both. Waiting, the
		// second deleter reads the first one's decision and moves on.
		window, err := tx.ids(`SELECT id FROM workunit WHERE assimilate_state=? AND file_delete_state=? AND id>? ORDER BY id LIMIT ?`+tx.ForUpdate(),
			AssimilateDone, FileDeleteInit, after, n)
		if err != nil || len(window) == 0 {
			return err
		}
		d.Scanned, d.Last = len(window), window[len(window)-1]
		list, args := inList(window)
		ready, err := tx.ids(`SELECT id FROM workunit WHERE id IN `+list+` AND assimilate_time<=? AND need_validate=0
			AND NOT EXISTS (SELECT 1 FROM result r WHERE r.workunitid=workunit.id AND r.server_state IN (?, ?)) ORDER BY id`,
			append(args, before, ServerStateUnsent, ServerStateInProgress)...)
		if err != nil || len(ready) == 0 {
			return err
		}
		if err := tx.claimIDs(`file_delete_state=?, file_delete_time=?`, []any{FileDeleteDone, now},
			`assimilate_state=? AND file_delete_state=?`, []any{AssimilateDone, FileDeleteInit}, ready); err != nil {
			return err
		}
		d.Workunits = len(ready)
		list, args = inList(ready)
		type file struct {
			wu     int64
			dir    string
			name   string
			nbytes float64
		}
		var files []file
		rows, err := tx.query(`SELECT r.workunitid, f.name, f.nbytes FROM result_file f JOIN result r ON r.id=f.resultid
			WHERE r.workunitid IN `+list+` ORDER BY r.workunitid, f.resultid, f.file_num`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			f := file{dir: UploadDirectory}
			if err := rows.Scan(&f.wu, &f.name, &f.nbytes); err != nil {
				rows.Close()
				return err
			}
			files = append(files, f)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.query(`SELECT workunitid, name, nbytes FROM wu_file WHERE workunitid IN `+list+` ORDER BY workunitid, file_num`, args...)
		if err != nil {
			return err
		}
		var inputs []file
		seen := map[string]bool{}
		for rows.Next() {
			f := file{dir: DownloadDirectory}
			if err := rows.Scan(&f.wu, &f.name, &f.nbytes); err != nil {
				rows.Close()
				return err
			}
			if !seen[f.name] {
				seen[f.name] = true
				inputs = append(inputs, f)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, f := range inputs {
			// Another workunit whose files stay still reads it. Newest first: the
			// newest readers are the likeliest to still need it, so the look stops at
			// once. Locked, so two deleters deciding for two readers of one file at
			// once see each other's decision (MySQL; SQLite has one writer).
			var other int64
			err := tx.queryRow(`SELECT w.id FROM wu_file f JOIN workunit w ON w.id=f.workunitid
				WHERE f.name=? AND w.file_delete_state<>? ORDER BY f.workunitid DESC LIMIT 1`+tx.ForUpdate(), f.name, FileDeleteDone).Scan(&other)
			switch {
			case err == nil:
				continue
			case !errNoRows(err):
				return err
			}
			files = append(files, f)
		}
		for _, f := range files {
			r, err := tx.exec(`INSERT INTO deleted_file (create_time, workunitid, directory, name, nbytes) VALUES (?, ?, ?, ?, ?)`,
				now, f.wu, f.dir, f.name, f.nbytes)
			if err != nil {
				return err
			}
			id, err := r.LastInsertId()
			if err != nil {
				return err
			}
			d.Files = append(d.Files, PendingFile{ID: id, Directory: f.dir, Name: f.name, NBytes: f.nbytes})
		}
		return nil
	})
	return d, err
}

// DecideBatchFileDeletion records the deletion of the files of every locality batch
// that no cursor needs any more (seed 004: a file stays while an unfinished job of
// its cursor uses it): all its cursors' jobs finished, and every workunit of it
// file-deleted. It returns the files to delete.
func (s *Store) DecideBatchFileDeletion(ctx context.Context, now float64) ([]PendingFile, error) {
	var out []PendingFile
	err := s.InTx(ctx, func(tx *Tx) error {
		out = nil
		batches, err := tx.ids(`SELECT b.id FROM batch b WHERE b.file_delete_state=? AND EXISTS (SELECT 1 FROM locality_cursor c WHERE c.batch_id=b.id)
			AND NOT EXISTS (SELECT 1 FROM locality_cursor c WHERE c.batch_id=b.id AND c.first_unfinished_job_num<=c.last_job_num)
			ORDER BY b.id`+tx.ForUpdateSkipLocked(), FileDeleteInit)
		if err != nil {
			return err
		}
		for _, b := range batches {
			// Its workunits are looked up by its cursors' ids, constants the planner
			// estimates on the index: joined to locality_cursor, the lookup was
			// planned from the average workunits per cursor_id, which the workunits
			// outside batches (cursor 0) make most of the table (issue 33).
			cursors, err := tx.ids(`SELECT id FROM locality_cursor WHERE batch_id=?`, b)
			if err != nil {
				return err
			}
			list, args := inList(cursors)
			busy, err := tx.ids(`SELECT id FROM workunit WHERE cursor_id IN `+list+` AND file_delete_state<>? LIMIT 1`, append(args, FileDeleteDone)...)
			if err != nil {
				return err
			}
			if len(busy) > 0 {
				continue // a workunit of it still has its files
			}
			r, err := tx.exec(`UPDATE batch SET file_delete_state=? WHERE id=? AND file_delete_state=?`, FileDeleteDone, b, FileDeleteInit)
			if err != nil {
				return err
			}
			if k, err := r.RowsAffected(); err != nil || k != 1 {
				return fmt.Errorf("%w: batch %d (%v)", errClaimRace, b, err)
			}
			rows, err := tx.query(`SELECT name, nbytes FROM batch_file WHERE batch_id=? ORDER BY file_num`, b)
			if err != nil {
				return err
			}
			var files []PendingFile
			for rows.Next() {
				f := PendingFile{Directory: DownloadDirectory}
				if err := rows.Scan(&f.Name, &f.NBytes); err != nil {
					rows.Close()
					return err
				}
				files = append(files, f)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, f := range files {
				r, err := tx.exec(`INSERT INTO deleted_file (create_time, batch_id, directory, name, nbytes) VALUES (?, ?, ?, ?, ?)`,
					now, b, f.Directory, f.Name, f.NBytes)
				if err != nil {
					return err
				}
				if f.ID, err = r.LastInsertId(); err != nil {
					return err
				}
				out = append(out, f)
			}
		}
		return nil
	})
	return out, err
}

// PendingFiles returns up to n files decided on and not yet deleted, with ids above
// after: a killed deleter's, or another's at work now (deleting twice is harmless).
func (s *Store) PendingFiles(ctx context.Context, after int64, n int) ([]PendingFile, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT id, directory, name, nbytes FROM deleted_file WHERE done=0 AND id>? ORDER BY id LIMIT ?`, after, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PendingFile
	for rows.Next() {
		var f PendingFile
		if err := rows.Scan(&f.ID, &f.Directory, &f.Name, &f.NBytes); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// FilesDeleted marks files gone; messages says what was odd about some (already
// gone, refused) by id.
func (s *Store) FilesDeleted(ctx context.Context, ids []int64, messages map[int64]string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		for lo := 0; lo < len(ids); lo += 500 {
			list, args := inList(ids[lo:min(len(ids), lo+500)])
			if _, err := tx.exec(`UPDATE deleted_file SET done=1 WHERE id IN `+list, args...); err != nil {
				return err
			}
		}
		for id, m := range messages {
			if len(m) > maxMessageLength {
				m = m[:maxMessageLength]
			}
			if _, err := tx.exec(`UPDATE deleted_file SET message=? WHERE id=?`, m, id); err != nil {
				return err
			}
		}
		return nil
	})
}
