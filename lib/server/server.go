// Package server owns bkit's scheduler endpoint: the HTTP handler that takes BOINC-style
// scheduler requests (XML over POST), authenticates or creates the host, records its
// reports exactly once, sends it jobs by seed 002's per-resource rules, and answers in
// XML; plus the project master file on GET / and the http.Server life cycle (time-outs,
// draining on shutdown).
//
// Every request is one database transaction (lib/store): the reply is built from what
// that transaction committed, and nothing is written to the client before the commit,
// so a failure at any point leaves both the database and the client as they were.
package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/store"
)

// Config holds what a project sets about its endpoint.
type Config struct {
	ProjectName string
	// MasterURL is the project's URL as volunteers attach to it (ending in "/"): the
	// <master_url> of every reply, the base of file URLs and of the default scheduler
	// URL. Empty: "http://" and the request's Host header, which is wrong behind a
	// proxy that terminates TLS or rewrites Host (BOINC clients then tell their user,
	// at every request, that the project changed its URL).
	MasterURL string
	// SchedulerURLs are named in the master file; empty means "this server's
	// /scheduler as the client reached it" (MasterURL + "scheduler").
	SchedulerURLs []string
	// RequestDelay, when > 0, is sent in every reply: seconds before the client's next
	// request.
	RequestDelay float64
	// NoRscApps turns on the base of seed 002's proposed three-state reply: a
	// <no_rsc_apps>R</no_rsc_apps> for each requested resource R the project has no app
	// version for at all ("not supported", as against "no work now"). Off by default
	// (DESIGN.md section 5).
	NoRscApps bool
	// AccountCreation lets clients create accounts (BOINC's create_account.php, the
	// Manager's "new account"); without it accounts are made with bserver user add and
	// get_project_config.php says creation is disabled.
	AccountCreation bool
	// AccountRequestsPerMinute bounds the account lookups and creations one client
	// address may make a minute (a password guesser's pace); 0 means
	// DefaultAccountRequestsPerMinute, negative no limit.
	AccountRequestsPerMinute float64
	// MaxBodyBytes bounds a request body; 0 means boincxml.MaxRequestBytes.
	MaxBodyBytes int64
	// MaxJobsPerRPC bounds the jobs one reply carries whatever the request asks for;
	// 0 means DefaultMaxJobsPerRPC.
	MaxJobsPerRPC int
	// Time-outs of the HTTP server; zero values take the defaults below.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// DrainTimeout bounds how long shutdown waits for requests in flight.
	DrainTimeout time.Duration

	// Files (for real BOINC clients). DownloadDir holds app version and input files,
	// served on GET /download/NAME; UploadDir receives output files on POST
	// /file_upload_handler. Empty: no downloads, no uploads.
	DownloadDir, UploadDir string
	// CodeSignKey is the public code-signing key in BOINC's text form, sent in every
	// reply so that clients can check app files' signatures ("" sends none).
	CodeSignKey string
	// UploadKey signs upload permissions; nil: uploads are refused.
	UploadKey []byte
	// MaxUploadBytes bounds one uploaded file whatever its result template says; 0
	// means DefaultMaxUploadBytes.
	MaxUploadBytes int64
	// UploadSweepInterval is how often the upload directory is swept of the
	// temporary files of uploads no process is receiving (SweepUploads), besides at
	// start; 0 means DefaultUploadSweepInterval.
	UploadSweepInterval time.Duration
	// MaxConnsPerAddr bounds the connections one client address may hold open at
	// once; more are closed as they arrive. 0 means DefaultMaxConnsPerAddr, negative
	// no limit (behind a proxy every client has the proxy's address).
	MaxConnsPerAddr int
	// MaxRPCsInFlight bounds the scheduler requests parsed and handled at once, over
	// all clients; more wait, their bodies read, for a turn. 0 means
	// DefaultMaxRPCsInFlight, negative no limit.
	MaxRPCsInFlight int
	// NoMetrics turns off /metrics and the counting behind it (and the status page's
	// request rate and latency); NoPages turns off the status page and the
	// volunteers' pages (issue 31).
	NoMetrics, NoPages bool
	// AnonymousHosts lets a request without an account key create a host of no
	// account (bkit's own clients before accounts, emulated clients): a testing
	// feature. Without it, as in BOINC, a request must carry an account key or the
	// host authenticator of a host of an account; anything else is refused with
	// BOINC's "Invalid or missing account key" notice and nothing is written.
	AnonymousHosts bool
	// MaxNewHostsPerDay bounds the new hosts one account may make in 24 hours (a
	// client attaching anew; one attaching again with its host CPID gets its host
	// back and makes none); a request that would make one more is refused with a
	// notice and nothing is written. 0 means DefaultMaxNewHostsPerDay, negative no
	// limit.
	MaxNewHostsPerDay int
	// StatusRefresh is how old the status page's and /metrics' database figures may
	// be (0: DefaultStatusRefresh; negative: read at every view).
	StatusRefresh time.Duration
}

// Defaults. A scheduler request is small and answered in milliseconds, so a client
// that takes longer than this to send or read one is stuck or hostile.
const (
	DefaultMaxJobsPerRPC     = 100
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultDrainTimeout      = 30 * time.Second
	// A volunteer attaches a new computer now and then, a lab or a cluster a few
	// hundred in a day; BOINC has no limit, and one account then made 53,000 host
	// rows in 90 s (issue 27's adversarial probe).
	DefaultMaxNewHostsPerDay = 500
	// A killed server's temporary upload files are swept at the next start; the
	// periodic sweep catches those of a server that shares the directory and was not
	// restarted.
	DefaultUploadSweepInterval = 10 * time.Minute
)

// Server is the scheduler endpoint of one project database.
type Server struct {
	Store  *store.Store
	Config Config
	// Now is the clock; tests set it. Nil means time.Now.
	Now func() time.Time
	Log *slog.Logger

	metricsOnce  sync.Once
	rpcTurnsOnce sync.Once
	rpcTurns     chan struct{} // rpcTurn's semaphore; nil: no limit
	m            *metrics      // metrics()
	statusCache  statusCache
}

// accountAllowed reports whether the account request r may go on, and refuses it
// otherwise: in BOINC's error form, which a client shows, when the client's network
// (accountNetwork) has spent its requests, on every server of the project at once (the
// buckets are in the database); on the wall clock whatever Now says, so a server on a
// test clock still meets real request rates.
func (s *Server) accountAllowed(w http.ResponseWriter, r *http.Request) bool {
	perMin := orDefault(s.Config.AccountRequestsPerMinute, DefaultAccountRequestsPerMinute)
	if perMin <= 0 {
		return true
	}
	network := accountNetwork(r.RemoteAddr)
	ok, err := s.Store.TakeAccountRequest(r.Context(), network, float64(time.Now().UnixNano())/1e9, 60/perMin, max(1, int(perMin)))
	if err != nil {
		s.log().Error("account request failed", "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
		return false
	}
	if ok {
		return true
	}
	s.countAccountRefused("rate")
	s.log().Warn("account request refused", "reason", "too many from this network", "remote", r.RemoteAddr, "network", network)
	writeAccountError(w, errOther, "too many account requests from your network; try again in a minute")
	return false
}

func (s *Server) now() float64 {
	t := time.Now()
	if s.Now != nil {
		t = s.Now()
	}
	return float64(t.UnixNano()) / 1e9
}

func (s *Server) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return s.Log
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Handler returns the endpoint's routes: GET / is the master file; POST / and POST
// /scheduler are the scheduler; GET /download/NAME serves files, POST
// /file_upload_handler takes output files; GET /get_project_config.php and
// /lookup_account.php let a client attach by e-mail address and password, and
// /create_account.php create an account (when Config.AccountCreation allows).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", s.serveRoot)
	mux.HandleFunc("/scheduler", s.instrumentRPC(s.serveScheduler))
	mux.HandleFunc("/download/", s.serveDownload)
	mux.HandleFunc("/"+UploadPath, s.serveUpload)
	mux.HandleFunc("/get_project_config.php", s.serveProjectConfig)
	mux.HandleFunc("/lookup_account.php", s.serveLookupAccount)
	mux.HandleFunc("/create_account.php", s.serveCreateAccount)
	s.handlePages(mux)
	return mux
}

func (s *Server) serveRoot(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodPost {
		s.instrumentRPC(s.serveScheduler)(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := orDefault(s.Config.ProjectName, "bkit project")
	body := boincxml.MasterFile(name, s.schedulerURLs(r))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.Write(body)
}

func (s *Server) schedulerURLs(r *http.Request) []string {
	if len(s.Config.SchedulerURLs) > 0 {
		return s.Config.SchedulerURLs
	}
	return []string{s.masterURL(r) + "scheduler"}
}

func (s *Server) masterURL(r *http.Request) string {
	if s.Config.MasterURL != "" {
		return s.Config.MasterURL
	}
	return "http://" + r.Host + "/"
}

// refusal is a request the scheduler turns down: the client gets the message, the
// database is untouched. delay, when > 0, is the request_delay the reply asks for.
type refusal struct {
	msg   string
	delay float64
}

func (e *refusal) Error() string { return e.msg }

func refuse(format string, args ...any) error { return &refusal{msg: fmt.Sprintf(format, args...)} }

// Refusing a request without a valid account key: BOINC's scheduler's notice
// (sched/handle_request.cpp, authenticate_user) and its delay (DELAY_MISSING_KEY,
// an hour), so a client left with a bad key asks once an hour, not at every backoff.
const (
	missingKeyMessage = "Invalid or missing account key.  To fix, remove and add this project."
	missingKeyDelay   = 3600
)

// refuseKey refuses a request for its account key; why goes to the server's log.
func refuseKey(why string) error {
	return &refusal{msg: missingKeyMessage + " (" + why + ")", delay: missingKeyDelay}
}

func (s *Server) serveScheduler(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	log := s.log().With("remote", r.RemoteAddr)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		s.writeError(w, http.StatusMethodNotAllowed, "the scheduler takes POST requests")
		return
	}
	limit := orDefault(s.Config.MaxBodyBytes, boincxml.MaxRequestBytes)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			log.Warn("scheduler request refused", "reason", "body too large", "limit", limit)
			s.writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", limit))
			return
		}
		log.Warn("scheduler request refused", "reason", "reading body", "err", err)
		s.writeError(w, http.StatusBadRequest, "could not read the request body")
		return
	}
	release, ok := s.rpcTurn(r.Context())
	if !ok {
		log.Warn("scheduler request dropped", "reason", "the client went away while waiting for a turn")
		return
	}
	defer release()
	req, err := boincxml.ParseSchedulerRequest(bytes.NewReader(body))
	if err != nil {
		log.Warn("scheduler request refused", "reason", "bad request", "err", err)
		s.writeError(w, http.StatusBadRequest, "bad scheduler request: "+err.Error())
		return
	}
	log = log.With("hostid", req.HostID, "seqno", req.RPCSeqno)
	reply, err := s.handle(r.Context(), req, s.now(), s.masterURL(r))
	var ref *refusal
	switch {
	case errors.As(err, &ref):
		noteOf(r).outcome = outcomeRefused
		log.Warn("scheduler request refused", "reason", ref.msg)
		s.writeErrorDelay(w, http.StatusOK, ref.msg, max(ref.delay, s.Config.RequestDelay))
		return
	case err != nil:
		log.Error("scheduler request failed", "err", err)
		s.writeError(w, http.StatusInternalServerError, "server error; try again later")
		return
	}
	reply.ProjectName = s.Config.ProjectName
	reply.MasterURL = s.masterURL(r)
	out, err := reply.Marshal()
	if err != nil {
		// Nothing is committed that the client could miss except the jobs, which the
		// retry job reclaims at their deadline.
		log.Error("scheduler reply failed", "err", err)
		s.writeError(w, http.StatusInternalServerError, "server error; try again later")
		return
	}
	release() // before the write, which a client not reading holds up to the write time-out
	writeXML(w, http.StatusOK, out)
	note := noteOf(r)
	note.jobs, note.reports = len(reply.ResultsSent), len(req.Results)
	host := req.HostID // the host answered: the request's, or the one the reply gives
	if reply.HostID != 0 {
		host = reply.HostID
	}
	log.Debug("scheduler request", "host", host, "reports", len(reply.ResultAcks),
		"jobs", len(reply.ResultsSent), "duration", time.Since(start))
}

// writeError sends an error reply: a <scheduler_reply> whose notice says what went
// wrong, and the request delay if the project has one.
func (s *Server) writeError(w http.ResponseWriter, status int, msg string) {
	s.writeErrorDelay(w, status, msg, s.Config.RequestDelay)
}

// writeErrorDelay is writeError asking for a request delay of delay seconds.
func (s *Server) writeErrorDelay(w http.ResponseWriter, status int, msg string, delay float64) {
	rep := boincxml.ErrorReply(msg, delay)
	rep.ProjectName = s.Config.ProjectName
	out, err := rep.Marshal()
	if err != nil {
		out = []byte("<scheduler_reply></scheduler_reply>\n")
	}
	writeXML(w, status, out)
}

// writeXML sends a complete body with its length, so a client never takes a cut-off
// reply for a whole one.
func writeXML(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// Serve answers on ln until ctx is done, then stops accepting, waits up to
// DrainTimeout for the requests in flight and returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	c := s.Config
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: orDefault(c.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       orDefault(c.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      orDefault(c.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       orDefault(c.IdleTimeout, DefaultIdleTimeout),
		ErrorLog:          slog.NewLogLogger(s.log().Handler(), slog.LevelWarn),
		// Requests outlive ctx: a shutdown lets them finish instead of cancelling
		// their transactions.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	silent := &silentConns{conns: map[net.Conn]bool{}}
	hs.ConnState = silent.track
	if n := orDefault(c.MaxConnsPerAddr, DefaultMaxConnsPerAddr); n > 0 {
		ln = limitPerAddr(ln, n, s.log())
	}
	sweep := time.NewTicker(orDefault(c.UploadSweepInterval, DefaultUploadSweepInterval))
	defer sweep.Stop()
	s.sweepUploads()
	go s.refreshStatus(ctx)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
wait:
	for {
		select {
		case err := <-errc:
			return err
		case <-sweep.C:
			s.sweepUploads()
		case <-ctx.Done():
			break wait
		}
	}
	s.log().Info("shutting down: draining requests in flight")
	dctx, cancel := context.WithTimeout(context.Background(), orDefault(c.DrainTimeout, DefaultDrainTimeout))
	defer cancel()
	silent.closeAll()
	err := hs.Shutdown(dctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// sweepUploads runs SweepUploads and logs what it did.
func (s *Server) sweepUploads() {
	n, err := s.SweepUploads()
	switch {
	case err != nil:
		s.log().Warn("sweeping the upload directory", "err", err)
	case n > 0:
		s.log().Info("removed the temporary files of uploads no server is receiving", "files", n)
	}
}

// silentConns are the connections that have not sent a byte. http.Server's Shutdown
// counts such a connection as busy for its first five seconds (it might be about to
// send a request), so one a client opened and never used (an HTTP client dials
// ahead, and keeps the spare) held up every shutdown by five seconds. Nothing has
// been asked on them, so the drain closes them at once.
type silentConns struct {
	mu      sync.Mutex
	closing bool
	conns   map[net.Conn]bool
}

// track is the server's ConnState hook.
func (s *silentConns) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if state != http.StateNew {
		delete(s.conns, c)
		return
	}
	if s.closing {
		c.Close()
		return
	}
	s.conns[c] = true
}

// closeAll closes the silent connections, and from now on every new one.
func (s *silentConns) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	for c := range s.conns {
		c.Close()
	}
	clear(s.conns)
}

// URLFor returns the base URL of a listener's address, for messages and tests.
func URLFor(ln net.Listener) string {
	addr := ln.Addr().String()
	if strings.HasPrefix(addr, "[::]:") || strings.HasPrefix(addr, "0.0.0.0:") {
		_, port, _ := net.SplitHostPort(addr)
		addr = "127.0.0.1:" + port
	}
	return "http://" + addr + "/"
}
