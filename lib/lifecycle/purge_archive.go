package lifecycle

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bkit/bkit/lib/store"
)

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

// archived is a batch's rows as gzip members, one per table that has rows, ready to
// append: a member does not depend on where it lands in its file.
type archived struct {
	rows    *store.PurgeRows
	tables  []string          // in store.PurgeTables' order
	members map[string][]byte // by table
	rowsN   int
	bytes   int64
	files   map[string]int64 // the sizes of its files before it, once placed (archive.place)
}

// gzipWriters keeps compressors between members: a new one allocates and clears
// some 800 KiB, which was a tenth of a purge pass's CPU and most of its garbage
// (issue 27's benchmark: flate.NewWriter 1.4 s of 11.7 s).
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// compress makes a batch's members; now is the members' header time.
func compress(rows *store.PurgeRows, now float64) *archived {
	b := &archived{rows: rows, members: map[string][]byte{}}
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	for _, t := range rows.Tables {
		if t.Rows == 0 {
			continue
		}
		var buf bytes.Buffer
		buf.Grow(len(t.Lines)/4 + 64)
		zw.Reset(&buf) // which clears the header
		zw.Header = gzip.Header{Name: t.Table + ".jsonl", Comment: ArchiveComment + strconv.FormatInt(rows.Batch, 10), ModTime: time.Unix(int64(now), 0), OS: 3}
		zw.Write(t.Lines) // a bytes.Buffer does not fail
		zw.Close()
		b.tables = append(b.tables, t.Table)
		b.members[t.Table] = buf.Bytes()
		b.rowsN += t.Rows
		b.bytes += int64(buf.Len())
	}
	return b
}

// place records where each of batches will land in the day's files, appended one
// after another in their order: each one's files are the sizes before it.
func (a *archive) place(day string, batches []*archived) error {
	cur := map[string]int64{}
	for _, b := range batches {
		b.files = map[string]int64{}
		for _, t := range b.tables {
			name := path.Join(day, t+".jsonl.gz")
			size, ok := cur[name]
			if !ok {
				var err error
				if size, err = a.size(name); err != nil {
					return err
				}
			}
			b.files[name] = size
			cur[name] = size + int64(len(b.members[t]))
		}
	}
	return nil
}

// firstSizes is, for each file any of sizes names, the smallest size recorded: the
// file as it was before the first of those batches that appended to it. Cutting back
// to them removes those batches and every later one, whatever order they are found
// in, and a file a batch did not append to is cut back to the first later batch's
// record, never left with that batch's member.
func firstSizes(sizes ...map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, s := range sizes {
		for name, n := range s {
			if m, ok := out[name]; !ok || n < m {
				out[name] = n
			}
		}
	}
	return out
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

// append appends batches' members (placed by place) to DAY/TABLE.jsonl.gz, each
// file's in the batches' order, and syncs the files and the directories it made.
func (a *archive) append(day string, batches []*archived) error {
	newDay := false
	if _, err := a.root.Lstat(day); errors.Is(err, fs.ErrNotExist) {
		if err := a.root.Mkdir(day, 0o755); err != nil {
			return err
		}
		newDay = true
	}
	var names []string
	for _, b := range batches {
		for name := range b.files {
			if !strings.HasPrefix(name, day+"/") {
				return fmt.Errorf("purge batch %d placed in %s, not in %s", b.rows.Batch, name, day)
			}
			names = append(names, name)
		}
	}
	sort.Strings(names)
	names = compactStrings(names)
	newFile := false
	// Written one after another, synced all at once: the file system commits its
	// journal once for fsyncs that wait together, where one after another each
	// waited for a commit of its own.
	var written []*os.File
	defer func() {
		for _, f := range written {
			f.Close()
		}
	}()
	for _, name := range names {
		f, err := a.root.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		written = append(written, f)
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		size := fi.Size()
		newFile = newFile || size == 0
		table := strings.TrimSuffix(path.Base(name), ".jsonl.gz")
		for _, b := range batches {
			at, ok := b.files[name]
			if !ok {
				continue
			}
			// Where place put it, else the record cuts back the wrong bytes.
			if at != size {
				return fmt.Errorf("%s: %d bytes where purge batch %d was placed at %d", filepath.Join(a.dir, name), size, b.rows.Batch, at)
			}
			n, err := f.Write(b.members[table])
			size += int64(n)
			if err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(a.dir, name), err)
			}
		}
	}
	errs := make([]error, len(written))
	parallel(len(written), func(i int) { errs[i] = written[i].Sync() })
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("%s: %w", written[i].Name(), err)
		}
	}
	// A new file's name, and a new day's, are durable only once their directory is.
	if newFile || newDay {
		if err := a.syncDir(day); err != nil {
			return err
		}
	}
	if newDay {
		if err := a.syncDir("."); err != nil {
			return err
		}
	}
	return nil
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func (a *archive) syncDir(name string) error {
	d, err := a.root.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// cutBack truncates archive files to the sizes they had before a batch (removing
// those of size 0) and syncs them. A file already shorter is left as it is: a
// truncation to a larger size would append zeros, which no gzip reader gets past (a
// file cut back further by an earlier, interrupted cut).
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
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err == nil && fi.Size() > size {
			err = f.Truncate(size)
		}
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
