// Package servertest keeps a scheduler endpoint busy for benchmarks of the server's
// cron jobs: a bserver endpoint on the job's database, with its own connections as a
// bserver process of its own would have, and hosts that keep making scheduler RPCs to
// it, so a benchmark reports what a pass costs the volunteers (the RPCs' latency
// during it) beside the pass's own time.
package servertest

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
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
// one's reply. Stop ends it. This closed loop keeps the endpoint as busy as it can be
// (hundreds of RPCs a second here): it measures what a pass costs a saturated
// scheduler, where any other writer's lock time queues every RPC behind it.
func StartLoad(tb testing.TB, dsn string, hosts int) *Load {
	return start(tb, dsn, hosts, 0)
}

// StartRate is StartLoad in an open loop: rate RPCs a second in all, as a Poisson
// process (a fixed seed), each from the next of hosts hosts in turn, whether or not
// the earlier ones were answered: what a project's many volunteers send, each on its
// own clock. A closed loop asks a slow endpoint less often, which hides its slowness;
// here each RPC's latency runs from the moment it was due, so an RPC that could not
// even be sent on time counts its wait.
func StartRate(tb testing.TB, dsn string, hosts int, rate float64) *Load {
	if rate <= 0 || hosts <= 0 {
		tb.Fatalf("servertest.StartRate: rate %g, hosts %d", rate, hosts)
	}
	return start(tb, dsn, hosts, rate)
}

func start(tb testing.TB, dsn string, hosts int, rate float64) *Load {
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
	// At most as many connections as the endpoint lets one address hold: the open
	// loop's RPCs all come from 127.0.0.1, and past the cap the endpoint closes new
	// connections (Post: EOF). An RPC that waits here for a connection counts the wait
	// in its latency, as one that could not be sent on time does.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: server.DefaultMaxConnsPerAddr}}
	rpc := func(req *boincxml.SchedulerRequest) (*boincxml.SchedulerReply, error) {
		body, _ := req.Marshal()
		resp, err := client.Post(url, "text/xml", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return boincxml.ParseSchedulerReply(resp.Body)
	}
	reqs := make([]boincxml.SchedulerRequest, hosts)
	for i := range reqs {
		u, err := l.st.AddUser(context.Background(), "volunteer", "", 1) // the scheduler requires an account
		if err != nil {
			tb.Fatal(err)
		}
		reqs[i] = boincxml.SchedulerRequest{Authenticator: u.Authenticator, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9}}
		rep, err := rpc(&reqs[i])
		if err != nil {
			tb.Fatal(err)
		}
		reqs[i].HostID = rep.HostID
	}
	record := func(d time.Duration) {
		l.mu.Lock()
		l.lat = append(l.lat, d)
		l.mu.Unlock()
	}
	if rate > 0 {
		l.wg.Add(1)
		go l.openLoop(tb, reqs, rate, rpc, record)
		return l
	}
	for i := range reqs {
		req := &reqs[i]
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
				if _, err := rpc(req); err != nil {
					tb.Error(err)
					return
				}
				record(time.Since(t))
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return l
}

// openLoop sends the RPCs of StartRate. Each host's requests are made in turn from a
// copy, so two of one host's in flight at once (a reply slower than the host's
// period) carry their own sequence numbers.
func (l *Load) openLoop(tb testing.TB, reqs []boincxml.SchedulerRequest, rate float64,
	rpc func(*boincxml.SchedulerRequest) (*boincxml.SchedulerReply, error), record func(time.Duration)) {
	defer l.wg.Done()
	rng := rand.New(rand.NewPCG(33, 27))
	due := time.Now()
	for i := 0; ; i++ {
		due = due.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		select {
		case <-l.stop:
			return
		case <-time.After(time.Until(due)):
		}
		h := &reqs[i%len(reqs)]
		h.RPCSeqno++
		req := *h
		l.wg.Add(1)
		go func(due time.Time) {
			defer l.wg.Done()
			if _, err := rpc(&req); err != nil {
				tb.Error(err)
				return
			}
			record(time.Since(due))
		}(due)
	}
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

// RateFromEnv is the open loop's rate a benchmark's environment asks for:
// BKIT_BENCH_RPC_RATE RPCs a second (0 when unset: the closed loop).
func RateFromEnv(tb testing.TB) float64 {
	v := os.Getenv("BKIT_BENCH_RPC_RATE")
	if v == "" {
		return 0
	}
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || !(r > 0) || math.IsInf(r, 0) {
		tb.Fatalf("BKIT_BENCH_RPC_RATE=%q: want a number of RPCs a second above 0", v)
	}
	return r
}

// OpenLoopHosts is how many hosts share an open loop's RPCs: as many as the
// benchmarks' projects hold, so that one host's RPCs seldom overlap.
const OpenLoopHosts = 100

// StartFromEnv starts the load the environment asks for (RateFromEnv): an open loop of
// OpenLoopHosts hosts at that rate, or else hosts hosts in a closed loop.
func StartFromEnv(tb testing.TB, dsn string, hosts int) *Load {
	tb.Helper()
	if rate := RateFromEnv(tb); rate > 0 {
		return StartRate(tb, dsn, OpenLoopHosts, rate)
	}
	return StartLoad(tb, dsn, hosts)
}
