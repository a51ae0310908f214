package store

import (
	"database/sql"
	"errors"
	"strings"
)

// Batch states (BOINC's numbers). The scheduler sends jobs of batches in state Init or
// InProgress.
const (
	BatchInit       = 0
	BatchInProgress = 1
	BatchCompleted  = 2
	BatchAborted    = 3
)

// Cursor is a locality_cursor row: a team of hosts working on a range of a batch's
// jobs (seed 004).
type Cursor struct {
	ID                     int64
	BatchID                int64
	FirstJobNum            int64
	LastJobNum             int64
	ExpavgCredit           float64
	RemainingCredit        float64
	FirstUnfinishedJobNum  int64
	FirstUngeneratedJobNum int64
	NHosts                 int     // team size
	MaxHostCredit          float64 // the fastest member's credit rate
}

// BatchFile is one file of a batch's file sequence.
type BatchFile struct {
	BatchID int64
	FileNum int64
	Name    string
	URL     string
	NBytes  float64
}

// SendableBatch is a batch jobs may be sent from, with what job assignment needs.
type SendableBatch struct {
	ID         int64
	StreamJobs int64 // per-host stream length; 0: none
	Redundancy int   // target_nresults: hosts per stream
}

// SendableBatches returns the batches of the given apps that jobs may be sent from,
// oldest first.
func (t *Tx) SendableBatches(appIDs []int64) ([]SendableBatch, error) {
	if len(appIDs) == 0 {
		return nil, nil
	}
	q := `SELECT id, stream_jobs, target_nresults FROM batch WHERE state<=? AND appid IN (?` + strings.Repeat(",?", len(appIDs)-1) + `) ORDER BY id`
	args := []any{BatchInProgress}
	for _, id := range appIDs {
		args = append(args, id)
	}
	rows, err := t.query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SendableBatch
	for rows.Next() {
		var b SendableBatch
		if err := rows.Scan(&b.ID, &b.StreamJobs, &b.Redundancy); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// LockCursors returns a batch's cursors, locked until the transaction ends (DESIGN.md
// section 5: a transaction that locks the cursor rows synchronises host assignment).
func (t *Tx) LockCursors(batchID int64) ([]Cursor, error) {
	return t.cursors(`SELECT `+cursorColumns+` FROM locality_cursor WHERE batch_id=? ORDER BY id`+t.s.dialect.forUpdate, batchID)
}

// CursorsByEstTimeLeft calls visit with batchID's unfinished cursors in order of
// decreasing est_time_left (ties: lowest id first), until visit returns false or the
// cursors run out. The order comes from an index on the est_time_left column
// (migration 5), so a caller that stops early reads a few rows, not the whole batch.
// The rows are not locked (LockCursorIDs locks those the caller needs, in id order:
// locking them in est_time_left order, which moves, deadlocks concurrent schedulers
// on MySQL). Rows are read a page at a time.
func (t *Tx) CursorsByEstTimeLeft(batchID int64, visit func(Cursor) bool) error {
	q := `SELECT ` + cursorColumns + ` FROM locality_cursor
		WHERE batch_id=? AND est_time_left>0 ORDER BY est_time_left DESC, id LIMIT ? OFFSET ?`
	for offset, page := 0, 8; ; offset, page = offset+page, 4*page {
		cs, err := t.cursors(q, batchID, page, offset)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if !visit(c) {
				return nil
			}
		}
		if len(cs) < page {
			return nil
		}
	}
}

// LockCursorIDs returns the cursors ids, in id order, locked until the transaction
// ends (one order for every transaction that locks several cursors, so concurrent
// schedulers and the locality daemon never deadlock on them).
func (t *Tx) LockCursorIDs(ids []int64) ([]Cursor, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return t.cursors(`SELECT `+cursorColumns+` FROM locality_cursor WHERE id IN (?`+strings.Repeat(",?", len(ids)-1)+`) ORDER BY id`+t.s.dialect.forUpdate, args...)
}

const cursorColumns = `id, batch_id, first_job_num, last_job_num, expavg_credit, remaining_credit,
		first_unfinished_job_num, first_ungenerated_job_num, nhosts, max_host_credit`

func (t *Tx) cursors(q string, args ...any) ([]Cursor, error) {
	rows, err := t.query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Cursor
	for rows.Next() {
		var c Cursor
		if err := rows.Scan(&c.ID, &c.BatchID, &c.FirstJobNum, &c.LastJobNum, &c.ExpavgCredit, &c.RemainingCredit,
			&c.FirstUnfinishedJobNum, &c.FirstUngeneratedJobNum, &c.NHosts, &c.MaxHostCredit); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// HostCursor returns the cursor hostID is on in batchID, or 0 when the host is new to
// the batch.
func (t *Tx) HostCursor(batchID, hostID int64) (int64, error) {
	var id int64
	err := t.queryRow(`SELECT cursor_id FROM batch_host WHERE batch_id=? AND host_id=?`, batchID, hostID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// HostStream returns the stream hostID works on in its cursor of batchID (-1: none).
func (t *Tx) HostStream(batchID, hostID int64) (int64, error) {
	var s int64
	err := t.queryRow(`SELECT stream FROM batch_host WHERE batch_id=? AND host_id=?`, batchID, hostID).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return -1, nil
	}
	return s, err
}

// SetHostStream puts hostID on stream of its cursor of batchID.
func (t *Tx) SetHostStream(batchID, hostID, stream int64) error {
	_, err := t.exec(`UPDATE batch_host SET stream=? WHERE batch_id=? AND host_id=?`, stream, batchID, hostID)
	return err
}

// StreamServers counts the hosts of cursorID's team other than hostID that work on
// stream (their current one) and could take a result of job (they have none of its
// workunit yet). The holders of the job's results are read once (the job's workunit,
// then its few results), not per member through each member's whole result history.
func (t *Tx) StreamServers(cursorID, stream, job, hostID int64) (int, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM batch_host bh WHERE bh.cursor_id=? AND bh.stream=? AND bh.host_id<>?
		AND bh.host_id NOT IN (SELECT r.hostid FROM result r WHERE r.workunitid IN
			(SELECT w.id FROM workunit w WHERE w.cursor_id=? AND w.job_num=?))`,
		cursorID, stream, hostID, cursorID, job).Scan(&n)
	return n, err
}

// FirstTakeableJob returns the lowest job number from fromJob on of cursorID with an
// unsent result hostID may take (none of the workunit's results is on the host yet),
// and false when there is none.
func (t *Tx) FirstTakeableJob(cursorID, fromJob, hostID int64) (int64, bool, error) {
	var j int64
	err := t.queryRow(`SELECT r.job_num FROM result r WHERE r.cursor_id=? AND r.server_state=? AND r.job_num>=?
		AND NOT EXISTS (SELECT 1 FROM result r2 WHERE r2.workunitid=r.workunitid AND r2.hostid=?)
		ORDER BY r.job_num LIMIT 1`, cursorID, ServerStateUnsent, fromJob, hostID).Scan(&j)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return j, err == nil, err
}

// UserCursors returns the cursors of batchID whose teams have a host of userID other
// than hostID (none for user 0, which stands for "no account").
func (t *Tx) UserCursors(batchID, userID, hostID int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if userID == 0 {
		return out, nil
	}
	rows, err := t.query(`SELECT cursor_id FROM batch_host WHERE batch_id=? AND userid=? AND host_id<>?`, batchID, userID, hostID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

// MoveHost puts hostID (of userID, with credit rate credit) on cursor to (from 0: a
// host new to the batch), taking off the old team what the host added to it when it
// joined, and adding the host to the new team's credit, size and fastest member.
func (t *Tx) MoveHost(batchID, hostID, userID, from, to int64, credit float64) error {
	if from == 0 {
		if _, err := t.exec(`INSERT INTO batch_host (batch_id, host_id, cursor_id, userid, credit) VALUES (?, ?, ?, ?, ?)`,
			batchID, hostID, to, userID, credit); err != nil {
			return err
		}
	} else {
		var old float64
		if err := t.queryRow(`SELECT credit FROM batch_host WHERE batch_id=? AND host_id=?`, batchID, hostID).Scan(&old); err != nil {
			return err
		}
		if _, err := t.exec(`UPDATE batch_host SET cursor_id=?, userid=?, credit=?, stream=-1 WHERE batch_id=? AND host_id=?`,
			to, userID, credit, batchID, hostID); err != nil {
			return err
		}
		// The fastest member is not recomputed here: the locality daemon does.
		if _, err := t.exec(`UPDATE locality_cursor SET expavg_credit=expavg_credit-?, nhosts=nhosts-1 WHERE id=?`, old, from); err != nil {
			return err
		}
	}
	_, err := t.exec(`UPDATE locality_cursor SET expavg_credit=expavg_credit+?, nhosts=nhosts+1,
		max_host_credit=CASE WHEN max_host_credit<? THEN ? ELSE max_host_credit END WHERE id=?`, credit, credit, credit, to)
	return err
}

// LocalityCandidate is an unsent result of a cursor, with the input files of its job.
type LocalityCandidate struct {
	Candidate
	FirstFileNum, LastFileNum int64
	BatchID                   int64
}

// UnsentCursorCandidates returns up to limit unsent results of a cursor's jobs
// fromJob..toJob in increasing job number (seed 004: finish old jobs before starting
// new ones), skipping workunits that already have a result on hostID.
// Jobs before the cursor's first_unfinished_job_num are finished: fromJob at least
// that keeps every request from walking the cursor's whole history.
func (t *Tx) UnsentCursorCandidates(cursorID, fromJob, toJob, hostID int64, limit int) ([]LocalityCandidate, error) {
	rows, err := t.query(`SELECT r.id, r.name, r.appid, w.id, w.name, w.rsc_fpops_est, w.rsc_fpops_bound, w.delay_bound, r.dresult,
		w.first_file_num, w.last_file_num, w.batch_id
		FROM result r JOIN workunit w ON w.id=r.workunitid
		WHERE r.cursor_id=? AND r.server_state=? AND r.job_num>=? AND r.job_num<=?
		AND NOT EXISTS (SELECT 1 FROM result r2 WHERE r2.workunitid=r.workunitid AND r2.hostid=?)
		ORDER BY r.job_num, r.id LIMIT ?`+t.s.dialect.skipLocked, cursorID, ServerStateUnsent, fromJob, toJob, hostID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []LocalityCandidate
	for rows.Next() {
		var c LocalityCandidate
		if err := rows.Scan(&c.ResultID, &c.ResultName, &c.AppID, &c.WUID, &c.WUName, &c.FpopsEst, &c.FpopsBound, &c.DelayBound, &c.Dresult,
			&c.FirstFileNum, &c.LastFileNum, &c.BatchID); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// BatchFiles returns files first..last of a batch, in order.
func (t *Tx) BatchFiles(batchID, first, last int64) ([]BatchFile, error) {
	rows, err := t.query(`SELECT batch_id, file_num, name, url, nbytes FROM batch_file WHERE batch_id=? AND file_num>=? AND file_num<=?
		ORDER BY file_num`, batchID, first, last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BatchFile
	for rows.Next() {
		var f BatchFile
		if err := rows.Scan(&f.BatchID, &f.FileNum, &f.Name, &f.URL, &f.NBytes); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// StickyFileUnneeded reports whether the host should delete the sticky file name (seed
// 004, "Deleting files"): it is a batch file that no unfinished job of the host's
// cursor uses. The jobs before the cursor's first_unfinished_job_num are completed;
// from there on a job is unfinished when its workunit is not finished as the
// transitioner judges it (jobFinished), or not generated yet (the batch's job list
// says which files it will use). Files bkit does not know, and files of batches the host has
// no cursor in, are left alone.
func (t *Tx) StickyFileUnneeded(hostID int64, name string) (bool, error) {
	var batchID, fileNum int64
	err := t.queryRow(`SELECT batch_id, file_num FROM batch_file WHERE name=?`, name).Scan(&batchID, &fileNum)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var cursor, firstUnfinished, firstUngenerated, last int64
	err = t.queryRow(`SELECT c.id, c.first_unfinished_job_num, c.first_ungenerated_job_num, c.last_job_num
		FROM batch_host bh JOIN locality_cursor c ON c.id=bh.cursor_id WHERE bh.batch_id=? AND bh.host_id=?`, batchID, hostID).
		Scan(&cursor, &firstUnfinished, &firstUngenerated, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var used bool
	err = t.queryRow(`SELECT EXISTS (SELECT 1 FROM workunit w WHERE w.cursor_id=? AND w.job_num>=? AND w.job_num<=?
			AND w.first_file_num<=? AND w.last_file_num>=? AND NOT `+jobFinished+`)
		OR EXISTS (SELECT 1 FROM batch_job j WHERE j.batch_id=? AND j.job_num>=? AND j.job_num<=?
			AND j.first_file_num<=? AND j.last_file_num>=?)`,
		cursor, firstUnfinished, last, fileNum, fileNum,
		batchID, max(firstUnfinished, firstUngenerated), last, fileNum, fileNum).Scan(&used)
	return !used, err
}
