package storetest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

// TestTemplateIsMigrated checks that a database Open fills from the template has the
// very schema Migrate makes on an empty one: the same tables, each with the same
// SHOW CREATE TABLE (columns, keys, foreign keys), and the same versions.
func TestTemplateIsMigrated(t *testing.T) {
	ctx := context.Background()
	migrated, err := store.Open(storetest.MySQLDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer migrated.Close()
	if _, err := migrated.Migrate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	copied := storetest.Open(t, storetest.MySQLDSN(t))
	schema := func(s *store.Store) map[string]string {
		t.Helper()
		rows, err := s.DB.QueryContext(ctx, "SHOW TABLES")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			names = append(names, n)
		}
		rows.Close()
		out := map[string]string{}
		for _, n := range names {
			var table, create string
			if err := s.DB.QueryRowContext(ctx, "SHOW CREATE TABLE "+n).Scan(&table, &create); err != nil {
				t.Fatal(err)
			}
			out[n] = create
		}
		versions := schemaVersions(t, s)
		out["versions"] = fmt.Sprint(versions)
		return out
	}
	want, got := schema(migrated), schema(copied)
	if len(want) < 10 {
		t.Fatalf("the migrated database has only %d tables", len(want)-1)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("template copy differs from a migrated database (-migrated +copy):\n%s", d)
	}
}

// TestSQLiteTemplateIsMigrated is TestTemplateIsMigrated for SQLite: a file Open fills
// from the SQLite template has the very schema Migrate makes on an empty file (every
// table, index and trigger as sqlite_master records it), the same versions, WAL mode
// and the durability its DSN asks for.
func TestSQLiteTemplateIsMigrated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	migrated, err := store.Open(storetest.SQLiteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer migrated.Close()
	if _, err := migrated.Migrate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	copied := storetest.Open(t, storetest.SQLiteDSN(t))
	normal := storetest.Open(t, storetest.SQLiteDSN(t)+"?synchronous=normal")
	schema := func(s *store.Store) []string {
		t.Helper()
		rows, err := s.DB.QueryContext(ctx, "SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var typ, name, table, sql string
			if err := rows.Scan(&typ, &name, &table, &sql); err != nil {
				t.Fatal(err)
			}
			out = append(out, typ+" "+name+" "+table+" "+sql)
		}
		rows.Close()
		versions := schemaVersions(t, s)
		var mode string
		if err := s.DB.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		return append(out, fmt.Sprint("versions ", versions), "journal_mode "+mode)
	}
	want, got := schema(migrated), schema(copied)
	if len(want) < 12 {
		t.Fatalf("the migrated database has only %d schema objects", len(want)-2)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("template copy differs from a migrated file (-migrated +copy):\n%s", d)
	}
	if d := cmp.Diff(want, schema(normal)); d != "" {
		t.Errorf("template copy (synchronous=normal) differs from a migrated file (-migrated +copy):\n%s", d)
	}
	for _, c := range []struct {
		s    *store.Store
		want bool
	}{{migrated, true}, {copied, true}, {normal, false}} {
		// The durable default's connection is at NORMAL, its commits synced by the
		// Store (lib/store/walsync.go): Durability says which a Store is.
		if durable, setting, err := c.s.Durability(ctx); err != nil || durable != c.want {
			t.Errorf("durable %v (%s, %v), want %v", durable, setting, err, c.want)
		}
	}
}

// schemaVersions are the migrations a database records, in order.
func schemaVersions(t *testing.T, s *store.Store) []int {
	t.Helper()
	rows, err := s.DB.QueryContext(context.Background(), "SELECT version FROM schema_version ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []int
	for rows.Next() {
		var v int
		rows.Scan(&v)
		versions = append(versions, v)
	}
	return versions
}
