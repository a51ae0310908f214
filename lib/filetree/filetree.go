// Package filetree owns the layout of the project's upload directory: BOINC's
// upload hierarchy, in which a file lives in one of Fanout subdirectories picked by a
// hash of its name, so that no directory holds millions of files. The scheduler's
// upload handler writes there; the assimilator and the file deleter find files there,
// and in the flat directory older bkit servers wrote them to.
package filetree

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"strconv"

	"github.com/bkit/bkit/lib/store"
)

// Fanout is the number of subdirectories (BOINC's default uldl_dir_fanout).
const Fanout = 1024

// Dir is the subdirectory of the upload directory that holds the file name: BOINC's
// dir_hier_path (the hex digits 2 to 8 of the name's MD5, modulo Fanout, in hex), so
// a project moving from BOINC finds its files where BOINC put them.
func Dir(name string) string {
	sum := md5.Sum([]byte(name))
	x, _ := strconv.ParseInt(hex.EncodeToString(sum[:])[1:8], 16, 64)
	return strconv.FormatInt(x%Fanout, 16)
}

// Path is name's place in the tree, relative to the upload directory.
func Path(name string) string { return path.Join(Dir(name), name) }

// Find returns where name is, relative to the root: its place in the tree, or else the
// flat upload directory (older servers wrote there). ok is false when it is in
// neither. The root confines the look-up: a name with a path in it, "..", or a
// symbolic link leading out of the root is not found.
func Find(root *os.Root, name string) (rel string, ok bool, err error) {
	if !Valid(name) {
		return "", false, nil
	}
	for _, p := range []string{Path(name), name} {
		fi, err := root.Lstat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			return p, true, nil
		case err == nil, errors.Is(err, fs.ErrNotExist):
		default:
			return "", false, err
		}
	}
	return "", false, nil
}

// Valid reports whether name can be a file of the tree: a project file name
// (store.ValidName), so never a path, "." or "..", nor a temporary file's name.
func Valid(name string) bool { return store.ValidName(name, store.MaxFileNameLen) }
