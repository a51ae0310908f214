package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// TestStatementsPerRPC counts the statements of a scheduler RPC that reports its jobs
// and gets as many new ones, with 1 and with 10 of each, on each engine, and fails when
// the 10 cost more statements than the 1: a request's reports are recorded and its jobs
// claimed and described in a fixed number of statements (issue 33: 12 for 1 + 1 and 48
// for 10 + 10 before). One report of each request is an error, whose app version the
// host's quota needs. The counts are logged; BenchmarkSchedulerRPC10 prints them with
// the round trips under load.
func TestStatementsPerRPC(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := storetest.Open(t, dsn)
		if _, err := st.AddApp(ctx, "bench", false, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "bench", VersionNum: 1, AvgNCPUs: 1}, 1); err != nil {
			t.Fatal(err)
		}
		if err := st.Populate(ctx, store.PopulateSpec{App: "bench", Hosts: 10, Done: 100, Unsent: 100}, 1); err != nil {
			t.Fatal(err)
		}
		srv := &server.Server{Store: st}
		// Successes, and errors: what an error does to the host's quota needs its
		// result's app version, which comes with the reports' own read.
		for _, exit := range []int{0, 1} {
			count := map[int]int{}
			for _, k := range []int{1, 10} {
				ask := boincxml.SchedulerRequest{CPUReqSecs: float64(k), CPUReqInstances: float64(k), WorkReqSeconds: float64(k),
					Authenticator: accountKey(t, st), HostInfo: boincxml.HostInfo{PNCPUs: k, PFpops: 1e9}}
				rep, err := srv.Handle(ctx, &ask, 10, "http://127.0.0.1/")
				if err != nil {
					t.Fatal(err)
				}
				ask.HostID = rep.HostID
				ask.RPCSeqno++
				for _, r := range rep.ResultsSent {
					ask.Results = append(ask.Results, boincxml.ReportedResult{Name: r.Name, FinalCPUTime: 1000, State: boincxml.ResultFilesUploaded, ExitStatus: exit})
				}
				var stmts []string
				st.TraceStatements(func(q string, _ []any) { stmts = append(stmts, strings.Join(strings.Fields(q), " ")) })
				rep, err = srv.Handle(ctx, &ask, 11, "http://127.0.0.1/")
				st.TraceStatements(nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(ask.Results) != k || len(rep.ResultAcks) != k || len(rep.ResultsSent) != k {
					t.Fatalf("%d reported, %d acks, %d jobs sent; want %d of each", len(ask.Results), len(rep.ResultAcks), len(rep.ResultsSent), k)
				}
				count[k] = len(stmts)
				t.Logf("%d reports (exit status %d) + %d jobs: %d statements", k, exit, k, len(stmts))
				for _, q := range stmts {
					t.Logf("    %.110s", q)
				}
			}
			if count[10] > count[1] {
				t.Errorf("exit status %d: 10 reports + 10 jobs took %d statements, 1 + 1 took %d: something runs once per report or job", exit, count[10], count[1])
			}
		}
	})
}
