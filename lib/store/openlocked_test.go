package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/store"
)

// hold takes the SQLite database at path exclusively, as another process's last
// connection does while it checkpoints and deletes the WAL on close, and lets go
// after d.
func hold(t *testing.T, path string, d time.Duration) {
	t.Helper()
	holder, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_locking_mode=EXCLUSIVE&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	holder.SetMaxOpenConns(1)
	if _, err := holder.Exec(`BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(`UPDATE schema_version SET version = version`); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(d)
		holder.Exec(`COMMIT`)
		holder.Close()
	}()
}

// TestSQLiteWaitsForAHolder: a command started while another process holds the
// database exclusively for a moment (bserver serve's last connection checkpointing
// the WAL and deleting it as it exits) waits for it instead of failing with
// "database is locked" (the README's real-client section, run by CI: `kill %1`, then
// `bserver status` at once).
func TestSQLiteWaitsForAHolder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := store.Open("sqlite:" + path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(ctx, 0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	const held = 300 * time.Millisecond
	check := func(what string, began time.Time, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s while another process held the database for %v: %v", what, held, err)
		} else if waited := time.Since(began); waited < held/2 {
			t.Errorf("%s returned after %v, before the holder let go (%v): the test held nothing", what, waited, held)
		}
	}

	hold(t, path, held)
	began := time.Now()
	s, err = store.Open("sqlite:" + path)
	check("Open", began, err)
	if err != nil {
		return
	}
	defer s.Close()

	// Its connection keeps a shared lock on the file (WAL mode), so no other
	// process takes it exclusively while it is open: its reads and writes meet only
	// other writers, whom begin polls for.
	other, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_locking_mode=EXCLUSIVE&_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`BEGIN EXCLUSIVE`); err == nil {
		other.Exec(`ROLLBACK`)
		t.Error("another process took the file exclusively from an open store")
	} else if !strings.Contains(err.Error(), "locked") {
		t.Errorf("another process's exclusive lock: %v, want locked", err)
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Error(err)
	}
	if _, err := s.AddApp(ctx, "upper", false, 0); err != nil {
		t.Error(err)
	}
}
