//go:build unix

package tempfile

import (
	"os"
	"syscall"
)

// Lock takes an exclusive lock on f, held until f is closed or the process ends.
func Lock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// Orphan reports whether f could be locked: no live process holds it.
func Orphan(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
