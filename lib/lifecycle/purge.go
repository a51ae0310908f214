package lifecycle

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bkit/bkit/lib/store"
	"golang.org/x/sys/unix"
)

// DefaultPurgeBatch is how many workunits a purge batch holds: with their results
// and files some five thousand rows, deleted in one transaction of tens of
// milliseconds, and few enough archive appends and syncs per pass.
const DefaultPurgeBatch = 1000

// PurgeLock is the file in the archive directory whose lock (flock) a purger holds
// from recording that it writes a batch until the batch's rows are deleted: writers
// append one at a time, and a batch found being written by a purger holding the
// lock was left by one that died.
const PurgeLock = ".purge.lock"

// ArchiveComment is the comment in the gzip header of each member of an archive
// file: the batch it holds (a reader tells each batch once).
const ArchiveComment = "bkit purge batch "

// Purger moves old finished workunits out of the database into the archive (BOINC's
// db_purge): each workunit assimilated, with its files deleted more than OlderThan
// seconds ago, with its results, their files and stderr, its input and output file
// lists, give-ups and deleted-file journal rows.
//
// The archive directory holds one file per day (UTC, of the purge) and table,
// DAY/TABLE.jsonl.gz: JSON Lines, one row an object, gzip. A batch appends one gzip
// member to each of its tables' files (the member's header names the batch), and
// the files are synced before the batch's rows are deleted; a batch whose writer
// died before the deletion is cut back out of the files (their sizes before were
// recorded) and written again, so no row is archived twice or lost.
type Purger struct {
	Store     *store.Store
	Archive   string
	OlderThan float64
	Batch     int
	Clock     *Clock
	Owner     string
	// Lease is how long a claimed batch stays the purger's before another may take
	// it over (seconds).
	Lease float64
	Log   *slog.Logger
	Stop  func() bool

	// afterWrite (tests) runs once a batch's files are synced, before its rows are
	// deleted; an error ends the pass there, as a crash would.
	afterWrite func(batch int64) error
}

// PurgeSummary counts what a pass did.
type PurgeSummary struct {
	Workunits int   `json:"workunits"`
	Results   int   `json:"results"`
	Rows      int   `json:"rows"`  // of every table
	Bytes     int64 `json:"bytes"` // appended to the archive
	Stopped   bool  `json:"stopped,omitempty"`
}

func (s PurgeSummary) String() string {
	st := ""
	if s.Stopped {
		st = " (stopped early)"
	}
	return fmt.Sprintf("purged %d workunits, %d results (%d rows, %d archive bytes)%s", s.Workunits, s.Results, s.Rows, s.Bytes, st)
}

// archive is an open archive directory.
type archive struct {
	dir  string
	root *os.Root
	id   string // host:path, what purge_batch.archive records
	lock *os.File
}

func openArchive(dir string) (*archive, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	lock, err := root.OpenFile(PurgeLock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		root.Close()
		return nil, err
	}
	host, _ := os.Hostname()
	return &archive{dir: abs, root: root, id: host + ":" + abs, lock: lock}, nil
}

func (a *archive) close() {
	a.lock.Close()
	a.root.Close()
}

// Run is one pass: batches other purgers left first, then the backlog.
func (p *Purger) Run(ctx context.Context) (PurgeSummary, error) {
	var sum PurgeSummary
	ctx = context.WithoutCancel(ctx)
	batch := p.Batch
	if batch <= 0 {
		batch = DefaultPurgeBatch
	}
	a, err := openArchive(p.Archive)
	if err != nil {
		return sum, err
	}
	defer a.close()
	if err := releaseDead(ctx, p.Store.PurgeOwners, p.Store.ReleasePurgeOwner, p.Log, "purge_batches"); err != nil {
		return sum, err
	}
	// Batches a killed purger was writing into this archive are cut back and made
	// claimable before the takeovers, so this pass takes them over. (Recovered only in
	// the first batch's write, one found after the takeovers waited for the next pass,
	// and for ever when it held the whole backlog: TestPurgeConcurrentAndKilled left
	// two workunits now and then.)
	if err := p.recover(ctx, a); err != nil {
		return sum, err
	}
	stop := func() bool {
		if p.Stop != nil && p.Stop() {
			sum.Stopped = true
		}
		return sum.Stopped
	}
	for !stop() {
		now := p.Clock.Now()
		id, err := p.Store.TakeOverPurge(ctx, p.Owner, now, now+p.Lease)
		if err != nil || id == 0 {
			if err != nil {
				return sum, err
			}
			break
		}
		if err := p.purge(ctx, a, id, &sum); err != nil {
			return sum, err
		}
	}
	var after store.PurgeKey
	for !stop() {
		now := p.Clock.Now()
		scan, err := p.Store.ClaimPurge(ctx, p.Owner, after, batch, now-p.OlderThan, now, now+p.Lease)
		if err != nil {
			return sum, err
		}
		if scan.Batch != 0 {
			if err := p.purge(ctx, a, scan.Batch, &sum); err != nil {
				return sum, err
			}
		}
		if scan.Scanned < batch {
			break
		}
		after = scan.Last
	}
	return sum, nil
}

// purge archives the batch id and deletes its rows. A batch it fails on before
// writing is released at once, not left claimed until its lease ends.
func (p *Purger) purge(ctx context.Context, a *archive, id int64, sum *PurgeSummary) (err error) {
	writing := false
	defer func() {
		if err != nil && !writing {
			if rerr := p.Store.ReleasePurgeBatch(ctx, id, p.Owner); rerr != nil {
				err = fmt.Errorf("%w; releasing purge batch %d: %v", err, id, rerr)
			}
		}
	}()
	rows, err := p.Store.ReadPurgeBatch(ctx, id)
	if err != nil {
		return err
	}
	if err := unix.Flock(int(a.lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("%s: lock: %w", filepath.Join(a.dir, PurgeLock), err)
	}
	defer unix.Flock(int(a.lock.Fd()), unix.LOCK_UN)
	if err := p.recoverKilled(ctx, a); err != nil {
		return err
	}
	now := p.Clock.Now()
	day := time.Unix(int64(now), 0).UTC().Format(time.DateOnly)
	sizes := map[string]int64{}
	var tables []store.ArchiveTable
	for _, t := range rows.Tables {
		if t.Rows == 0 {
			continue
		}
		name := path.Join(day, t.Table+".jsonl.gz")
		size, err := a.size(name)
		if err != nil {
			return err
		}
		sizes[name] = size
		tables = append(tables, t)
	}
	js, _ := json.Marshal(sizes)
	err = p.Store.WritingPurge(ctx, id, p.Owner, a.id, string(js))
	if errors.Is(err, store.ErrPurgeLost) {
		p.Log.Info("purge batch taken over by another purger", "batch", id)
		return nil
	}
	if err != nil {
		return err
	}
	writing = true
	n, err := a.append(day, id, tables, now)
	if err != nil {
		// Cut back what was written, so the batch can be written again.
		if cerr := a.cutBack(sizes); cerr != nil {
			return fmt.Errorf("%v; cutting the archive back: %v", err, cerr)
		}
		if rerr := p.Store.ResetPurgeBatch(ctx, id); rerr != nil {
			return fmt.Errorf("%v; %v", err, rerr)
		}
		return err
	}
	if p.afterWrite != nil {
		if err := p.afterWrite(id); err != nil {
			return err
		}
	}
	err = p.Store.FinishPurge(ctx, rows, p.Owner)
	if errors.Is(err, store.ErrPurgeChanged) {
		// A late report changed a row since it was read: the archive must not hold
		// the old one. Cut the batch back; a later pass writes it as it is then.
		p.Log.Warn("purge batch changed while archived; it is written again later", "batch", id)
		if err := a.cutBack(sizes); err != nil {
			return err
		}
		return p.Store.ResetPurgeBatch(ctx, id)
	}
	if err != nil {
		return err
	}
	sum.Workunits += len(rows.Workunits)
	sum.Results += len(rows.Results)
	for _, t := range tables {
		sum.Rows += t.Rows
	}
	sum.Bytes += n
	return nil
}

// recover is recoverKilled under the archive's lock.
func (p *Purger) recover(ctx context.Context, a *archive) error {
	if err := unix.Flock(int(a.lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("%s: lock: %w", filepath.Join(a.dir, PurgeLock), err)
	}
	defer unix.Flock(int(a.lock.Fd()), unix.LOCK_UN)
	return p.recoverKilled(ctx, a)
}

// recoverKilled cuts back the archive files of batches whose purger died while
// writing them into this archive, and makes the batches claimable again. Only a
// purger holding the lock calls it: a batch being written is then one whose writer
// is gone (a writer holds the lock until its rows are deleted).
func (p *Purger) recoverKilled(ctx context.Context, a *archive) error {
	ws, err := p.Store.PurgesWriting(ctx, a.id)
	if err != nil {
		return err
	}
	for _, w := range ws {
		var sizes map[string]int64
		if err := json.Unmarshal([]byte(w.Files), &sizes); err != nil {
			return fmt.Errorf("purge batch %d: files: %w", w.ID, err)
		}
		if err := a.cutBack(sizes); err != nil {
			return err
		}
		if err := p.Store.ResetPurgeBatch(ctx, w.ID); err != nil {
			return err
		}
		p.Log.Info("cut back a purge batch a killed purger was writing", "batch", w.ID)
	}
	return nil
}

// size is the size of an archive file (0 when there is none); one that is not a
// gzip file is refused, never appended to.
func (a *archive) size(name string) (int64, error) {
	fi, err := a.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, err
	case !fi.Mode().IsRegular():
		return 0, fmt.Errorf("%s: not a regular file: refusing to append to it", filepath.Join(a.dir, name))
	case fi.Size() == 0:
		return 0, nil
	}
	f, err := a.root.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var magic [2]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || magic != [2]byte{0x1f, 0x8b} {
		return 0, fmt.Errorf("%s: not a gzip file: refusing to append to it", filepath.Join(a.dir, name))
	}
	return fi.Size(), nil
}

// append writes one gzip member per table to DAY/TABLE.jsonl.gz and syncs the files
// and the directories it made; it returns the bytes written.
func (a *archive) append(day string, batch int64, tables []store.ArchiveTable, now float64) (int64, error) {
	newDay := false
	if _, err := a.root.Lstat(day); errors.Is(err, fs.ErrNotExist) {
		if err := a.root.Mkdir(day, 0o755); err != nil {
			return 0, err
		}
		newDay = true
	}
	var total int64
	newFile := false
	// Written one after another, synced all at once: the file system commits its
	// journal once for fsyncs that wait together, where one after another each
	// waited for a commit of its own (8 a batch, 800 a pass of 100,000 workunits).
	var written []*os.File
	defer func() {
		for _, f := range written {
			f.Close()
		}
	}()
	for _, t := range tables {
		name := path.Join(day, t.Table+".jsonl.gz")
		f, err := a.root.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return total, err
		}
		written = append(written, f)
		fi, err := f.Stat()
		if err != nil {
			return total, err
		}
		newFile = newFile || fi.Size() == 0
		cw := &countWriter{w: f}
		zw, _ := gzip.NewWriterLevel(cw, gzip.BestSpeed)
		zw.Header = gzip.Header{Name: t.Table + ".jsonl", Comment: ArchiveComment + strconv.FormatInt(batch, 10), ModTime: time.Unix(int64(now), 0), OS: 3}
		_, err = zw.Write(t.Lines)
		if err == nil {
			err = zw.Close()
		}
		total += cw.n
		if err != nil {
			return total, fmt.Errorf("%s: %w", filepath.Join(a.dir, name), err)
		}
	}
	errs := make([]error, len(written))
	parallel(len(written), func(i int) { errs[i] = written[i].Sync() })
	for i, err := range errs {
		if err != nil {
			return total, fmt.Errorf("%s: %w", written[i].Name(), err)
		}
	}
	// A new file's name, and a new day's, are durable only once their directory is.
	if newFile || newDay {
		if err := a.syncDir(day); err != nil {
			return total, err
		}
	}
	if newDay {
		if err := a.syncDir("."); err != nil {
			return total, err
		}
	}
	return total, nil
}

func (a *archive) syncDir(name string) error {
	d, err := a.root.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// cutBack truncates archive files to their sizes before a batch (removing those the
// batch made) and syncs them.
func (a *archive) cutBack(sizes map[string]int64) error {
	names := make([]string, 0, len(sizes))
	for n := range sizes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		size := sizes[name]
		if !validArchiveName(name) {
			return fmt.Errorf("purge batch names %q, not an archive file", name)
		}
		if size == 0 {
			if err := a.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		f, err := a.root.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		err = f.Truncate(size)
		if err == nil {
			err = f.Sync()
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(a.dir, name), err)
		}
	}
	return nil
}

// validArchiveName tells whether name is DAY/TABLE.jsonl.gz.
func validArchiveName(name string) bool {
	day, file, ok := strings.Cut(name, "/")
	if !ok {
		return false
	}
	if _, err := time.Parse(time.DateOnly, day); err != nil {
		return false
	}
	table, ok := strings.CutSuffix(file, ".jsonl.gz")
	if !ok {
		return false
	}
	for _, t := range store.PurgeTables {
		if t == table {
			return true
		}
	}
	return false
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// ReadArchive reads an archive file (DAY/TABLE.jsonl.gz) member by member and calls
// fn with each row's line (without its newline) and the batch it was purged in. A
// batch found twice, a member that names no batch and a member cut short are errors.
func ReadArchive(r io.Reader, fn func(batch int64, line []byte) error) error {
	br := bufio.NewReader(r)
	if _, err := br.Peek(1); err == io.EOF {
		return nil // an empty file: no member yet
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return err
	}
	seen := map[int64]bool{}
	for member := 1; ; member++ {
		zr.Multistream(false)
		s, ok := strings.CutPrefix(zr.Header.Comment, ArchiveComment)
		batch, err := strconv.ParseInt(s, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("member %d: its header names no purge batch (comment %q)", member, zr.Header.Comment)
		}
		if seen[batch] {
			return fmt.Errorf("member %d: batch %d is in the file twice", member, batch)
		}
		seen[batch] = true
		lr := bufio.NewReader(zr)
		for {
			line, err := lr.ReadBytes('\n')
			if len(line) > 0 {
				if line[len(line)-1] != '\n' {
					return fmt.Errorf("member %d (batch %d): a line without its end", member, batch)
				}
				if err := fn(batch, bytes.TrimSuffix(line, []byte("\n"))); err != nil {
					return err
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("member %d (batch %d): %w", member, batch, err)
			}
		}
		if err := zr.Reset(br); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("after member %d: %w", member, err)
		}
	}
}
