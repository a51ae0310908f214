package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/bkit/bkit/lib/store"
	"golang.org/x/sys/unix"
)

// DefaultPurgeBatch is how many workunits a purge pass archives per sync of the
// archive files (a group of batches), and the most a batch holds: on MySQL one batch
// of them, with their results and files some five thousand rows deleted in one
// transaction; on SQLite, whose one write lock the scheduler's RPCs wait for, batches
// of what a few milliseconds of that lock delete (store.Batcher).
const DefaultPurgeBatch = 1000

// PurgeLock is the file in the archive directory whose lock (flock) a purger holds
// from recording that it writes a group of batches until their rows are deleted:
// writers append one at a time, and a batch found being written by a purger holding
// the lock was left by one that died.
const PurgeLock = ".purge.lock"

// ArchiveComment is the comment in the gzip header of each member of an archive
// file: the batch it holds (a reader tells each batch once).
const ArchiveComment = "bkit purge batch "

// Purger moves old finished workunits out of the database into the archive (BOINC's
// db_purge): each workunit assimilated, with its files deleted more than OlderThan
// seconds ago, with its results, their files and stderr, its input and output file
// lists, give-ups and deleted-file journal rows.
//
// The archive directory holds one file per day (UTC, of the purge) and table,
// DAY/TABLE.jsonl.gz: JSON Lines, one row an object, gzip. A batch appends one gzip
// member to each of its tables' files (the member's header names the batch). A group
// of batches is recorded as being written (each batch with its files' sizes before
// it), appended and synced, and only then each batch's rows are deleted, in order; a
// batch whose writer died before its deletion is cut back out of the files, with the
// group's later ones, and written again, so no row is archived twice or lost.
//
// Store is the purger's own: on SQLite, Run makes its commits unsynced
// (Store.BatchJob) but for the records that precede an archive write.
type Purger struct {
	Store     *store.Store
	Archive   string
	OlderThan float64
	Batch     int // workunits per group (one archive sync), and the most per batch
	Clock     *Clock
	Owner     string
	// Lease is how long a claimed batch stays the purger's before another may take
	// it over (seconds).
	Lease float64
	Log   *slog.Logger
	Stop  func() bool

	// afterWrite (tests) runs before each batch's rows are deleted, once its group's
	// files are synced; an error ends the pass there, as a crash would.
	afterWrite func(batch int64) error
	// batchMost (tests), when not 0, caps a batch's workunits, so groups hold several.
	batchMost int
	// batchSized (tests) is told the size each claim asked the batches to have.
	batchSized func(per int)
}

// PurgeSummary counts what a pass did.
type PurgeSummary struct {
	Workunits int   `json:"workunits"`
	Results   int   `json:"results"`
	Rows      int   `json:"rows"`  // of every table
	Bytes     int64 `json:"bytes"` // appended to the archive
	// Changed counts the workunits of batches whose rows changed while they were
	// archived (a late report): cut back out of the archive, left for a later pass.
	Changed int  `json:"changed,omitempty"`
	Stopped bool `json:"stopped,omitempty"`
}

func (s PurgeSummary) String() string {
	st := ""
	if s.Changed > 0 {
		st += fmt.Sprintf(", %d workunits changed while archived, left for the next pass", s.Changed)
	}
	if s.Stopped {
		st += " (stopped early)"
	}
	return fmt.Sprintf("purged %d workunits, %d results (%d rows, %d archive bytes)%s", s.Workunits, s.Results, s.Rows, s.Bytes, st)
}

// pass is one Run's state.
type pass struct {
	*Purger
	a       *archive
	sum     PurgeSummary
	batches *store.Batcher // a batch's workunits, by its deletion's time
	claims  *store.Batcher // a claim's workunits, by its time
	sqlite  bool
	free    time.Time // when the next write transaction may begin (SQLite)
	// checkpoint: the WAL is checkpointed before the next write transaction (after
	// each batch's deletion while others write, else once a group: wait)
	checkpoint bool
}

// Run is one pass: batches other purgers left first, then the backlog.
func (p *Purger) Run(ctx context.Context) (PurgeSummary, error) {
	ctx = context.WithoutCancel(ctx)
	group := p.Batch
	if group <= 0 {
		group = DefaultPurgeBatch
	}
	most := group
	if p.batchMost > 0 {
		most = min(most, p.batchMost)
	}
	a, err := openArchive(p.Archive)
	if err != nil {
		return PurgeSummary{}, err
	}
	defer a.close()
	// Small batches commit often; their commits need no sync of their own (a lost
	// claim or deletion is done again, a lost deletion's batch cut back and written
	// again), but for the record before an archive write (WritingPurges).
	if err := p.Store.BatchJob(ctx); err != nil {
		return PurgeSummary{}, err
	}
	ps := &pass{Purger: p, a: a, batches: p.Store.LifecycleBatcher(most), claims: p.Store.LifecycleBatcher(group), sqlite: p.Store.Engine() == store.SQLite}
	if err := releaseDead(ctx, p.Store.PurgeOwners, p.Store.ReleasePurgeOwner, p.Log, "purge_batches"); err != nil {
		return ps.sum, err
	}
	// Batches a killed purger was writing into this archive are cut back and made
	// claimable before the takeovers, so this pass takes them over. (Recovered only in
	// the first batch's write, one found after the takeovers waited for the next pass,
	// and for ever when it held the whole backlog: TestPurgeConcurrentAndKilled left
	// two workunits now and then.)
	if err := p.recover(ctx, a); err != nil {
		return ps.sum, err
	}
	stop := func() bool {
		if p.Stop != nil && p.Stop() {
			ps.sum.Stopped = true
		}
		return ps.sum.Stopped
	}
	for !stop() {
		now := p.Clock.Now()
		ps.wait()
		id, err := p.Store.TakeOverPurge(ctx, p.Owner, now, now+p.Lease)
		ps.held(0)
		if err != nil || id == 0 {
			if err != nil {
				return ps.sum, err
			}
			break
		}
		if err := ps.group(ctx, []int64{id}); err != nil {
			return ps.sum, err
		}
	}
	var after store.PurgeKey
	walked := false
	// claim claims the next group: batches until they hold group workunits or the
	// walk is over. On an error it returns what it claimed, to release.
	claim := func() ([]int64, error) {
		var ids []int64
		for n := 0; n < group; {
			now := p.Clock.Now()
			per := ps.batches.Size()
			if p.batchSized != nil {
				p.batchSized(per)
			}
			ps.wait()
			size := min(ps.claims.Size(), group-n)
			scan, err := p.Store.ClaimPurge(ctx, p.Owner, after, size, per, now-p.OlderThan, now, now+p.Lease)
			if err != nil {
				return ids, err
			}
			if scan.Held > 0 { // a write transaction (not only a window with none ready)
				ps.held(scan.Held)
				ps.claims.Held(scan.Scanned, scan.Held)
			}
			ids = append(ids, scan.Batches...)
			n += scan.Scanned
			after = scan.Last
			if scan.Scanned < size {
				walked = true
				break
			}
		}
		return ids, nil
	}
	// Each group is read and compressed while the one before it is written and its
	// rows deleted: the reading fills the pauses between the deletions' transactions
	// (on SQLite the pass's one connection is free then), and compressing needs no
	// connection at all; done one after the other they were a third of a pass
	// (issue 27's benchmark). (A second connection for the reading, beside the
	// writing one, made the pass slower: docs/decisions.md.) The compressing, too,
	// runs between the transactions (Store.SideWork), not beside them.
	type prepared struct {
		bs  []*archived
		err error
	}
	var ready []*archived // claimed and read: the group to write next
	for {
		// A group's windows may hold no workunit ready yet (validation pending, a
		// locality cursor behind them): claim on until some are, or the walk is over.
		var ids []int64
		for len(ids) == 0 && !walked && !stop() {
			var err error
			if ids, err = claim(); err != nil {
				return ps.sum, errors.Join(err, p.release(ctx, ids), p.release(ctx, batchIDs(ready)))
			}
		}
		next := make(chan prepared, 1)
		if len(ids) > 0 {
			go func() {
				bs, err := ps.prepare(ctx, ids)
				next <- prepared{bs, err}
			}()
		} else {
			next <- prepared{}
		}
		var err error
		if len(ready) > 0 {
			err = ps.write(ctx, ready)
		}
		got := <-next
		if err = errors.Join(err, got.err); err != nil {
			return ps.sum, errors.Join(err, p.release(ctx, ids))
		}
		if len(got.bs) == 0 {
			break
		}
		ready = got.bs
	}
	return ps.sum, nil
}

// wait waits, on SQLite, until the pause after the pass's last write transaction is
// over, and then, after a batch's deletion, checkpoints the WAL (Store.CheckpointWAL;
// at the pause's end, as Batcher.LetWritersIn does). While others write
// (Store.OthersWriting: a scheduler serving RPCs), after every batch: a group's
// deletions (a thousand workunits' rows and index entries, scattered over the tables)
// copied and synced in one checkpoint was a flush every RPC's WAL sync during it
// waited behind, and purge's RPC p99 at 50 RPC/s was 8.4–15.7 ms in four runs where
// each batch's checkpoint made it 6.0–6.2 (issue 33; docs/decisions.md, "purge's
// checkpoint after each batch"). With nobody else writing, once a group: a checkpoint
// syncs the WAL and the database, a few milliseconds, and a quiet pass of small
// batches made thousands.
func (ps *pass) wait() {
	if !ps.sqlite {
		return
	}
	if d := time.Until(ps.free); d > 0 {
		time.Sleep(d)
	}
	if ps.checkpoint { // at the pause's end, as Batcher.LetWritersIn's
		ps.checkpoint = false
		ps.Store.CheckpointWAL(context.Background())
	}
}

// held records that a write transaction has just ended, having held the lock for d:
// the next may begin after the store's pause (Store.Pause: long enough for a
// scheduler RPC waiting for the lock to take it, as long as d while others write).
// Work that holds no lock (reading the next batch, compressing, appending, syncing)
// counts toward it.
func (ps *pass) held(d time.Duration) {
	ps.free = time.Now().Add(ps.Store.Pause(context.Background(), d))
}

// release ends the leases of batches claimed and not written (a failure before), so
// the next pass, this purger's or another's, takes them over.
func (p *Purger) release(ctx context.Context, ids []int64) error {
	var errs []error
	for _, id := range ids {
		if err := p.Store.ReleasePurgeBatch(ctx, id, p.Owner); err != nil {
			errs = append(errs, fmt.Errorf("releasing purge batch %d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// group archives the claimed batches ids with one sync and deletes their rows, batch
// by batch (prepare, then write). A failure before the write releases them at once.
func (ps *pass) group(ctx context.Context, ids []int64) error {
	bs, err := ps.prepare(ctx, ids)
	if err != nil {
		return errors.Join(err, ps.release(ctx, ids))
	}
	return ps.write(ctx, bs)
}

// prepare reads the claimed batches ids and compresses their rows. It reads and
// writes nothing else: it runs beside write (of the group before).
func (ps *pass) prepare(ctx context.Context, ids []int64) ([]*archived, error) {
	var bs []*archived
	for _, id := range ids {
		rows, err := ps.Store.ReadPurgeBatch(ctx, id)
		if err != nil {
			return nil, err
		}
		ps.Store.SideWork(func() { bs = append(bs, compress(rows, ps.Clock.Now())) })
	}
	return bs, nil
}

// batchIDs are the batches of bs.
func batchIDs(bs []*archived) []int64 {
	var ids []int64
	for _, b := range bs {
		ids = append(ids, b.rows.Batch)
	}
	return ids
}

// write appends the prepared batches bs to the archive with one sync and deletes
// their rows, batch by batch. A failure before the write releases them at once.
func (ps *pass) write(ctx context.Context, bs []*archived) (err error) {
	written := false
	defer func() {
		if err != nil && !written {
			if rerr := ps.release(ctx, batchIDs(bs)); rerr != nil {
				err = fmt.Errorf("%w; %v", err, rerr)
			}
		}
	}()
	a := ps.a
	if err := unix.Flock(int(a.lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("%s: lock: %w", filepath.Join(a.dir, PurgeLock), err)
	}
	defer unix.Flock(int(a.lock.Fd()), unix.LOCK_UN)
	if err := ps.recoverKilled(ctx, a); err != nil {
		return err
	}
	day := time.Unix(int64(ps.Clock.Now()), 0).UTC().Format(time.DateOnly)
	for {
		if len(bs) == 0 {
			return nil
		}
		if err := a.place(day, bs); err != nil {
			return err
		}
		ws := make([]store.PurgeWrite, len(bs))
		for i, b := range bs {
			js, _ := json.Marshal(b.files)
			ws[i] = store.PurgeWrite{Batch: b.rows.Batch, Files: string(js)}
		}
		ps.wait()
		began := time.Now()
		lost, err := ps.Store.WritingPurges(ctx, ps.Owner, a.id, ws)
		ps.held(time.Since(began))
		if !errors.Is(err, store.ErrPurgeLost) {
			if err != nil {
				return err
			}
			break
		}
		// Another purger took it over (its lease ended): the rest go without it.
		ps.Log.Info("purge batch taken over by another purger", "batch", lost)
		for i, b := range bs {
			if b.rows.Batch == lost {
				bs = append(bs[:i], bs[i+1:]...)
				break
			}
		}
	}
	written = true
	if err := a.append(day, bs); err != nil {
		// Cut back what was written, so the batches can be written again.
		return ps.cutBack(ctx, bs, err)
	}
	for i, b := range bs {
		if ps.afterWrite != nil {
			if err := ps.afterWrite(b.rows.Batch); err != nil {
				return err
			}
		}
		ps.wait()
		d, err := ps.Store.FinishPurge(ctx, b.rows, ps.Owner)
		ps.held(d)
		if errors.Is(err, store.ErrPurgeChanged) {
			// A late report changed a row since it was read: the archive must not hold
			// the old one. Cut the batch back, and the group's later ones with it (they
			// follow it in the files); a later pass writes them as they are then.
			ps.Log.Warn("purge batch changed while archived; it and the rest of its group are written again later", "batch", b.rows.Batch, "group", len(bs)-i)
			for _, c := range bs[i:] {
				ps.sum.Changed += len(c.rows.Workunits)
			}
			return ps.cutBack(ctx, bs[i:], nil)
		}
		if err != nil {
			return err
		}
		ps.batches.Held(len(b.rows.Workunits), d)
		if ps.Store.OthersWriting() {
			ps.checkpoint = true
		}
		ps.sum.Workunits += len(b.rows.Workunits)
		ps.sum.Results += len(b.rows.Results)
		ps.sum.Rows += b.rowsN
		ps.sum.Bytes += b.bytes
	}
	ps.checkpoint = true
	return nil
}

// cutBack cuts the files back to before the first of bs, all recorded as being
// written, and makes them claimable again; it returns cause (nil: nothing failed).
func (ps *pass) cutBack(ctx context.Context, bs []*archived, cause error) error {
	var sizes []map[string]int64
	var ids []int64
	for _, b := range bs {
		sizes = append(sizes, b.files)
		ids = append(ids, b.rows.Batch)
	}
	if err := ps.a.cutBack(firstSizes(sizes...)); err != nil {
		return errors.Join(cause, fmt.Errorf("cutting the archive back: %w", err))
	}
	ps.wait()
	err := ps.Store.ResetPurgeBatches(ctx, ids)
	ps.held(0)
	return errors.Join(cause, err)
}

// recover is recoverKilled under the archive's lock.
func (p *Purger) recover(ctx context.Context, a *archive) error {
	if err := unix.Flock(int(a.lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("%s: lock: %w", filepath.Join(a.dir, PurgeLock), err)
	}
	defer unix.Flock(int(a.lock.Fd()), unix.LOCK_UN)
	return p.recoverKilled(ctx, a)
}

// recoverKilled cuts back the archive files of batches whose purger died while
// writing them into this archive, and makes the batches claimable again. Only a
// purger holding the lock calls it: a batch being written is then one whose writer
// is gone (a writer holds the lock until its group's rows are deleted). The batches
// are a group whose first ones may be deleted already: each file is cut back to the
// smallest size any of them recorded (firstSizes), and they are made claimable in one
// transaction, so a purger killed in the middle of this leaves them all to cut back
// again, to the same sizes.
func (p *Purger) recoverKilled(ctx context.Context, a *archive) error {
	ws, err := p.Store.PurgesWriting(ctx, a.id)
	if err != nil || len(ws) == 0 {
		return err
	}
	var sizes []map[string]int64
	var ids []int64
	for _, w := range ws {
		var s map[string]int64
		if err := json.Unmarshal([]byte(w.Files), &s); err != nil {
			return fmt.Errorf("purge batch %d: files: %w", w.ID, err)
		}
		sizes = append(sizes, s)
		ids = append(ids, w.ID)
	}
	if err := a.cutBack(firstSizes(sizes...)); err != nil {
		return err
	}
	if err := p.Store.ResetPurgeBatches(ctx, ids); err != nil {
		return err
	}
	p.Log.Info("cut back purge batches a killed purger was writing", "batches", ids)
	return nil
}
