package cliutil

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteFileAtomic replaces path with data so that a reader sees either the old file or
// the new one, never a part: a temporary file in the same directory is written, synced
// and renamed over path, keeping path's permissions.
//
// When path is a symbolic link (or a chain of them), the file it points to is replaced,
// in that file's directory, and the link stays a link: replacing the link itself would
// leave its target stale.
//
// A process killed while writing leaves its temporary file (".NAME.tmpDIGITS") behind;
// each write removes those of earlier writes of the same file that no live process holds.
// A writer holds a lock (flock) on its temporary file until the rename, and the kernel
// drops the lock when the process dies, so a temporary file that can be locked is an
// orphan, and one that cannot be belongs to a write in progress.
func WriteFileAtomic(path string, data []byte) error {
	return WriteFileAtomicFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileAtomicFunc is WriteFileAtomic of what write writes, through a buffer: the
// content is streamed to the temporary file instead of being held whole in memory
// first. When write fails, path is untouched.
func WriteFileAtomicFunc(path string, write func(io.Writer) error) error {
	target, err := resolveLinks(path)
	if err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(target); err == nil {
		perm = fi.Mode().Perm()
	}
	dir, base := filepath.Dir(target), filepath.Base(target)
	removeOrphanTemps(dir, base)
	for attempt := 0; ; attempt++ {
		err := writeAndRename(dir, base, target, write, perm)
		if !errors.Is(err, errTempRemoved) || attempt >= 99 {
			return err
		}
	}
}

// errTempRemoved: another writer took our fresh temporary file for an orphan in the
// instant before we locked it; write a new one. Each sweep can take at most the files
// created before it, so a writer loses only to a sweep that overlaps its create-to-lock
// window: with 8 writers hammering one file (TestWriteFileAtomicConcurrent) 4 attempts
// were not always enough (1 run in 30), 100 are far more than ever needed.
var errTempRemoved = errors.New("temporary file removed before it was locked")

func writeAndRename(dir, base, target string, write func(io.Writer) error, perm os.FileMode) (err error) {
	tmp, err := os.CreateTemp(dir, tempPrefix(base)+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if lockFile(tmp) != nil {
		return errTempRemoved // another writer's sweep holds it and is removing it
	}
	// Between CreateTemp and the lock, another writer's sweep may have removed the file.
	if fi, serr := os.Stat(tmp.Name()); serr != nil || !os.SameFile(fi, mustStat(tmp)) {
		tmp.Close()
		return errTempRemoved
	}
	bw := bufio.NewWriterSize(tmp, 64<<10)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	// Closing drops the lock; only now, with the name gone, may a sweep see the file.
	if err = tmp.Close(); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func mustStat(f *os.File) fs.FileInfo {
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	return fi
}

func tempPrefix(base string) string { return "." + base + ".tmp" }

// resolveLinks follows path through symbolic links to the file they name (which need
// not exist yet), relative links read from their own directory.
func resolveLinks(path string) (string, error) {
	for hops := 0; ; hops++ {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		if hops >= 40 {
			return "", fmt.Errorf("%s: too many levels of symbolic links", path)
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
}

// removeOrphanTemps removes the temporary files of earlier writes of base in dir that no
// process holds. Failures are ignored: they only leave litter, as before.
func removeOrphanTemps(dir, base string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := tempPrefix(base)
	for _, e := range entries {
		name := e.Name()
		digits, ok := strings.CutPrefix(name, prefix)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, name)
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if tryLockFile(f) {
			os.Remove(p)
		}
		f.Close()
	}
}
