package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// TestBatcher: on SQLite a batch holds the write lock about 2 ms whatever a row
// costs, within [10, most], growing at most twofold a batch; on MySQL every batch is
// the most.
func TestBatcher(t *testing.T) {
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			s := storetest.Open(t, e.DSN)
			b := s.Batcher(1000)
			if s.Engine() == store.MySQL {
				for range 3 {
					if b.Size() != 1000 {
						t.Fatalf("MySQL batch %d, want 1000", b.Size())
					}
					b.Held(1000, time.Second)
				}
				return
			}
			if b.Size() != 100 {
				t.Fatalf("first SQLite batch %d, want 100", b.Size())
			}
			b.Held(100, 100*time.Millisecond) // 1 ms a row: 2, so the least, 10
			if b.Size() != 10 {
				t.Fatalf("after 1 ms a row: %d, want 10", b.Size())
			}
			for range 50 { // 1 µs a row: 2,000 rows fit, the most reached by doubling
				prev := b.Size()
				b.Held(prev, time.Duration(prev)*time.Microsecond)
				if b.Size() > 2*prev {
					t.Fatalf("grew from %d to %d in one batch", prev, b.Size())
				}
			}
			if b.Size() != 1000 {
				t.Fatalf("after 1 µs a row: %d, want the most, 1000", b.Size())
			}
			b.Held(1000, 10*time.Second)
			if b.Size() < 10 || b.Size() > 100 {
				t.Fatalf("after a slow batch: %d, want it cut to tens", b.Size())
			}
		})
	}
}

// TestBatchJob: a cron job's Store commits without syncing on SQLite
// (synchronous=NORMAL); another Store of the same file still syncs (FULL).
func TestBatchJob(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.SQLiteDSN(t)
	job := storetest.Open(t, dsn)
	if err := job.BatchJob(ctx); err != nil {
		t.Fatal(err)
	}
	other := storetest.Open(t, dsn)
	if durable, setting, err := job.Durability(ctx); err != nil || durable {
		t.Errorf("job: durable %v (%s), %v; want not", durable, setting, err)
	}
	if durable, setting, err := other.Durability(ctx); err != nil || !durable {
		t.Errorf("bserver's: durable %v (%s), %v; want durable", durable, setting, err)
	}
}

// TestPause: a cron job's pause after a write transaction is a full one (at least
// 3 ms, and as long as the transaction held the lock) on SQLite when another
// connection committed since the last pause, or on the first; a short one (2 ms) when
// none did; none on MySQL.
func TestPause(t *testing.T) {
	ctx := context.Background()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			job := storetest.Open(t, e.DSN)
			if job.Engine() == store.MySQL {
				if d := job.Pause(ctx, 50*time.Millisecond); d != 0 {
					t.Fatalf("MySQL pause %v, want none", d)
				}
				return
			}
			other, err := store.Open(e.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if d := job.Pause(ctx, time.Millisecond); d != 3*time.Millisecond {
				t.Fatalf("first pause %v, want 3ms", d)
			}
			// The job's own commits do not count.
			if _, err := job.AddApp(ctx, "own", false, 1); err != nil {
				t.Fatal(err)
			}
			if d := job.Pause(ctx, 20*time.Millisecond); d != 2*time.Millisecond {
				t.Fatalf("pause with nobody else writing %v, want 2ms", d)
			}
			if _, err := other.AddApp(ctx, "other", false, 1); err != nil {
				t.Fatal(err)
			}
			if d := job.Pause(ctx, 20*time.Millisecond); d != 20*time.Millisecond {
				t.Fatalf("pause after another's commit %v, want the hold, 20ms", d)
			}
			if d := job.Pause(ctx, time.Millisecond); d != 2*time.Millisecond {
				t.Fatalf("pause once quiet again %v, want 2ms", d)
			}
		})
	}
}

// TestSideWork: a cron job's side work (Store.SideWork) waits while one of the job's
// write transactions is open on SQLite, and runs at once on a store that is not a
// job's and on MySQL.
func TestSideWork(t *testing.T) {
	ctx := context.Background()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			job := storetest.Open(t, e.DSN)
			// open holds a write transaction of job open until release is called.
			open := func() (release func(), done <-chan error) {
				in, rel, d := make(chan struct{}, 1), make(chan struct{}), make(chan error, 1)
				go func() {
					d <- job.InTx(ctx, func(*store.Tx) error {
						select {
						case in <- struct{}{}:
						default:
						}
						<-rel
						return nil
					})
				}()
				<-in
				return func() { close(rel) }, d
			}
			ran := make(chan struct{}, 1)
			side := func() { go job.SideWork(func() { ran <- struct{}{} }) }
			wait := func(within time.Duration) bool {
				select {
				case <-ran:
					return true
				case <-time.After(within):
					return false
				}
			}

			release, done := open()
			side()
			if !wait(5 * time.Second) {
				t.Fatal("side work waited for a transaction of a store that is not a job's")
			}
			release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}

			if err := job.BatchJob(ctx); err != nil {
				t.Fatal(err)
			}
			release, done = open()
			side()
			if job.Engine() == store.MySQL {
				if !wait(5 * time.Second) {
					t.Fatal("side work waited for a transaction on MySQL")
				}
				release()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				return
			}
			if wait(100 * time.Millisecond) {
				t.Fatal("a job's side work ran while its transaction was open")
			}
			release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !wait(5 * time.Second) {
				t.Fatal("a job's side work did not run once its transaction committed")
			}
		})
	}
}
