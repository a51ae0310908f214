package server

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/bkit/bkit/lib/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the endpoint's Prometheus metrics (issue 31): what this process saw
// (scheduler RPCs by outcome and their latency, jobs sent, reports, uploads, account
// requests refused, the store's database errors and retries) and, read from the
// database at each scrape, what every process and cron job of the project did (each
// job's recorded runs, the backlog of each stage), so that any server of the project
// answers the same for those. Each Server has its own registry: tests and emulators
// run several servers in one process.
type metrics struct {
	reg            *prometheus.Registry
	rpcs           *prometheus.CounterVec
	latency        prometheus.Histogram
	jobsSent       prometheus.Counter
	reports        prometheus.Counter
	uploads        *prometheus.CounterVec
	uploadBytes    prometheus.Counter
	accountRefused *prometheus.CounterVec
	window         *rpcWindow
}

// RPC outcomes, the values of bkit_scheduler_rpcs_total's outcome label.
const (
	outcomeOK          = "ok"           // answered: reports recorded, jobs sent (maybe none)
	outcomeRefused     = "refused"      // an unknown host, a wrong authenticator: a notice, nothing changed
	outcomeBadRequest  = "bad_request"  // HTTP 400: the request did not parse
	outcomeTooLarge    = "too_large"    // HTTP 413
	outcomeBadMethod   = "bad_method"   // HTTP 405
	outcomeServerError = "server_error" // HTTP 500: the database failed
)

// latencyBuckets (seconds) span a loopback request on an idle server (a millisecond)
// to one stuck behind a busy database for seconds.
var latencyBuckets = []float64{.0005, .001, .002, .003, .005, .0075, .01, .015, .02, .03, .05, .075, .1, .2, .5, 1, 2, 5, 10}

func newMetrics(st *store.Store, status func(context.Context) (*store.ProjectStatus, error)) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		rpcs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bkit_scheduler_rpcs_total",
			Help: "Scheduler requests answered by this process, by outcome (ok, refused, bad_request, too_large, bad_method, server_error)."}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bkit_scheduler_rpc_duration_seconds",
			Help: "Time from a scheduler request's arrival to its reply written, every outcome.", Buckets: latencyBuckets}),
		jobsSent: prometheus.NewCounter(prometheus.CounterOpts{Name: "bkit_jobs_sent_total",
			Help: "Results sent to hosts in scheduler replies."}),
		reports: prometheus.NewCounter(prometheus.CounterOpts{Name: "bkit_results_reported_total",
			Help: "Results hosts reported in answered scheduler requests (each acknowledged; one reported again counts again)."}),
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bkit_uploads_total",
			Help: "Upload requests (file uploads and size queries), by outcome (ok, refused, error)."}, []string{"outcome"}),
		uploadBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "bkit_upload_bytes_total",
			Help: "Bytes of output files received and recorded."}),
		accountRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bkit_account_requests_refused_total",
			Help: "Account lookups and creations refused, by reason (rate: too many from one network; creation_disabled; bad_password)."}, []string{"reason"}),
		window: newRPCWindow(),
	}
	for _, o := range []string{outcomeOK, outcomeRefused, outcomeBadRequest, outcomeTooLarge, outcomeBadMethod, outcomeServerError} {
		m.rpcs.WithLabelValues(o) // every outcome shows from the start, at 0
	}
	for _, o := range []string{"ok", "refused", "error"} {
		m.uploads.WithLabelValues(o)
	}
	for _, r := range []string{"rate", "creation_disabled", "bad_password"} {
		m.accountRefused.WithLabelValues(r)
	}
	m.reg.MustRegister(m.rpcs, m.latency, m.jobsSent, m.reports, m.uploads, m.uploadBytes, m.accountRefused,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bkit_db_errors_total",
			Help: "Database transactions of this process that failed with an engine error."}, func() float64 { return float64(st.TxStats().Errors) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bkit_db_retries_total",
			Help: "Database transactions of this process the engine aborted for contention and that were run again."}, func() float64 { return float64(st.TxStats().Retries) }),
		&dbCollector{status: status},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// metrics returns the server's metrics, made on first use; nil when
// Config.NoMetrics turns them off.
func (s *Server) metrics() *metrics {
	if s.Config.NoMetrics {
		return nil
	}
	s.metricsOnce.Do(func() { s.m = newMetrics(s.Store, s.status) })
	return s.m
}

// serveMetrics is GET /metrics in Prometheus' text exposition format.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	m := s.metrics()
	if m == nil {
		http.Error(w, "metrics are off (bserver serve --no-metrics)", http.StatusNotFound)
		return
	}
	promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: errorLogger{s}, ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

type errorLogger struct{ s *Server }

func (e errorLogger) Println(v ...any) { e.s.log().Warn("metrics", "err", v) }

// rpcNote is what the scheduler tells the instrumentation about one request: its
// outcome when the HTTP status does not say it (a refusal is a 200), and the jobs
// and reports of an answered one.
type rpcNote struct {
	outcome       string
	jobs, reports int
}

type rpcNoteKey struct{}

// noteOf returns the request's rpcNote (a throw-away one when it is not
// instrumented).
func noteOf(r *http.Request) *rpcNote {
	if n, ok := r.Context().Value(rpcNoteKey{}).(*rpcNote); ok {
		return n
	}
	return &rpcNote{}
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrumentRPC counts and times the scheduler requests h answers.
func (s *Server) instrumentRPC(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m := s.metrics()
		if m == nil {
			h(w, r)
			return
		}
		start := time.Now()
		note := &rpcNote{}
		sw := &statusWriter{ResponseWriter: w}
		h(sw, r.WithContext(context.WithValue(r.Context(), rpcNoteKey{}, note)))
		d := time.Since(start)
		outcome := note.outcome
		if outcome == "" {
			switch sw.status {
			case http.StatusOK, 0:
				outcome = outcomeOK
			case http.StatusRequestEntityTooLarge:
				outcome = outcomeTooLarge
			case http.StatusMethodNotAllowed:
				outcome = outcomeBadMethod
			case http.StatusBadRequest:
				outcome = outcomeBadRequest
			default:
				outcome = outcomeServerError
			}
		}
		m.rpcs.WithLabelValues(outcome).Inc()
		m.latency.Observe(d.Seconds())
		if outcome == outcomeOK {
			m.jobsSent.Add(float64(note.jobs))
			m.reports.Add(float64(note.reports))
		}
		m.window.add(start, d)
	}
}

// countUpload counts an upload request's outcome.
func (s *Server) countUpload(outcome string) {
	if m := s.metrics(); m != nil {
		m.uploads.WithLabelValues(outcome).Inc()
	}
}

// countUploadBytes counts the bytes of an output file received and recorded.
func (s *Server) countUploadBytes(nbytes float64) {
	if m := s.metrics(); m != nil {
		m.uploadBytes.Add(nbytes)
	}
}

// countAccountRefused counts an account request refused for reason.
func (s *Server) countAccountRefused(reason string) {
	if m := s.metrics(); m != nil {
		m.accountRefused.WithLabelValues(reason).Inc()
	}
}

// dbCollector reads, at each scrape, what the database records for every process
// of the project: the cron jobs' runs (store.CronJobs) and the backlog of each
// stage per app (store.ProjectStatus's counts): the status page's figures, as fresh
// as the page's (Config.StatusRefresh).
type dbCollector struct {
	status func(context.Context) (*store.ProjectStatus, error)
}

var (
	cronLabels   = []string{"job", "app"}
	descCronRuns = prometheus.NewDesc("bkit_cron_runs_total", "Finished runs of a cron job, from the database (cron_job).", cronLabels, nil)
	descCronFail = prometheus.NewDesc("bkit_cron_failures_total", "Runs of a cron job that failed.", cronLabels, nil)
	descCronRows = prometheus.NewDesc("bkit_cron_rows_total", "Rows a cron job's runs handled.", cronLabels, nil)
	descCronSecs = prometheus.NewDesc("bkit_cron_seconds_total", "Wall-clock seconds a cron job's runs took.", cronLabels, nil)
	descCronLast = prometheus.NewDesc("bkit_cron_last_run_timestamp_seconds", "Start of a cron job's last finished run (the job's own clock).", cronLabels, nil)
	descCronDur  = prometheus.NewDesc("bkit_cron_last_duration_seconds", "Duration of a cron job's last finished run.", cronLabels, nil)
	descCronOK   = prometheus.NewDesc("bkit_cron_last_success", "1 when a cron job's last finished run succeeded.", cronLabels, nil)
	descCronLive = prometheus.NewDesc("bkit_cron_unfinished_runs", "Runs of a cron job started after its last finished one and not finished: running, or killed.", cronLabels, nil)
	descBacklog  = prometheus.NewDesc("bkit_jobs", "Jobs of an app at each stage: results unsent and in_progress; workunits waiting for validation, assimilation, deletion.", []string{"app", "stage"}, nil)
	descActive   = prometheus.NewDesc("bkit_active_last_day", "Hosts and users whose hosts made a scheduler request in the last day.", []string{"kind"}, nil)
	descScrapeOK = prometheus.NewDesc("bkit_db_scrape_success", "1 when this scrape read the database's figures.", nil, nil)
)

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCronRuns, descCronFail, descCronRows, descCronSecs, descCronLast, descCronDur, descCronOK, descCronLive, descBacklog, descActive, descScrapeOK} {
		ch <- d
	}
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.status(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descScrapeOK, prometheus.GaugeValue, 0)
		ch <- prometheus.NewInvalidMetric(descScrapeOK, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(descScrapeOK, prometheus.GaugeValue, 1)
	for _, j := range st.CronJobs {
		l := []string{j.Job, j.App}
		ok := 0.0
		if j.LastSuccess {
			ok = 1
		}
		ch <- prometheus.MustNewConstMetric(descCronRuns, prometheus.CounterValue, float64(j.Runs), l...)
		ch <- prometheus.MustNewConstMetric(descCronFail, prometheus.CounterValue, float64(j.Failures), l...)
		ch <- prometheus.MustNewConstMetric(descCronRows, prometheus.CounterValue, float64(j.Rows), l...)
		ch <- prometheus.MustNewConstMetric(descCronSecs, prometheus.CounterValue, j.Seconds, l...)
		ch <- prometheus.MustNewConstMetric(descCronLast, prometheus.GaugeValue, j.LastStart, l...)
		ch <- prometheus.MustNewConstMetric(descCronDur, prometheus.GaugeValue, j.LastDuration, l...)
		ch <- prometheus.MustNewConstMetric(descCronOK, prometheus.GaugeValue, ok, l...)
		ch <- prometheus.MustNewConstMetric(descCronLive, prometheus.GaugeValue, float64(j.Running), l...)
	}
	for _, a := range st.Apps {
		for _, v := range []struct {
			stage string
			n     int64
		}{{"unsent", a.Unsent}, {"in_progress", a.InProgress}, {"validation", a.WaitValidate}, {"assimilation", a.WaitAssimilate}, {"deletion", a.WaitDelete}} {
			ch <- prometheus.MustNewConstMetric(descBacklog, prometheus.GaugeValue, float64(v.n), a.App, v.stage)
		}
	}
	ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, float64(st.HostsActiveDay), "hosts")
	ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, float64(st.UsersActiveDay), "users")
}

// rpcWindow keeps the scheduler requests of the last rpcWindowMinutes minutes (wall
// clock), a bucket a minute, for the status page's "RPCs per minute" and latency
// percentiles of this process. Each bucket keeps at most rpcWindowSamples
// durations; the count is exact.
type rpcWindow struct {
	mu      sync.Mutex
	start   time.Time
	buckets [rpcWindowMinutes]rpcBucket
}

const (
	rpcWindowMinutes = 5
	rpcWindowSamples = 20000
)

type rpcBucket struct {
	minute int64
	n      int
	d      []time.Duration
}

func newRPCWindow() *rpcWindow { return &rpcWindow{start: time.Now()} }

func (w *rpcWindow) add(t time.Time, d time.Duration) {
	min := t.Unix() / 60
	w.mu.Lock()
	defer w.mu.Unlock()
	b := &w.buckets[min%rpcWindowMinutes]
	if b.minute != min {
		*b = rpcBucket{minute: min, d: b.d[:0]}
	}
	b.n++
	if len(b.d) < rpcWindowSamples {
		b.d = append(b.d, d)
	}
}

// RPCRate is this process's scheduler requests over the last minutes.
type RPCRate struct {
	Minutes   int     `json:"minutes"` // the window
	PerMinute float64 `json:"rpcs_per_minute"`
	P50ms     float64 `json:"latency_p50_ms"`
	P99ms     float64 `json:"latency_p99_ms"`
	Measured  bool    `json:"measured"` // false with --no-metrics
}

// rate summarises the complete minutes of the window before now and the current one
// (a request rate over the time the window covers).
func (w *rpcWindow) rate(now time.Time) RPCRate {
	cur := now.Unix() / 60
	w.mu.Lock()
	var n int
	var ds []time.Duration
	for _, b := range w.buckets {
		if b.minute > cur-rpcWindowMinutes && b.minute <= cur {
			n += b.n
			ds = append(ds, b.d...)
		}
	}
	w.mu.Unlock()
	// The window spans the last full minutes and the current one's part, or the
	// time since the server started when that is shorter.
	span := min(float64(rpcWindowMinutes-1)+float64(now.Unix()%60)/60, now.Sub(w.start).Minutes())
	span = max(span, 1.0/60)
	r := RPCRate{Minutes: rpcWindowMinutes, PerMinute: float64(n) / span, Measured: true}
	if len(ds) > 0 {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		r.P50ms = float64(ds[(len(ds)-1)*50/100]) / 1e6
		r.P99ms = float64(ds[(len(ds)-1)*99/100]) / 1e6
	}
	return r
}
