package storetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bkit/bkit/lib/store"
)

// Migrating a SQLite file is some sixty DDL statements and thirty fsyncs (synchronous=
// FULL): a quarter to half a second per test database on the shared test machine, in
// suites that make hundreds. So Open fills a fresh SQLite file (one SQLiteDSN named and
// nothing has created yet) from a template instead: a file migrated once per test
// process, its bytes kept in memory and written to the new path. WAL mode is in the
// file's header, so the copy is in WAL mode as a freshly migrated file is. Migrate
// still runs on every test database (it finds nothing to do), and tests of migrating
// from empty open their SQLiteDSN with store.Open, which the template never touches.

// sqliteFresh holds the paths of the SQLite files SQLiteDSN named.
var sqliteFresh sync.Map

// sqliteTemplate is this process's migrated SQLite file, made once.
var sqliteTemplate struct {
	once sync.Once
	data []byte
	err  error
}

// sqlitePath is the file a SQLite DSN names (sqlite:PATH[?options]).
func sqlitePath(dsn string) (string, bool) {
	rest, ok := strings.CutPrefix(dsn, "sqlite:")
	if !ok {
		return "", false
	}
	path, _, _ := strings.Cut(rest, "?")
	return path, true
}

// fillSQLiteFromTemplate writes the template to path, which must not exist yet: a
// file something else made first (a bserver process migrating it, say) is left alone.
func fillSQLiteFromTemplate(path string) error {
	sqliteTemplate.once.Do(func() { sqliteTemplate.data, sqliteTemplate.err = makeSQLiteTemplate() })
	if sqliteTemplate.err != nil {
		return sqliteTemplate.err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(sqliteTemplate.data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// makeSQLiteTemplate migrates an empty SQLite file and returns its bytes once closed
// (the last connection's close checkpoints the WAL into the file and removes it).
func makeSQLiteTemplate() ([]byte, error) {
	dir, err := os.MkdirTemp("", "bkit-sqlite-template")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "template.db")
	s, err := store.Open("sqlite:" + path)
	if err != nil {
		return nil, err
	}
	if _, err := s.Migrate(context.Background(), 1); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, errors.New("SQLite template: the WAL outlived the close")
	}
	return os.ReadFile(path)
}
