package bretry_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/programs/bretry"
	"github.com/bkit/bkit/lib/retry"
	"github.com/bkit/bkit/lib/server"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	// The endpoint has its own connections, as a bserver process of its own would.
	sst, err := store.Open(dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer sst.Close()
	go func() { served <- (&server.Server{Store: sst}).Serve(sctx, ln) }()
	defer func() { cancel(); <-served }()
	url := server.URLFor(ln) + "scheduler"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	rpc := func(req *boincxml.SchedulerRequest) (*boincxml.SchedulerReply, error) {
		body, _ := req.Marshal()
		resp, err := client.Post(url, "text/xml", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return boincxml.ParseSchedulerReply(resp.Body)
	}
	const hosts = 4
	stop := make(chan struct{})
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for h := 0; h < hosts; h++ {
		u, err := sst.AddUser(ctx, "volunteer", "", 1) // the scheduler requires an account
		if err != nil {
			b.Fatal(err)
		}
		req := boincxml.SchedulerRequest{Authenticator: u.Authenticator, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9}}
		rep, err := rpc(&req)
		if err != nil {
			b.Fatal(err)
		}
		req.HostID = rep.HostID
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req.RPCSeqno++
				t := time.Now()
				if _, err := rpc(&req); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(t))
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}

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
	close(stop)
	wg.Wait()
	if sum.Retried != due && b.N == 1 {
		b.Fatalf("retried %d, want %d: %+v", sum.Retried, due, sum)
	}
	slices.Sort(lat)
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/pass")
	b.ReportMetric(float64(due*b.N)/wall.Seconds(), "due-wu/s")
	b.ReportMetric(float64(n*b.N)/wall.Seconds(), "wu/s")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "rpc-p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "rpc-p99-ms")
		b.ReportMetric(float64(len(lat)), "rpcs")
	}
}
