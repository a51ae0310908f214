package server_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"slices"
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
// state of a busy project. It reports rpc/s and the p50 and p99 latency in ms
// (scripts/bench-bserver.sh prints them).
func BenchmarkSchedulerRPC(b *testing.B) { benchRPC(b, storetest.SQLiteDSN(b)) }

// BenchmarkSchedulerRPCSQLiteNormal is the same with synchronous=NORMAL, which may lose
// the last commits in a power cut: the price of durability, side by side.
func BenchmarkSchedulerRPCSQLiteNormal(b *testing.B) {
	benchRPC(b, storetest.SQLiteDSN(b)+"?synchronous=normal")
}

// BenchmarkSchedulerRPCMySQL is the same on MySQL/MariaDB (BKIT_TEST_MYSQL_DSN); it
// reports the server's innodb_flush_log_at_trx_commit as trx-flush (1: durable).
func BenchmarkSchedulerRPCMySQL(b *testing.B) { benchRPC(b, storetest.MySQLDSN(b)) }

func benchRPC(b *testing.B, dsn string) {
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
	if _, err := st.CreateWork(ctx, store.WorkSpec{App: "bench", Count: b.N + 2*benchClients, FpopsEst: 1e12,
		DelayBound: 86400, MinQuorum: 1, TargetNResults: 1, MaxErrorResults: 3, MaxTotalResults: 5, MaxSuccessResults: 3}, 1); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- (&server.Server{Store: st}).Serve(sctx, ln) }()
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
	// Each host's first contact (untimed) gets it an identity and one job.
	type host struct {
		req boincxml.SchedulerRequest
		job string
	}
	hosts := make([]*host, benchClients)
	for i := range hosts {
		ask := boincxml.SchedulerRequest{CPUReqSecs: 1, CPUReqInstances: 1, WorkReqSeconds: 1,
			HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9}}
		rep := rpc(&ask)
		ask.HostID, ask.Authenticator = rep.HostID, rep.Authenticator
		hosts[i] = &host{req: ask, job: rep.ResultsSent[0].Name}
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	lat := make([][]time.Duration, benchClients)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				h.req.RPCSeqno++
				h.req.Results = []boincxml.ReportedResult{{Name: h.job, FinalCPUTime: 1000, State: boincxml.ResultFilesUploaded}}
				t0 := time.Now()
				rep := rpc(&h.req)
				lat[i] = append(lat[i], time.Since(t0))
				if len(rep.ResultAcks) != 1 || len(rep.ResultsSent) != 1 {
					b.Errorf("reply: %d acks, %d jobs; want 1, 1", len(rep.ResultAcks), len(rep.ResultsSent))
					return
				}
				h.job = rep.ResultsSent[0].Name
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / 1e6 }
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "rpc/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	if st.Engine() == store.MySQL {
		b.ReportMetric(flush, "trx-flush")
	}
}
