// Package servertest keeps a scheduler endpoint busy for benchmarks of the server's
// cron jobs: a bserver endpoint on the job's database, with its own connections as a
// bserver process of its own would have, and hosts that keep making scheduler RPCs to
// it, so a benchmark reports what a pass costs the volunteers (the RPCs' latency
// during it) beside the pass's own time.
package servertest

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
)

// Load is an endpoint under load.
type Load struct {
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	lat    []time.Duration
	cancel func()
	served chan error
	st     *store.Store
}

// StartLoad starts an endpoint on dsn and hosts (each of an account of its own, as the
// scheduler requires) that each make a scheduler RPC (asking for nothing, but writing
// their RPC time in one transaction, as every request does) every 5 ms after the last
// one's reply. Stop ends it.
func StartLoad(tb testing.TB, dsn string, hosts int) *Load {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	l := &Load{stop: make(chan struct{}), served: make(chan error, 1)}
	if l.st, err = store.Open(dsn); err != nil {
		tb.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() { l.served <- (&server.Server{Store: l.st}).Serve(sctx, ln) }()
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
	for range hosts {
		u, err := l.st.AddUser(context.Background(), "volunteer", "", 1) // the scheduler requires an account
		if err != nil {
			tb.Fatal(err)
		}
		req := boincxml.SchedulerRequest{Authenticator: u.Authenticator, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9}}
		rep, err := rpc(&req)
		if err != nil {
			tb.Fatal(err)
		}
		req.HostID = rep.HostID
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				req.RPCSeqno++
				t := time.Now()
				if _, err := rpc(&req); err != nil {
					tb.Error(err)
					return
				}
				l.mu.Lock()
				l.lat = append(l.lat, time.Since(t))
				l.mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return l
}

// Latencies returns the RPCs' latencies since the last call, sorted, and forgets them:
// a benchmark of several passes calls it after each.
func (l *Load) Latencies() []time.Duration {
	l.mu.Lock()
	lat := l.lat
	l.lat = nil
	l.mu.Unlock()
	slices.Sort(lat)
	return lat
}

// Store is the endpoint's own store (its connections), e.g. to time its transactions.
func (l *Load) Store() *store.Store { return l.st }

// Stop ends the hosts and the endpoint.
func (l *Load) Stop() {
	close(l.stop)
	l.wg.Wait()
	l.cancel()
	<-l.served
	l.st.Close()
}

// Report adds the p50 and p99 of lat (ms) and their number to b's metrics, each name
// prefixed by prefix (e.g. "rpc-").
func Report(b *testing.B, prefix string, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, prefix+"p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, prefix+"p99-ms")
	b.ReportMetric(float64(len(lat)), prefix+"rpcs")
}
