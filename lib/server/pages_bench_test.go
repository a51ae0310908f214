package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// pagesBenchNow is the benchmark database's time: results reported half an hour before
// it, so "the last hour" and "the last day" count most of them.
const pagesBenchNow = 1_700_000_000.0

// BenchmarkPages measures the status page in its forms, /metrics and the volunteers'
// pages over a database of a project's size (issue 31: ≤ 100 ms at 1,000,000
// results), on SQLite and, when BKIT_TEST_MYSQL_DSN is set, on MariaDB: BKIT_BENCH_RESULTS results (1,000,000 by default), 90 % finished work
// reported in the last hour (a tenth of it validated then), 5 % in progress, 5 %
// unsent, on 10,000 hosts of 10,000 users with credit, and a cron job's record. Each
// sub-benchmark fetches one page b.N times over loopback and reports the p50 and p99
// time to the last byte (scripts/bench-pages.sh prints them): as bserver serve answers
// by default (the status figures read once a minute) and with the figures read at
// every view.
func BenchmarkPages(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("BKIT_BENCH_RESULTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 {
			b.Fatalf("BKIT_BENCH_RESULTS=%q: want a number of results >= 100", v)
		}
	}
	for _, e := range storetest.Engines(b) {
		if e.DSN == "" {
			b.Logf("engine=%s: %s", e.Name, e.Skip)
			continue
		}
		b.Run("engine="+e.Name, func(b *testing.B) { benchPages(b, e.DSN, n) })
	}
}

// benchPages is BenchmarkPages on the database dsn.
func benchPages(b *testing.B, dsn string, n int) {
	ctx := context.Background()
	st := storetest.Open(b, dsn)
	t0 := time.Now()
	populatePages(b, st, n)
	var results int64
	st.DB.QueryRow(`SELECT COUNT(*) FROM result`).Scan(&results)
	b.Logf("%d results, made in %v", results, time.Since(t0).Round(time.Second))
	// Two servers on the database: bserver serve's default, whose status figures are
	// read once a minute (and ahead of the views), and one that reads them at every
	// view (--status-refresh 0): what reading them costs.
	url := func(cfg server.Config) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		srv := &server.Server{Store: st, Config: cfg, Now: func() time.Time { return time.Unix(int64(pagesBenchNow), 0) }}
		go func() { done <- srv.Serve(sctx, ln) }()
		b.Cleanup(func() { cancel(); <-done })
		return server.URLFor(ln)
	}
	cached, fresh := url(server.Config{}), url(server.Config{StatusRefresh: -1})
	var user int64
	if err := st.DB.QueryRow(`SELECT MAX(id) - 5000 FROM user`).Scan(&user); err != nil {
		b.Fatal(err)
	}
	for _, page := range []struct{ name, url string }{
		{"status", cached + "status"}, {"status.json", cached + "status.json"}, {"status-xml", cached + "server_status.php?xml=1"},
		{"metrics", cached + "metrics"},
		{"status-refresh-every-view", fresh + "status"}, {"metrics-refresh-every-scrape", fresh + "metrics"},
		{"user", cached + fmt.Sprintf("show_user.php?userid=%d", user)}, {"top_users", cached + "top_users.php"}, {"top_hosts", cached + "top_hosts.php?sort_by=total_credit"},
	} {
		b.Run("page="+page.name, func(b *testing.B) {
			lat := []time.Duration{}
			for b.Loop() {
				t0 := time.Now()
				resp, err := http.Get(page.url)
				if err != nil {
					b.Fatal(err)
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("%s: status %d, %v", page.url, resp.StatusCode, err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
		})
	}
}

// populatePages fills st as BenchmarkPages describes.
func populatePages(b *testing.B, st *store.Store, n int) {
	ctx := context.Background()
	if _, err := st.AddApp(ctx, "bench", false, 1); err != nil {
		b.Fatal(err)
	}
	const hosts = 10000
	spec := store.PopulateSpec{App: "bench", Hosts: hosts, Done: n * 90 / 100, InProgress: n * 5 / 100}
	spec.Unsent = n - spec.Done - spec.InProgress
	// Populate's finished results were received half an hour before its now.
	if err := st.Populate(ctx, spec, pagesBenchNow); err != nil {
		b.Fatal(err)
	}
	exec := func(q string, args ...any) {
		if _, err := st.DB.Exec(q, args...); err != nil {
			b.Fatalf("%.80s: %v", q, err)
		}
	}
	// Users with credit, one per host; a tenth of the finished results validated in
	// the last hour (the validator sets validate_time).
	// Populate makes one account for all its hosts; these come after it.
	var base int
	if err := st.DB.QueryRow(`SELECT COALESCE(MAX(id), 0) FROM user`).Scan(&base); err != nil {
		b.Fatal(err)
	}
	const chunk = 500
	for lo := 1; lo <= hosts; lo += chunk {
		var q strings.Builder
		q.WriteString(`INSERT INTO user (id, create_time, name, authenticator, total_credit, expavg_credit, expavg_time) VALUES `)
		var args []any
		for id := lo; id < lo+chunk && id <= hosts; id++ {
			if id > lo {
				q.WriteString(",")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			args = append(args, base+id, 1, fmt.Sprintf("volunteer %d", id), fmt.Sprintf("bench_user_%d", id), float64(id*37%10007)*10, float64(id*53%9973), pagesBenchNow-3600)
		}
		exec(q.String(), args...)
	}
	exec(`UPDATE host SET userid=id+?, total_credit=id*31%10009, expavg_credit=id*17%9967, expavg_time=?`, base, pagesBenchNow-3600)
	exec(`UPDATE result SET validate_time=? WHERE server_state=5 AND id%10=0`, pagesBenchNow-1200)
	for _, job := range []string{"bretry", "bretry validate", "blocality generate", "bserver assimilate"} {
		if err := st.EndCronRun(ctx, 0, store.CronRun{Job: job, App: "bench", Start: pagesBenchNow - 300}, 1, 100, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSchedulerRPCMetrics is BenchmarkSchedulerRPC (SQLite, synchronous=FULL, 16
// hosts each reporting one job and getting one) with the metrics on (the default) and
// off (serve --no-metrics), side by side in one run: BKIT_BENCH_ROUNDS rounds (3 by
// default) of off then on, so that the machine's load falls on both alike.
func BenchmarkSchedulerRPCMetrics(b *testing.B) {
	rounds := 3
	if v := os.Getenv("BKIT_BENCH_ROUNDS"); v != "" {
		var err error
		if rounds, err = strconv.Atoi(v); err != nil || rounds < 1 {
			b.Fatalf("BKIT_BENCH_ROUNDS=%q: want a number of rounds >= 1", v)
		}
	}
	for round := 1; round <= rounds; round++ {
		for _, on := range []bool{false, true} {
			name := fmt.Sprintf("round=%d/metrics=off", round)
			if on {
				name = fmt.Sprintf("round=%d/metrics=on", round)
			}
			b.Run(name, func(b *testing.B) {
				benchRPC(b, storetest.SQLiteDSN(b), 0, 1, false, server.Config{NoMetrics: !on})
			})
		}
	}
}
