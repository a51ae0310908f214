package store

import (
	"context"
	"database/sql"
	"fmt"
)

// File deletion (issue 27; BOINC's file_deleter): the store's half, deciding which
// files of assimilated workunits and finished locality batches go and journalling
// them in deleted_file. lib/lifecycle unlinks them.

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
		scanFile := func(dir string) func(*sql.Rows, *file) error {
			return func(rows *sql.Rows, f *file) error {
				f.dir = dir
				return rows.Scan(&f.wu, &f.name, &f.nbytes)
			}
		}
		rows, err := tx.query(`SELECT r.workunitid, f.name, f.nbytes FROM result_file f JOIN result r ON r.id=f.resultid
			WHERE r.workunitid IN `+list+` ORDER BY r.workunitid, f.resultid, f.file_num`, args...)
		files, err := collect(rows, err, scanFile(UploadDirectory))
		if err != nil {
			return err
		}
		rows, err = tx.query(`SELECT workunitid, name, nbytes FROM wu_file WHERE workunitid IN `+list+` ORDER BY workunitid, file_num`, args...)
		read, err := collect(rows, err, scanFile(DownloadDirectory))
		if err != nil {
			return err
		}
		var inputs []file
		seen := map[string]bool{}
		for _, f := range read {
			if !seen[f.name] {
				seen[f.name] = true
				inputs = append(inputs, f)
			}
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
		if len(files) == 0 {
			return nil
		}
		// The journal rows in a few multi-row INSERTs, then read back for their ids:
		// an INSERT a file was a statement a file (100,000 in issue 27's benchmark).
		// The workunits were not file-deleted before this transaction, so every
		// pending row of theirs is one of these.
		if err := tx.insertRows(`INSERT INTO deleted_file (create_time, workunitid, directory, name, nbytes)`, 5, len(files), func(i int) []any {
			f := files[i]
			return []any{now, f.wu, f.dir, f.name, f.nbytes}
		}); err != nil {
			return err
		}
		rows, err = tx.query(`SELECT id, directory, name, nbytes FROM deleted_file WHERE workunitid IN `+list+` AND +done=0 ORDER BY id`, args...)
		d.Files, err = collect(rows, err, scanPendingFile)
		return err
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
			files, err := collect(rows, err, func(rows *sql.Rows, f *PendingFile) error {
				f.Directory = DownloadDirectory
				return rows.Scan(&f.Name, &f.NBytes)
			})
			if err != nil {
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
	return collect(rows, err, scanPendingFile)
}

// scanPendingFile scans a deleted_file row's id, directory, name and nbytes.
func scanPendingFile(rows *sql.Rows, f *PendingFile) error {
	return rows.Scan(&f.ID, &f.Directory, &f.Name, &f.NBytes)
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
