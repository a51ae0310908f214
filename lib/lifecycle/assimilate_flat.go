package lifecycle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/bkit/bkit/lib/filetree"
	"github.com/bkit/bkit/lib/store"
)

// Layout is how the --to tree holds a workunit.
type Layout int

const (
	// LayoutDirs gives each workunit a directory, DIR/APP/BATCH/WORKUNIT/, holding its
	// output files (or MetaFile), written under a temporary name and renamed: it
	// appears whole or not at all.
	LayoutDirs Layout = iota
	// LayoutFlat puts a workunit's output files in its batch's directory,
	// DIR/APP/BATCH/, under their upload names (RESULT_N: each begins with the
	// workunit's name, so none is another's), each hard-linked into place and so
	// appearing whole; a description goes beside them as WORKUNIT.json, moved into
	// place only after the files are on disk (with MetaAlways, the sign that a
	// workunit of several files is all there). BOINC's sample assimilator's layout.
	// Without a directory per workunit a pass makes no inode and no directory block
	// per workunit: on ext4 a directory was about 40 % of assimilation's CPU time, and
	// its journal commits what a scheduler RPC's commit on the same disk waits behind
	// (issue 33; docs/decisions.md, "A flat --to tree").
	LayoutFlat
)

// ParseLayout reads a layout's name: dirs or flat.
func ParseLayout(name string) (Layout, error) {
	switch name {
	case "dirs":
		return LayoutDirs, nil
	case "flat":
		return LayoutFlat, nil
	}
	return 0, fmt.Errorf("%q: want dirs or flat", name)
}

// tempPrefix starts the temporary names in the --to tree (never a workunit's or an
// output file's name: those start with a letter or a digit).
const tempPrefix = ".tmp-"

// metaName is job j's description's name in its batch's directory (LayoutFlat).
func metaName(j store.AssimilateJob) string { return j.Workunit + ".json" }

// writeFlat puts job j into its batch's directory (LayoutFlat): each output file
// linked into place at once, or, where it cannot be linked (another file system),
// copied under a temporary name; and its description, where it has one, under a
// temporary name. It returns what must be moved into place after the sync. A file in
// place already is an earlier pass's (killed before the database heard, or another
// assimilator's lapsed claim): the same file, since its name is its result's. On an
// error nothing temporary is left; what was linked stays, and the next pass finds it.
func (a *Assimilator) writeFlat(tree *filetree.Tree, treeErr error, parents *sync.Map, j store.AssimilateJob) (moves []move, err error) {
	if err := validNames(j); err != nil {
		return nil, err
	}
	dir := a.batchDir(j)
	if err := madeDir(parents, dir); err != nil {
		return nil, err
	}
	if len(j.Files) > 0 && treeErr != nil {
		return nil, fmt.Errorf("upload directory: %v", treeErr)
	}
	defer func() {
		if err != nil {
			for _, m := range moves {
				os.Remove(m.from)
			}
			moves = nil
		}
	}()
	for _, f := range j.Files {
		found, err := findOut(tree, f)
		if err != nil {
			return moves, err
		}
		final := filepath.Join(dir, f.Name)
		linked, lerr := linkOut(found, f, final)
		if linked || errors.Is(lerr, fs.ErrExist) {
			continue
		}
		m := move{filepath.Join(dir, tempPrefix+f.Name), final}
		moves = append(moves, m)
		if err := copyFrom(found, f, m.from); err != nil {
			return moves, err
		}
	}
	if a.writesMeta(j) {
		m := move{filepath.Join(dir, tempPrefix+metaName(j)), filepath.Join(dir, metaName(j))}
		moves = append(moves, m)
		if err := writeMeta(m.from, j); err != nil {
			return moves, err
		}
	}
	return moves, nil
}
