package lifecycle_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/lifecycle"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

const (
	deleteAt = "1200000" // when the files are deleted
	purgeAt  = "1400000" // when purge runs: 2.3 days later
	purgeAge = "1d"      // --older-than that takes everything
)

// purgeReady makes every workunit of p ready to purge at purgeAt: its results over,
// assimilated, its files deleted at deleteAt.
func purgeReady(t *testing.T, p *project) {
	t.Helper()
	p.exec(t, `UPDATE result SET server_state=5, outcome=1 WHERE server_state IN (2, 4)`)
	p.exec(t, `UPDATE workunit SET canonical_resultid=2*id-1 WHERE canonical_resultid=0 AND error_mask=0`)
	p.must(t, "--now", passAt, "assimilate", "--exec", "true", "--once")
	p.must(t, "--now", deleteAt, "delete-files", "--once", "--delay", "0")
}

// archived is what an archive directory holds, by table: each row's line, sorted (the
// batches differ between runs; the rows must not).
// undisturbedArchive is what one undisturbed purge pass (batches of 3) archives of a
// project of n ready workunits on dsn: what a disturbed pass's archive must equal.
func undisturbedArchive(t *testing.T, dsn string, n int) map[string][]string {
	ref := newProject(t, dsn, n)
	purgeReady(t, ref)
	ref.must(t, "--now", purgeAt, "purge", "--older-than", purgeAge, "--archive", filepath.Join(ref.dir, "archive"), "--once", "--batch", "3")
	return archived(t, filepath.Join(ref.dir, "archive"))
}

func archived(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.jsonl.gz"))
	for _, f := range files {
		table := strings.TrimSuffix(filepath.Base(f), ".jsonl.gz")
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		err = lifecycle.ReadArchive(fh, func(batch int64, line []byte) error {
			out[table] = append(out[table], wallFree(t, table, line))
			return nil
		})
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	for _, lines := range out {
		sort.Strings(lines)
	}
	return out
}

// forEachEngine runs fn as a parallel subtest on each engine.
func forEachEngine(t *testing.T, fn func(t *testing.T, engine, dsn string)) {
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			fn(t, e.Name, e.DSN)
		})
	}
}

// wallTimes are the columns that differ between two runs alike: those a pass sets
// from its clock, which runs on with the wall clock from --now, and the purge batch's
// id, which MariaDB's AUTO_INCREMENT takes even for an insert a killed process never
// committed (a rerun's batches are numbered past the gap).
var wallTimes = map[string][]string{
	"workunit":     {"assimilate_time", "file_delete_time", "transition_time", "purge_batch"},
	"deleted_file": {"create_time"},
}

// wallFree is an archived line with those columns zeroed (its keys sorted).
func wallFree(t *testing.T, table string, line []byte) string {
	cols := wallTimes[table]
	if len(cols) == 0 {
		return string(line)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%s: %s: %v", table, line, err)
	}
	for _, c := range cols {
		m[c] = json.RawMessage("0")
	}
	b, _ := json.Marshal(m)
	return string(b)
}

var purgedLine = regexp.MustCompile(`purged (\d+) workunits`)

func purgedCount(out string) int {
	if m := purgedLine.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return -1
}

// count is a query's single number.
func (p *project) count(t *testing.T, q string) int {
	t.Helper()
	var n int
	if err := p.s.DB.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func TestPurge(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, engine, dsn string) {
		p := newProject(t, dsn, 40)
		purgeReady(t, p)
		arch := filepath.Join(p.dir, "archive")
		before := map[string]int{}
		for _, table := range store.PurgeTables {
			before[table] = p.count(t, `SELECT COUNT(*) FROM `+table)
		}
		if before["deleted_file"] == 0 || before["wu_giveup"] == 0 || before["result_file"] == 0 {
			t.Fatalf("the fixture lacks rows to archive: %v", before)
		}
		// Too young: nothing goes.
		if out := p.must(t, "--now", purgeAt, "purge", "--older-than", "10d", "--archive", arch, "--once"); purgedCount(out) != 0 {
			t.Fatalf("purged young workunits: %s", out)
		}
		out := p.must(t, "--now", purgeAt, "purge", "--older-than", purgeAge, "--archive", arch, "--once", "--batch", "7")
		if purgedCount(out) != 40 || !strings.Contains(out, ", 80 results") {
			t.Fatalf("purge: %s", out)
		}
		got := archived(t, arch)
		for _, table := range store.PurgeTables {
			rest := p.count(t, `SELECT COUNT(*) FROM `+table)
			if table == "deleted_file" {
				rest = p.count(t, `SELECT COUNT(*) FROM deleted_file WHERE workunitid<>0`)
			}
			if rest != 0 || len(got[table]) != before[table] {
				t.Errorf("%s: %d rows before, %d left, %d archived", table, before[table], rest, len(got[table]))
			}
		}
		if n := p.count(t, `SELECT COUNT(*) FROM purge_batch`); n != 0 {
			t.Errorf("%d purge batches left", n)
		}
		// One file per table and day, named by the purge's day (UTC).
		if _, err := os.Stat(filepath.Join(arch, "1970-01-17", "workunit.jsonl.gz")); err != nil {
			t.Error(err)
		}
		// Rows are objects with the columns by name, numbers as numbers.
		var r struct {
			ID         int64   `json:"id"`
			Name       string  `json:"name"`
			WorkunitID int64   `json:"workunitid"`
			SentTime   float64 `json:"sent_time"`
		}
		if err := json.Unmarshal([]byte(got["result"][0]), &r); err != nil || r.ID == 0 || r.WorkunitID == 0 || !strings.HasPrefix(r.Name, "sim_") {
			t.Errorf("result line %s: %+v, %v", got["result"][0], r, err)
		}
		if out := p.must(t, "--now", purgeAt, "purge", "--older-than", purgeAge, "--archive", arch, "--once"); purgedCount(out) != 0 {
			t.Errorf("second pass: %s", out)
		}
		if diff := cmp.Diff(got, archived(t, arch)); diff != "" {
			t.Errorf("second pass changed the archive:\n%s", diff)
		}
	})
}

// TestPurgeWaits: a workunit waits while a deletion of its files is still to be
// carried out, while it waits for validation, and, in a locality batch, until its
// cursor has moved past its job.
func TestPurgeWaits(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, engine, dsn string) {
		p := newProject(t, dsn, 8)
		purgeReady(t, p)
		p.exec(t, `UPDATE deleted_file SET done=0 WHERE workunitid=1`)
		p.exec(t, `UPDATE workunit SET need_validate=1 WHERE id=2`)
		p.exec(t, `INSERT INTO batch (create_time, appid, name) VALUES (1, 1, 'b')`)
		p.exec(t, `INSERT INTO locality_cursor (batch_id, first_job_num, last_job_num, first_unfinished_job_num) VALUES (1, 0, 9, 4)`)
		p.exec(t, `UPDATE workunit SET batch_id=1, cursor_id=1, job_num=id WHERE id IN (3, 4, 5)`)
		p.exec(t, `UPDATE workunit SET transition_time=0 WHERE id IN (3, 4)`)
		p.exec(t, `UPDATE workunit SET transition_time=7 WHERE id=5`)
		// 3: behind the front (job 3 < 4): goes. 4: at the front: waits. 5: behind,
		// but the transitioner has not counted it yet: waits.
		arch := filepath.Join(p.dir, "archive")
		out := p.must(t, "--now", purgeAt, "purge", "--older-than", purgeAge, "--archive", arch, "--once")
		if purgedCount(out) != 4 {
			t.Errorf("purge: %s", out)
		}
		if diff := cmp.Diff([]string{"1", "2", "4", "5"}, p.rows(t, `SELECT id FROM workunit`)); diff != "" {
			t.Errorf("workunits left (-want +got):\n%s", diff)
		}
		if out := p.must(t, "status"); !strings.Contains(out, "purge: 4 waiting, 0 batches in progress (0 being written)") {
			t.Errorf("status: %s", out)
		}
	})
}

// purger is an in-process purger of p's database into arch at purgeAt.
func purger(p *project, arch string) *lifecycle.Purger {
	now, _ := strconv.ParseFloat(purgeAt, 64)
	return &lifecycle.Purger{Store: p.s, Archive: arch, OlderThan: 86400, Batch: 3, Clock: lifecycle.NewClock(now),
		Owner: lifecycle.Owner(), Lease: 600, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

var errCrash = errors.New("crash")

// crashAtWrite makes pu's nth archive write of a pass (from 1) end the pass there, as
// a crash between a batch's archive sync and its rows' deletion would.
func crashAtWrite(pu *lifecycle.Purger, n int) {
	k := 0
	lifecycle.SetAfterWrite(pu, func(int64) error {
		if k++; k == n {
			return errCrash
		}
		return nil
	})
}

// TestPurgeKilledAfterWrite: a purger that dies between writing a batch and deleting
// its rows leaves the batch in the archive; the next pass cuts it back and writes it
// again, so the archive holds every row once, as an undisturbed pass's does.
func TestPurgeKilledAfterWrite(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, engine, dsn string) {
		want := undisturbedArchive(t, dsn, 12)

		p := newProject(t, freshDSN(t, engine), 12)
		purgeReady(t, p)
		arch := filepath.Join(p.dir, "archive")
		for _, crashAt := range []int{1, 2} {
			pu := purger(p, arch)
			crashAtWrite(pu, crashAt)
			if _, err := pu.Run(context.Background()); !errors.Is(err, errCrash) {
				t.Fatalf("pass %d: %v", crashAt, err)
			}
			// The batch is in the archive and still in the database.
			if out := p.must(t, "status"); !strings.Contains(out, "(1 being written)") {
				t.Fatalf("status after the crash: %s", out)
			}
		}
		out := p.must(t, "--now", purgeAt, "purge", "--older-than", purgeAge, "--archive", arch, "--once", "--batch", "3")
		if purgedCount(out) != 12-3 {
			t.Errorf("rerun: %s", out)
		}
		if diff := cmp.Diff(want, archived(t, arch)); diff != "" {
			t.Errorf("archive (-undisturbed +crashed and rerun):\n%s", diff)
		}
		if n := p.count(t, `SELECT COUNT(*) FROM workunit`) + p.count(t, `SELECT COUNT(*) FROM purge_batch`); n != 0 {
			t.Errorf("%d workunits and batches left", n)
		}
	})
}

// TestPurgeKilledWritingAll: a purger that dies writing the only batch of the
// backlog leaves nothing for the next pass's walk; the next pass still recovers the
// batch and purges it (it waited for a pass that had another batch to write first).
func TestPurgeKilledWritingAll(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, engine, dsn string) {
		p := newProject(t, dsn, 3)
		purgeReady(t, p)
		arch := filepath.Join(p.dir, "archive")
		pu := purger(p, arch)
		lifecycle.SetAfterWrite(pu, func(int64) error { return errCrash })
		if _, err := pu.Run(context.Background()); !errors.Is(err, errCrash) {
			t.Fatalf("crashed pass: %v", err)
		}
		out := p.must(t, "--now", purgeAt, "purge", "--older-than", purgeAge, "--archive", arch, "--once", "--batch", "3")
		if purgedCount(out) != 3 {
			t.Errorf("rerun: %s", out)
		}
		if n := p.count(t, `SELECT COUNT(*) FROM workunit`) + p.count(t, `SELECT COUNT(*) FROM purge_batch`); n != 0 {
			t.Errorf("%d workunits and batches left", n)
		}
	})
}

// TestPurgeChangedWhileArchived: a row that changes after its batch was read (a late
// report) is not deleted as it was archived: the batch is cut back and written again
// as it is. The change may be as small as a number's last bit (the second read
// compares the engine's quoted values, which must be exact).
func TestPurgeChangedWhileArchived(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, before, after, want string }{
		{"cpu_time", `UPDATE result SET cpu_time=1 WHERE id=1`, `UPDATE result SET cpu_time=4242 WHERE id=1`, `"cpu_time":4242`},
		{"last_bit", `UPDATE result SET cpu_time=0.3 WHERE id=1`, `UPDATE result SET cpu_time=0.30000000000000004 WHERE id=1`, `"cpu_time":0.30000000000000004`},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, engine, dsn string) {
				p := newProject(t, dsn, 3)
				purgeReady(t, p)
				p.exec(t, c.before)
				arch := filepath.Join(p.dir, "archive")
				first, second := purgeChangedOnce(t, p, arch, func() { p.exec(t, c.after) })
				if first.Workunits != 0 {
					t.Fatalf("first pass: %v", first)
				}
				if second.Workunits != 3 {
					t.Fatalf("second pass: %v", second)
				}
				got := archived(t, arch)
				if !resultsHold(got, 6, c.want) {
					t.Errorf("results archived: %q", got["result"])
				}
			})
		})
	}
}

// resultsHold says whether the archive's result lines (archived) are n, one of them
// holding want.
func resultsHold(got map[string][]string, n int, want string) bool {
	return len(got["result"]) == n && strings.Contains(strings.Join(got["result"], "\n"), want)
}

// purgeChangedOnce runs two purge passes of p into arch, the first calling change once,
// after its first batch is written to the archive and before its rows are deleted,
// and returns what each pass did.
func purgeChangedOnce(t *testing.T, p *project, arch string, change func()) (first, second lifecycle.PurgeSummary) {
	t.Helper()
	pu := purger(p, arch)
	changed := false
	lifecycle.SetAfterWrite(pu, func(int64) error {
		if !changed {
			changed = true
			change()
		}
		return nil
	})
	first, err := pu.Run(context.Background())
	if err != nil {
		t.Fatalf("first pass: %v, %v", first, err)
	}
	second, err = pu.Run(context.Background())
	if err != nil {
		t.Fatalf("second pass: %v, %v", second, err)
	}
	return first, second
}

// TestPurgeHostileArchive: an archive file that is not gzip, or a day that is a
// symbolic link out of the archive, is refused, and nothing is deleted.
func TestPurgeHostileArchive(t *testing.T) {
	t.Parallel()
	p := newProject(t, storetest.SQLiteDSN(t), 4)
	purgeReady(t, p)
	arch := filepath.Join(p.dir, "archive")
	day := filepath.Join(arch, "1970-01-17")
	os.MkdirAll(day, 0o755)
	os.WriteFile(filepath.Join(day, "workunit.jsonl.gz"), []byte("not gzip"), 0o644)
	code, _, errs := p.bserver(t, "--now", purgeAt, "purge", "--older-than", purgeAge, "--archive", arch, "--once")
	if code != 1 || !strings.Contains(errs, "workunit.jsonl.gz: not a gzip file: refusing to append to it") {
		t.Errorf("not gzip: exit %d, %s", code, errs)
	}
	os.RemoveAll(day)
	outside := t.TempDir()
	if err := os.Symlink(outside, day); err != nil {
		t.Fatal(err)
	}
	code, _, errs = p.bserver(t, "--now", purgeAt, "purge", "--older-than", purgeAge, "--archive", arch, "--once")
	if code != 1 {
		t.Errorf("day out of the archive: exit %d, %s", code, errs)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("wrote outside the archive: %v", ents)
	}
	if n := p.count(t, `SELECT COUNT(*) FROM workunit`); n != 4 {
		t.Errorf("%d workunits left, want 4", n)
	}
	// With the link gone the next pass archives everything once.
	os.Remove(day)
	if out := p.must(t, "--now", purgeAt, "purge", "--older-than", purgeAge, "--archive", arch, "--once"); purgedCount(out) != 4 {
		t.Errorf("purge: %s", out)
	}
	if got := archived(t, arch); len(got["workunit"]) != 4 {
		t.Errorf("archived %d workunits", len(got["workunit"]))
	}
}

func TestPurgeConcurrentAndKilled(t *testing.T) {
	t.Parallel()
	runConcurrently(t, 60, func(p *project) { purgeReady(t, p) },
		func(p *project) []string {
			return []string{"--now", purgeAt, "purge", "--older-than", purgeAge, "--archive", filepath.Join(p.dir, "archive"), "--once", "--batch", "2"}
		},
		func(p *project) map[string]string {
			out := map[string]string{}
			for table, lines := range archived(t, filepath.Join(p.dir, "archive")) {
				out[table] = strings.Join(lines, "\n")
			}
			out["left in the database"] = strings.Join(p.rows(t, `SELECT COUNT(*) FROM result`), "")
			return out
		},
		purgedCount)
}

// TestReadArchive: a batch found twice, a member that names no batch and a member
// cut short are errors a reader sees.
func TestReadArchive(t *testing.T) {
	member := func(comment, lines string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Header.Comment = comment
		zw.Write([]byte(lines))
		zw.Close()
		return b.Bytes()
	}
	one, two := member("bkit purge batch 1", "{\"a\":1}\n{\"a\":2}\n"), member("bkit purge batch 2", "{\"a\":3}\n")
	for _, tc := range []struct {
		name string
		data []byte
		rows int
		err  string
	}{
		{"empty", nil, 0, ""},
		{"two batches", append(append([]byte{}, one...), two...), 3, ""},
		{"a batch twice", append(append([]byte{}, one...), one...), 2, "member 2: batch 1 is in the file twice"},
		{"no batch", member("", "{}\n"), 0, `member 1: its header names no purge batch (comment "")`},
		{"cut short", append(append([]byte{}, one...), two[:len(two)-5]...), 3, "unexpected EOF"},
		{"no line end", member("bkit purge batch 1", "{}"), 0, "member 1 (batch 1): a line without its end"},
	} {
		rows := 0
		err := lifecycle.ReadArchive(bytes.NewReader(tc.data), func(int64, []byte) error { rows++; return nil })
		if rows != tc.rows || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %d rows, %v; want %d, %q", tc.name, rows, err, tc.rows, tc.err)
		}
	}
}

func FuzzReadArchive(f *testing.F) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Header.Comment = "bkit purge batch 7"
	zw.Write([]byte("{\"id\":1}\n"))
	zw.Close()
	f.Add(b.Bytes())
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		lifecycle.ReadArchive(bytes.NewReader(data), func(int64, []byte) error { return nil })
	})
}
