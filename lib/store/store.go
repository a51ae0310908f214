// Package store owns the project's server database: its schema (BOINC's table names:
// app, app_version, host, workunit, result, batch, batch_host, locality_cursor, plus
// batch_file and wu_giveup), the versioned migrations that create it, and the short
// transactions through which the scheduler endpoint (bserver) and the cron jobs (bretry,
// blocality) read and change it.
//
// Two engines sit behind one API, picked by the DSN: SQLite (the default: "sqlite:PATH"
// or a bare path) and MySQL/MariaDB ("mysql://user:pass@host:port/db") for projects that
// run the endpoint and the cron jobs on several machines. The SQL is written once for
// both; the few differences are in dialect.go.
//
// Concurrency rule: nothing here keeps state between transactions. A job is handed to a
// host by a conditional UPDATE (… WHERE id=? AND server_state=UNSENT) whose affected-row
// count says whether this transaction won it, so any number of processes can serve one
// database without sending a result twice.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// Store is an open project database.
type Store struct {
	DB      *sql.DB
	dialect dialect
	dsn     string

	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	wanted map[string]bool // queries run unprepared, to prepare after their transaction

	trace  atomic.Pointer[func(query string, args []any)]     // TraceStatements
	timing atomic.Pointer[func(step string, d time.Duration)] // TimeTransactions
	trips  atomic.Int64                                       // RoundTrips
	hold   atomic.Int64                                       // LastHold, in ns
	side   atomic.Pointer[sync.RWMutex]                       // SideWork's gate: a cron job's on SQLite (BatchJob); nil else
	wal    atomic.Pointer[walSync]                            // SQLite's durable default: commits synced after the lock (walsync.go); nil else

	txRetries, txErrors atomic.Int64 // TxStats
	dataVersion         atomic.Int64 // SQLite's data_version + 1 at the last Pause (0: none yet)
	othersAt            atomic.Int64 // when a Pause last saw another connection's commit (Unix ns; 0: none yet)
	// The purge transactions' chain (purgecheck.go).
	lastMark                  atomic.Pointer[writerMark]
	epoch                     atomic.Int64
	purgeSkipped, purgeReread atomic.Int64
}

// Engine names.
const (
	SQLite = "sqlite"
	MySQL  = "mysql"
)

// sqliteBusyTimeout is how long a SQLite writer waits for another process's write
// transaction before failing. Write transactions here last milliseconds, so a few
// seconds only runs out when something is badly wrong.
const sqliteBusyTimeout = 10 * time.Second

// sqliteBusyPoll is how long SQLite's own busy handler waits for another connection's
// write lock before a BEGIN gives up and begin tries again, until sqliteBusyTimeout.
// SQLite's handler sleeps ever longer (up to 100 ms between tries); a cron job that
// commits batch after batch retook the lock within that sleep every time, and a
// scheduler RPC waited for the whole pass (issue 33: 17 s). Trying again every
// millisecond or so (the handler tries at 0, 1 and 2 ms, begin again 1 ms later), a
// waiting writer takes the lock in the pause a cron job leaves between its batches
// (LetWritersIn) and at most a millisecond or two after the batch before it commits.
const sqliteBusyPoll = 2 * time.Millisecond

// Open opens the database named by dsn. It does not create or migrate the schema
// (Migrate does); CheckSchema tells whether that is needed.
func Open(dsn string) (*Store, error) {
	engine, driverDSN, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	var wal *walSync
	if path, sync, _ := sqliteOptions(dsn); engine == SQLite && sync == "FULL" && path != ":memory:" {
		// FULL's durability, with the WAL synced after the commit released the write
		// lock rather than inside it (walsync.go).
		driverDSN, wal = sqliteDriverDSN(path, "NORMAL"), newWALSync(path)
	}
	db, err := sql.Open(map[string]string{SQLite: "sqlite3", MySQL: "mysql"}[engine], driverDSN)
	if err != nil {
		return nil, err
	}
	if engine == MySQL {
		if db, err = readCommitted(db, driverDSN); err != nil {
			return nil, fmt.Errorf("%s: %w", redact(dsn), explainOpen(engine, dsn, err))
		}
	}
	s := &Store{DB: db, dialect: dialects[engine], dsn: dsn, stmts: map[string]*sql.Stmt{}, wanted: map[string]bool{}}
	if wal != nil {
		s.wal.Store(wal)
	}
	if engine == SQLite {
		// One connection: SQLite has one writer anyway, and queueing in Go is cheaper
		// than every goroutine sleeping in the busy handler. Other processes still
		// meet this one through the busy timeout.
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
	} else {
		db.SetMaxOpenConns(32)
		db.SetMaxIdleConns(32)
		db.SetConnMaxIdleTime(time.Minute)
	}
	if err := ping(db, engine); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", redact(dsn), explainOpen(engine, dsn, err))
	}
	return s, nil
}

// ping makes the store's first connection. On SQLite it is tried again while the
// file is locked, until sqliteBusyTimeout: a process that opens the database while
// another's last connection checkpoints and deletes the WAL as it closes (a command
// run just as bserver serve exits: the README's real-client section, `kill %1`, then
// `bserver status`) or recovers the WAL of one killed, finds it locked for that long,
// longer than the connection's busy timeout (sqliteBusyPoll, kept short for BEGIN's
// sake: begin). Once open, the connection holds a shared lock on the file (WAL mode),
// so no other process takes it whole again while this one runs. On MySQL the same
// 10 s bound the one try.
func ping(db *sql.DB, engine string) error {
	ctx, cancel := context.WithTimeout(context.Background(), sqliteBusyTimeout)
	defer cancel()
	for {
		err := db.PingContext(ctx)
		var se sqlite3.Error
		if err == nil || engine != SQLite || !errors.As(err, &se) || se.Code != sqlite3.ErrBusy || ctx.Err() != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readCommitted reopens a MySQL database so that every connection's transactions run
// at READ COMMITTED, set once when the connection is made (the session's isolation
// variable, named tx_isolation before MariaDB 11.1 and MySQL 8, transaction_isolation
// since) instead of by a SET TRANSACTION before each BEGIN, which cost every
// transaction a round trip (issue 33). READ COMMITTED: a claim's UPDATE re-reads the
// row's latest committed state anyway, and it avoids the gap locks REPEATABLE READ
// takes on range scans.
func readCommitted(db *sql.DB, driverDSN string) (*sql.DB, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := "transaction_isolation"
	var level string
	if err := db.QueryRowContext(ctx, `SELECT @@session.transaction_isolation`).Scan(&level); err != nil {
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1193 { // 1193: unknown system variable
			db.Close()
			return nil, err
		}
		name = "tx_isolation"
	}
	db.Close()
	cfg, err := mysql.ParseDSN(driverDSN)
	if err != nil {
		return nil, err
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	if _, ok := cfg.Params[name]; !ok {
		cfg.Params[name] = "'READ-COMMITTED'"
	}
	return sql.Open("mysql", cfg.FormatDSN())
}

// Durability tells whether a committed transaction survives a power cut, as the
// scheduler needs (a report it acknowledges is deleted by the client), and how the
// engine is set: SQLite's synchronous (FULL or EXTRA is durable in WAL mode; FULL's
// commits are synced by the Store after the lock, walsync.go), MariaDB's
// innodb_flush_log_at_trx_commit (1 is durable) and, when the binary log is on,
// sync_binlog (1). bserver serve warns when it is not.
func (s *Store) Durability(ctx context.Context) (durable bool, setting string, err error) {
	if s.dialect.name == SQLite {
		var sync int
		if err := s.DB.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
			return false, "", err
		}
		if sync == 1 && s.wal.Load() != nil {
			return true, "synchronous=FULL", nil // synced by the Store, after the lock
		}
		name := map[int]string{0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[sync]
		return sync >= 2, "synchronous=" + name, nil
	}
	var flush, syncBinlog, logBin int
	if err := s.DB.QueryRowContext(ctx, `SELECT @@innodb_flush_log_at_trx_commit, @@sync_binlog, @@log_bin`).Scan(&flush, &syncBinlog, &logBin); err != nil {
		return false, "", err
	}
	setting = fmt.Sprintf("innodb_flush_log_at_trx_commit=%d", flush)
	if logBin != 0 {
		setting += fmt.Sprintf(", sync_binlog=%d", syncBinlog)
	}
	return flush == 1 && (logBin == 0 || syncBinlog == 1), setting, nil
}

// TempInMemory keeps SQLite's temporary tables and indices (sorts, subquery results)
// in memory rather than in files: for a database that is itself in memory and thrown
// away (the locality simulator). MySQL decides this itself; nothing is done there.
func (s *Store) TempInMemory(ctx context.Context) error {
	if s.dialect.name != SQLite {
		return nil
	}
	_, err := s.DB.ExecContext(ctx, `PRAGMA temp_store=MEMORY`)
	return err
}

// Engine is SQLite or MySQL.
func (s *Store) Engine() string { return s.dialect.name }

// Close closes the database.
func (s *Store) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = map[string]*sql.Stmt{}
	s.mu.Unlock()
	var err error
	if w := s.wal.Swap(nil); w != nil {
		err = w.close()
	}
	return errors.Join(err, s.DB.Close())
}

// redact hides a password in a DSN for messages.
// explainOpen adds what to do to the errors a new project meets first.
func explainOpen(engine, dsn string, err error) error {
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me) && me.Number == 1049:
		// Error 1049 (42000): Unknown database.
		u, _ := url.Parse(dsn)
		name := strings.TrimPrefix(u.Path, "/")
		return fmt.Errorf("database %q does not exist on %s: create it first (mariadb -e 'CREATE DATABASE %s'); bserver init makes its tables: %w", name, u.Host, name, err)
	case engine == SQLite && strings.Contains(err.Error(), "unable to open database file"):
		path, _, _ := sqliteOptions(dsn)
		if _, serr := os.Stat(filepath.Dir(path)); serr != nil {
			return fmt.Errorf("cannot create the database file: its directory %s does not exist (bserver init makes it): %w", filepath.Dir(path), err)
		}
	}
	return err
}

func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return dsn
}

// Tx is one short transaction. Its methods are the only way the server changes rows.
type Tx struct {
	s   *Store
	tx  *sql.Tx
	ctx context.Context
	// bound holds the prepared statements bound to this transaction, so a query run
	// once per job or report binds once per transaction.
	bound map[string]*sql.Stmt
	// reported holds the reported results ReportedOutputs read, for RecordReports.
	reported map[string]reportedRow
}

// stmt returns the prepared form of query bound to this transaction, or nil when the
// query has not been prepared yet; then it is run unprepared this time and prepared
// after the transaction ends. Preparing inside the transaction would deadlock: SQLite's
// pool has one connection, and the transaction holds it.
func (t *Tx) stmt(query string) *sql.Stmt {
	if !t.s.dialect.prepare {
		return nil
	}
	if st, ok := t.bound[query]; ok {
		return st
	}
	t.s.mu.Lock()
	st, ok := t.s.stmts[query]
	if !ok {
		t.s.wanted[query] = true
	}
	t.s.mu.Unlock()
	if !ok {
		return nil
	}
	if t.bound == nil {
		t.bound = map[string]*sql.Stmt{}
	}
	t.bound[query] = t.tx.StmtContext(t.ctx, st)
	return t.bound[query]
}

// prepareWanted prepares the queries transactions ran unprepared. Parsing SQL costs
// more than running these one-row queries, so each is prepared once per Store.
func (s *Store) prepareWanted(ctx context.Context) {
	s.mu.Lock()
	if len(s.wanted) == 0 {
		s.mu.Unlock()
		return
	}
	var qs []string
	for q := range s.wanted {
		qs = append(qs, q)
	}
	s.wanted = map[string]bool{}
	s.mu.Unlock()
	for _, q := range qs {
		s.trips.Add(1)
		st, err := s.DB.PrepareContext(ctx, q)
		if err != nil {
			continue // the query will run unprepared and report its own error
		}
		s.mu.Lock()
		if _, ok := s.stmts[q]; ok {
			st.Close()
		} else {
			s.stmts[q] = st
		}
		s.mu.Unlock()
	}
}

// Exec, Query and QueryRow run SQL of the caller's own in this transaction: for tests
// that set up or inspect rows the API has no call for. Programs and libraries use the
// named methods (SQL lives only in this package: TestSQLOnlyInStore). Write SQL both
// engines accept; ForUpdateSkipLocked gives the one clause that differs.
func (t *Tx) Exec(query string, args ...any) (sql.Result, error) { return t.exec(query, args...) }

// Query: see Exec.
func (t *Tx) Query(query string, args ...any) (*sql.Rows, error) { return t.query(query, args...) }

// QueryRow: see Exec.
func (t *Tx) QueryRow(query string, args ...any) *sql.Row { return t.queryRow(query, args...) }

// ForUpdateSkipLocked is the clause to append to a SELECT that claims rows: on MySQL it
// locks the rows read and skips rows other transactions hold; SQLite, whose write
// transactions already run one at a time, needs nothing.
func (t *Tx) ForUpdateSkipLocked() string { return t.s.dialect.skipLocked }

// ForUpdate is the clause to append to a SELECT that locks the rows it reads until the
// transaction ends (seed 004's cursor lock): FOR UPDATE on MySQL, nothing on SQLite.
func (t *Tx) ForUpdate() string { return t.s.dialect.forUpdate }

// ErrNonFinite is a NaN or an infinity among a statement's arguments. The MySQL driver
// interpolates placeholders client-side and would write them into the SQL as bare words
// ("Unknown column 'NaN'"), SQLite stores NaN as NULL: neither engine can hold them, so
// the statement is refused before it reaches either. Parsers refuse such input first
// (lib/limits); this is the store's own guarantee.
var ErrNonFinite = errors.New("store: a NaN or infinite number among the statement's arguments")

func finiteArgs(args []any) bool {
	for _, a := range args {
		if f, ok := a.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return false
		}
	}
	return true
}

func (t *Tx) exec(query string, args ...any) (sql.Result, error) {
	if !finiteArgs(args) {
		return nil, ErrNonFinite
	}
	t.s.traced(query, args)
	if st := t.stmt(query); st != nil {
		return st.ExecContext(t.ctx, args...)
	}
	return t.tx.ExecContext(t.ctx, query, args...)
}

func (t *Tx) query(query string, args ...any) (*sql.Rows, error) {
	if !finiteArgs(args) {
		return nil, ErrNonFinite
	}
	t.s.traced(query, args)
	if st := t.stmt(query); st != nil {
		return st.QueryContext(t.ctx, args...)
	}
	return t.tx.QueryContext(t.ctx, query, args...)
}

func (t *Tx) queryRow(query string, args ...any) *sql.Row {
	if !finiteArgs(args) {
		// A *sql.Row cannot carry an error of ours: compare with NULL instead, which
		// matches no row on either engine (sql.ErrNoRows), and no NaN reaches the SQL.
		args = append([]any(nil), args...)
		for i, a := range args {
			if f, ok := a.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				args[i] = nil
			}
		}
	}
	t.s.traced(query, args)
	if st := t.stmt(query); st != nil {
		return st.QueryRowContext(t.ctx, args...)
	}
	return t.tx.QueryRowContext(t.ctx, query, args...)
}

// maxAttempts bounds how often InTx retries a transaction the engine aborted for
// contention (a MySQL deadlock, a SQLite busy timeout).
const maxAttempts = 5

// InTx runs fn in one write transaction and commits it, retrying when the engine
// aborted it for contention. fn must have no effects outside the transaction, since it
// may run more than once.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	var err error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		err = s.inTxOnce(ctx, fn)
		s.prepareWanted(ctx)
		if err == nil || !retryable(err) || ctx.Err() != nil || attempt == maxAttempts {
			if engineError(err) {
				s.txErrors.Add(1)
			}
			return err
		}
		s.txRetries.Add(1)
		time.Sleep(time.Duration(attempt*attempt) * 5 * time.Millisecond)
	}
	return err
}

func (s *Store) inTxOnce(ctx context.Context, fn func(*Tx) error) (err error) {
	s.trips.Add(2) // BEGIN and COMMIT (or ROLLBACK)
	// A cron job's side work waits for the transaction (SideWork).
	if g := s.side.Load(); g != nil {
		g.Lock()
		defer g.Unlock()
	}
	began := time.Now()
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	locked := time.Now()
	if err = fn(&Tx{s: s, tx: tx, ctx: ctx}); err != nil {
		return err
	}
	done := time.Now()
	err = tx.Commit()
	end := time.Now()
	if err == nil {
		s.hold.Store(int64(end.Sub(locked)))
	}
	if w := s.wal.Load(); w != nil && err == nil {
		// The lock is released; the commit is durable once this returns. An error
		// here leaves it committed but perhaps not on disk: the caller must not
		// answer for it, and it is not retried (it is not contention).
		err = w.committed()
	}
	if t := s.timing.Load(); t != nil && err == nil {
		(*t)("begin", locked.Sub(began))
		(*t)("body", done.Sub(locked))
		(*t)("commit", end.Sub(done))
		(*t)("hold", end.Sub(locked))
		if s.wal.Load() != nil {
			(*t)("sync", time.Since(end))
		}
	}
	return err
}

// LastHold is how long the last write transaction of s that committed held it, from
// BEGIN's return to the end of COMMIT (on SQLite the write lock): what a cron job's
// Batcher sizes its next batch by (Batcher.Held) when the store's call does more
// than the transaction.
func (s *Store) LastHold() time.Duration { return time.Duration(s.hold.Load()) }

// TimeTransactions makes each transaction of s that commits tell fn how long its
// steps took, until TimeTransactions(nil): "begin" (BEGIN, with the wait for a
// connection of s's pool and, on SQLite, for another writer's lock), "lock-wait" (the
// same, only for a BEGIN that found SQLite's write lock held), "body" (its
// statements), "commit", "hold" (from BEGIN's return to COMMIT's: on SQLite the write
// lock held), "sync" (after COMMIT, the WAL's sync outside the lock: SQLite's durable
// default, walsync.go), "checkpoint" (a cron job's WAL checkpoint between batches,
// LetWritersIn), and "recheck" (FinishPurge's second read of a batch made before its
// transaction, outside the lock, on SQLite). Benchmarks use it to tell where a
// scheduler RPC waits during a pass (issue 33; BenchmarkPass); fn must be safe for
// concurrent use.
func (s *Store) TimeTransactions(fn func(step string, d time.Duration)) {
	if fn == nil {
		s.timing.Store(nil)
		return
	}
	s.timing.Store(&fn)
}

// begin begins a write transaction. On SQLite a BEGIN that found the write lock held
// for sqliteBusyPoll is tried again at once, until sqliteBusyTimeout has passed.
func (s *Store) begin(ctx context.Context) (*sql.Tx, error) {
	began := time.Now()
	deadline := began.Add(sqliteBusyTimeout)
	for busy := false; ; busy = true {
		tx, err := s.DB.BeginTx(ctx, nil)
		var se sqlite3.Error
		if err == nil || s.dialect.name != SQLite || !errors.As(err, &se) || se.Code != sqlite3.ErrBusy ||
			time.Now().After(deadline) || ctx.Err() != nil {
			if t := s.timing.Load(); t != nil && err == nil && busy {
				(*t)("lock-wait", time.Since(began))
			}
			return tx, err
		}
		s.trips.Add(1)
		time.Sleep(time.Millisecond)
	}
}

// retryable reports whether err is the engine aborting a transaction for contention,
// or a claim finding its candidate taken (ClaimResults), or a report recorded meanwhile
// (RecordReports), or a host made by another request meanwhile (CreateHost), so that
// running it again may succeed.
func retryable(err error) bool {
	if errors.Is(err, errClaimRace) || errors.Is(err, errReportRace) || errors.Is(err, errHostRace) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1213 || me.Number == 1205 // deadlock, lock wait timeout
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}
