package bretry_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/programs/bretry"
	"github.com/bkit/bkit/lib/retry"
	"github.com/bkit/bkit/lib/server/servertest"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// benchBatch is the pass's largest batch: BRETRY_BENCH_BATCH, default the pass's own.
func benchBatch() int {
	n, _ := strconv.Atoi(os.Getenv("BRETRY_BENCH_BATCH"))
	return n
}

// benchIdle is how long the RPCs run before the pass, and again after it, for their
// idle latency: BRETRY_BENCH_IDLE seconds, default 10.
func benchIdle() time.Duration {
	if f, err := strconv.ParseFloat(os.Getenv("BRETRY_BENCH_IDLE"), 64); err == nil && f > 0 {
		return time.Duration(f * float64(time.Second))
	}
	return 10 * time.Second
}

// benchRows returns the workunits of the benchmark: BRETRY_BENCH_WUS, default
// 1,000,000, a tenth of them due.
func benchRows() int {
	if n, err := strconv.Atoi(os.Getenv("BRETRY_BENCH_WUS")); err == nil && n >= 10 {
		return n
	}
	return 1_000_000
}

// BenchmarkPass measures one bretry pass over a million workunits of which 100,000
// are due (each retried: one success, Nredundancy 2, so one new result), on SQLite,
// while four hosts keep making scheduler RPCs to a bserver endpoint on the same
// database. It reports the pass's wall time, due workunits per second, and the
// RPCs' p50 and p99 latency during the pass and, for comparison, in the seconds just
// before and after it with no pass running (rpc-idle-; issue 33: the p99 during a pass within 2×
// of the idle p99), and their ratio (scripts/bench-bretry.sh prints them). Run with
// -benchtime 1x: the setup is the expensive part.
func BenchmarkPass(b *testing.B) { benchPass(b, storetest.SQLiteDSN(b)) }

// BenchmarkPassMySQL is the same on MySQL/MariaDB (BKIT_TEST_MYSQL_DSN).
func BenchmarkPassMySQL(b *testing.B) { benchPass(b, storetest.MySQLDSN(b)) }

func benchPass(b *testing.B, dsn string) {
	ctx := context.Background()
	st := storetest.Open(b, dsn)
	appID, err := st.AddApp(ctx, "bench", false, created)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "bench", VersionNum: 1, AvgNCPUs: 1}, created); err != nil {
		b.Fatal(err)
	}
	n := benchRows()
	due := n / 10
	bulkWork(b, st, appID, "due", 0, due, created+100, func(int) (int, int) { return store.ServerStateOver, store.OutcomeSuccess })
	bulkWork(b, st, appID, "later", 0, n-due, passAt+86400, func(int) (int, int) { return store.ServerStateOver, store.OutcomeSuccess })

	// The endpoint, and hosts that ask it for nothing but still write (their RPC
	// time) in one transaction each, as every scheduler request does.
	load := servertest.StartFromEnv(b, dsn, 4)
	steps := timeSteps(b, map[string]*store.Store{"rpc": load.Store(), "pass": st})
	time.Sleep(benchIdle())
	idle := load.Latencies()
	steps.phase("during")
	if err := st.BatchJob(ctx); err != nil { // as bretry's process does
		b.Fatal(err)
	}

	p := &bretry.Pass{Store: st, AppID: appID, App: "bench", Now: passAt, Batch: benchBatch(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Params: retry.Params{DWU: 86400, Dresult: 3600, NError: 3, Ndet: 6, Nredundancy: 2}}
	b.ResetTimer()
	var sum bretry.Summary
	start := time.Now()
	for i := 0; i < b.N; i++ {
		sum, err = p.Run(ctx)
		if err != nil {
			b.Fatal(err)
		}
	}
	wall := time.Since(start)
	steps.phase("after")
	b.StopTimer()
	lat := load.Latencies()
	// Idle again after the pass: the machine's load changes over a minute, so the
	// latency without a pass is taken on both sides of it.
	time.Sleep(benchIdle())
	idle = append(idle, load.Latencies()...)
	slices.Sort(idle)
	load.Stop()
	if sum.Retried != due && b.N == 1 {
		b.Fatalf("retried %d, want %d: %+v", sum.Retried, due, sum)
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/pass")
	b.ReportMetric(float64(due*b.N)/wall.Seconds(), "due-wu/s")
	b.ReportMetric(float64(n*b.N)/wall.Seconds(), "wu/s")
	servertest.Report(b, "rpc-", lat)
	servertest.Report(b, "rpc-idle-", idle)
	b.ReportMetric(servertest.RateFromEnv(b), "rpc-rate") // 0: the closed loop
	if len(lat) > 0 && len(idle) > 0 {
		b.ReportMetric(float64(lat[len(lat)*99/100])/float64(idle[len(idle)*99/100]), "p99-ratio")
	}
}

// stepTimes collects the transactions' steps (store.TimeTransactions) of named stores
// by phase of the benchmark (before, during and after the pass), and prints each
// step's percentiles when the benchmark ends: where a scheduler RPC waits during a
// pass (issue 33). They go to stderr: a benchmark's log is cut at 10 lines.
type stepTimes struct {
	mu    sync.Mutex
	now   string
	times map[string][]time.Duration
}

func timeSteps(b *testing.B, stores map[string]*store.Store) *stepTimes {
	t := &stepTimes{now: "before", times: map[string][]time.Duration{}}
	for name, s := range stores {
		s.TimeTransactions(func(step string, d time.Duration) {
			t.mu.Lock()
			k := t.now + " " + name + " " + step
			t.times[k] = append(t.times[k], d)
			t.mu.Unlock()
		})
	}
	b.Cleanup(func() {
		for _, s := range stores {
			s.TimeTransactions(nil)
		}
		t.print(os.Stderr)
	})
	return t
}

func (t *stepTimes) phase(p string) {
	t.mu.Lock()
	t.now = p
	t.mu.Unlock()
}

func (t *stepTimes) print(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
	fmt.Fprintf(w, "%-28s %7s %8s %8s %8s %8s %9s\n", "phase, store, step", "n", "p50 ms", "p90 ms", "p99 ms", "max ms", "total s")
	for _, k := range slices.Sorted(maps.Keys(t.times)) {
		v := t.times[k]
		slices.Sort(v)
		var sum time.Duration
		for _, d := range v {
			sum += d
		}
		fmt.Fprintf(w, "%-28s %7d %8s %8s %8s %8s %9.2f\n", k, len(v), ms(v[len(v)/2]), ms(v[len(v)*9/10]), ms(v[len(v)*99/100]), ms(v[len(v)-1]), sum.Seconds())
	}
}
