package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Purge (issue 27; BOINC's db_purge) moves workunits that are assimilated and whose
// files are deleted, with their results and the rows that hang off them, out of the
// database into archive files. The store's half: claiming a batch (purge_batch),
// reading its rows as JSON lines, recording that its archive files are being
// written, and deleting the rows once they are. lib/lifecycle writes the files.

// ErrPurgeLost is a batch that is no longer the caller's: another purger took it
// over after its lease ended, or cut it back (ResetPurgeBatch).
var ErrPurgeLost = errors.New("store: the purge batch is no longer this purger's")

// ErrPurgeChanged is a batch whose rows changed between their reading and their
// deletion (a late report of one of its results): the archive does not hold them as
// they are, so they are not deleted; the batch is written again.
var ErrPurgeChanged = errors.New("store: the purge batch's rows changed while they were archived")

// Purge batch states.
const (
	PurgeClaimed = 0
	PurgeWriting = 1
)

// PurgeTables are the tables a batch archives, in the order they are read: each
// workunit, its results and what hangs off them.
var PurgeTables = []string{"workunit", "result", "result_file", "result_stderr", "wu_file", "wu_output", "wu_giveup", "deleted_file"}

// PurgeScan is what one ClaimPurge transaction did.
type PurgeScan struct {
	Batches []int64       // the batches claimed, in order; none when no workunit looked at was ready
	Last    PurgeKey      // the last workunit looked at: the next call goes on from there
	Scanned int           // workunits looked at (fewer than n: the backlog is seen)
	Held    time.Duration // the claiming transaction's time from BEGIN to the end of COMMIT
}

// PurgeKey is a place in a purge pass's walk: the workunits whose files were deleted
// before before, in (file_delete_time, id) order.
type PurgeKey struct {
	Time float64
	ID   int64
}

// ClaimPurge looks at up to n unclaimed file-deleted workunits past after in the
// walk, files deleted before before, and claims for owner until leaseUntil those that
// are ready to purge, as new batches of at most per workunits each (in id order):
// files deleted before before (now − --older-than), none waiting for validation or for
// a deletion to be carried out, and, in a locality batch, behind its cursor's first
// unfinished job with nothing new for the transitioner (which reads the jobs from the
// front on). Two purgers at once claim different workunits. One transaction claims
// several batches: a claim costs a few microseconds a workunit, a batch's deletion
// (FinishPurge) ten times as much, and on SQLite each is sized to a few milliseconds
// of the write lock (lifecycle's purger).
func (s *Store) ClaimPurge(ctx context.Context, owner string, after PurgeKey, n, per int, before, now, leaseUntil float64) (PurgeScan, error) {
	p := PurgeScan{Last: after}
	per = max(per, 1)
	// The window and what of it is ready are read outside any write transaction:
	// most windows of a pass hold only workunits too young to purge, and a write
	// transaction per window queued behind the scheduler's (SQLite's one writer) for
	// nothing. The claim reads the ready ones again, locked.
	read := func(q string, args ...any) (*sql.Rows, error) {
		s.traced(q, args) // the plan tests check these too
		return s.DB.QueryContext(ctx, q, args...)
	}
	// Only those old enough, in the order of workunit_purge_age: young ones, a
	// project's recent history, are not read at all.
	rows, err := read(`SELECT id, file_delete_time FROM workunit WHERE file_delete_state=? AND purge_batch=0
		AND file_delete_time>=? AND file_delete_time<? AND (file_delete_time>? OR id>?) ORDER BY file_delete_time, id LIMIT ?`,
		FileDeleteDone, after.Time, before, after.Time, after.ID, n)
	if err != nil {
		return p, err
	}
	var window []int64
	for rows.Next() {
		if err := rows.Scan(&p.Last.ID, &p.Last.Time); err != nil {
			rows.Close()
			return p, err
		}
		window = append(window, p.Last.ID)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(window) == 0 {
		return p, err
	}
	p.Scanned = len(window)
	ready, err := purgeReady(read, window, before)
	if err != nil || len(ready) == 0 {
		return p, err
	}
	var locked time.Time
	err = s.purgeTx(ctx, func(tx *Tx, _ bool) error {
		locked = time.Now()
		p.Batches = nil
		ready, err := purgeReady(tx.query, ready, before, tx.ForUpdate())
		if err != nil || len(ready) == 0 {
			return err
		}
		for lo := 0; lo < len(ready); lo += per {
			r, err := tx.exec(`INSERT INTO purge_batch (create_time, owner, lease, state, archive, files) VALUES (?, ?, ?, ?, '', '')`,
				now, owner, leaseUntil, PurgeClaimed)
			if err != nil {
				return err
			}
			id, err := r.LastInsertId()
			if err != nil {
				return err
			}
			p.Batches = append(p.Batches, id)
			// By the ids alone (see purgeReady).
			if err := tx.claimIDs(`purge_batch=?`, []any{id}, `+file_delete_state=? AND +purge_batch=0`, []any{FileDeleteDone}, ready[lo:min(len(ready), lo+per)]); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && len(p.Batches) > 0 {
		p.Held = time.Since(locked)
	}
	return p, err
}

// purgeReady returns those of the workunits ids that are ready to purge (ClaimPurge),
// in id order; suffix follows the query (a lock). The workunits are read by their ids
// alone: the unary + keeps SQLite off workunit_purge_age, whose range (every
// unclaimed workunit old enough to purge: the whole backlog) it preferred to the id
// list and walked twice per batch (issue 27's benchmark: most of a purge pass).
func purgeReady(query func(string, ...any) (*sql.Rows, error), ids []int64, before float64, suffix ...string) ([]int64, error) {
	list, args := inList(ids)
	return idsOf(query, `SELECT w.id FROM workunit w WHERE w.id IN `+list+` AND +w.file_delete_state=? AND +w.purge_batch=0 AND +w.file_delete_time<? AND +w.assimilate_state=? AND +w.need_validate=0
		AND (+w.cursor_id=0 OR (w.transition_time=0 AND w.job_num<COALESCE((SELECT c.first_unfinished_job_num FROM locality_cursor c WHERE c.id=w.cursor_id), 0)))
		AND NOT EXISTS (SELECT 1 FROM deleted_file d WHERE d.workunitid=w.id AND d.done=0) ORDER BY w.id`+strings.Join(suffix, ""),
		append(args, FileDeleteDone, before, AssimilateDone)...)
}

// idsOf runs a query of one id column.
func idsOf(query func(string, ...any) (*sql.Rows, error), q string, args ...any) ([]int64, error) {
	rows, err := query(q, args...)
	return collect(rows, err, func(rows *sql.Rows, id *int64) error { return rows.Scan(id) })
}

// TakeOverPurge claims for owner until leaseUntil one batch that another purger
// claimed and left (its lease ended before now, or ReleasePurgeOwner released it),
// and returns its id, or 0 when there is none.
func (s *Store) TakeOverPurge(ctx context.Context, owner string, now, leaseUntil float64) (int64, error) {
	var id int64
	err := s.purgeTx(ctx, func(tx *Tx, _ bool) error {
		id = 0
		ids, err := tx.ids(`SELECT id FROM purge_batch WHERE state=? AND lease<? ORDER BY id LIMIT 1`+tx.ForUpdateSkipLocked(), PurgeClaimed, now)
		if err != nil || len(ids) == 0 {
			return err
		}
		r, err := tx.exec(`UPDATE purge_batch SET owner=?, lease=? WHERE id=? AND state=? AND lease<?`, owner, leaseUntil, ids[0], PurgeClaimed, now)
		if err != nil {
			return err
		}
		if k, err := r.RowsAffected(); err != nil || k != 1 {
			return fmt.Errorf("%w: purge batch %d (%v)", errClaimRace, ids[0], err)
		}
		id = ids[0]
		return nil
	})
	return id, err
}

// PurgeOwners lists the owners of claimed batches, so a purger can release those of
// processes that died (ReleasePurgeOwner).
func (s *Store) PurgeOwners(ctx context.Context) ([]string, error) {
	return s.sortedStrings(ctx, `SELECT DISTINCT owner FROM purge_batch WHERE state=?`, PurgeClaimed)
}

// ReleasePurgeOwner ends the leases of the claimed batches of owner (a process known
// to be dead), so another purger takes them over at once.
func (s *Store) ReleasePurgeOwner(ctx context.Context, owner string) (int, error) {
	return s.execCount(ctx, `UPDATE purge_batch SET lease=0 WHERE owner=? AND state=?`, owner, PurgeClaimed)
}

// ReleasePurgeBatch ends owner's lease of a batch it claimed and did not start
// writing (it failed before), so the next pass, its own or another's, takes it over.
func (s *Store) ReleasePurgeBatch(ctx context.Context, batch int64, owner string) error {
	_, err := s.execCount(ctx, `UPDATE purge_batch SET lease=0 WHERE id=? AND owner=? AND state=?`, batch, owner, PurgeClaimed)
	return err
}

// ArchiveTable is one table's rows of a batch: one JSON object a line, the columns
// in the table's order, integers and numbers as numbers, the rest as strings.
type ArchiveTable struct {
	Table string
	Rows  int
	Lines []byte
}

// PurgeRows is a batch as the archive holds it.
type PurgeRows struct {
	Batch     int64
	Workunits []int64
	Results   []int64
	Tables    []ArchiveTable // in PurgeTables' order, empty ones too

	epoch int64 // the purge chain's epoch before the rows were read (SQLite)
}

// ReadPurgeBatch reads the rows of the batch.
func (s *Store) ReadPurgeBatch(ctx context.Context, batch int64) (*PurgeRows, error) {
	epoch := s.epoch.Load() // before the first row is read
	p, err := readPurgeRows(func(q string, args ...any) (*sql.Rows, error) { return s.DB.QueryContext(ctx, q, args...) }, batch, false)
	if p != nil {
		p.epoch = epoch
	}
	return p, err
}

// changedIn names the first table, but for immutableTables', whose rows in again (a
// second read of p's batch) are not p's; "" when none is.
func (p *PurgeRows) changedIn(again *PurgeRows) string {
	for i, t := range again.Tables {
		if !immutableTables[t.Table] && !bytes.Equal(t.Lines, p.Tables[i].Lines) {
			return t.Table
		}
	}
	return ""
}

// purgeChunk bounds the ids of one IN list.
const purgeChunk = 500

// immutableTables are the purged tables no writer changes once the workunit is made
// (CreateWork writes them): FinishPurge's second read leaves them out.
var immutableTables = map[string]bool{"wu_file": true, "wu_output": true}

// readPurgeRows reads a batch's rows; recheck leaves out immutableTables' (empty
// in their place).
func readPurgeRows(query func(string, ...any) (*sql.Rows, error), batch int64, recheck bool) (*PurgeRows, error) {
	p := &PurgeRows{Batch: batch}
	wu, err := archiveRows(query, &p.Workunits, `SELECT * FROM workunit WHERE file_delete_state=? AND purge_batch=? ORDER BY id`, FileDeleteDone, batch)
	if err != nil {
		return nil, err
	}
	wu.Table = "workunit"
	p.Tables = append(p.Tables, wu)
	// Each table by chunks of its parent's ids, in the parent's order.
	for _, t := range []struct {
		table, query string
		parents      *[]int64
		ids          *[]int64
	}{
		{"result", `SELECT * FROM result WHERE workunitid IN %s ORDER BY id`, &p.Workunits, &p.Results},
		{"result_file", `SELECT * FROM result_file WHERE resultid IN %s ORDER BY resultid, file_num`, &p.Results, nil},
		{"result_stderr", `SELECT * FROM result_stderr WHERE resultid IN %s ORDER BY resultid`, &p.Results, nil},
		{"wu_file", `SELECT * FROM wu_file WHERE workunitid IN %s ORDER BY workunitid, file_num`, &p.Workunits, nil},
		{"wu_output", `SELECT * FROM wu_output WHERE workunitid IN %s ORDER BY workunitid, file_num`, &p.Workunits, nil},
		{"wu_giveup", `SELECT * FROM wu_giveup WHERE workunitid IN %s ORDER BY id`, &p.Workunits, nil},
		{"deleted_file", `SELECT * FROM deleted_file WHERE workunitid IN %s ORDER BY id`, &p.Workunits, nil},
	} {
		at := ArchiveTable{Table: t.table}
		if recheck && immutableTables[t.table] {
			p.Tables = append(p.Tables, at)
			continue
		}
		parents := *t.parents
		for lo := 0; lo < len(parents); lo += purgeChunk {
			list, args := inList(parents[lo:min(len(parents), lo+purgeChunk)])
			part, err := archiveRows(query, t.ids, fmt.Sprintf(t.query, list), args...)
			if err != nil {
				return nil, err
			}
			at.Rows += part.Rows
			at.Lines = append(at.Lines, part.Lines...)
		}
		p.Tables = append(p.Tables, at)
	}
	// The ids of a table read by chunks of parents come in the parents' order.
	sort.Slice(p.Results, func(i, j int) bool { return p.Results[i] < p.Results[j] })
	return p, nil
}

// WritingPurges records, in one transaction, that owner now appends batches' rows to
// the archive files of archive (host:directory), each batch's files' sizes before it
// as given, so that a purger finding them in this state after owner died cuts the
// files back. When one of them is no longer owner's nothing is recorded, and it
// returns ErrPurgeLost and that batch. The commit is synced even on a connection
// whose commits are not (BatchJob, SQLite): the archive's bytes, synced next, must
// never be on disk without the record that cuts them back.
func (s *Store) WritingPurges(ctx context.Context, owner, archive string, ws []PurgeWrite) (int64, error) {
	var lost int64
	restore, err := s.syncedCommits(ctx)
	if err != nil {
		return 0, err
	}
	err = s.purgeTx(ctx, func(tx *Tx, _ bool) error {
		lost = 0
		for _, w := range ws {
			r, err := tx.exec(`UPDATE purge_batch SET state=?, archive=?, files=? WHERE id=? AND owner=? AND state=?`,
				PurgeWriting, archive, w.Files, w.Batch, owner, PurgeClaimed)
			if err != nil {
				return err
			}
			if k, err := r.RowsAffected(); err != nil || k != 1 {
				lost = w.Batch
				return fmt.Errorf("purge batch %d: %w (%v)", w.Batch, ErrPurgeLost, err)
			}
		}
		return nil
	})
	if rerr := restore(); err == nil {
		err = rerr
	}
	return lost, err
}

// syncedCommits makes the commits of s's SQLite connection synced (synchronous=FULL)
// until the function it returns puts the setting back; on MySQL, or on a Store that
// syncs every commit itself (walsync.go), it does nothing.
func (s *Store) syncedCommits(ctx context.Context) (func() error, error) {
	none := func() error { return nil }
	if s.dialect.name != SQLite || s.wal.Load() != nil { // InTx syncs every commit already
		return none, nil
	}
	var level int
	if err := s.DB.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&level); err != nil {
		return none, err
	}
	if level >= 2 {
		return none, nil
	}
	if _, err := s.DB.ExecContext(ctx, `PRAGMA synchronous=FULL`); err != nil {
		return none, err
	}
	return func() error {
		_, err := s.DB.ExecContext(ctx, `PRAGMA synchronous=`+strconv.Itoa(level))
		return err
	}, nil
}

// WrittenPurge is a batch whose archive files were being written.
type WrittenPurge struct {
	ID    int64
	Files string // as WritingPurge recorded them
}

// PurgesWriting lists the batches being written into archive, in id order. A purger
// that holds the archive's lock (which a writer holds from WritingPurges to the last
// FinishPurge) knows their writers died: it cuts their files back and calls
// ResetPurgeBatches.
func (s *Store) PurgesWriting(ctx context.Context, archive string) ([]WrittenPurge, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT id, files FROM purge_batch WHERE state=? AND archive=? ORDER BY id`, PurgeWriting, archive)
	return collect(rows, err, func(rows *sql.Rows, w *WrittenPurge) error { return rows.Scan(&w.ID, &w.Files) })
}

// ResetPurgeBatches makes batches whose archive files were cut back claimable again,
// all in one transaction: a purger killed meanwhile leaves all of them writing (and
// the files as cut back) or none.
func (s *Store) ResetPurgeBatches(ctx context.Context, batches []int64) error {
	if len(batches) == 0 {
		return nil
	}
	list, args := inList(batches)
	_, err := s.execCount(ctx, `UPDATE purge_batch SET state=?, lease=0, files='' WHERE state=? AND id IN `+list,
		append([]any{PurgeClaimed, PurgeWriting}, args...)...)
	return err
}

// FinishPurge deletes the rows of batch p, which owner has written to the archive
// and synced, and the batch, in one transaction: the rows are read again (but for
// immutableTables') and must be as archived (ErrPurgeChanged otherwise), and the
// batch still owner's (ErrPurgeLost). On SQLite the second read is left out when
// nothing but the pass's own purge transactions changed the database since the first
// read began (purgeTx's chain): they change no row of the batch. It returns the
// transaction's time from BEGIN to the end of COMMIT (on SQLite, the write lock held).
func (s *Store) FinishPurge(ctx context.Context, p *PurgeRows, owner string) (time.Duration, error) {
	if err := s.recheckPurgeRows(ctx, p); err != nil {
		return 0, err
	}
	var locked time.Time
	err := s.purgeTx(ctx, func(tx *Tx, unchanged bool) error {
		locked = time.Now()
		var state int
		var got string
		err := tx.queryRow(`SELECT state, owner FROM purge_batch WHERE id=?`+tx.ForUpdate(), p.Batch).Scan(&state, &got)
		if errNoRows(err) || (err == nil && (state != PurgeWriting || got != owner)) {
			return fmt.Errorf("purge batch %d: %w", p.Batch, ErrPurgeLost)
		}
		if err != nil {
			return err
		}
		if unchanged && p.epoch == s.epoch.Load() {
			s.purgeSkipped.Add(1)
		} else {
			// Read again, but for the tables nothing changes (the transaction holds
			// SQLite's one write lock meanwhile).
			s.purgeReread.Add(1)
			again, err := readPurgeRows(tx.query, p.Batch, true)
			if err != nil {
				return err
			}
			if t := p.changedIn(again); t != "" {
				return fmt.Errorf("purge batch %d, table %s: %w", p.Batch, t, ErrPurgeChanged)
			}
		}
		for _, d := range []struct {
			q   string
			ids []int64
		}{
			{`DELETE FROM result_file WHERE resultid IN `, p.Results},
			{`DELETE FROM result_stderr WHERE resultid IN `, p.Results},
			{`DELETE FROM result WHERE id IN `, p.Results},
			{`DELETE FROM wu_file WHERE workunitid IN `, p.Workunits},
			{`DELETE FROM wu_output WHERE workunitid IN `, p.Workunits},
			{`DELETE FROM wu_giveup WHERE workunitid IN `, p.Workunits},
			{`DELETE FROM deleted_file WHERE workunitid IN `, p.Workunits},
			{`DELETE FROM workunit WHERE id IN `, p.Workunits},
		} {
			for lo := 0; lo < len(d.ids); lo += purgeChunk {
				list, args := inList(d.ids[lo:min(len(d.ids), lo+purgeChunk)])
				if _, err := tx.exec(d.q+list, args...); err != nil {
					return err
				}
			}
		}
		_, err = tx.exec(`DELETE FROM purge_batch WHERE id=?`, p.Batch)
		return err
	})
	return time.Since(locked), err
}
