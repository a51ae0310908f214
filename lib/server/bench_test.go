package server_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// benchClients is how many hosts talk to the server at once in the benchmark.
const benchClients = 16

// BenchmarkSchedulerRPC measures scheduler RPCs per second on loopback with SQLite as
// bserver opens it (synchronous=FULL: every acknowledged report on disk):
// benchClients hosts each loop "report my finished job, get one new job", the steady
// state of a busy project. It reports rpc/s, the p50 and p99 latency in ms and the
// statements and round trips per RPC (scripts/bench-bserver.sh prints them).
func BenchmarkSchedulerRPC(b *testing.B) { benchRPC(b, storetest.SQLiteDSN(b), 0, 1, server.Config{}) }

// BenchmarkSchedulerRPCSQLiteNormal is the same with synchronous=NORMAL, which may lose
// the last commits in a power cut: the price of durability, side by side.
func BenchmarkSchedulerRPCSQLiteNormal(b *testing.B) {
	benchRPC(b, storetest.SQLiteDSN(b)+"?synchronous=normal", 0, 1, server.Config{})
}

// BenchmarkSchedulerRPCMySQL is the same on MySQL/MariaDB (BKIT_TEST_MYSQL_DSN); it
// reports the server's innodb_flush_log_at_trx_commit as trx-flush (1: durable).
func BenchmarkSchedulerRPCMySQL(b *testing.B) { benchRPC(b, storetest.MySQLDSN(b), 0, 1, server.Config{}) }

// BenchmarkSchedulerRPC10 is BenchmarkSchedulerRPC with 10 reports and 10 jobs in each
// RPC (a host of 10 cores), per engine: the statements and round trips per RPC show
// whether a request's reports and jobs are batched (issue 33: 48 statements for 10 + 10,
// 12 for 1 + 1, before they were).
func BenchmarkSchedulerRPC10(b *testing.B) {
	for _, e := range storetest.Engines(b) {
		b.Run("engine="+e.Name, func(b *testing.B) {
			e.Require(b)
			benchRPC(b, e.DSN, 0, 10, server.Config{})
		})
	}
}

// BenchmarkSchedulerRPCScale is BenchmarkSchedulerRPC on tables of a real project's
// size, per engine (sqlite: synchronous=FULL; mysql when BKIT_TEST_MYSQL_DSN is set)
// and per number of workunits (BKIT_BENCH_WORKUNITS, comma-separated; 10,000 and
// 1,000,000 by default): all but the benchmark's own jobs are finished work
// (store.Populate), as in a project that has run for a while. A statement that reads a
// whole table makes RPC/s fall with the table's size (issue 28: 181 RPC/s at 3,000
// workunits, 19 at 100,000 on MariaDB); with every statement on a key, RPC/s at
// 1,000,000 stays near that at 10,000.
func BenchmarkSchedulerRPCScale(b *testing.B) {
	sizes := []int{10000, 1000000}
	if v := os.Getenv("BKIT_BENCH_WORKUNITS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("BKIT_BENCH_WORKUNITS=%q: want numbers of workunits such as 10000,1000000", v)
			}
			sizes = append(sizes, n)
		}
	}
	for _, e := range storetest.Engines(b) {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("engine=%s/workunits=%d", e.Name, n), func(b *testing.B) {
				e.Require(b)
				// Each size on a database of its own.
				dsn := storetest.SQLiteDSN(b)
				if e.Name == store.MySQL {
					dsn = storetest.MySQLDSN(b)
				}
				benchRPC(b, dsn, n, 1, server.Config{})
			})
		}
	}
}

// benchPool is how many jobs a benchmark makes for its RPCs: -benchtime's count with
// NNNx (scripts/bench-bserver.sh), else enough for a second or two.
func benchPool() int {
	if f := flag.Lookup("test.benchtime"); f != nil {
		if n, err := strconv.Atoi(strings.TrimSuffix(f.Value.String(), "x")); err == nil && strings.HasSuffix(f.Value.String(), "x") {
			return n
		}
	}
	return 20000
}

// benchRPC runs the benchmark on dsn, whose tables hold workunits workunits in all (at
// least the benchmark's jobs; the rest finished work); each RPC reports perRPC jobs and
// gets as many new ones, from a server configured cfg.
func benchRPC(b *testing.B, dsn string, workunits, perRPC int, cfg server.Config) {
	ctx := context.Background()
	st := storetest.Open(b, dsn)
	durable, setting, err := st.Durability(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %s (durable: %v)", st.Engine(), setting, durable)
	var flush float64
	if st.Engine() == store.MySQL {
		if err := st.DB.QueryRowContext(ctx, `SELECT @@innodb_flush_log_at_trx_commit`).Scan(&flush); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := st.AddApp(ctx, "bench", false, 1); err != nil {
		b.Fatal(err)
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "bench", VersionNum: 1, AvgNCPUs: 1}, 1); err != nil {
		b.Fatal(err)
	}
	pool := (benchPool() + 2*benchClients) * perRPC
	t0 := time.Now()
	if err := st.Populate(ctx, store.PopulateSpec{App: "bench", Hosts: 1000, Done: max(0, workunits-pool), Unsent: pool}, 1); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d workunits (%d jobs unsent) made in %v", max(workunits, pool), pool, time.Since(t0).Round(time.Millisecond))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- (&server.Server{Store: st, Config: cfg}).Serve(sctx, ln) }()
	defer func() { cancel(); <-done }()
	url := server.URLFor(ln) + "scheduler"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchClients}}

	rpc := func(req *boincxml.SchedulerRequest) *boincxml.SchedulerReply {
		body, _ := req.Marshal()
		resp, err := client.Post(url, "text/xml", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		rep, err := boincxml.ParseSchedulerReply(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		return rep
	}
	// Each host's first contact (untimed) gets it an identity and perRPC jobs.
	type host struct {
		req  boincxml.SchedulerRequest
		jobs []boincxml.ReplyResult
	}
	hosts := make([]*host, benchClients)
	for i := range hosts {
		ask := boincxml.SchedulerRequest{CPUReqSecs: float64(perRPC), CPUReqInstances: float64(perRPC), WorkReqSeconds: float64(perRPC),
			Authenticator: accountKey(b, st), HostInfo: boincxml.HostInfo{PNCPUs: perRPC, PFpops: 1e9}}
		rep := rpc(&ask)
		ask.HostID = rep.HostID
		hosts[i] = &host{req: ask, jobs: rep.ResultsSent}
	}
	var statements atomic.Int64
	st.TraceStatements(func(string, []any) { statements.Add(1) })
	lat := make([][]time.Duration, benchClients)
	turns := make(chan struct{})
	var wg sync.WaitGroup
	var start time.Time
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range turns {
				h.req.RPCSeqno++
				h.req.Results = h.req.Results[:0]
				for _, j := range h.jobs {
					h.req.Results = append(h.req.Results, boincxml.ReportedResult{Name: j.Name, FinalCPUTime: 1000, State: boincxml.ResultFilesUploaded})
				}
				t0 := time.Now()
				rep := rpc(&h.req)
				lat[i] = append(lat[i], time.Since(t0))
				if len(rep.ResultAcks) != len(h.jobs) || len(rep.ResultsSent) != perRPC {
					b.Errorf("reply: %d acks, %d jobs; want %d, %d (the pool of %d jobs ran out? use -benchtime NNNx)",
						len(rep.ResultAcks), len(rep.ResultsSent), len(h.jobs), perRPC, pool)
					for range turns {
					}
					return
				}
				h.jobs = rep.ResultsSent
			}
		}()
	}
	// b.Loop runs this function once (the tables are made once) and counts the RPCs;
	// the hosts take them in turn.
	statements.Store(0)
	trips0 := st.RoundTrips()
	for b.Loop() {
		if start.IsZero() {
			start = time.Now()
		}
		turns <- struct{}{}
	}
	close(turns)
	wg.Wait()
	elapsed := time.Since(start)
	st.TraceStatements(nil)
	trips := st.RoundTrips() - trips0
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / 1e6 }
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "rpc/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(statements.Load())/float64(len(all)), "stmts/rpc")
	b.ReportMetric(float64(trips)/float64(len(all)), "trips/rpc")
	if st.Engine() == store.MySQL {
		b.ReportMetric(flush, "trx-flush")
	}
}
