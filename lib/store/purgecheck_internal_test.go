package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestPurgeChain: a purge transaction is told the database is unchanged only when
// nothing but purge transactions and reads happened since the chain's last one: not
// after a commit of another connection, nor a row or schema change made on the
// writing connection outside the chain, nor on a connection the pool replaced, whose
// numbers are not comparable with the old one's (a fresh connection counts from the
// start again: without its token the first case below was trusted).
func TestPurgeChain(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "project.db")
	setup, err := Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Migrate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	setup.Close()
	// A store whose connection has changed nothing yet, as a fresh one has not.
	s, err := Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	step := func(name string, want bool) {
		t.Helper()
		epoch := s.epoch.Load()
		var got bool
		if err := s.purgeTx(ctx, func(_ *Tx, unchanged bool) error { got = unchanged; return nil }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Errorf("%s: told unchanged %v, want %v", name, got, want)
		}
		if bumped := s.epoch.Load() != epoch; bumped == want {
			t.Errorf("%s: epoch bumped %v", name, bumped)
		}
	}
	step("first", false)
	step("nothing between", true)
	replace := func() {
		s.DB.SetConnMaxLifetime(time.Nanosecond)
		time.Sleep(time.Millisecond)
		if err := s.DB.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		s.DB.SetConnMaxLifetime(0)
	}
	replace()
	step("connection replaced", false)
	step("nothing between, on the new connection", true)
	if _, err := s.DB.ExecContext(ctx, `SELECT COUNT(*) FROM workunit`); err != nil {
		t.Fatal(err)
	}
	step("a read", true)
	if _, err := other.DB.ExecContext(ctx, `INSERT INTO app (name, create_time) VALUES ('a', 1)`); err != nil {
		t.Fatal(err)
	}
	step("another connection's commit", false)
	if _, err := s.DB.ExecContext(ctx, `UPDATE app SET create_time=2`); err != nil {
		t.Fatal(err)
	}
	step("a change on the writing connection", false)
	if _, err := s.DB.ExecContext(ctx, `CREATE TABLE scratch (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	step("a schema change on the writing connection", false)
	step("nothing between, again", true)
	// The same numbers under another connection's token are not trusted.
	m := *s.lastMark.Load()
	m.token++
	s.lastMark.Store(&m)
	step("another token", false)
	// A failed transaction's changes were rolled back but counted.
	s.purgeTx(ctx, func(tx *Tx, _ bool) error {
		tx.exec(`UPDATE app SET create_time=3`)
		return context.Canceled
	})
	step("after a failed transaction", false)
}
