package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestBatcherQuiet: on SQLite a cron job's batches hold the lock about
// sqliteBatchHold while others commit, about sqliteQuietHold once nobody else has
// committed for sqliteQuietWindow, and short again as soon as another connection
// commits.
func TestBatcherQuiet(t *testing.T) {
	ctx := context.Background()
	defer func(w time.Duration) { sqliteQuietWindow = w }(sqliteQuietWindow)
	sqliteQuietWindow = 50 * time.Millisecond
	job, other := jobAndOther(t)
	const perRow = 10 * time.Microsecond
	b := job.Batcher(100_000)
	batch := func() int {
		n := b.Size()
		b.Held(n, time.Duration(n)*perRow)
		job.Pause(ctx, time.Duration(n)*perRow)
		return b.Size()
	}
	busy := int(sqliteBatchHold / perRow) // 200
	quiet := int(sqliteQuietHold / perRow)
	// Before any pause, and within the window after the first: short batches.
	for range 20 {
		batch()
	}
	if n := b.Size(); n != busy {
		t.Fatalf("at first: batches of %d, want %d", n, busy)
	}
	time.Sleep(2 * sqliteQuietWindow)
	for range 20 { // growing at most twofold a batch
		batch()
	}
	if n := b.Size(); n != quiet {
		t.Fatalf("after the quiet window: batches of %d, want %d", n, quiet)
	}
	if _, err := other.AddApp(ctx, "other", false, 1); err != nil {
		t.Fatal(err)
	}
	if n := batch(); n != busy {
		t.Fatalf("after another's commit: batches of %d, want %d at once", n, busy)
	}
}

// TestLifecycleBatcher: a lifecycle pass's batches hold the lock sqliteLifecycleHold
// while others commit, shorter than bretry's sqliteBatchHold.
func TestLifecycleBatcher(t *testing.T) {
	ctx := context.Background()
	job, _ := jobAndOther(t)
	const perRow = 10 * time.Microsecond
	for _, c := range []struct {
		b    *Batcher
		want int
	}{{job.Batcher(100_000), int(sqliteBatchHold / perRow)}, {job.LifecycleBatcher(100_000), int(sqliteLifecycleHold / perRow)}} {
		for range 20 {
			n := c.b.Size()
			c.b.Held(n, time.Duration(n)*perRow)
			job.Pause(ctx, time.Duration(n)*perRow)
		}
		if n := c.b.Size(); n != c.want {
			t.Errorf("batches of %d, want %d", n, c.want)
		}
	}
	if sqliteLifecycleHold >= sqliteBatchHold {
		t.Errorf("lifecycle hold %v, bretry's %v: want the lifecycle's shorter", sqliteLifecycleHold, sqliteBatchHold)
	}
}

// TestOthersWriting: a cron job's Store says others write until its pauses have seen
// nobody commit for sqliteQuietWindow, and again at once after another connection
// commits.
func TestOthersWriting(t *testing.T) {
	ctx := context.Background()
	defer func(w time.Duration) { sqliteQuietWindow = w }(sqliteQuietWindow)
	sqliteQuietWindow = 50 * time.Millisecond
	job, other := jobAndOther(t)
	if !job.OthersWriting() {
		t.Fatal("before any pause: not writing, want unknown taken as writing")
	}
	job.Pause(ctx, 0)
	time.Sleep(2 * sqliteQuietWindow)
	job.Pause(ctx, 0)
	if job.OthersWriting() {
		t.Fatal("after the quiet window: writing, want quiet")
	}
	if _, err := other.AddApp(ctx, "other", false, 1); err != nil {
		t.Fatal(err)
	}
	job.Pause(ctx, 0)
	if !job.OthersWriting() {
		t.Fatal("after another's commit: quiet, want writing")
	}
}

// TestCheckpointAfterPause: while others write, a cron job's WAL checkpoint between
// two batches comes at the pause's end, not at its start, where it met the syncs of
// the RPCs that had waited for the batch and took the lock the moment it was free.
// Fails with the checkpoint made first: on this small database it ends well within
// the pause.
func TestCheckpointAfterPause(t *testing.T) {
	ctx := context.Background()
	job, other := jobAndOther(t)
	if _, err := other.AddApp(ctx, "other", false, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := job.AddApp(ctx, "job", false, 1); err != nil {
		t.Fatal(err)
	}
	var ended time.Time
	job.TimeTransactions(func(step string, _ time.Duration) {
		if step == "checkpoint" {
			ended = time.Now()
		}
	})
	began := time.Now()
	job.LetWritersIn(ctx) // another committed since the job's last look: sqliteYield
	job.TimeTransactions(nil)
	if ended.IsZero() {
		t.Fatal("no checkpoint between the batches")
	}
	if d := ended.Sub(began); d < sqliteYield {
		t.Errorf("the checkpoint ended %v after the pause began, within its %v: want it after the pause", d, sqliteYield)
	}
}

// jobAndOther opens two connections' Stores on one new SQLite database: a cron job's
// and another writer's.
func jobAndOther(t *testing.T) (job, other *Store) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "db.sqlite")
	job, err := Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Close() })
	if _, err := job.Migrate(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if other, err = Open(dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return job, other
}
