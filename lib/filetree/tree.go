package filetree

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Tree is an upload directory open for a pass's many look-ups: each fan-out
// directory is opened once and its files named relative to it, one system call a
// look-up, where Find walks from the root each time (an open, a stat and a close of
// the fan-out directory per file: most of the system calls of a file deletion or an
// assimilation pass over 100,000 files, issue 27's benchmark). Safe for concurrent use.
type Tree struct {
	top  *os.File // the upload directory itself (flat files)
	mu   sync.Mutex
	dirs map[string]*os.File // fan-out directories opened so far
}

// OpenTree opens the upload directory dir.
func OpenTree(dir string) (*Tree, error) {
	top, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	return &Tree{top: top, dirs: map[string]*os.File{}}, nil
}

// Close closes the directories the tree opened.
func (t *Tree) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.dirs {
		d.Close()
	}
	t.dirs = nil
	return t.top.Close()
}

// dir returns the fan-out directory sub, opened (not following a symbolic link),
// or nil when there is none. A missing one is looked for again next time: an upload
// may make it meanwhile.
func (t *Tree) dir(sub string) (*os.File, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d, ok := t.dirs[sub]; ok {
		return d, nil
	}
	fd, err := unix.Openat(int(t.top.Fd()), sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		return nil, nil
	case err != nil:
		return nil, &os.PathError{Op: "openat", Path: sub, Err: err}
	}
	d := os.NewFile(uintptr(fd), sub)
	t.dirs[sub] = d
	return d, nil
}

// Found is a file a Tree found: the descriptor of the directory that holds it (open
// while the tree is), its name there, its place relative to the upload directory,
// and its size.
type Found struct {
	DirFD int
	Name  string
	Rel   string
	Size  int64
}

// Find is Find's look-up: name in its fan-out directory, or else flat, a regular
// file (not a symbolic link) either way; ok is false when it is in neither. name must
// be a file name (Valid), so it is looked up in the directory and nowhere else.
func (t *Tree) Find(name string) (f Found, ok bool, err error) {
	if !Valid(name) {
		return f, false, nil
	}
	sub := Dir(name)
	d, err := t.dir(sub)
	if err != nil {
		return f, false, err
	}
	for _, c := range []struct {
		dir *os.File
		rel string
	}{{d, Path(name)}, {t.top, name}} {
		if c.dir == nil {
			continue
		}
		var st unix.Stat_t
		err := unix.Fstatat(int(c.dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG:
			return Found{DirFD: int(c.dir.Fd()), Name: name, Rel: c.rel, Size: st.Size}, true, nil
		case err == nil, errors.Is(err, unix.ENOENT):
		default:
			return f, false, &os.PathError{Op: "fstatat", Path: c.rel, Err: err}
		}
	}
	return f, false, nil
}
