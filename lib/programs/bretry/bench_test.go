package bretry_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/programs/bretry"
	"github.com/bkit/bkit/lib/retry"
	"github.com/bkit/bkit/lib/server/servertest"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

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
// RPCs' p50 and p99 latency during the pass (scripts/bench.sh prints them). Run with
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
	load := servertest.StartLoad(b, dsn, 4)

	p := &bretry.Pass{Store: st, AppID: appID, App: "bench", Now: passAt, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
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
	b.StopTimer()
	lat := load.Latencies()
	load.Stop()
	if sum.Retried != due && b.N == 1 {
		b.Fatalf("retried %d, want %d: %+v", sum.Retried, due, sum)
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/pass")
	b.ReportMetric(float64(due*b.N)/wall.Seconds(), "due-wu/s")
	b.ReportMetric(float64(n*b.N)/wall.Seconds(), "wu/s")
	servertest.Report(b, "rpc-", lat)
}
