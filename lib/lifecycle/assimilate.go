package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bkit/bkit/lib/filetree"
	"github.com/bkit/bkit/lib/store"
	"golang.org/x/sys/unix"
)

// NoBatch is the batch directory of workunits outside locality batches in the --to
// tree; batch names start with a letter or digit, so it names none of them. It is
// cut into directories of NoBatchShard workunits each (NoBatchDir).
const NoBatch = "_nobatch"

// NoBatchShard is how many workunits outside batches share a directory of NoBatch.
// Unshared, every workunit of a project without locality batches went into one
// directory: at a million a day, hundreds of millions of entries within a year, past
// what ext4's directory index holds without its large_dir feature, and every
// listing or backup of it reading them all.
const NoBatchShard = 10000

// NoBatchDir is the directory, under NoBatch, of the workunit with id id outside
// batches: its id divided by NoBatchShard, in six digits at least (so a listing
// sorts them in order up to 10^10 workunits).
func NoBatchDir(id int64) string { return fmt.Sprintf("%06d", id/NoBatchShard) }

// MetaFile is the file in a workunit's directory of the --to tree that describes it:
// a store.AssimilateJob as JSON (outcome, error, canonical result, files). A given-up
// workunit's directory always has one (its error is what the scientist must know);
// a success's only with Assimilator.MetaAlways.
const MetaFile = "workunit.json"

// Assimilator hands workunits over: into a tree of files (To) or to a command
// (Exec), one of them.
type Assimilator struct {
	Store     *store.Store
	UploadDir string
	// To is the root of the tree DIR/APP/BATCH/WORKUNIT/ (BATCH is
	// NoBatch/NoBatchDir outside batches), each workunit's directory holding its
	// canonical output files under their upload names (a given-up workunit's, or a
	// success's without output files, MetaFile). A directory appears whole or not
	// at all. LayoutFlat puts the files in DIR/APP/BATCH/ itself.
	To string
	// Layout is how To holds a workunit: LayoutDirs (the default) or LayoutFlat.
	Layout Layout
	// MetaAlways writes MetaFile into every workunit's directory, successes too. Off
	// by default: a success's file names already say its canonical result and file
	// numbers (RESULT_N), the database and purge's archive keep the rest, and the
	// file was a new inode and data block per workunit, about a third of a pass's
	// kernel time and half its writes to disk (issue 27's 10 s, issue 33's commits
	// waiting behind them).
	MetaAlways bool
	// Exec is a shell command run once per workunit with its description in the
	// environment (see Env); a non-zero exit, or running longer than ExecTimeout,
	// is a failure: the workunit is tried again on a later pass after Backoff.
	Exec        string
	ExecTimeout time.Duration
	Batch       int
	Clock       *Clock
	Owner       string
	// Lease is how long a claim lasts (seconds): longer than a batch's hand-over
	// takes, so a live assimilator never loses its claims.
	Lease float64
	Log   *slog.Logger
	Stop  func() bool
	// Stderr receives the command's output.
	Stderr io.Writer
}

// AssimilateSummary counts what a pass did.
type AssimilateSummary struct {
	Assimilated int  `json:"assimilated"`
	Failed      int  `json:"failed"`
	Stopped     bool `json:"stopped,omitempty"`
}

func (s AssimilateSummary) String() string {
	st := ""
	if s.Stopped {
		st = " (stopped early)"
	}
	return fmt.Sprintf("assimilated %d, failed %d%s", s.Assimilated, s.Failed, st)
}

// Run is one pass over the backlog.
func (a *Assimilator) Run(ctx context.Context) (AssimilateSummary, error) {
	var sum AssimilateSummary
	if err := ReleaseDead(ctx, a.Store, a.Log); err != nil {
		return sum, err
	}
	batch := a.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	// With --to, the directories of about filesPerSync workunits (filesPerSyncBusy
	// while a scheduler writes beside the pass) are written with one pair of syncs (a
	// pair per 500 workunits on a quiet server was 400 syncfs a pass of 100,000, each
	// waiting for the disk); with --exec, the commands of each claim in turn.
	group, busyGroup := 1, 0
	if a.To != "" {
		group, busyGroup = filesPerSync, filesPerSyncBusy
	}
	var after int64
	p := pipeline[store.AssimilateJob, store.AssimilateOutcome]{
		store: a.Store, most: batch, group: group, busyGroup: busyGroup, stop: a.Stop,
		claim: func(ctx context.Context, n int) ([]store.AssimilateJob, bool, error) {
			now := a.Clock.Now()
			jobs, err := a.Store.ClaimAssimilation(ctx, a.Owner, after, n, now, now+a.Lease)
			if len(jobs) > 0 {
				after = jobs[len(jobs)-1].WorkunitID
			}
			return jobs, len(jobs) < n, err
		},
		work: func(jobs []store.AssimilateJob) ([]store.AssimilateOutcome, error) {
			var outs []store.AssimilateOutcome
			if a.To != "" {
				outs = a.toTree(jobs)
			} else {
				outs = a.execAll(ctx, jobs)
			}
			for i := range outs {
				if outs[i].Failed {
					outs[i].RetryAt = a.Clock.Now() + Backoff(jobs[i].Errors+1)
					a.Log.Warn("assimilation failed", "workunit", jobs[i].Workunit, "error", outs[i].Message, "failures", jobs[i].Errors+1)
				}
			}
			return outs, nil
		},
		record: func(ctx context.Context, outs []store.AssimilateOutcome) error {
			done, failed, err := a.Store.FinishAssimilation(ctx, a.Owner, outs, a.Clock.Now())
			sum.Assimilated += done
			sum.Failed += failed
			return err
		},
	}
	stopped, err := p.run(context.WithoutCancel(ctx))
	sum.Stopped = stopped
	return sum, err
}

// toTree writes the jobs into the tree: every one under temporary names (its
// directory, or in LayoutFlat its output files linked into place at once and what
// must be moved after them), then one sync, then each moved into place, then one
// sync, so the database is told of nothing that a crash could still take back.
func (a *Assimilator) toTree(jobs []store.AssimilateJob) []store.AssimilateOutcome {
	outs := make([]store.AssimilateOutcome, len(jobs))
	moves := make([][]move, len(jobs))
	tree, treeErr := filetree.OpenTree(a.UploadDir)
	if treeErr == nil {
		defer tree.Close()
	}
	var parents sync.Map // the directories of app and batch made (or found) so far
	// Each job apart (treeWorkers at once): one job writes only its own temporary
	// names and its own outs[i] and moves[i].
	for i, j := range jobs {
		outs[i].WorkunitID = j.WorkunitID
	}
	parallelN(len(jobs), treeWorkers, sideWork(a.Store, func(i int) {
		var err error
		if a.Layout == LayoutFlat {
			moves[i], err = a.writeFlat(tree, treeErr, &parents, jobs[i])
		} else {
			moves[i], err = a.writeDir(tree, treeErr, &parents, jobs[i])
		}
		if err != nil {
			outs[i].Failed, outs[i].Message = true, err.Error()
		}
	}))
	if err := syncFS(a.To); err != nil {
		for i := range outs {
			outs[i].Failed, outs[i].Message = true, "sync: "+err.Error()
		}
		return outs
	}
	moved := false
	for _, m := range moves {
		moved = moved || len(m) > 0
	}
	if !moved {
		return outs // links only: the sync above made them durable
	}
	parallelN(len(jobs), treeWorkers, sideWork(a.Store, func(i int) {
		for _, m := range moves[i] {
			if err := os.Rename(m.from, m.to); err != nil {
				os.RemoveAll(m.from)
				if _, serr := os.Stat(m.to); serr == nil {
					// An earlier pass (killed, or another assimilator's lapsed claim)
					// wrote the same.
					continue
				}
				outs[i].Failed, outs[i].Message = true, err.Error()
				return
			}
		}
	}))
	if err := syncFS(a.To); err != nil {
		for i := range outs {
			outs[i].Failed, outs[i].Message = true, "sync: "+err.Error()
		}
	}
	return outs
}

// move is a rename toTree makes after its first sync: a temporary name into its place.
type move struct{ from, to string }

// writeDir writes job j's directory under a temporary name (LayoutDirs), to be moved
// into place. It is written even when an earlier pass that died before the database
// heard put it in place: the rename then fails and finds it there (a stat first, in
// a batch directory of 100,000 entries, cost every workunit a look-up for the rare
// rerun's sake).
func (a *Assimilator) writeDir(tree *filetree.Tree, treeErr error, parents *sync.Map, j store.AssimilateJob) ([]move, error) {
	final := a.jobDir(j)
	tmp, err := a.writeTmp(tree, treeErr, parents, j, final)
	if err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		if _, serr := os.Stat(final); serr == nil {
			return nil, nil // in place already: done
		}
		return nil, err
	}
	return []move{{tmp, final}}, nil
}

func (a *Assimilator) jobDir(j store.AssimilateJob) string {
	return filepath.Join(a.batchDir(j), j.Workunit)
}

// batchDir is the directory of job j's app and batch.
func (a *Assimilator) batchDir(j store.AssimilateJob) string {
	if j.Batch == "" {
		return filepath.Join(a.To, j.App, NoBatch, NoBatchDir(j.WorkunitID))
	}
	return filepath.Join(a.To, j.App, j.Batch)
}

// validNames refuses a job whose app, workunit or batch is no name for a directory.
func validNames(j store.AssimilateJob) error {
	if !filetree.Valid(j.App) || !filetree.Valid(j.Workunit) || (j.Batch != "" && !filetree.Valid(j.Batch)) {
		return fmt.Errorf("workunit %q of app %q, batch %q: not a name for a directory", j.Workunit, j.App, j.Batch)
	}
	return nil
}

// madeDir makes directory dir once per pass: parents holds those made (or found)
// so far (one stat each saved per workunit).
func madeDir(parents *sync.Map, dir string) error {
	if _, ok := parents.Load(dir); ok {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	parents.Store(dir, true)
	return nil
}

// writesMeta says whether job j gets MetaFile: a given-up workunit always (its error
// is what the scientist must know), a success without output files too (nothing
// else would say its canonical result), any other success only with MetaAlways.
func (a *Assimilator) writesMeta(j store.AssimilateJob) bool {
	return a.MetaAlways || j.Outcome != store.AssimilateSuccess || len(j.Files) == 0
}

// writeMeta writes job j's description to path.
func writeMeta(path string, j store.AssimilateJob) error {
	meta, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = out.Write(append(meta, '\n'))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeTmp writes a job's directory under a temporary name beside its final place.
func (a *Assimilator) writeTmp(tree *filetree.Tree, treeErr error, parents *sync.Map, j store.AssimilateJob, final string) (string, error) {
	if err := validNames(j); err != nil {
		return "", err
	}
	parent := filepath.Dir(final)
	if err := madeDir(parents, parent); err != nil {
		return "", err
	}
	// One temporary name per workunit: only its claim's holder writes it, so what is
	// there is a killed pass's leftover, found by name. (A name of its own per pass
	// needed a look through the whole directory for leftovers, per workunit: with
	// 100,000 workunits in a batch's directory most of a pass.) Made at once, and
	// removed first only when a leftover is there.
	tmp := filepath.Join(parent, tempPrefix+j.Workunit)
	if err := os.Mkdir(tmp, 0o755); errors.Is(err, fs.ErrExist) {
		if err := os.RemoveAll(tmp); err != nil {
			return "", err
		}
		if err := os.Mkdir(tmp, 0o755); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	if len(j.Files) > 0 && treeErr != nil {
		return tmp, fmt.Errorf("upload directory: %v", treeErr)
	}
	for _, f := range j.Files {
		if err := copyOut(tree, f, filepath.Join(tmp, f.Name)); err != nil {
			return tmp, err
		}
	}
	if !a.writesMeta(j) {
		return tmp, nil
	}
	return tmp, writeMeta(filepath.Join(tmp, MetaFile), j)
}

// copyOut copies output file f from the upload tree to dst, refusing a name that
// would lead out of the tree and a file whose size is not the one recorded. It
// makes a hard link where it can (the upload tree and DIR on one file system): no
// bytes copied and no new inode, which on the shared test machine's ext4 cost some
// 200 µs of kernel time each, most of an assimilation's (issue 27's benchmark). The
// upload is never changed once complete, and file deletion unlinks only its own
// name, so the tree's file stays whole. The file is named relative to its directory
// (tree.Find: a regular file, one name component), so neither the link nor the copy
// leaves the tree.
func copyOut(tree *filetree.Tree, f store.AssimilateFile, dst string) error {
	found, err := findOut(tree, f)
	if err != nil {
		return err
	}
	if linked, _ := linkOut(found, f, dst); linked {
		return nil
	}
	return copyFrom(found, f, dst)
}

// findOut finds output file f in the upload tree.
func findOut(tree *filetree.Tree, f store.AssimilateFile) (filetree.Found, error) {
	found, ok, err := tree.Find(f.Name)
	if err == nil && !ok {
		err = fmt.Errorf("output file %q: not in the upload directory", f.Name)
	}
	return found, err
}

// linkOut hard-links the upload found to dst when it is the size recorded: false
// when it is not, or when the link fails (the error says why: fs.ErrExist for dst
// there already, another file system, ...) and the file must be copied.
func linkOut(found filetree.Found, f store.AssimilateFile, dst string) (bool, error) {
	if float64(found.Size) != f.NBytes {
		return false, nil
	}
	if err := linkFile(found.DirFD, found.Name, unix.AT_FDCWD, dst, 0); err != nil {
		return false, &os.LinkError{Op: "link", Old: found.Rel, New: dst, Err: err}
	}
	return true, nil
}

// linkFile is unix.Linkat; a test makes it fail to take the copy's way.
var linkFile = unix.Linkat

// copyFrom copies the upload found to dst, which it makes or empties first (a
// killed pass's leftover), and checks its size against the one recorded.
func copyFrom(found filetree.Found, f store.AssimilateFile, dst string) error {
	fd, err := unix.Openat(found.DirFD, found.Name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "openat", Path: found.Rel, Err: err}
	}
	in := os.NewFile(uintptr(fd), found.Rel)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("output file %q: %v", f.Name, err)
	}
	if float64(n) != f.NBytes {
		return fmt.Errorf("output file %q: %d bytes, the upload recorded %.0f", f.Name, n, f.NBytes)
	}
	return nil
}

// Env is the environment of the command for job j, besides the assimilator's own:
//
//	BKIT_WORKUNIT         the workunit's name; BKIT_WORKUNIT_ID its id
//	BKIT_APP, BKIT_BATCH  its app, its batch ("" outside batches)
//	BKIT_OUTCOME          success (a canonical result) or error (given up)
//	BKIT_ERROR            why it was given up ("" on success)
//	BKIT_CANONICAL_RESULT the canonical result's name
//	BKIT_FILES            its output files' paths, space-separated, by file number
//	BKIT_OPEN_NAMES       the names the app wrote them under, in the same order
func Env(j store.AssimilateJob, paths []string) []string {
	var open []string
	for _, f := range j.Files {
		n := f.OpenName
		if n == "" {
			n = f.Name
		}
		open = append(open, n)
	}
	return []string{
		"BKIT_WORKUNIT=" + j.Workunit, "BKIT_WORKUNIT_ID=" + strconv.FormatInt(j.WorkunitID, 10),
		"BKIT_APP=" + j.App, "BKIT_BATCH=" + j.Batch, "BKIT_OUTCOME=" + j.Outcome, "BKIT_ERROR=" + j.Error,
		"BKIT_CANONICAL_RESULT=" + j.Canonical, "BKIT_FILES=" + strings.Join(paths, " "), "BKIT_OPEN_NAMES=" + strings.Join(open, " "),
	}
}

// execAll runs the command for each job in turn.
func (a *Assimilator) execAll(ctx context.Context, jobs []store.AssimilateJob) []store.AssimilateOutcome {
	outs := make([]store.AssimilateOutcome, len(jobs))
	root, rootErr := os.OpenRoot(a.UploadDir)
	if rootErr == nil {
		defer root.Close()
	}
	for i, j := range jobs {
		outs[i].WorkunitID = j.WorkunitID
		if err := a.execOne(ctx, root, rootErr, j); err != nil {
			outs[i].Failed, outs[i].Message = true, err.Error()
		}
	}
	return outs
}

func (a *Assimilator) execOne(ctx context.Context, root *os.Root, rootErr error, j store.AssimilateJob) error {
	var paths []string
	for _, f := range j.Files {
		if rootErr != nil {
			return fmt.Errorf("upload directory: %v", rootErr)
		}
		rel, ok, err := filetree.Find(root, f.Name)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("output file %q: not in the upload directory", f.Name)
		}
		abs, err := filepath.Abs(filepath.Join(a.UploadDir, rel))
		if err != nil {
			return err
		}
		paths = append(paths, abs)
	}
	// The command's own context: a signal to the assimilator lets the running
	// command finish (or time out) rather than count it failed.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.ExecTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "/bin/sh", "-c", a.Exec)
	cmd.Env = append(os.Environ(), Env(j, paths)...)
	// Its own process group, so a time-out kills what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var tail tailBuffer
	w := io.Writer(&tail)
	if a.Stderr != nil {
		w = io.MultiWriter(a.Stderr, &tail)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	switch {
	case cctx.Err() != nil:
		return fmt.Errorf("--exec: killed after --exec-timeout %s", a.ExecTimeout)
	case err != nil:
		var ee *exec.ExitError
		msg := err.Error()
		if errors.As(err, &ee) {
			msg = ee.ProcessState.String()
		}
		if t := strings.TrimSpace(tail.String()); t != "" {
			msg += ": " + t
		}
		return fmt.Errorf("--exec: %s", msg)
	}
	return nil
}

// tailBuffer keeps the last 200 bytes written to it, for the failure message.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 200 {
		t.b = t.b[len(t.b)-200:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if i := bytes.LastIndexByte(bytes.TrimRight(t.b, "\n"), '\n'); i >= 0 {
		return string(t.b[i+1:])
	}
	return string(t.b)
}

// Tree lists the regular files under dir (relative, slash-separated), for tests
// and the soak: what an assimilator wrote.
func Tree(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return filepath.SkipDir
			}
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}
