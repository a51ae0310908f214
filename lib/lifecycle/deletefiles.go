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
	// Unlinked files are recorded gone filesPerSync at a time, after one sync (a
	// sync per decision batch was 200 a pass of 100,000 workunits); until then their
	// rows stay pending, and a killed pass's next one finds them gone.
	var gone unlinked
	var after int64
	for !stop() {
		files, err := d.Store.PendingFiles(ctx, after, batch)
		if err != nil {
			return sum, err
		}
		if len(files) == 0 {
			break
		}
		after = files[len(files)-1].ID
		if err := d.delete(ctx, files, &sum, &gone); err != nil {
			return sum, err
		}
	}
	after = 0
	for !stop() {
		now := d.Clock.Now()
		dec, err := d.Store.DecideFileDeletion(ctx, after, batch, now-d.Delay, now)
		if err != nil {
			return sum, err
		}
		sum.Workunits += dec.Workunits
		if err := d.delete(ctx, dec.Files, &sum, &gone); err != nil {
			return sum, err
		}
		if dec.Scanned < batch {
			break
		}
		after = dec.Last
	}
	if !stop() {
		files, err := d.Store.DecideBatchFileDeletion(ctx, d.Clock.Now())
		if err != nil {
			return sum, err
		}
		if err := d.delete(ctx, files, &sum, &gone); err != nil {
			return sum, err
		}
	}
	return sum, d.record(ctx, &gone)
}

// unlinked is what a pass unlinked and has not yet recorded: the deleted_file ids
// and the messages of some.
type unlinked struct {
	ids  []int64
	msgs map[int64]string
}

// delete removes files and adds them to gone, which it records (record) once it
// holds filesPerSync.
func (d *FileDeleter) delete(ctx context.Context, files []store.PendingFile, sum *DeleteSummary, gone *unlinked) error {
	if len(files) == 0 {
		return nil
	}
	roots := map[string]*os.Root{}
	for dir, path := range map[string]string{store.UploadDirectory: d.UploadDir, store.DownloadDirectory: d.DownloadDir} {
		r, err := os.OpenRoot(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // nothing of it to delete
		}
		if err != nil {
			return err
		}
		defer r.Close()
		roots[dir] = r
	}
	var tree *filetree.Tree
	if roots[store.UploadDirectory] != nil {
		t, err := filetree.OpenTree(d.UploadDir)
		if err != nil {
			return err
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
	parallel(len(files), func(i int) {
		r := &done[i]
		r.gone, r.msg, r.refused, r.err = remove(roots[files[i].Directory], tree, files[i])
	})
	if gone.msgs == nil {
		gone.msgs = map[int64]string{}
	}
	for i, f := range files {
		ok, msg, refused, err := done[i].gone, done[i].msg, done[i].refused, done[i].err
		if err != nil {
			return err
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
		if msg != "" {
			gone.msgs[f.ID] = msg
		}
		gone.ids = append(gone.ids, f.ID)
	}
	if len(gone.ids) >= filesPerSync {
		return d.record(ctx, gone)
	}
	return nil
}

// record makes the unlinks in gone durable and then records them, and empties it.
func (d *FileDeleter) record(ctx context.Context, gone *unlinked) error {
	if len(gone.ids) == 0 {
		return nil
	}
	// One syncfs per file system the directories are on (usually one).
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
	if err := d.Store.FilesDeleted(ctx, gone.ids, gone.msgs); err != nil {
		return err
	}
	*gone = unlinked{}
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
