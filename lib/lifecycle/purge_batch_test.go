package lifecycle_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/lifecycle"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

// TestPurgeSQLiteBatchesSized (issue 33): on SQLite no purge transaction deletes more
// workunits than the store's Batcher sized the batch to, though --batch allows 1,000:
// a Batcher's first batches are 100 workunits, so a pass over 250 that deleted them
// in one transaction, as a batch of --batch did, fails here whatever the machine's
// speed.
func TestPurgeSQLiteBatchesSized(t *testing.T) {
	t.Parallel()
	const n = 250
	p := newProject(t, storetest.SQLiteDSN(t), n)
	purgeReady(t, p)
	pu := purger(p, filepath.Join(p.dir, "archive"))
	pu.Batch = lifecycle.DefaultPurgeBatch
	var mu sync.Mutex
	var sized, deleted []int
	lifecycle.SetBatchSized(pu, func(per int) { mu.Lock(); sized = append(sized, per); mu.Unlock() })
	p.s.TraceStatements(func(q string, args []any) {
		if strings.HasPrefix(q, "DELETE FROM workunit WHERE id IN") {
			mu.Lock()
			deleted = append(deleted, len(args))
			mu.Unlock()
		}
	})
	sum, err := pu.Run(context.Background())
	p.s.TraceStatements(nil)
	if err != nil || sum.Workunits != n {
		t.Fatalf("pass: %v, %v", sum, err)
	}
	most, total := 0, 0
	for _, s := range sized {
		most = max(most, s)
	}
	for _, d := range deleted {
		total += d
		if d > most {
			t.Errorf("a transaction deleted %d workunits; the Batcher asked for batches of at most %d (%v)", d, most, sized)
		}
	}
	if total != n || len(deleted) < 3 || most > 100 {
		t.Errorf("deleted %v (%d workunits), batches sized %v: want 3 or more transactions of at most 100", deleted, total, sized)
	}
}

// TestPurgeKilledInGroup: a purger that dies after a group's first batch is deleted
// leaves its later batches writing, their members after it in the files; the next
// pass cuts each file back to the smallest size they recorded (the later batches'
// tables the killed batch lacked too) and writes them again: the archive is an
// undisturbed pass's. The next group, claimed and read while the first was written,
// is released by a pass that fails (a killed purger's claims end with its process:
// releaseDead), so the rerun takes it at once.
func TestPurgeKilledInGroup(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, engine, dsn string) {
		want := undisturbedArchive(t, dsn, 12)

		for _, crashAt := range []int{2, 3} {
			p := newProject(t, freshDSN(t, engine), 12)
			purgeReady(t, p)
			arch := filepath.Join(p.dir, "archive")
			pu := purger(p, arch)
			pu.Batch = 6
			lifecycle.SetBatchMost(pu, 2) // groups of three batches
			crashAtWrite(pu, crashAt)
			if _, err := pu.Run(context.Background()); !errors.Is(err, errCrash) {
				t.Fatalf("crash at %d: %v", crashAt, err)
			}
			if out := p.must(t, "status"); !strings.Contains(out, "("+string(rune('0'+4-crashAt))+" being written)") {
				t.Fatalf("crash at %d: status: %s", crashAt, out)
			}
			if claimed, held := p.count(t, `SELECT COUNT(*) FROM purge_batch WHERE state=0`), p.count(t, `SELECT COUNT(*) FROM purge_batch WHERE state=0 AND lease>0`); claimed != 3 || held != 0 {
				t.Errorf("crash at %d: the next group: %d batches claimed, %d of them still leased; want 3 released", crashAt, claimed, held)
			}
			out := p.must(t, "--now", purgeAt, "purge", "--older-than", purgeAge, "--archive", arch, "--once", "--batch", "3")
			if purgedCount(out) != 12-2*(crashAt-1) {
				t.Errorf("crash at %d: rerun: %s", crashAt, out)
			}
			if diff := cmp.Diff(want, archived(t, arch)); diff != "" {
				t.Errorf("crash at %d: archive (-undisturbed +crashed and rerun):\n%s", crashAt, diff)
			}
			if n := p.count(t, `SELECT COUNT(*) FROM workunit`) + p.count(t, `SELECT COUNT(*) FROM purge_batch`); n != 0 {
				t.Errorf("crash at %d: %d workunits and batches left", crashAt, n)
			}
		}
	})
}

// TestPurgeChangedInGroup: a row of a group's second batch changes after the group
// was written: the first batch is purged, the second and third are cut back (the
// third follows the second in the files) and written again by the next pass, the
// changed row as it is then.
func TestPurgeChangedInGroup(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, engine, dsn string) {
		p := newProject(t, dsn, 6)
		purgeReady(t, p)
		arch := filepath.Join(p.dir, "archive")
		pu := purger(p, arch)
		pu.Batch = 6
		lifecycle.SetBatchMost(pu, 2)
		k := 0
		lifecycle.SetAfterWrite(pu, func(int64) error {
			if k++; k == 2 {
				p.exec(t, `UPDATE result SET cpu_time=4242 WHERE workunitid=(SELECT MAX(id) FROM workunit WHERE purge_batch=(SELECT MIN(id) FROM purge_batch WHERE state=1))`)
			}
			return nil
		})
		sum, err := pu.Run(context.Background())
		if err != nil || sum.Workunits != 2 || sum.Changed != 4 {
			t.Fatalf("first pass: %v, %v; want 2 purged, 4 changed while archived", sum, err)
		}
		if n := p.count(t, `SELECT COUNT(*) FROM purge_batch WHERE state=1`); n != 0 {
			t.Errorf("%d batches left writing", n)
		}
		sum, err = pu.Run(context.Background())
		if err != nil || sum.Workunits != 4 {
			t.Fatalf("second pass: %v, %v", sum, err)
		}
		got := archived(t, arch)
		if len(got["workunit"]) != 6 || !resultsHold(got, 12, `"cpu_time":4242`) {
			t.Errorf("archived %d workunits, results %q", len(got["workunit"]), got["result"])
		}
	})
}

// TestPurgeWalksPastAGroupNotReady: a group's windows that hold no workunit ready to
// purge (here the walk's first three wait for validation) do not end the pass: the
// walk goes on to the ready ones behind them.
func TestPurgeWalksPastAGroupNotReady(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, engine, dsn string) {
		p := newProject(t, dsn, 9)
		purgeReady(t, p)
		p.exec(t, `UPDATE workunit SET need_validate=1 WHERE id IN (SELECT id FROM (SELECT id FROM workunit ORDER BY file_delete_time, id LIMIT 3) AS first)`)
		pu := purger(p, filepath.Join(p.dir, "archive"))
		pu.Batch = 3
		sum, err := pu.Run(context.Background())
		if err != nil || sum.Workunits != 6 {
			t.Fatalf("pass: %v, %v; want the 6 ready workunits purged", sum, err)
		}
		if n := p.count(t, `SELECT COUNT(*) FROM workunit`); n != 3 {
			t.Errorf("%d workunits left, want the 3 waiting for validation", n)
		}
	})
}

// TestPurgeCheckpointsEachBatchWhileOthersWrite (issue 33): while another connection
// keeps committing (a scheduler's RPCs), a purge pass checkpoints the WAL after every
// batch's deletion, not once a group: a group's deletions checkpointed at once were
// one large flush that the RPCs' WAL syncs waited behind. Groups of 60 workunits in
// batches of at most 10, so a pass that checkpoints once a group makes about a sixth as
// many checkpoints as batches, and fails here.
func TestPurgeCheckpointsEachBatchWhileOthersWrite(t *testing.T) {
	t.Parallel()
	p := newProject(t, storetest.SQLiteDSN(t), 120)
	purgeReady(t, p)
	storetest.KeepWriting(t, p.dsn)
	pu := purger(p, filepath.Join(p.dir, "archive"))
	pu.Batch = 60
	lifecycle.SetBatchMost(pu, 10)
	var mu sync.Mutex
	checkpoints, batches := 0, 0
	p.s.TimeTransactions(func(step string, _ time.Duration) {
		if step == "checkpoint" {
			mu.Lock()
			checkpoints++
			mu.Unlock()
		}
	})
	p.s.TraceStatements(func(q string, _ []any) {
		if strings.HasPrefix(q, "DELETE FROM workunit WHERE id IN") {
			mu.Lock()
			batches++
			mu.Unlock()
		}
	})
	sum, err := pu.Run(context.Background())
	p.s.TimeTransactions(nil)
	p.s.TraceStatements(nil)
	if err != nil || sum.Workunits != 120 {
		t.Fatalf("pass: %v, %v", sum, err)
	}
	// The checkpoint is made before the next write transaction: none after the last.
	if batches < 12 || checkpoints < batches-1 {
		t.Errorf("%d checkpoints for %d batches' deletions: want one after each but the last (at least 12 batches)", checkpoints, batches)
	}
}
