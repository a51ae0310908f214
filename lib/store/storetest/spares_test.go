package storetest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/store"
)

// testPrefix names this file's databases: other test processes adopt orphans named
// dbPrefix…, never these.
const testPrefix = "bkit_tspares_"

// usedDatabase is a MySQL database filled from the template on which a test wrote
// rows (apps, a host: tables with AUTO_INCREMENT counters), its store closed; it is
// dropped at cleanup.
func usedDatabase(t *testing.T) (dsn, name string) {
	t.Helper()
	dsn = freshDatabase(t)
	s := Open(t, dsn)
	ctx := context.Background()
	for _, app := range []string{"a", "b", "c"} {
		if _, err := s.AddApp(ctx, app, false, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DB.ExecContext(ctx, "INSERT INTO host (id, create_time, authenticator) VALUES (77, 1, 'h77')"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	u, _ := url.Parse(dsn)
	return dsn, strings.TrimPrefix(u.Path, "/")
}

// freshDatabase is MySQLDSN's, named testPrefix…: an empty database Open fills.
func freshDatabase(t *testing.T) string {
	t.Helper()
	base := getenv(EnvMySQL)
	if base == "" {
		t.Skip(EnvMySQL + " is not set")
	}
	_, driverDSN, err := store.ParseDSN(base)
	if err != nil {
		t.Fatal(err)
	}
	db, err := ownerDB(driverDSN)
	if err != nil {
		t.Fatal(err)
	}
	name, err := newDatabase(db, testPrefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drop(owner.db, name) })
	u, _ := url.Parse(base)
	u.Path = "/" + name
	fresh.Store(u.String(), true)
	return u.String()
}

// exec runs statements on database name through the owner's connection.
func exec(t *testing.T, name string, stmts ...string) {
	t.Helper()
	for _, st := range stmts {
		if _, err := owner.db.Exec(strings.ReplaceAll(st, "DB.", name+".")); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
}

func exists(t *testing.T, name string) bool {
	t.Helper()
	var n int
	if err := owner.db.QueryRow("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name=?", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestRecycleEmpties: a used database recycles to the template's very tables, empty,
// its AUTO_INCREMENT counters back at 1; a fresh database filled from it as a spare
// gets its tables (the spare is gone), is the template's to Open's Migrate, and
// numbers its first rows from 1.
func TestRecycleEmpties(t *testing.T) {
	_, name := usedDatabase(t)
	if err := recycle(owner.db, name, time.Second); err != nil {
		t.Fatal(err)
	}
	for i, tb := range template.tables {
		var table, create string
		if err := owner.db.QueryRow("SHOW CREATE TABLE "+name+"."+tb).Scan(&table, &create); err != nil {
			t.Fatal(err)
		}
		if create != template.creates[i] {
			t.Errorf("%s after recycling:\n%s\nthe template's:\n%s", tb, create, template.creates[i])
		}
		var n int
		if err := owner.db.QueryRow("SELECT COUNT(*) FROM " + name + "." + tb).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: len(template.versions)}[tb == "schema_version"]; n != want {
			t.Errorf("%s has %d rows after recycling, want %d", tb, n, want)
		}
	}

	dsn := freshDatabase(t)
	u, _ := url.Parse(dsn)
	if !moveSpare(owner.db, name, strings.TrimPrefix(u.Path, "/")) {
		t.Fatal("moving the spare's tables failed")
	}
	if exists(t, name) {
		t.Errorf("the spare %s is still there after its tables moved", name)
	}
	fresh.Delete(dsn) // filled
	s := Open(t, dsn)
	id, err := s.AddApp(context.Background(), "first", false, 1)
	if err != nil || id != 1 {
		t.Errorf("the first app of a database filled from a spare: id %d, %v; want 1", id, err)
	}
}

// TestRecycleRefuses: a database that is not the template's once emptied, or that a
// connection still uses, is not recycled.
func TestRecycleRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		stmts []string
	}{
		{"a column added", []string{"ALTER TABLE DB.app ADD COLUMN extra INT NOT NULL DEFAULT 0"}},
		{"an index dropped", []string{"ALTER TABLE DB.result DROP INDEX result_received"}},
		{"a table added", []string{"CREATE TABLE DB.extra (id INT PRIMARY KEY)"}},
		{"a table dropped", []string{"DROP TABLE DB.batch_host"}},
		{"a view added", []string{"CREATE VIEW DB.v AS SELECT 1"}},
		{"a trigger added", []string{"CREATE TRIGGER DB.trg BEFORE INSERT ON DB.app FOR EACH ROW SET NEW.name = NEW.name"}},
		{"a version row changed", []string{"UPDATE DB.schema_version SET applied_time = applied_time + 1"}},
		{"a version row deleted", []string{"DELETE FROM DB.schema_version WHERE version = 1"}},
		{"a table option changed", []string{"ALTER TABLE DB.app COMMENT 'x'"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, name := usedDatabase(t)
			exec(t, name, c.stmts...)
			if err := recycle(owner.db, name, time.Second); err == nil {
				t.Errorf("recycled")
			} else {
				t.Logf("not recycled: %.200v", err)
			}
		})
	}
	t.Run("a connection on it", func(t *testing.T) {
		t.Parallel()
		dsn, name := usedDatabase(t)
		s, err := store.Open(dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.DB.Ping(); err != nil {
			t.Fatal(err)
		}
		if err := recycle(owner.db, name, time.Second); err == nil {
			t.Errorf("recycled")
		} else {
			t.Logf("not recycled: %.200v", err)
		}
	})
	t.Run("too many rows", func(t *testing.T) {
		t.Parallel()
		_, name := usedDatabase(t)
		exec(t, name, fmt.Sprintf("INSERT INTO DB.host (create_time, authenticator) WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM s WHERE n < 100) SELECT 1, CONCAT('h', a.n, '-', b.n) FROM s a, s b LIMIT %d", spareRowsMax+1))
		var n int
		owner.db.QueryRow("SELECT COUNT(*) FROM " + name + ".host").Scan(&n)
		if err := recycle(owner.db, name, time.Second); err == nil {
			t.Errorf("recycled with %d rows", n)
		} else {
			t.Logf("not recycled: %.200v", err)
		}
	})
}

// TestAdoptOrphan: a database of ours whose lock nobody holds (its process ended) is
// adopted as a spare when it recycles, dropped when it does not, and left alone while
// a connection is on it.
func TestAdoptOrphan(t *testing.T) {
	_, good := usedDatabase(t)
	_, bad := usedDatabase(t)
	exec(t, bad, "ALTER TABLE DB.app ADD COLUMN extra INT NOT NULL DEFAULT 0")
	busyDSN, busy := usedDatabase(t)
	s, err := store.Open(busyDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.DB.Ping(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{good, bad, busy} {
		if got, err := lockQuery("SELECT RELEASE_LOCK(?)", n); err != nil || got.Int64 != 1 {
			t.Fatalf("releasing %s: %v, %v", n, got, err)
		}
	}
	adopted := false
	for {
		n := adoptOrphan(owner.db, testPrefix)
		if n == "" {
			break
		}
		if n == good {
			adopted = true // a spare from now on when the test's cleanup releases it
			continue
		}
		if n == busy {
			t.Errorf("the orphan %s was adopted with a connection on it", busy)
		}
		drop(owner.db, n) // an orphan of an earlier run of this test
	}
	if !adopted {
		t.Errorf("the orphan %s was not adopted", good)
	}
	if exists(t, bad) {
		t.Errorf("the orphan %s, not the template's, is still there", bad)
	}
	if !exists(t, busy) {
		t.Errorf("the orphan %s, with a connection on it, was dropped", busy)
	}
	var held bool
	owner.mu.Lock()
	err = owner.lock.QueryRowContext(context.Background(), "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", good).Scan(&held)
	owner.mu.Unlock()
	if err != nil || !held {
		t.Errorf("the adopted %s's lock: held %v (%v)", good, held, err)
	}
}
