// Package lifecycle owns what happens to a workunit after validation (issue 27),
// BOINC's assimilator, file_deleter and db_purge as passes over lib/store's database
// and the project's file directories: assimilation hands each workunit with a
// canonical result, and each given-up one, to the scientist exactly once (a tree of
// files or a command); file deletion removes the input and output files no result
// needs any more; purge moves old finished rows into compressed archive files.
//
// Every pass is safe to run twice at once and to kill at any moment: the database
// says what is done (row claims with leases, short transactions), the files are
// written so that a rerun makes the same ones (temporary names, sync, rename), and
// nothing is marked done before its files are durable. The SQL lives in lib/store;
// the bserver subcommands assimilate, delete-files and purge are the shells.
package lifecycle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bkit/bkit/lib/store"
	"golang.org/x/sys/unix"
)

// DefaultBatch is how many workunits a pass claims per transaction.
const DefaultBatch = 500

// Backoff is how long a workunit waits after its nth failed hand-over (n ≥ 1)
// before the next try: a minute, doubling, at most a day, so a broken command is
// not run in a tight loop and a fixed one picks the backlog up within a day.
func Backoff(n int) float64 {
	if n < 1 {
		n = 1
	}
	return math.Min(60*math.Pow(2, float64(n-1)), 86400)
}

// Clock is the time of a pass: a start time (a --now, or the wall clock) that runs
// on with the wall clock, so leases taken late in a long pass are still leases.
type Clock struct {
	start float64
	wall  time.Time
}

// NewClock starts a clock at now.
func NewClock(now float64) *Clock { return &Clock{start: now, wall: time.Now()} }

// Now is the clock's time.
func (c *Clock) Now() float64 { return c.start + time.Since(c.wall).Seconds() }

// Owner names this process in the claims it takes: host, process id and a random
// part (a later process with the same id is another owner).
func Owner() string {
	host, _ := os.Hostname()
	var r [4]byte
	rand.Read(r[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(r[:]))
}

// ReleaseDead releases the claims of owners on this host whose process is gone (a
// job killed mid-pass), so their workunits need not wait for the lease to end.
// Claims of other hosts' processes lapse at their lease.
func ReleaseDead(ctx context.Context, s *store.Store, log *slog.Logger) error {
	return releaseDead(ctx, s.LifecycleOwners, s.ReleaseClaims, log, "workunits")
}

// releaseDead releases, with release, the claims of the owners that list lists and
// whose process on this host is gone; what names what is claimed, for the log.
func releaseDead(ctx context.Context, list func(context.Context) ([]string, error), release func(context.Context, string) (int, error), log *slog.Logger, what string) error {
	owners, err := list(ctx)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	for _, o := range owners {
		parts := strings.Split(o, "/")
		if len(parts) != 3 || parts[0] != host {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue
		}
		n, err := release(ctx, o)
		if err != nil {
			return err
		}
		if n > 0 {
			log.Info("released the claims of a dead process", "owner", o, what, n)
		}
	}
	return nil
}

// syncFS makes everything written to the file system holding dir durable: one
// syncfs(2) for a batch of files instead of an fsync per file and directory. Where
// it is unavailable, it falls back to sync(2).
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		syscall.Sync()
	}
	return nil
}

// filesPerSync is about how many workunits' files a pass writes or unlinks between
// two syncs (syncFS), claimed or decided in batches of their own (short transactions):
// a sync per batch of 500 was hundreds of syncfs calls a pass over 100,000 workunits,
// each waiting for the shared disk (issue 27's benchmark). But each sync is a burst of
// writes and a cache flush that a scheduler RPC's commit, on the same disk, waits
// behind: with the pass as a cron process beside the endpoint at 50 RPC/s, 1,000
// instead of 4,000 cut the RPCs' p99 during assimilation from 18–39 ms to 13–26 ms
// (their COMMIT p99 from 11–17 to 6–12 ms), for a pass 3–15 % longer (issue 33;
// docs/decisions.md, "Smaller sync groups").
const filesPerSync = 1000

// filesPerSyncBusy is filesPerSync while a scheduler serves RPCs on the same SQLite
// database (store.OthersWriting): every RPC's commit ends with a sync of the WAL,
// which on a shared disk waits behind the pass's file writes and their syncfs, so
// smaller groups make shorter bursts. BenchmarkLifecycle as cron processes at 50
// RPC/s, the files on the database's disk, five pairs alternating (issue 33;
// docs/decisions.md, "Smaller sync groups while the scheduler writes"): the RPCs' p99
// during assimilation 9.7 ms on average against 10.4 with 1,000, during file deletion
// 8.5 against 9.3, lower in 4 of 5 pairs each; assimilation as long, file deletion
// about a fifth longer. A quiet night's pass keeps filesPerSync's fewer syncs.
const filesPerSyncBusy = 200

// fileWorkers is how many file operations (writes, renames, unlinks) a pass has in
// flight at once. An unlink waits on the file system far more than it uses a
// processor (about a millisecond each on the shared test machine's ext4, mounted
// with discard; issue 27's benchmark), so several at once overlap their waits:
// file deletion's unlinks went 2 to 3 times faster with 8 at once.
const fileWorkers = 8

// treeWorkers is how many workunits' directories an assimilation pass writes at once.
// Writing makes new directories and files, which the file system's journal carries,
// and every scheduler RPC's commit syncs through the same journal when the database
// is on the same file system: with 8 at once the RPCs' p99 during a pass of 100,000
// workunits was 62 ms (commit p99 15.6 ms), with 2 at once 18.5 ms (6.2 ms), and the
// pass took 18.9 s instead of 21.9 s; with 1, 41.8 s (issue 27's benchmark, one run
// each, on the shared test machine's ext4).
const treeWorkers = 2

// parallel runs f(0) … f(n-1), fileWorkers at once, and returns when all are done.
// Each f writes only its own index's results.
func parallel(n int, f func(i int)) { parallelN(n, fileWorkers, f) }

// sideWork is f with each call run as st's side work (store.Store.SideWork): a cron
// job's file work waits while one of its transactions holds SQLite's write lock.
func sideWork(st *store.Store, f func(i int)) func(i int) {
	return func(i int) { st.SideWork(func() { f(i) }) }
}

// parallelN runs f(0) … f(n-1), workers at once.
func parallelN(n, workers int, f func(i int)) {
	if n <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
