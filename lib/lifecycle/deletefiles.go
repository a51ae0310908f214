package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"syscall"

	"github.com/bkit/bkit/lib/filetree"
	"github.com/bkit/bkit/lib/store"
	"golang.org/x/sys/unix"
)

// FileDeleter deletes the files of assimilated workunits (BOINC's file_deleter):
// their results' output files from the upload tree and the input files no other
// workunit reads from the download directory, once Delay has passed since
// assimilation and no result of theirs is unsent, in progress or waiting for
// validation; and the files of finished locality batches. Each decision is recorded
// (deleted_file) before the file goes, so a killed deleter's decisions are carried
// out by the next pass.
type FileDeleter struct {
	Store       *store.Store
	UploadDir   string
	DownloadDir string
	Delay       float64
	Batch       int
	Clock       *Clock
	Log         *slog.Logger
	Stop        func() bool
}

// DeleteSummary counts what a pass did.
type DeleteSummary struct {
	Workunits int     `json:"workunits"` // marked file-deleted
	Files     int     `json:"files"`     // deleted (or found gone already)
	Bytes     float64 `json:"bytes"`
	Refused   int     `json:"refused"` // names that would lead out of their directory
	Stopped   bool    `json:"stopped,omitempty"`
}

func (s DeleteSummary) String() string {
	st := ""
	if s.Stopped {
		st = " (stopped early)"
	}
	return fmt.Sprintf("workunits %d, files deleted %d (%.0f bytes), refused %d%s", s.Workunits, s.Files, s.Bytes, s.Refused, st)
}

// Run is one pass: the pending deletions first, then new decisions batch by batch,
// then the batches' files.
func (d *FileDeleter) Run(ctx context.Context) (DeleteSummary, error) {
	var sum DeleteSummary
	ctx = context.WithoutCancel(ctx)
	batch := d.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	stop := func() bool {
		if d.Stop != nil && d.Stop() {
			sum.Stopped = true
		}
		return sum.Stopped
	}
	// Each phase a pipeline: decisions (short transactions) beside the unlinks, which
	// are recorded gone filesPerSync at a time (filesPerSyncBusy while a scheduler
	// writes) after one sync (a sync per decision batch was 200 a pass of 100,000
	// workunits); until then their rows stay pending, and a killed pass's next one
	// finds them gone.
	phase := func(claim func(ctx context.Context, n int) ([]store.PendingFile, bool, error)) error {
		p := pipeline[store.PendingFile, goneFile]{
			store: d.Store, most: batch, group: filesPerSync, busyGroup: filesPerSyncBusy, stop: stop, claim: claim,
			work:   func(files []store.PendingFile) ([]goneFile, error) { return d.delete(files, &sum) },
			record: d.record,
		}
		_, err := p.run(ctx)
		return err
	}
	var after int64
	if err := phase(func(ctx context.Context, n int) ([]store.PendingFile, bool, error) {
		files, err := d.Store.PendingFiles(ctx, after, n)
		if len(files) > 0 {
			after = files[len(files)-1].ID
		}
		return files, len(files) < n, err
	}); err != nil || sum.Stopped {
		return sum, err
	}
	after = 0
	if err := phase(func(ctx context.Context, n int) ([]store.PendingFile, bool, error) {
		now := d.Clock.Now()
		dec, err := d.Store.DecideFileDeletion(ctx, after, n, now-d.Delay, now)
		if err != nil {
			return nil, false, err
		}
		sum.Workunits += dec.Workunits
		after = dec.Last
		return dec.Files, dec.Scanned < n, nil
	}); err != nil || sum.Stopped {
		return sum, err
	}
	files, err := d.Store.DecideBatchFileDeletion(ctx, d.Clock.Now())
	if err != nil || len(files) == 0 {
		return sum, err
	}
	gone, err := d.delete(files, &sum)
	if err != nil {
		return sum, err
	}
	return sum, d.record(ctx, gone)
}

// record records files gone (unlinked, found gone or refused) in one transaction.
func (d *FileDeleter) record(ctx context.Context, gone []goneFile) error {
	ids := make([]int64, len(gone))
	msgs := map[int64]string{}
	for i, g := range gone {
		ids[i] = g.id
		if g.msg != "" {
			msgs[g.id] = g.msg
		}
	}
	return d.Store.FilesDeleted(ctx, ids, msgs)
}

// goneFile is a file a pass unlinked (or found gone, or refused), not yet recorded:
// its deleted_file id, and what was odd about it ("" when nothing).
type goneFile struct {
	id  int64
	msg string
}

// delete removes files, counts them in sum, and makes the unlinks durable (one sync
// per file system the directories are on): what it returns may then be recorded
// gone.
func (d *FileDeleter) delete(files []store.PendingFile, sum *DeleteSummary) ([]goneFile, error) {
	if len(files) == 0 {
		return nil, nil
	}
	roots := map[string]*os.Root{}
	for dir, path := range map[string]string{store.UploadDirectory: d.UploadDir, store.DownloadDirectory: d.DownloadDir} {
		r, err := os.OpenRoot(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // nothing of it to delete
		}
		if err != nil {
			return nil, err
		}
		defer r.Close()
		roots[dir] = r
	}
	var tree *filetree.Tree
	if roots[store.UploadDirectory] != nil {
		t, err := filetree.OpenTree(d.UploadDir)
		if err != nil {
			return nil, err
		}
		defer t.Close()
		tree = t
	}
	type removal struct {
		gone, refused bool
		msg           string
		err           error
	}
	done := make([]removal, len(files))
	parallel(len(files), sideWork(d.Store, func(i int) {
		r := &done[i]
		r.gone, r.msg, r.refused, r.err = remove(roots[files[i].Directory], tree, files[i])
	}))
	gone := make([]goneFile, 0, len(files))
	for i, f := range files {
		ok, msg, refused, err := done[i].gone, done[i].msg, done[i].refused, done[i].err
		if err != nil {
			return nil, err
		}
		switch {
		case refused:
			sum.Refused++
			d.Log.Warn("file deletion refused", "directory", f.Directory, "name", f.Name, "reason", msg)
		case ok:
			// Counted by whoever unlinked it: two passes at once count each file once.
			sum.Files++
			sum.Bytes += f.NBytes
		}
		gone = append(gone, goneFile{f.ID, msg})
	}
	return gone, d.sync()
}

// sync makes the unlinks so far durable: one syncfs per file system the
// directories are on (usually one).
func (d *FileDeleter) sync() error {
	synced := map[uint64]bool{}
	for _, dir := range []string{d.UploadDir, d.DownloadDir} {
		fi, err := os.Stat(dir)
		if err != nil {
			continue
		}
		dev := uint64(0)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			dev = uint64(st.Dev)
		}
		if synced[dev] {
			continue
		}
		synced[dev] = true
		if err := syncFS(dir); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes one file from its directory, never outside it: a name that is not
// a file name (a path, "..") or not a regular file is refused, and an upload is
// looked for in the tree and then flat. A file already gone (a killed pass deleted
// it and died before recording it) is no error and no message, so a rerun records
// what an undisturbed pass does. An upload is found in tree (the upload directory's,
// open for the pass) and unlinked in its directory: two system calls a file.
func remove(root *os.Root, tree *filetree.Tree, f store.PendingFile) (gone bool, msg string, refused bool, err error) {
	if !filetree.Valid(f.Name) {
		return false, "refused: not a file name of the " + f.Directory + " directory", true, nil
	}
	if root == nil {
		return false, "", false, nil // no such directory: nothing to delete
	}
	if f.Directory == store.UploadDirectory {
		// Found only as a regular file, in its directory: the name is one
		// component, so the unlink stays there.
		found, ok, err := tree.Find(f.Name)
		if err != nil {
			return false, "", false, err
		}
		if !ok {
			return false, "", false, nil // already gone (a killed pass's unlink)
		}
		err = unix.Unlinkat(found.DirFD, found.Name, 0)
		if errors.Is(err, unix.ENOENT) {
			return false, "", false, nil
		}
		if err != nil {
			return false, "", false, &os.PathError{Op: "unlinkat", Path: found.Rel, Err: err}
		}
		return true, "", false, nil
	}
	rel := f.Name
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, "", false, nil
	case err != nil:
		return false, "", false, err
	case !fi.Mode().IsRegular():
		return false, "refused: not a regular file", true, nil
	}
	err = root.Remove(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return false, "", false, nil
	}
	return err == nil, "", false, err
}
