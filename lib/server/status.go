package server

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/bkit/bkit/lib/store"
)

// The status page (issue 31): what an operator watches on BOINC's
// server_status.php. GET /status (and /server_status.php) is HTML; /status.json and
// ?xml=1 (BOINC's XML form, which monitoring sites read) are for scripts. The figures
// of the database are the same on every server of the project; the scheduler's
// request rate and latency are this server's own.

//go:embed templates/*.html
var templateFS embed.FS

// pageTemplates are the HTML pages, parsed once. html/template escapes every value by
// its context, so a name a volunteer chose is text, never markup.
var pageTemplates = template.Must(template.New("").Funcs(pageFuncs).ParseFS(templateFS, "templates/*.html"))

// page is what every page's layout needs.
type page struct {
	Title, Project, GeneratedISO string
}

func (s *Server) newPage(title string) page {
	return page{Title: title, Project: orDefault(s.Config.ProjectName, "bkit project"),
		GeneratedISO: unixTime(s.now()).Format(time.RFC3339)}
}

func unixTime(t float64) time.Time {
	sec, frac := math.Modf(t)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

// statusDoc is /status.json: the database's figures and this server's scheduler.
type statusDoc struct {
	*store.ProjectStatus
	Scheduler RPCRate `json:"scheduler"`
}

// rpcRate is this server's scheduler figures (zero, not measured, with --no-metrics).
func (s *Server) rpcRate() RPCRate {
	if m := s.metrics(); m != nil {
		return m.window.rate(time.Now())
	}
	return RPCRate{Minutes: rpcWindowMinutes}
}

// getOnly answers a request that is not GET or HEAD with 405 and reports false.
func getOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// DefaultStatusRefresh is how old the status figures may be before a page view or a
// scrape reads them again (BOINC caches its status page for minutes too): counting the
// backlog of a project of a million results takes a good part of a second, which
// neither a page view nor the scheduler, sharing SQLite's one connection, should wait
// for at every view.
const DefaultStatusRefresh = time.Minute

// statusCache is the last figures read and when (wall clock).
type statusCache struct {
	mu sync.Mutex // held while the figures are read, so that one reader reads them
	st *store.ProjectStatus
	at time.Time
}

// status returns the project's figures, read again when the last are older than
// Config.StatusRefresh (negative: at every call).
func (s *Server) status(ctx context.Context) (*store.ProjectStatus, error) {
	ttl := orDefault(s.Config.StatusRefresh, DefaultStatusRefresh)
	c := &s.statusCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st != nil && ttl > 0 && time.Since(c.at) < ttl {
		return c.st, nil
	}
	st, err := s.Store.ProjectStatus(ctx, s.now())
	if err != nil {
		return nil, err
	}
	c.st, c.at = st, time.Now()
	return st, nil
}

// refreshStatus reads the figures ahead of the page views, every StatusRefresh, until
// ctx is done (Serve runs it), so that a view seldom waits for them.
func (s *Server) refreshStatus(ctx context.Context) {
	ttl := orDefault(s.Config.StatusRefresh, DefaultStatusRefresh)
	if ttl <= 0 || (s.Config.NoPages && s.Config.NoMetrics) {
		return
	}
	t := time.NewTicker(ttl * 9 / 10)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.status(ctx); err != nil && ctx.Err() == nil {
				s.log().Warn("reading the status figures", "err", err)
			}
		}
	}
}

// projectStatus reads the figures, or answers 500 and reports nil.
func (s *Server) projectStatus(w http.ResponseWriter, r *http.Request) *store.ProjectStatus {
	st, err := s.status(r.Context())
	if err != nil {
		s.log().Error("status page", "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
		return nil
	}
	return st
}

// serveStatus is GET /status and /server_status.php: HTML, or BOINC's XML with ?xml=1.
func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	st := s.projectStatus(w, r)
	if st == nil {
		return
	}
	if r.URL.Query().Get("xml") == "1" {
		s.writeStatusXML(w, st)
		return
	}
	p := statusPage{page: s.newPage("Server status"), Status: st, RPC: s.rpcRate(),
		FiguresISO: unixTime(st.Time).Format(time.RFC3339), Refresh: "read at every view"}
	if ttl := orDefault(s.Config.StatusRefresh, DefaultStatusRefresh); ttl > 0 {
		p.Refresh = "read again when older than " + ttl.String()
	}
	for _, j := range st.CronJobs {
		p.Cron = append(p.Cron, cronView(j, st.Time))
	}
	s.renderPage(w, "status.html", p)
}

// serveStatusJSON is GET /status.json.
func (s *Server) serveStatusJSON(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	st := s.projectStatus(w, r)
	if st == nil {
		return
	}
	body, err := json.MarshalIndent(statusDoc{ProjectStatus: st, Scheduler: s.rpcRate()}, "", "  ")
	if err != nil {
		s.log().Error("status page", "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)+1))
	w.Write(append(body, '\n'))
}

// renderPage executes a page template into a buffer first, so a failure is a 500
// and never half a page.
func (s *Server) renderPage(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := pageTemplates.ExecuteTemplate(&b, name, data); err != nil {
		s.log().Error("rendering a page", "page", name, "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", fmt.Sprint(b.Len()))
	w.Write(b.Bytes())
}

type statusPage struct {
	page
	Status              *store.ProjectStatus
	RPC                 RPCRate
	Cron                []cronRow
	FiguresISO, Refresh string // when the database's figures were read; how often
}

// cronRow is a cron job as the status page shows it.
type cronRow struct {
	Job, App, LastRun, Duration, Result, Class string
	LastRows, Runs, Failures                   int64
}

func cronView(j store.CronJob, now float64) cronRow {
	c := cronRow{Job: j.Job, App: j.App, LastRows: j.LastRows, Runs: j.Runs, Failures: j.Failures, LastRun: "never", Duration: "-", Result: "-"}
	if j.Runs > 0 {
		c.LastRun = unixTime(j.LastStart).Format("2006-01-02 15:04:05") + " UTC (" + ago(now-j.LastStart) + ")"
		c.Duration = fmt.Sprintf("%.2f s", j.LastDuration)
		c.Result, c.Class = "ok", "ok"
		if !j.LastSuccess {
			c.Result, c.Class = "failed: "+j.LastMessage, "bad"
		}
	}
	if j.Running > 0 {
		c.Result += fmt.Sprintf("; %d started since, not finished (running or killed)", j.Running)
	}
	return c
}

// ago says how long ago a time d seconds before now was.
func ago(d float64) string {
	switch {
	case d < 0:
		return "in the future"
	case d < 120:
		return fmt.Sprintf("%.0f s ago", d)
	case d < 7200:
		return fmt.Sprintf("%.0f min ago", d/60)
	case d < 2*86400:
		return fmt.Sprintf("%.1f h ago", d/3600)
	}
	return fmt.Sprintf("%.1f days ago", d/86400)
}

// BOINC's server_status.php?xml=1 form (html/user/server_status.php), with bkit's
// cron jobs as its daemons and their last run in bkit's own elements.
type statusXML struct {
	XMLName    xml.Name       `xml:"server_status"`
	UpdateTime int64          `xml:"update_time"`
	Daemons    []daemonXML    `xml:"daemon_status>daemon"`
	States     fileStatesXML  `xml:"database_file_states"`
	Apps       []taskStateXML `xml:"tasks_by_app>app"`
}

type daemonXML struct {
	Command     string  `xml:"command"`
	Status      string  `xml:"status"` // running, ok (last run succeeded), failed, not run
	LastRun     float64 `xml:"bkit_last_run"`
	Duration    float64 `xml:"bkit_last_duration"`
	RowsHandled int64   `xml:"bkit_last_rows"`
}

type fileStatesXML struct {
	ResultsReadyToSend    int64 `xml:"results_ready_to_send"`
	ResultsInProgress     int64 `xml:"results_in_progress"`
	WaitingForValidation  int64 `xml:"workunits_waiting_for_validation"`
	WaitingForAssimilate  int64 `xml:"workunits_waiting_for_assimilation"`
	WaitingForDeletion    int64 `xml:"workunits_waiting_for_deletion"`
	HostsActiveDay        int64 `xml:"bkit_hosts_active_last_day"`
	UsersActiveDay        int64 `xml:"bkit_users_active_last_day"`
	ResultsReportedHour   int64 `xml:"bkit_results_reported_last_hour"`
	ResultsValidatedHour  int64 `xml:"bkit_results_validated_last_hour"`
	ResultsReportedDay    int64 `xml:"bkit_results_reported_last_day"`
	ResultsValidatedDay   int64 `xml:"bkit_results_validated_last_day"`
	SchedulerRPCPerMinute int64 `xml:"bkit_scheduler_rpcs_per_minute"`
}

type taskStateXML struct {
	Name       string `xml:"name"`
	Unsent     int64  `xml:"unsent"`
	InProgress int64  `xml:"in_progress"`
}

func (s *Server) writeStatusXML(w http.ResponseWriter, st *store.ProjectStatus) {
	doc := statusXML{UpdateTime: int64(st.Time)}
	f := &doc.States
	for _, a := range st.Apps {
		doc.Apps = append(doc.Apps, taskStateXML{Name: a.App, Unsent: a.Unsent, InProgress: a.InProgress})
		f.ResultsReadyToSend += a.Unsent
		f.ResultsInProgress += a.InProgress
		f.WaitingForValidation += a.WaitValidate
		f.WaitingForAssimilate += a.WaitAssimilate
		f.WaitingForDeletion += a.WaitDelete
	}
	f.HostsActiveDay, f.UsersActiveDay = st.HostsActiveDay, st.UsersActiveDay
	f.ResultsReportedHour, f.ResultsReportedDay = st.ReportedHour, st.ReportedDay
	f.ResultsValidatedHour, f.ResultsValidatedDay = st.ValidatedHour, st.ValidatedDay
	f.SchedulerRPCPerMinute = int64(math.Round(s.rpcRate().PerMinute))
	for _, j := range st.CronJobs {
		d := daemonXML{Command: j.Job, LastRun: j.LastStart, Duration: j.LastDuration, RowsHandled: j.LastRows}
		if j.App != "" {
			d.Command += " --app " + j.App
		}
		switch {
		case j.Running > 0:
			d.Status = "running"
		case j.Runs == 0:
			d.Status = "not run"
		case j.LastSuccess:
			d.Status = "ok"
		default:
			d.Status = "failed"
		}
		doc.Daemons = append(doc.Daemons, d)
	}
	body, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		s.log().Error("status page", "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
		return
	}
	body = append([]byte(xml.Header), append(body, '\n')...)
	writeXML(w, http.StatusOK, body)
}
