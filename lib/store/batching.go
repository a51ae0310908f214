package store

import (
	"context"
	"sync"
	"time"
)

// sqliteBatchHold is how long a cron job's batch may hold SQLite's write lock: a
// scheduler RPC that arrives during a batch waits for the rest of it, so the batch's
// time adds to the RPC's latency (issue 33: serve's p99 during a pass within 2× of its
// p99 without one). Batches of a fixed 1,000 workunits held it 50 ms on this project's
// 2-core machine and the p99 during a pass was 3–12× the idle one; 10 ms batches with
// 5 ms pauses, 1.5–2.5×; 5 ms batches each followed by a pause as long (LetWritersIn),
// 1.9× there. The tail a pass adds is about a batch's hold, which must stay well below
// the scheduler's own idle p99 (3–7 ms on a quiet 2-core machine): 5 ms batches were
// 1.5–3.7× in 5 quiet bretry passes there, 3 ms batches (with 5 ms pauses) 1.4–2.5×.
// 2 ms batches with 3 ms pauses (sqliteYield) were 1.25–1.64× in 4 passes, where 3 ms
// batches in the same hour were 2.2–2.5×: the RPCs that waited for the lock longer than
// the busy handler's 2 ms fell from about 150 a pass to 5–10. The pass beside the RPCs
// took 7.4–7.7 s instead of 6.0–7.3 (1.5 ms batches: 1.2–1.6×, 9.6–10.4 s). A quiet
// server's batches are sqliteQuietHold's, so a pass with nobody else writing is as fast
// as before (docs/decisions.md, "2 ms batches, 3 ms pauses").
const sqliteBatchHold = 2 * time.Millisecond

// sqliteLifecycleHold is sqliteBatchHold for the lifecycle passes (assimilation, file
// deletion, purge: LifecycleBatcher), chosen by measurement apart from bretry's. On a
// disk whose idle RPC p99 was 2.5–3.2 ms, 2 ms batches left the RPCs' BEGIN p99 at
// 3.3–4.3 ms during file deletion and purge, and their p99 at 2.3–2.9× the idle one;
// 1 ms batches (with the checkpoint at the pause's end) cut BEGIN to 1.3–3.0 ms and
// those passes to 1.4–2.3×, the passes about twice as long beside the RPCs. bretry's
// pass did not gain (p99 1.53–1.55× against 1.37–1.45×, the pass 2–4× as long), so it
// keeps sqliteBatchHold (docs/decisions.md, "1 ms batches for the lifecycle passes, the
// checkpoint at the pause's end").
const sqliteLifecycleHold = 1 * time.Millisecond

// sqliteQuietHold is how long a batch may hold the write lock once no other
// connection has committed for sqliteQuietWindow (a server with no RPCs coming, a
// quiet night): nobody waits for the lock then, and 5 ms batches made a pass mostly
// fixed costs (a commit, a pause, the statements prepared again for each batch's IN
// lists). The first writer to come waits for one such batch at most; its commit makes
// the job's next batches short again (Store.Pause).
const sqliteQuietHold = 50 * time.Millisecond

// sqliteQuietWindow is how long no other connection must have committed before a
// cron job's batches grow to sqliteQuietHold: longer than the gaps between a busy
// project's RPCs (tens a second), so a steady stream of them keeps the batches short.
var sqliteQuietWindow = time.Second

// minBatch is the smallest batch a Batcher asks for: below it a batch's fixed costs
// (BEGIN, the commit's sync, the pause after it) are most of the pass.
const minBatch = 10

// Batcher sizes a cron job's batches (bretry's pass): on SQLite, whose one write lock
// every batch holds to its commit, as many rows as fit in sqliteBatchHold at the rate
// the job's last batches went; on MySQL, whose row locks let the scheduler run beside
// a batch, always the most the job allows (bigger batches, fewer commits). A Batcher
// belongs to one goroutine.
type Batcher struct {
	s      *Store
	most   int
	hold   time.Duration // 0: no limit (MySQL)
	perRow time.Duration // the last batches' time per row, smoothed; 0 before the first
	asked  int           // the last size Size gave
	held   int           // the last batch's size: its rows, or what was asked when more
	last   time.Duration // the last batch's hold
}

// Batcher returns a Batcher of batches of at most most rows.
func (s *Store) Batcher(most int) *Batcher { return s.batcher(most, sqliteBatchHold) }

// LifecycleBatcher is Batcher for a lifecycle pass: on SQLite, batches of
// sqliteLifecycleHold while others write.
func (s *Store) LifecycleBatcher(most int) *Batcher { return s.batcher(most, sqliteLifecycleHold) }

func (s *Store) batcher(most int, hold time.Duration) *Batcher {
	b := &Batcher{s: s, most: most}
	if s.dialect.name == SQLite {
		b.hold = hold
	}
	return b
}

// Size is how many rows the next batch should take: on SQLite as many as fit in
// sqliteBatchHold at the last batches' time per row (100 before the first), or in
// sqliteQuietHold once nobody else has committed for sqliteQuietWindow (decided now,
// so a writer that came since the last batch makes the next one short), at least
// minBatch, and at most twice the last batch.
func (b *Batcher) Size() int {
	if b.hold == 0 {
		return b.most
	}
	if b.perRow == 0 {
		return min(b.most, 100) // until the first batch says what a row costs
	}
	hold := b.hold
	if b.s.quietFor() >= sqliteQuietWindow {
		hold = sqliteQuietHold
	}
	b.asked = max(minBatch, min(b.most, int(hold/b.perRow), 2*b.held))
	return b.asked
}

// Held records that a batch of n rows held its transaction (from BEGIN to the end of
// COMMIT) for d. The time per row is smoothed over the last few batches, and a batch
// at most doubles the next one's size: one batch the machine happened to run quickly
// does not make the next hold the lock for long.
func (b *Batcher) Held(n int, d time.Duration) {
	if b.hold == 0 || n <= 0 {
		return
	}
	b.last = d
	b.held = max(n, b.asked) // a batch short of rows (the backlog's end) does not shrink the next
	r := d / time.Duration(n)
	if b.perRow == 0 {
		b.perRow = r
	} else {
		b.perRow = (7*b.perRow + 3*r) / 10
	}
}

// BatchJob makes this Store's commits a cron job's (bretry's pass): on SQLite its
// connection commits without syncing the WAL (synchronous=NORMAL), the sync that was
// most of a small batch's time under the write lock. What a power cut can lose is
// then the job's last batches, never a scheduler RPC's: the WAL is one file, written in
// commit order, so the next commit of bserver (synchronous=FULL) or the next
// checkpoint syncs every batch before it, and a crash keeps a prefix of the commits.
// A batch lost that way is done again by the next pass, as when the job is killed
// between batches. It also makes the job's side work wait for its transactions
// (SideWork). The Store must be the job's own (its one connection keeps the setting);
// on MySQL it does nothing (InnoDB's log flush is the server's setting).
func (s *Store) BatchJob(ctx context.Context) error {
	if s.dialect.name != SQLite {
		return nil
	}
	if w := s.wal.Swap(nil); w != nil { // the job's commits are not synced, by SQLite or by InTx
		if err := w.close(); err != nil {
			return err
		}
	}
	if _, err := s.DB.ExecContext(ctx, `PRAGMA synchronous=NORMAL`); err != nil {
		return err
	}
	s.side.CompareAndSwap(nil, new(sync.RWMutex))
	return nil
}

// SideWork runs f, a cron job's work beside its transactions (a file written or
// unlinked, a batch compressed), once none of the job's write transactions is open,
// and keeps the job's next transaction from beginning until f returns. On SQLite a
// transaction holds the one write lock, and a scheduler RPC that comes meanwhile waits
// for it to commit; on a 2-core machine the job's side goroutines took the processor
// the transaction's goroutine needed, and stretched the wait: with the files written
// or unlinked only between transactions, an assimilation pass's transactions held the
// lock 4.4–5.2 ms at p99 instead of 7.7–9.0 (file deletion: 4.8–5.1 instead of 6.4–7.0),
// for the same pass times (issue 33; docs/decisions.md, "The job's file work between
// its transactions"). On a store that is not a cron job's (BatchJob) and on MySQL, f
// runs at once. f must not begin a transaction of s itself.
func (s *Store) SideWork(f func()) {
	g := s.side.Load()
	if g == nil {
		f()
		return
	}
	g.RLock()
	defer g.RUnlock()
	f()
}

// LetWritersIn is the pause after a batch (Store.LetWritersIn): on SQLite, while
// others write, at least as long as the batch held the lock, so a pass holds it at
// most about half the time while RPCs keep coming (a pass over 1,000,000 workunits
// beside RPCs that never let up took 60 % of it, and their RPC/s fell from 349 to
// 137); a short one when nobody else wrote (Store.Pause); nothing on MySQL.
func (b *Batcher) LetWritersIn(ctx context.Context) {
	b.s.letWritersIn(ctx, b.s.Pause(ctx, b.last))
}

// sqliteYield is LetWritersIn's pause: longer than the widest gap between a waiting
// writer's tries for the lock (begin: sqliteBusyPoll, then again 1 ms later), and the
// job's WAL checkpoint after it (1.5 ms at its median) lets writers in too. Once one
// RPC has the lock, the RPCs queued behind it in bserver's pool begin as soon as it
// commits, ahead of the job's next try. 5 ms made a pass of short batches beside the
// RPCs 2–3× longer than 3 ms did (a bretry pass of 1.5 ms batches: 25 s against
// 10 s) for no shorter tail.
const sqliteYield = 3 * time.Millisecond

// LetWritersIn is a cron job's pause between two write transactions (batches of a
// pass): on SQLite, whose one write lock a job that commits batch after batch would
// hold for the whole pass, it waits long enough that a writer waiting for the lock (a
// scheduler RPC of bserver serve, another job) takes it first; on MySQL, whose row
// locks let both run, it returns at once.
func (s *Store) LetWritersIn(ctx context.Context) { s.letWritersIn(ctx, s.Pause(ctx, 0)) }

// sqliteQuietPause is a cron job's pause after a write transaction when no other
// connection wrote since its pause before: twice the widest gap between a waiting
// writer's tries for the lock (begin), so one that came during the transaction still
// takes the lock (and its commit makes the next pause a full one), where a pause of
// sqliteYield after every transaction made a pass on a server with no RPCs half
// pauses (issue 27's benchmark, no load: 2.9 s of a 5.4 s purge pass of 30,000
// workunits).
const sqliteQuietPause = 2 * time.Millisecond

// Pause is how long a cron job waits, after a write transaction that held SQLite's
// write lock for hold, before its next one: when another connection committed since
// the last Pause (a scheduler RPC, another job: PRAGMA data_version), at least
// sqliteYield and as long as hold, so that while they keep coming the job holds the
// lock at most about half the time; when none did, only sqliteQuietPause. Nothing on
// MySQL, whose row locks let both run. The Store must be the job's own: its one
// connection's data_version counts the others' commits.
func (s *Store) Pause(ctx context.Context, hold time.Duration) time.Duration {
	if s.dialect.name != SQLite {
		return 0
	}
	var v int64 // data_version + 1, 0 when unknown
	if err := s.DB.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err == nil {
		v++
	} else {
		v = 0
	}
	if last := s.dataVersion.Swap(v); last == v && v != 0 {
		return sqliteQuietPause
	}
	s.othersAt.Store(time.Now().UnixNano())
	return max(sqliteYield, hold)
}

// quietFor is how long no other connection has committed, as this Store's pauses saw
// it (0 before its first Pause).
func (s *Store) quietFor() time.Duration {
	at := s.othersAt.Load()
	if at == 0 {
		return 0
	}
	return time.Duration(time.Now().UnixNano() - at)
}

// OthersWriting says whether, as this Store's pauses saw it (Pause), another
// connection has committed to its SQLite database within sqliteQuietWindow: a
// scheduler serving RPCs beside a cron job. True until the first Pause has looked;
// false on MySQL, whose server the job does not share a lock or, in the stages
// docs/scaling.md describes past one machine, a disk with.
func (s *Store) OthersWriting() bool {
	return s.dialect.name == SQLite && s.quietFor() < sqliteQuietWindow
}

func (s *Store) letWritersIn(ctx context.Context, pause time.Duration) {
	if s.dialect.name != SQLite {
		return
	}
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	// The batch's pages are copied from the WAL into the database by the job, rather
	// than by the commit of a scheduler RPC that finds the WAL past SQLite's automatic
	// checkpoint (1,000 pages) and pays for a batch's copy and sync. PASSIVE: no writer
	// or reader waits for it; its error (a busy database) leaves the work to the next
	// checkpoint. At the pause's end, not its start: the RPCs that waited for the batch
	// take the lock the moment it is free and sync their commits right after, and a
	// checkpoint then (its syncs of the WAL and the database) was a flush that the very
	// RPCs the batch had already delayed waited behind (docs/decisions.md, "1 ms
	// batches for the lifecycle passes, the checkpoint at the pause's end").
	s.CheckpointWAL(ctx)
}

// CheckpointWAL copies the pages a cron job's batches wrote from SQLite's WAL into
// the database (PASSIVE: no reader or writer waits for it), as Batcher.LetWritersIn
// does between batches, so that a scheduler RPC's commit does not find the WAL past
// the automatic checkpoint and copy a pass's pages itself. Nothing on MySQL; an error
// (a busy database) leaves the work to the next checkpoint.
func (s *Store) CheckpointWAL(ctx context.Context) {
	if s.dialect.name != SQLite {
		return
	}
	began := time.Now()
	s.DB.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
	if t := s.timing.Load(); t != nil {
		(*t)("checkpoint", time.Since(began))
	}
}
