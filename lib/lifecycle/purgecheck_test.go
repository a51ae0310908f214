package lifecycle_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/lifecycle"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

// TestPurgeQuietSkipsRecheck: on a database nobody else writes, a SQLite pass leaves
// out FinishPurge's second read of every batch (nothing but its own purge
// transactions changed the database since the first), and archives what a pass
// always did; on MySQL every batch is read again.
func TestPurgeQuietSkipsRecheck(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, engine, dsn string) {
		want := undisturbedArchive(t, dsn, 12)
		p := newProject(t, freshDSN(t, engine), 12)
		purgeReady(t, p)
		arch := filepath.Join(p.dir, "archive")
		pu := purger(p, arch)
		lifecycle.SetBatchMost(pu, 1) // groups of three batches: reads beside writes
		sum, err := pu.Run(context.Background())
		if err != nil || sum.Workunits != 12 || sum.Changed != 0 {
			t.Fatalf("pass: %v, %v", sum, err)
		}
		skipped, reread := p.s.PurgeRechecks()
		if engine == store.SQLite && (skipped < 4 || reread != 0) || engine != store.SQLite && (skipped != 0 || reread < 4) {
			t.Errorf("second reads of the batches of 12 workunits, at most 3 each: %d left out, %d made", skipped, reread)
		}
		if diff := cmp.Diff(want, archived(t, arch)); diff != "" {
			t.Errorf("archive (-always reread +quiet):\n%s", diff)
		}
	})
}

// TestPurgeChangedThroughAnotherConnection: a row changed after its batch was read by
// another connection (bserver's, a late report), which the purger's own connection
// does not count as its change, is still caught: the batch is cut back and written
// again as it is.
func TestPurgeChangedThroughAnotherConnection(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, engine, dsn string) {
		p := newProject(t, dsn, 6)
		purgeReady(t, p)
		other := storetest.Open(t, dsn)
		arch := filepath.Join(p.dir, "archive")
		first, second := purgeChangedOnce(t, p, arch, func() {
			if _, err := other.DB.Exec(`UPDATE result SET cpu_time=4242 WHERE id=1`); err != nil {
				t.Error(err)
			}
		})
		if first.Workunits != 3 || first.Changed != 3 {
			t.Fatalf("first pass: %v", first)
		}
		if second.Workunits != 3 {
			t.Fatalf("second pass: %v", second)
		}
		got := archived(t, arch)
		if !resultsHold(got, 12, `"cpu_time":4242`) {
			t.Errorf("results archived: %q", got["result"])
		}
		if n := p.count(t, `SELECT COUNT(*) FROM workunit`); n != 0 {
			t.Errorf("%d workunits left", n)
		}
	})
}

// TestPurgeRecheckBesideCommits: while another connection commits between the pass's
// transactions (bserver's RPCs, on rows no batch holds), every commit breaks the
// purge chain; the second read of each batch is then made before FinishPurge's
// transaction, outside SQLite's write lock, and none under it. The archive is what a
// pass always wrote.
func TestPurgeRecheckBesideCommits(t *testing.T) {
	t.Parallel()
	dsn := storetest.SQLiteDSN(t)
	want := undisturbedArchive(t, storetest.SQLiteDSN(t), 12)
	p := newProject(t, dsn, 12)
	purgeReady(t, p)
	other := storetest.Open(t, dsn)
	if _, err := other.DB.Exec(`CREATE TABLE rpc_beside (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	arch := filepath.Join(p.dir, "archive")
	pu := purger(p, arch)
	lifecycle.SetBatchMost(pu, 1)
	rechecks := 0
	p.s.TimeTransactions(func(step string, _ time.Duration) {
		if step == "recheck" {
			rechecks++
		}
	})
	lifecycle.SetAfterWrite(pu, func(int64) error {
		_, err := other.DB.Exec(`INSERT INTO rpc_beside VALUES (1)`)
		return err
	})
	sum, err := pu.Run(context.Background())
	if err != nil || sum.Workunits != 12 || sum.Changed != 0 {
		t.Fatalf("pass: %v, %v", sum, err)
	}
	skipped, reread := p.s.PurgeRechecks()
	if reread != 0 || skipped < 4 || rechecks < 4 {
		t.Errorf("batches of 12 workunits, at most 3 each, another connection committing before each: %d read again under the lock, %d not (%d read before it)", reread, skipped, rechecks)
	}
	if diff := cmp.Diff(want, archived(t, arch)); diff != "" {
		t.Errorf("archive (-undisturbed +beside commits):\n%s", diff)
	}
}

// TestPurgeChangedAfterRecheck: a row changed by another connection after the second
// read made outside the lock and before FinishPurge's transaction is still caught
// (the transaction reads again under the lock): the batch is cut back and written
// again as it is.
func TestPurgeChangedAfterRecheck(t *testing.T) {
	t.Parallel()
	dsn := storetest.SQLiteDSN(t)
	p := newProject(t, dsn, 6)
	purgeReady(t, p)
	other := storetest.Open(t, dsn)
	arch := filepath.Join(p.dir, "archive")
	pu := purger(p, arch)
	changed := false
	p.s.TimeTransactions(func(step string, _ time.Duration) {
		if step == "recheck" && !changed {
			changed = true
			if _, err := other.DB.Exec(`UPDATE result SET cpu_time=4242 WHERE id=1`); err != nil {
				t.Error(err)
			}
		}
	})
	// A commit beside the first batch's write, so that its second read is made
	// before the transaction (the recheck above).
	lifecycle.SetAfterWrite(pu, func(int64) error {
		_, err := other.DB.Exec(`UPDATE result SET cpu_time=cpu_time WHERE id=2`)
		return err
	})
	first, err := pu.Run(context.Background())
	if err != nil || !changed || first.Changed == 0 {
		t.Fatalf("first pass: %v, %v (changed %v)", first, err, changed)
	}
	if _, err := pu.Run(context.Background()); err != nil {
		t.Fatalf("second pass: %v", err)
	}
	if got := archived(t, arch); !resultsHold(got, 12, `"cpu_time":4242`) {
		t.Errorf("results archived: %q", got["result"])
	}
	if n := p.count(t, `SELECT COUNT(*) FROM workunit`); n != 0 {
		t.Errorf("%d workunits left", n)
	}
}

// TestPurgeLostAndChanged: a batch another purger took over and whose rows changed
// meanwhile is lost, not changed: the pass stops with ErrPurgeLost and leaves the
// batch as the other purger has it (cutting it back as changed would reset another
// purger's batch).
func TestPurgeLostAndChanged(t *testing.T) {
	t.Parallel()
	dsn := storetest.SQLiteDSN(t)
	p := newProject(t, dsn, 6)
	purgeReady(t, p)
	other := storetest.Open(t, dsn)
	pu := purger(p, filepath.Join(p.dir, "archive"))
	var lost int64
	lifecycle.SetAfterWrite(pu, func(batch int64) error {
		if lost == 0 {
			lost = batch
			if _, err := other.DB.Exec(`UPDATE purge_batch SET owner='another purger' WHERE id=?`, batch); err != nil {
				t.Error(err)
			}
			if _, err := other.DB.Exec(`UPDATE result SET cpu_time=4242 WHERE workunitid IN (SELECT id FROM workunit WHERE purge_batch=?)`, batch); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	if _, err := pu.Run(context.Background()); !errors.Is(err, store.ErrPurgeLost) {
		t.Fatalf("pass: %v, want ErrPurgeLost", err)
	}
	var state int
	var owner string
	if err := other.DB.QueryRow(`SELECT state, owner FROM purge_batch WHERE id=?`, lost).Scan(&state, &owner); err != nil {
		t.Fatal(err)
	}
	if state != store.PurgeWriting || owner != "another purger" {
		t.Errorf("the other purger's batch: state %d, owner %q; want %d, theirs", state, owner, store.PurgeWriting)
	}
}
