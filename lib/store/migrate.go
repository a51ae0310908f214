package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// SchemaVersion is the version Migrate brings a database to.
var SchemaVersion = len(migrations)

// ErrNotInitialised says a database has no bkit schema or an older one.
var ErrNotInitialised = errors.New("database schema is missing or old")

// Version returns the database's schema version (0 when it has none).
func (s *Store) Version(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := s.DB.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&v)
	if err != nil {
		// No schema_version table: a fresh database.
		if n, err2 := s.tableCount(ctx, "schema_version"); err2 == nil && n == 0 {
			return 0, nil
		}
		return 0, err
	}
	return int(v.Int64), nil
}

func (s *Store) tableCount(ctx context.Context, name string) (int, error) {
	q := `SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name=?`
	if s.dialect.name == MySQL {
		q = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema=DATABASE() AND table_name=?`
	}
	var n int
	err := s.DB.QueryRowContext(ctx, q, name).Scan(&n)
	return n, err
}

// CheckSchema returns an error wrapping ErrNotInitialised unless the database is at
// SchemaVersion; commands other than init call it so they never run on a half-made
// or outdated schema.
func (s *Store) CheckSchema(ctx context.Context) error {
	v, err := s.Version(ctx)
	if err != nil {
		return err
	}
	switch {
	case v < SchemaVersion:
		return fmt.Errorf("%w: %s is at schema version %d, want %d: run 'bserver init --db %s'", ErrNotInitialised, redact(s.dsn), v, SchemaVersion, redact(s.dsn))
	case v > SchemaVersion:
		return fmt.Errorf("%s is at schema version %d, newer than this program's %d", redact(s.dsn), v, SchemaVersion)
	}
	return nil
}

// OpenInitialised opens an existing project database whose schema is at
// SchemaVersion, for every command but init: a SQLite file that does not exist is an
// error rather than created empty, and an old or missing schema says to run init.
func OpenInitialised(ctx context.Context, dsn string) (*Store, error) {
	if path, ok := SQLitePath(dsn); ok {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%s: no such database: run 'bserver init --db %s'", path, dsn)
		}
	}
	s, err := Open(dsn)
	if err != nil {
		return nil, err
	}
	if err := s.CheckSchema(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Migrate brings the schema to SchemaVersion and returns the versions it applied.
// Each migration runs in its own transaction together with its schema_version row, so
// on SQLite a migration is applied wholly or not at all, and two concurrent Migrate
// calls apply it once. MySQL commits DDL implicitly; there a named lock serialises
// migrators instead, and a migration interrupted half-way needs a hand.
func (s *Store) Migrate(ctx context.Context, now float64) (applied []int, err error) {
	var conn *sql.Conn
	if s.dialect.name == MySQL {
		conn, err = s.DB.Conn(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		// The lock is the database's own (its name hashed to fit MySQL's 64-character
		// limit): projects sharing a server migrate at the same time.
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(`+migrateLock+`, 60)`).Scan(&got); err != nil {
			return nil, err
		}
		if got.Int64 != 1 {
			return nil, errors.New("another process holds the migration lock")
		}
		defer conn.ExecContext(context.Background(), `SELECT RELEASE_LOCK(`+migrateLock+`)`)
	}
	if _, err := s.DB.ExecContext(ctx, s.dialect.ddl(schemaVersionTable)); err != nil {
		return nil, fmt.Errorf("create schema_version: %w", err)
	}
	for i, stmts := range migrations {
		version := i + 1
		done := false
		err := s.InTx(ctx, func(tx *Tx) error {
			var n int
			if err := tx.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_version WHERE version=?`, version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				done = true
				return nil
			}
			for _, st := range stmts {
				if _, err := tx.tx.ExecContext(ctx, s.dialect.ddl(st)); err != nil {
					return fmt.Errorf("migration %d: %w\n%s", version, err, s.dialect.ddl(st))
				}
			}
			_, err := tx.tx.ExecContext(ctx, `INSERT INTO schema_version (version, applied_time) VALUES (?, ?)`, version, now)
			return err
		})
		if err != nil {
			return applied, err
		}
		if !done {
			applied = append(applied, version)
		}
	}
	return applied, nil
}

// schemaVersionTable records the migrations applied, one row each.
const schemaVersionTable = `CREATE TABLE IF NOT EXISTS schema_version (
		version BIGINT NOT NULL PRIMARY KEY,
		applied_time DOUBLE NOT NULL
	){TABLE}`

// migrateLock names the MySQL lock Migrate holds: one per database.
const migrateLock = `CONCAT('bkit_migrate.', SHA1(DATABASE()))`

// SchemaDigest identifies the schema Migrate makes on engine (SQLite or MySQL): a hash
// of every migration's statements as that engine runs them, so a copy of a migrated
// database (a test's template) is known to be stale as soon as any statement changes.
func SchemaDigest(engine string) string {
	d := dialects[engine]
	h := sha256.New()
	io.WriteString(h, d.ddl(schemaVersionTable))
	for _, stmts := range migrations {
		for _, st := range stmts {
			io.WriteString(h, d.ddl(st))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// nowSeconds is the wall clock as Unix seconds, for rows whose time no caller gave.
func nowSeconds() float64 { return float64(time.Now().UnixNano()) / 1e9 }
