package store

import (
	"context"
	"database/sql"
	"strconv"
	"sync/atomic"
	"time"
)

// A purge pass reads a batch's rows, writes them to the archive, then deletes them in
// a transaction that, on SQLite, read them all again to check that nothing changed
// meanwhile (FinishPurge): a third of a pass (issue 27's benchmark). On SQLite the
// second read is left out when the database provably did not change meanwhile but by
// the pass's own transactions: the chain below.

// The chain. SQLite's data_version, read on the store's writing connection, changes
// when another connection committed; total_changes() counts the rows that connection
// itself inserted, changed or deleted, and schema_version the schema's changes. The
// purge transactions (ClaimPurge, TakeOverPurge, WritingPurges, FinishPurge: purgeTx)
// read the three at their start and at their end: when a start finds them as the
// last one's end left them, nothing but read-only work happened on the database in
// between, on any connection; otherwise the chain's epoch is bumped. A batch read
// during one epoch and deleted in it (the check at FinishPurge's start passing too)
// changed only by purge transactions meanwhile, which touch no row of a batch
// claimed and being written but its own deletion (claims take unclaimed workunits,
// the rest change purge_batch rows): its second read would find what the first did.
//
// The values of two connections are not comparable: a connection the pool replaced
// starts over. Each mark therefore holds the connection's token, a number of this
// process's in its temp schema's user_version (0 on a new connection, which gets a
// fresh one and breaks the chain).

// writerMark is the writing connection's state at one moment.
type writerMark struct {
	token, dataVersion, changes, schema int64
}

// connTokens numbers the connections of this process's stores (from 1: 0 is a
// connection that has none yet).
var connTokens atomic.Int64

// mark reads the writing connection's state in tx; a connection without a token gets
// one (and the mark says 0: the chain breaks).
func (t *Tx) mark() (writerMark, error) { return markOn(t.ctx, t.tx) }

// markOn reads the state of the connection q runs on (a transaction's, or one held
// with DB.Conn).
func markOn(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}) (writerMark, error) {
	var m writerMark
	if err := q.QueryRowContext(ctx, `PRAGMA temp.user_version`).Scan(&m.token); err != nil {
		return m, err
	}
	if m.token == 0 {
		// user_version is 32 bits; a process opening two billion connections would
		// reuse tokens of connections long closed.
		token := connTokens.Add(1) & 0x7fffffff
		if _, err := q.ExecContext(ctx, `PRAGMA temp.user_version=`+strconv.FormatInt(token, 10)); err != nil {
			return m, err
		}
	}
	err := q.QueryRowContext(ctx, `SELECT (SELECT data_version FROM pragma_data_version), total_changes(), (SELECT schema_version FROM pragma_schema_version)`).
		Scan(&m.dataVersion, &m.changes, &m.schema)
	return m, err
}

// purgeTx runs fn in a write transaction of the chain (InTx otherwise). fn is told
// whether the database is as the chain's last transaction left it (always false on
// MySQL and when the chain broke: then the epoch has been bumped already).
func (s *Store) purgeTx(ctx context.Context, fn func(tx *Tx, unchanged bool) error) error {
	if s.dialect.name != SQLite {
		return s.InTx(ctx, func(tx *Tx) error { return fn(tx, false) })
	}
	var end writerMark
	err := s.InTx(ctx, func(tx *Tx) error {
		start, err := tx.mark()
		if err != nil {
			return err
		}
		last := s.lastMark.Load()
		unchanged := start.token != 0 && last != nil && *last == start
		if !unchanged {
			s.epoch.Add(1)
		}
		if err := fn(tx, unchanged); err != nil {
			return err
		}
		end, err = tx.mark()
		return err
	})
	if err == nil {
		s.lastMark.Store(&end)
	} else {
		// What fn changed before it failed was rolled back but counted: the next
		// transaction's start breaks the chain anyway; say so at once.
		s.lastMark.Store(nil)
	}
	return err
}

// PurgeRechecks counts FinishPurge's second reads of a batch: those left out, the
// database having changed only by the pass's own purge transactions since the first
// read (SQLite), and those made (tests and benchmarks).
func (s *Store) PurgeRechecks() (skipped, reread int64) {
	return s.purgeSkipped.Load(), s.purgeReread.Load()
}

// recheckPurgeRows makes FinishPurge's second read of p, on SQLite, before its
// transaction rather than in it, where it was nearly half of what the transaction held
// the write lock for while scheduler RPCs committed between a pass's transactions
// (each such commit breaks the chain, so every FinishPurge read its batch again: issue
// 33). The rows are read on one connection between two marks of it; when the marks
// agree, no one committed meanwhile, the rows read are the database's at the second
// mark, and the chain goes on from there: a FinishPurge whose transaction starts at that
// mark (nothing committed since) needs no read under the lock. When the marks differ
// (a commit came during the read) or a row differs from p's, nothing is decided here:
// the transaction reads again as before, and tells a lost batch (ErrPurgeLost) from a
// changed one (ErrPurgeChanged).
func (s *Store) recheckPurgeRows(ctx context.Context, p *PurgeRows) error {
	if s.dialect.name != SQLite {
		return nil
	}
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	before, err := markOn(ctx, conn)
	if err != nil {
		return err
	}
	if last := s.lastMark.Load(); last != nil && *last == before && before.token != 0 && p.epoch == s.epoch.Load() {
		return nil // the chain holds already: nothing to read
	}
	began := time.Now()
	again, err := readPurgeRows(func(q string, args ...any) (*sql.Rows, error) { return conn.QueryContext(ctx, q, args...) }, p.Batch, true)
	if err != nil {
		return err
	}
	after, err := markOn(ctx, conn)
	if err != nil {
		return err
	}
	if before.token == 0 || after != before || p.changedIn(again) != "" {
		// A commit came during the read, or a row changed since p was read (or the
		// batch is gone: another purger's now): the transaction reads again under the
		// lock, after its check that the batch is still this pass's.
		return nil
	}
	if last := s.lastMark.Load(); last == nil || *last != after {
		s.epoch.Add(1) // batches read before now are no longer known unchanged
		s.lastMark.Store(&after)
	}
	p.epoch = s.epoch.Load()
	if t := s.timing.Load(); t != nil {
		(*t)("recheck", time.Since(began))
	}
	return nil
}
