package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/programs/bretry"
	"github.com/bkit/bkit/lib/retry"
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
func BenchmarkSchedulerRPC(b *testing.B) {
	benchRPC(b, storetest.SQLiteDSN(b), 0, 1, false, server.Config{})
}

// BenchmarkSchedulerRPCSQLiteNormal is the same with synchronous=NORMAL, which may lose
// the last commits in a power cut: the price of durability, side by side.
func BenchmarkSchedulerRPCSQLiteNormal(b *testing.B) {
	benchRPC(b, storetest.SQLiteDSN(b)+"?synchronous=normal", 0, 1, false, server.Config{})
}

// BenchmarkSchedulerRPCMySQL is the same on MySQL/MariaDB (BKIT_TEST_MYSQL_DSN); it
// reports the server's innodb_flush_log_at_trx_commit as trx-flush (1: durable).
func BenchmarkSchedulerRPCMySQL(b *testing.B) {
	benchRPC(b, storetest.MySQLDSN(b), 0, 1, false, server.Config{})
}

// BenchmarkSchedulerRPC10 is BenchmarkSchedulerRPC with 10 reports and 10 jobs in each
// RPC (a host of 10 cores), per engine: the statements and round trips per RPC show
// whether a request's reports and jobs are batched (issue 33: 48 statements for 10 + 10,
// 12 for 1 + 1, before they were).
func BenchmarkSchedulerRPC10(b *testing.B) {
	for _, e := range storetest.Engines(b) {
		b.Run("engine="+e.Name, func(b *testing.B) {
			e.Require(b)
			benchRPC(b, e.DSN, 0, 10, false, server.Config{})
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
// 1,000,000 stays near that at 10,000. With BKIT_BENCH_BRETRY set, each size runs
// again with bretry passes running beside the RPCs (a tenth of the workunits due:
// their results lost, retried), each pass in its own connections as bretry's process
// would; bretry-busy is the share of the timed RPCs' wall time a pass was running.
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
	variants := []bool{false}
	if os.Getenv("BKIT_BENCH_BRETRY") != "" {
		variants = append(variants, true)
	}
	for _, e := range storetest.Engines(b) {
		for _, n := range sizes {
			for _, withRetry := range variants {
				name := fmt.Sprintf("engine=%s/workunits=%d", e.Name, n)
				if withRetry {
					name += "/bretry=running"
				}
				b.Run(name, func(b *testing.B) {
					e.Require(b)
					// Each size on a database of its own.
					dsn := storetest.SQLiteDSN(b)
					if e.Name == store.MySQL {
						dsn = storetest.MySQLDSN(b)
					}
					benchRPC(b, dsn, n, 1, withRetry, server.Config{})
				})
			}
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
// gets as many new ones, from a server configured cfg. withRetry: a tenth of the workunits are in progress on other
// hosts and past their deadline at the time bretry passes, run over and over beside
// the RPCs, are told it is.
func benchRPC(b *testing.B, dsn string, workunits, perRPC int, withRetry bool, cfg server.Config) {
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
	spec := store.PopulateSpec{App: "bench", Hosts: 1000, Done: max(0, workunits-pool), Unsent: pool}
	if withRetry {
		spec.InProgress = workunits / 10
		spec.Done = max(0, spec.Done-spec.InProgress)
	}
	t0 := time.Now()
	if err := st.Populate(ctx, spec, 1); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d workunits (%d jobs unsent) made in %v", max(workunits, pool), pool, time.Since(t0).Round(time.Millisecond))
	if withRetry {
		// The pool's workunits checked long after the passes' time: Populate gives every
		// unfinished workunit one check time, so the passes found the pool due too and
		// gave it up (seed 003's rule 1, a result never sent), and the RPCs ran out of
		// jobs whenever a pass reached it before they ended (at 10,000 workunits on a
		// quiet machine). Only the tenth in progress is the passes' work.
		if _, err := st.DB.ExecContext(ctx, `UPDATE workunit SET retry_check_time=? WHERE id IN
			(SELECT workunitid FROM result WHERE server_state=?)`, 1e9, store.ServerStateUnsent); err != nil {
			b.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	// The server's goroutines carry the label role=server (net/http's per-connection
	// goroutines inherit it): with -cpuprofile, `go tool pprof -tagfocus=role=server`
	// is the front end's own CPU, apart from the load generator's (docs/scaling.md).
	go pprof.Do(sctx, pprof.Labels("role", "server"), func(sctx context.Context) {
		done <- (&server.Server{Store: st, Config: cfg}).Serve(sctx, ln)
	})
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
	// bretry's passes, in a store of their own (as its own process), from the start
	// of the timed RPCs to their end.
	var retryBusy atomic.Int64 // nanoseconds a pass ran while RPCs were timed
	stopRetry := make(chan struct{})
	retryDone := make(chan error, 1)
	if withRetry {
		rst, err := store.Open(dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer rst.Close()
		if err := rst.BatchJob(ctx); err != nil { // as bretry's process does
			b.Fatal(err)
		}
		var appID int64
		if err := rst.InTx(ctx, func(tx *store.Tx) error {
			return tx.QueryRow(`SELECT id FROM app WHERE name=?`, "bench").Scan(&appID)
		}); err != nil {
			b.Fatal(err)
		}
		go func() {
			for {
				select {
				case <-stopRetry:
					retryDone <- nil
					return
				default:
				}
				p := &bretry.Pass{Store: rst, AppID: appID, App: "bench", Now: 3 * 86400, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
					Params: retry.Params{DWU: 86400, Dresult: 3600, NError: 3, Ndet: 6, Nredundancy: 2},
					Stop: func() bool {
						select {
						case <-stopRetry:
							return true
						default:
							return false
						}
					}}
				t := time.Now()
				_, err := p.Run(ctx)
				retryBusy.Add(int64(time.Since(t)))
				if err != nil {
					retryDone <- err
					return
				}
				time.Sleep(10 * time.Millisecond) // a pass that found nothing: again soon
			}
		}()
	}
	statements.Store(0)
	trips0 := st.RoundTrips()
	proc0 := processCPU()
	var db0 map[int]time.Duration
	mysqld := 0
	if st.Engine() == store.MySQL {
		// As many connections as the hosts can use, opened now: a connection opened
		// during the run may get a server thread with other work's time on it, so
		// only threads seen before and after count.
		var conns []*sql.Conn
		for range benchClients + 4 {
			c, err := st.DB.Conn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
		mysqld, db0 = connectionCPU(b, st)
	}
	for b.Loop() {
		if start.IsZero() {
			start = time.Now()
		}
		turns <- struct{}{}
	}
	close(turns)
	wg.Wait()
	elapsed := time.Since(start)
	proc := processCPU() - proc0
	var dbCPU time.Duration
	if mysqld != 0 {
		// The CPU of the database's threads serving this benchmark's connections
		// (those that existed before the run count from then on).
		_, db1 := connectionCPU(b, st)
		for tid, c := range db1 {
			if c0, ok := db0[tid]; ok {
				dbCPU += c - c0
			}
		}
	}
	if withRetry {
		close(stopRetry)
		if err := <-retryDone; err != nil {
			b.Fatalf("bretry pass: %v", err)
		}
		b.ReportMetric(min(1, float64(retryBusy.Load())/float64(elapsed)), "bretry-busy")
	}
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
	b.ReportMetric(float64(proc)/1e6/float64(len(all)), "proc-cpu-ms/rpc")
	if mysqld != 0 {
		b.ReportMetric(float64(dbCPU)/1e6/float64(len(all)), "db-cpu-ms/rpc")
	}
	if st.Engine() == store.MySQL {
		b.ReportMetric(flush, "trx-flush")
	}
}

// processCPU is the CPU time (user and system) this process has used: the front end,
// the load generator and, on SQLite, the database engine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// connectionCPU returns the CPU time of each thread of a MariaDB server on this
// machine serving a connection to st's database (information_schema.PROCESSLIST's TID,
// /proc's per-thread times), and the server's process id; 0 when the server is not
// readable here (another machine, MySQL without TID). The threads' time is the work of
// the statements; InnoDB's background threads (log writer, purge) are not in it.
func connectionCPU(b *testing.B, st *store.Store) (int, map[int]time.Duration) {
	ctx := context.Background()
	var pidFile string
	if err := st.DB.QueryRowContext(ctx, `SELECT @@pid_file`).Scan(&pidFile); err != nil {
		return 0, nil
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, nil
	}
	rows, err := st.DB.QueryContext(ctx, `SELECT TID FROM information_schema.PROCESSLIST WHERE DB=DATABASE()`)
	if err != nil {
		return 0, nil
	}
	defer rows.Close()
	out := map[int]time.Duration{}
	for rows.Next() {
		var tid int
		if err := rows.Scan(&tid); err != nil {
			b.Fatal(err)
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
		if err != nil {
			continue // the connection closed meanwhile
		}
		// Fields after the command's closing parenthesis: utime is the 12th, stime the 13th.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		stt, _ := strconv.ParseInt(f[12], 10, 64)
		out[tid] = time.Duration(ut+stt) * time.Second / 100 // clock ticks (USER_HZ 100)
	}
	return pid, out
}
