package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads url's /metrics with Prometheus' own text parser.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return mf
}

// metricValue is the value of the counter or gauge name whose labels include want
// (name=value pairs); the histogram's sample count for a histogram. ok is false when
// there is no such series.
func metricValue(mf map[string]*dto.MetricFamily, name string, want ...string) (v float64, ok bool) {
	f := mf[name]
	if f == nil {
		return 0, false
	}
series:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue series
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func dbCount(t testing.TB, st *store.Store, q string) float64 {
	t.Helper()
	var n float64
	if err := st.DB.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestMetricsAgreeWithDatabase makes a scripted run (BOINC hosts fetch jobs, upload
// and report them; a refused request, a malformed one, a GET; a refused account
// creation; a recorded cron run), parses /metrics with Prometheus' parser and checks
// its counters against the database and the run, on both engines.
func TestMetricsAgreeWithDatabase(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		fe := startFiles(t, dsn)
		ctx := context.Background()
		var ok, refused, bad, method int
		for i, data := range []string{"HELLO", "WORLD!", ""} {
			j := fe.boincJob(t)
			ok++
			if data != "" {
				if r := uploadReq(t, fe.url, j.out, j.sig, len(data), []byte(data)); uploadStatus(r) != "0" {
					t.Fatalf("upload %d: %s", i, r)
				}
			}
			fe.report(t, j, "")
			ok++
		}
		// A refused upload: no such file.
		if r := uploadReq(t, fe.url, "nosuch_0", "x", 1, []byte("x")); uploadStatus(r) == "0" {
			t.Fatalf("upload of an unknown file accepted: %s", r)
		}
		if _, st := fe.post(t, &boincxml.SchedulerRequest{HostID: 1, Authenticator: "wrong"}); st != 200 {
			t.Fatalf("wrong authenticator: status %d", st)
		}
		refused++
		if _, st := fe.postRaw(t, "scheduler", []byte("<scheduler_request><p_ncpus>x</p_ncpus>")); st != 400 {
			t.Fatalf("malformed request: status %d", st)
		}
		bad++
		resp, err := http.Get(fe.url + "scheduler")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		method++
		resp, err = http.Get(fe.url + "create_account.php?email_addr=a@b.c&passwd_hash=0123456789abcdef0123456789abcdef&user_name=x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if err := fe.st.EndCronRun(ctx, 0, store.CronRun{Job: "bretry", App: "fileapp", Start: 5}, 0.5, 4, nil); err != nil {
			t.Fatal(err)
		}
		if err := fe.st.EndCronRun(ctx, 0, store.CronRun{Job: "bretry", App: "fileapp", Start: 6}, 0.25, 2, context.DeadlineExceeded); err != nil {
			t.Fatal(err)
		}

		mf := scrape(t, fe.url)
		st := fe.st
		for _, c := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"bkit_scheduler_rpcs_total", []string{"outcome", "ok"}, float64(ok)},
			{"bkit_scheduler_rpcs_total", []string{"outcome", "refused"}, float64(refused)},
			{"bkit_scheduler_rpcs_total", []string{"outcome", "bad_request"}, float64(bad)},
			{"bkit_scheduler_rpcs_total", []string{"outcome", "bad_method"}, float64(method)},
			{"bkit_scheduler_rpcs_total", []string{"outcome", "server_error"}, 0},
			{"bkit_scheduler_rpc_duration_seconds", nil, float64(ok + refused + bad + method)},
			{"bkit_jobs_sent_total", nil, dbCount(t, st, `SELECT COUNT(*) FROM result WHERE hostid<>0`)},
			{"bkit_results_reported_total", nil, dbCount(t, st, `SELECT COUNT(*) FROM result WHERE received_time>0`)},
			{"bkit_uploads_total", []string{"outcome", "ok"}, dbCount(t, st, `SELECT COUNT(*) FROM result_file`)},
			{"bkit_uploads_total", []string{"outcome", "refused"}, 1},
			{"bkit_upload_bytes_total", nil, dbCount(t, st, `SELECT SUM(nbytes) FROM result_file`)},
			{"bkit_account_requests_refused_total", []string{"reason", "creation_disabled"}, 1},
			{"bkit_db_errors_total", nil, 0},
			{"bkit_cron_runs_total", []string{"job", "bretry", "app", "fileapp"}, dbCount(t, st, `SELECT runs FROM cron_job WHERE job='bretry'`)},
			{"bkit_cron_failures_total", []string{"job", "bretry"}, 1},
			{"bkit_cron_rows_total", []string{"job", "bretry"}, dbCount(t, st, `SELECT nrows FROM cron_job WHERE job='bretry'`)},
			{"bkit_cron_last_success", []string{"job", "bretry"}, 0},
			{"bkit_cron_last_run_timestamp_seconds", []string{"job", "bretry"}, 6},
			{"bkit_jobs", []string{"app", "fileapp", "stage", "unsent"}, dbCount(t, st, `SELECT COUNT(*) FROM result WHERE server_state=2 AND appid=(SELECT id FROM app WHERE name='fileapp')`)},
			{"bkit_jobs", []string{"app", "fileapp", "stage", "validation"}, dbCount(t, st, `SELECT COUNT(*) FROM workunit WHERE need_validate=1`)},
			{"bkit_active_last_day", []string{"kind", "hosts"}, dbCount(t, st, `SELECT COUNT(*) FROM host`)},
			{"bkit_db_scrape_success", nil, 1},
		} {
			got, found := metricValue(mf, c.name, c.labels...)
			if !found || got != c.want {
				t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, found, c.want)
			}
		}
		// The run did something: the figures above are not all zero.
		if v, _ := metricValue(mf, "bkit_jobs_sent_total"); v != 3 {
			t.Errorf("jobs sent = %v, want the 3 the hosts got", v)
		}
		if v, _ := metricValue(mf, "bkit_upload_bytes_total"); v != 11 {
			t.Errorf("upload bytes = %v, want 11 (HELLO, WORLD!)", v)
		}
	})
}

// TestNoMetrics: with Config.NoMetrics there is no /metrics, and the scheduler still
// answers.
func TestNoMetrics(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite:"+t.TempDir()+"/p.db", server.Config{NoMetrics: true}, 1)
	e.newHost(t, 1, 0)
	resp, err := http.Get(e.url + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("/metrics with NoMetrics: status %d, want 404", resp.StatusCode)
	}
}

// TestGrafanaDashboard: scripts/grafana-dashboard.json is JSON and every bkit metric
// its queries name is one /metrics serves.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../scripts/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	e := start(t, "sqlite:"+t.TempDir()+"/p.db", server.Config{}, 1)
	e.newHost(t, 1, 0)
	if err := e.st.EndCronRun(context.Background(), 0, store.CronRun{Job: "bretry", Start: 1}, 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	mf := scrape(t, e.url)
	names := regexp.MustCompile(`bkit_[a-z_]+`)
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, name := range names.FindAllString(tg.Expr, -1) {
				n++
				family := strings.TrimSuffix(name, "_bucket")
				if mf[family] == nil {
					t.Errorf("panel %q: %s is not among /metrics' families", p.Title, name)
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("the dashboard names %d bkit metrics", n)
	}
}
