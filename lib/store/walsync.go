package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// walSync makes a SQLite store's commits durable after they released the write lock:
// the durable default (synchronous=FULL in the DSN) opens the connection at
// synchronous=NORMAL, whose commits write the WAL without syncing it, and InTx syncs
// the WAL file itself once the commit has returned, before the caller goes on (a
// scheduler RPC's reply goes out after it, as it did after FULL's commit).
//
// Why (issue 33): under FULL the sync is made inside COMMIT, holding SQLite's one
// write lock and the process's one connection, so every other RPC, and every cron
// job's batch, waited for each commit's disk flush; on a disk that a pass keeps busy
// those flushes are the tail every waiter inherits. Synced outside, the next
// transaction runs during the flush, and one fsync covers every commit made before it
// began (a group commit): callers whose commits an fsync already covered return
// without one.
//
// What FULL promised still holds: a commit InTx returned from is on disk. What
// changes: another connection may read a commit before it is synced (as any reader
// may under NORMAL); that commit is lost in a power cut only together with everything
// after it in the WAL, which is one file written in commit order and recovered as a
// prefix. The WAL's header after a reset is synced by SQLite itself at NORMAL too, and
// a WAL file new since the last sync gets its directory synced once, as SQLite does at
// its first sync of a new WAL.
type walSync struct {
	path    string
	commits atomic.Uint64 // the store's commits whose WAL writes have returned

	mu     sync.Mutex // one fsync at a time; the others wait and mostly find it covered theirs
	synced uint64     // commits known to be on disk
	fsyncs int        // fsyncs made
	f      *os.File   // the WAL file last synced
	fi     fs.FileInfo
}

// newWALSync syncs the WAL of the database at dbPath (made absolute: a process that
// changes its directory later still syncs the right file).
func newWALSync(dbPath string) *walSync {
	if abs, err := filepath.Abs(dbPath); err == nil {
		dbPath = abs
	}
	return &walSync{path: dbPath + "-wal"}
}

// committed records a commit whose WAL writes have returned and makes it durable: an
// fsync of the WAL made after it, this caller's or one another caller began later.
func (w *walSync) committed() error {
	return w.syncTo(w.commits.Add(1))
}

// syncTo returns once the first n commits are on disk.
func (w *walSync) syncTo(n uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.synced >= n {
		return nil
	}
	upTo := w.commits.Load() // each of these wrote the WAL before the fsync below begins
	if err := w.syncFile(); err != nil {
		return fmt.Errorf("syncing %s: %w", w.path, err)
	}
	w.synced = upTo
	return nil
}

// syncFile fsyncs the WAL file now at w.path. No WAL file means every commit was
// checkpointed into the database when the last connection closed, a checkpoint SQLite
// syncs; a WAL file other than the one last synced (deleted and made again) is opened,
// and its directory synced once so that its name survives a power cut.
func (w *walSync) syncFile() error {
	fi, err := os.Stat(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if w.f == nil || !os.SameFile(fi, w.fi) {
		f, err := os.Open(w.path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi, err = f.Stat(); err != nil {
			f.Close()
			return err
		}
		if err := syncDir(filepath.Dir(w.path)); err != nil {
			f.Close()
			return err
		}
		if w.f != nil {
			w.f.Close()
		}
		w.f, w.fi = f, fi
	}
	w.fsyncs++
	return w.f.Sync()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// close syncs the WAL (whatever wrote it: a migration's DDL runs outside InTx) and
// closes the file.
func (w *walSync) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.syncFile()
	w.synced = w.commits.Load()
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	return err
}
