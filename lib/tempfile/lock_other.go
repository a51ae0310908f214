//go:build !unix

package tempfile

import (
	"os"
	"time"
)

// Without flock, a temporary file is taken for an orphan once it is an hour old: no
// write of a document, and no upload (30 minutes at most), takes that long.
func Lock(*os.File) error { return nil }

// Orphan: see Lock.
func Orphan(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && time.Since(fi.ModTime()) > time.Hour
}
