// Package storetest owns the throw-away databases tests run on: a fresh SQLite file
// per test, and, when BKIT_TEST_MYSQL_DSN names a MySQL/MariaDB server, a freshly
// created database on it, emptied or dropped when the test ends (spares.go), so tests
// (and packages) can run at the same time without seeing each other's rows.
//
// Migrating a MySQL database is some sixty DDL statements, each synced to disk; a
// suite that did it for every test spent most of its MySQL time there. So Open fills
// a fresh MySQL database from a template instead: a database migrated once per schema
// (bkit_test_template_ and the schema's digest, kept on the server between runs) whose
// tables are created again from SHOW CREATE TABLE, keys and foreign keys included.
// Migrate itself still runs on every test database (it finds nothing to do), and
// tests of migrating from empty use MySQLDSN with store.Open, which Open's template
// never touches.
package storetest

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/store"
)

// EnvMySQL names the variable holding a MySQL DSN such as mysql://root@127.0.0.1:3306/test.
const EnvMySQL = "BKIT_TEST_MYSQL_DSN"

// Engine is one database a test runs on.
type Engine struct {
	Name string // "sqlite" or "mysql"
	DSN  string // empty when the engine is not available
	Skip string // why it is not available
}

// Engines returns a fresh SQLite database and, when configured, a fresh MySQL one.
// Run each as a subtest and call Require first, so a missing MySQL shows as a skip.
func Engines(t testing.TB) []Engine {
	return []Engine{{Name: store.SQLite, DSN: SQLiteDSN(t)}, mysqlEngine(t)}
}

// Require skips t when e is not available.
func (e Engine) Require(t testing.TB) {
	if e.DSN == "" {
		t.Skip(e.Skip)
	}
}

// SQLiteDSN returns the DSN of a new SQLite file in t's temporary directory.
func SQLiteDSN(t testing.TB) string {
	path := filepath.Join(t.TempDir(), "project.db")
	sqliteFresh.Store(path, true)
	t.Cleanup(func() { sqliteFresh.Delete(path) })
	return "sqlite:" + path
}

// MySQLDSN returns the DSN of a new, empty MySQL database, dropped at cleanup, or
// skips t when BKIT_TEST_MYSQL_DSN is not set.
func MySQLDSN(t testing.TB) string {
	e := mysqlEngine(t)
	e.Require(t)
	return e.DSN
}

func mysqlEngine(t testing.TB) Engine {
	base := getenv(EnvMySQL)
	if base == "" {
		return Engine{Name: store.MySQL, Skip: EnvMySQL + " is not set (e.g. mysql://root@127.0.0.1:3306/test): MySQL/MariaDB tests skipped"}
	}
	_, driverDSN, err := store.ParseDSN(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvMySQL, err)
	}
	db, err := ownerDB(driverDSN)
	if err != nil {
		t.Fatalf("%s=%s: %v", EnvMySQL, base, err)
	}
	name, err := newDatabase(db, dbPrefix)
	if err != nil {
		// The tests make their databases beside the one named, which must exist: say
		// so rather than blame CREATE DATABASE (issue 32).
		if strings.Contains(err.Error(), "Unknown database") {
			u, _ := url.Parse(base) // ParseDSN read it
			t.Fatalf("%s=%s: the database it names does not exist; the tests connect to it to make their own beside it: create it first (mariadb -e 'CREATE DATABASE %s'): %v",
				EnvMySQL, base, strings.TrimPrefix(u.Path, "/"), err)
		}
		t.Fatalf("%s=%s: cannot make a test database: %v", EnvMySQL, base, err)
	}
	u, _ := url.Parse(base)
	u.Path = "/" + name
	dsn := u.String()
	fresh.Store(dsn, true)
	t.Cleanup(func() {
		fresh.Delete(dsn)
		release(db, name)
	})
	return Engine{Name: store.MySQL, DSN: dsn}
}

// fresh holds the DSNs of the MySQL databases made here that nothing has opened
// through Open yet: those Open may fill from the template.
var fresh sync.Map

// Open opens dsn and migrates it, failing t on error; the store is closed at cleanup.
// A fresh MySQL database from Engines or MySQLDSN is first filled from the template,
// and so is a SQLite file SQLiteDSN named that does not exist yet (sqlitetemplate.go).
func Open(t testing.TB, dsn string) *store.Store {
	if _, ok := fresh.LoadAndDelete(dsn); ok {
		if err := fillFromTemplate(dsn); err != nil {
			t.Fatalf("%s: %v", EnvMySQL, err)
		}
	}
	if path, ok := sqlitePath(dsn); ok {
		if _, ok := sqliteFresh.LoadAndDelete(path); ok {
			if err := fillSQLiteFromTemplate(path); err != nil {
				t.Fatalf("the SQLite template: %v", err)
			}
		}
	}
	s, err := store.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	return s
}

// Migrated is Open for tests of programs that open the database themselves: dsn's
// database gets the schema as Open gives it and is closed again, so the program's
// init (bserver init) finds nothing to migrate. Migrating an empty MySQL database is
// some sixty synced DDL statements, seconds on a loaded machine; TestMigrate and the
// full loop migrate empty databases.
func Migrated(t testing.TB, dsn string) {
	t.Helper()
	if err := Open(t, dsn).Close(); err != nil {
		t.Fatal(err)
	}
}

// KeepWriting commits a small write (a new app) to the database at dsn every few
// milliseconds, through a connection of its own, until the test ends: the scheduler's
// RPCs beside a cron job, which the job's Store sees as others writing
// (store.Store.OthersWriting) and lets in between its batches.
func KeepWriting(t testing.TB, dsn string) {
	ctx := context.Background()
	other := Open(t, dsn)
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			if _, err := other.AddApp(ctx, fmt.Sprintf("beside%d", i), false, 1); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-stopped })
}
