// Package tempfile owns the temporary files a write leaves behind when its process is
// killed: a writer creates its temporary file locked (flock), the kernel drops the lock
// when the process dies, so a temporary file that can be locked is an orphan and one
// that cannot belongs to a write in progress, in this process or another. Atomic
// document writes (lib/cliutil, --in-place) and uploads (lib/server) both sweep theirs
// this way.
package tempfile

import (
	"errors"
	"os"
	"path/filepath"
)

// Create creates a new temporary file in dir (pattern as os.CreateTemp takes it) and
// locks it; the lock holds until the file is closed or the process ends. A concurrent
// sweep (RemoveOrphans) may take a fresh file for an orphan in the instant between
// its creation and its lock; then a new one is made.
func Create(dir, pattern string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, err
		}
		if err := locked(f); err == nil || attempt >= 99 {
			return f, err
		}
		f.Close()
	}
}

// errRemoved: a sweep took the file before it was locked.
var errRemoved = errors.New("temporary file removed before it was locked")

// locked locks f, the file just created, and checks that its name still leads to it.
// Each sweep can take at most the files created before it, so a writer loses only to
// a sweep that overlaps its create-to-lock window: with 8 writers hammering one
// document (cliutil's TestWriteFileAtomicConcurrent) 4 attempts were not always
// enough (1 run in 30), 100 are far more than ever needed.
func locked(f *os.File) error {
	if Lock(f) != nil {
		return errRemoved // a sweep holds it and is removing it
	}
	mine, err := f.Stat()
	if err != nil {
		return err
	}
	if fi, err := os.Stat(f.Name()); err != nil || !os.SameFile(fi, mine) {
		return errRemoved
	}
	return nil
}

// RemoveOrphans removes the regular files in dir whose names match and that no live
// process holds locked, and returns how many it removed. Failures to read or remove
// only leave litter, so they are not errors, except that dir cannot be read.
func RemoveOrphans(dir string, match func(name string) bool) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !match(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if Orphan(f) && os.Remove(p) == nil {
			n++
		}
		f.Close()
	}
	return n, nil
}
