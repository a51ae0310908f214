package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestWALSync: a Store opened at the durable default commits at synchronous=NORMAL
// and syncs the WAL itself: when InTx returns, every commit counted so far is covered
// by an fsync (one writer: each commit its own); commits made at once may share one
// (a group commit). Durability still says durable. Fails if InTx returns before the
// sync.
func TestWALSync(t *testing.T) {
	ctx := context.Background()
	s, err := Open("sqlite:" + filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w := s.wal.Load()
	if w == nil {
		t.Fatal("the durable default does not sync its commits itself")
	}
	var level int
	if err := s.DB.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&level); err != nil || level != 1 {
		t.Fatalf("connection's synchronous %d (%v), want 1 (NORMAL): the sync is the Store's", level, err)
	}
	if durable, setting, err := s.Durability(ctx); err != nil || !durable {
		t.Fatalf("Durability: %v %q %v, want durable", durable, setting, err)
	}
	insert := func(name string) error {
		return s.InTx(ctx, func(tx *Tx) error {
			_, err := tx.exec(`INSERT INTO app (name) VALUES (?)`, name)
			return err
		})
	}
	state := func() (commits, synced uint64, fsyncs int) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.commits.Load(), w.synced, w.fsyncs
	}
	for i := range 20 {
		c0, _, f0 := state()
		if err := insert(fmt.Sprint("one-", i)); err != nil {
			t.Fatal(err)
		}
		if c, synced, f := state(); c != c0+1 || synced != c || f != f0+1 {
			t.Fatalf("one writer, commit %d: commits %d -> %d, synced %d, fsyncs %d -> %d; want one more of each, all synced",
				i, c0, c, synced, f0, f)
		}
	}
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				c0, _, _ := state()
				if err := insert(fmt.Sprint(g, "-", i)); err != nil {
					errs <- err
					return
				}
				if _, synced, _ := state(); synced < c0+1 {
					errs <- fmt.Errorf("writer %d: InTx returned with %d synced, before this commit (after %d)", g, synced, c0)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c, synced, f := state()
	if synced != c {
		t.Fatalf("%d commits, %d synced", c, synced)
	}
	t.Logf("%d writers at once: %d commits, %d fsyncs", writers, writers*each, f-20)
}

// TestWALSyncSettings: only the durable default syncs after the lock: NORMAL and
// EXTRA DSNs are SQLite's own, and a cron job's Store (BatchJob) stops syncing.
func TestWALSyncSettings(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		dsn   string
		level int
		wal   bool
	}{
		{"sqlite:" + filepath.Join(dir, "a.sqlite"), 1, true},
		{"sqlite:" + filepath.Join(dir, "b.sqlite") + "?synchronous=full", 1, true},
		{"sqlite:" + filepath.Join(dir, "c.sqlite") + "?synchronous=normal", 1, false},
		{"sqlite:" + filepath.Join(dir, "d.sqlite") + "?synchronous=extra", 3, false},
	} {
		s, err := Open(tc.dsn)
		if err != nil {
			t.Fatal(err)
		}
		var level int
		if err := s.DB.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&level); err != nil {
			t.Fatal(err)
		}
		if level != tc.level || (s.wal.Load() != nil) != tc.wal {
			t.Errorf("%s: synchronous %d, synced by the Store %v; want %d, %v", tc.dsn, level, s.wal.Load() != nil, tc.level, tc.wal)
		}
		if tc.wal {
			if err := s.BatchJob(ctx); err != nil {
				t.Fatal(err)
			}
			if durable, setting, _ := s.Durability(ctx); durable || s.wal.Load() != nil {
				t.Errorf("%s: a cron job's Store is durable (%s), want its commits unsynced", tc.dsn, setting)
			}
		}
		s.Close()
	}
}

// TestWALSyncNewFile: a WAL file deleted and made again (the last connection closed)
// is opened anew, not the old one synced; no WAL file is nothing to sync.
func TestWALSyncNewFile(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db.sqlite")
	w := newWALSync(db)
	if err := w.syncTo(1); err != nil {
		t.Fatalf("no WAL file: %v", err)
	}
	if err := os.WriteFile(w.path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.commits.Store(2)
	if err := w.syncTo(2); err != nil {
		t.Fatal(err)
	}
	first := w.fi
	os.Remove(w.path)
	if err := os.WriteFile(w.path, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.commits.Store(3)
	if err := w.syncTo(3); err != nil {
		t.Fatal(err)
	}
	now, err := os.Stat(w.path)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(first, w.fi) || !os.SameFile(now, w.fi) {
		t.Fatal("the WAL made again was not opened anew")
	}
	if w.synced != 3 || w.fsyncs != 2 {
		t.Fatalf("synced %d with %d fsyncs, want 3 with 2", w.synced, w.fsyncs)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
}
