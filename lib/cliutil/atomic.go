package cliutil

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bkit/bkit/lib/tempfile"
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
	return writeAndRename(dir, base, target, write, perm)
}

func writeAndRename(dir, base, target string, write func(io.Writer) error, perm os.FileMode) (err error) {
	tmp, err := tempfile.Create(dir, tempPrefix(base)+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
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
	prefix := tempPrefix(base)
	tempfile.RemoveOrphans(dir, func(name string) bool {
		digits, ok := strings.CutPrefix(name, prefix)
		return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
	})
}
