package brpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

const (
	flagConnectTimeout = "connect-timeout"
	flagTimeout        = "timeout"
	flagThreeState     = "three-state"
)

func sessionCommand() *cli.Command {
	return &cli.Command{
		Name:      "session",
		Usage:     "perform the planned scheduler RPC session over HTTP: report, get work, back off, read master files",
		UsageText: "brpc session [--now TIME] [--seed N] [--three-state] [--connect-timeout D] [--timeout D] [--state FILE [--in-place]] [-o json|yaml|table]",
		Description: cliutil.Help(`
Performs the session brpc poll recorded (rpc_session), then ends it. Each RPC builds a
<scheduler_request> from the document: the project's authenticator and host id, the
host description, every done task of the project as a reported result, and the
request brpc poll recorded (request) for the first RPC. It is POSTed to the project's
scheduler URLs in order until one answers; an RPC fails when every URL fails
(connection refused, no answer within the time-outs, HTTP status other than 200, a
reply that does not parse).

A successful RPC: nrpc_failures = 0; acknowledged reports become reported (a done
task stays done, and is reported again, until a reply acknowledges it); the jobs
(apps, app versions, tasks) are added; request_delay sets min_rpc_time; the
per-resource outcome goes to seed 002's backoffs and D flags as bdevices reply does.
A resource type the reply names in <no_rsc_apps> (the project has no app version for
it: bserver serve --no-rsc-apps) loses D(P,R), also when jobs of other types came, so
seed 002's work fetch (bdevices request) no longer chooses the project for it; the
table names these types, and those it ignored (not a resource of this host, or jobs
of it came). With --three-state (seed 002's proposed three-state reply, as in
bdevices reply; off by default) a reply without jobs clears no other D: "no work, but
the resource is supported" keeps it.

A failed RPC: nrpc_failures + 1, min_rpc_time = now + min(60·2^n, 14400) s ×
uniform[0.5, 1) (from --seed), and in a get-work session every 10th failure in a row
sets the master-fetch flag (a report session's failures do not, as in seed 000).

A report session makes one RPC. A get-work session, after its first RPC, goes on with
the project of greatest resource debt whose min_rpc_time has passed and that it has
not asked yet, asking for the work that brings the buffer to the high-water mark,
until estimated work reaches it. At its end, the master files of flagged projects are
read (GET master_url; <scheduler>URL</scheduler> or <link rel="boinc_scheduler"
href="URL">): new URLs replace the old and clear nrpc_failures and min_rpc_time; an
error counts as a failed RPC. A project with no scheduler URL has its master file read
before its RPC.

Failures are normal: they are recorded in the document, and the status is still 0.
-o table shows per RPC the URL, what was reported, requested and received, the
latency and the outcome. The document is written whole at the end (atomically with
--in-place).

`+cliutil.SchemaNote,
			[]string{
				"brpc poll --state client.json --in-place && brpc session --state client.json --in-place -o table",
				"brpc session --now 1700000000 --seed 7 --timeout 5s < client.yaml > next.yaml",
				"brpc session --three-state --state client.json --in-place -o table   # against bserver serve --no-rsc-apps",
			}, ""),
		Flags: append([]cli.Flag{
			cliutil.NowFlag(),
			cliutil.SeedFlag(),
			&cli.DurationFlag{Name: flagConnectTimeout, Value: 10 * time.Second, Usage: "give up connecting to a server after `D`"},
			&cli.DurationFlag{Name: flagTimeout, Value: 60 * time.Second, Usage: "give up on a server's answer `D` after connecting"},
			&cli.BoolFlag{Name: flagThreeState, Usage: "use the three-state reply: a reply without jobs keeps D(P,R) of the types it does not name in <no_rsc_apps>"},
		}, cliutil.DocumentFlags("json", "yaml", "table")...),
		Action: runSession,
	}
}

func runSession(ctx context.Context, cmd *cli.Command) error {
	ct, rt := cmd.Duration(flagConnectTimeout), cmd.Duration(flagTimeout)
	now, in, err := cliutil.ReadStage(cmd, func() error {
		if ct <= 0 || rt <= 0 {
			return cliutil.Usagef("--%s and --%s must be > 0", flagConnectTimeout, flagTimeout)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s := &Session{Doc: in.Doc, Now: now, Rand: prsc.NewRand(cmd.Uint64(cliutil.FlagSeed)),
		ThreeState: cmd.Bool(flagThreeState), Client: NewClient(ct, rt), Log: func(msg string, args ...any) { cliutil.Logger(cmd).Debug(msg, args...) }}
	s.Run(ctx)
	if err := state.Validate(in.Doc); err != nil {
		return fmt.Errorf("the session left an invalid document (a bug): %w", err)
	}
	return cliutil.WriteState(cmd, in, func(w io.Writer) error { return sessionTable(w, s) })
}

// NewClient is the HTTP client of a session: connect time-out ct, and rt for the
// whole exchange after connecting (request, answer headers and body).
func NewClient(ct, rt time.Duration) *http.Client {
	return &http.Client{
		Timeout: ct + rt,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: ct}).DialContext,
			TLSHandshakeTimeout:   ct,
			ResponseHeaderTimeout: rt,
			MaxIdleConnsPerHost:   2,
		},
	}
}

// Session performs one scheduler RPC session over HTTP on Doc.
type Session struct {
	Doc  *state.Document
	Now  float64
	Rand *rand.Rand
	// ThreeState is seed 002's proposed three-state reply (prsc.ApplyReply's
	// threeState): a reply without jobs clears D(P,R) only of the types it names in
	// <no_rsc_apps>.
	ThreeState bool
	Client     *http.Client
	Log        func(msg string, args ...any)

	Kind     string
	Attempts []Attempt // every HTTP exchange, in order
}

// Attempt is one exchange with a server: an RPC to one scheduler URL, or a master file
// read.
type Attempt struct {
	Project   string
	URL       string
	Master    bool // a master file read
	Reported  int
	Requested string
	Received  string
	Latency   time.Duration
	OK        bool
	Outcome   string
}

// Run performs the session recorded in the document and ends it.
func (s *Session) Run(ctx context.Context) {
	doc := s.Doc
	sess := doc.RPCSession
	if sess == nil {
		return
	}
	s.Kind = sess.Kind
	defer rpc.EndSession(doc)
	first := sess.Project
	if sess.Kind == rpc.GetWork.String() && len(sess.Contacted) > 0 {
		first = sess.Contacted[0]
	}
	p := slices.IndexFunc(doc.Projects, func(pr state.Project) bool { return pr.Name == first })
	if sess.Kind == rpc.GetWork.String() && p < 0 {
		p = rpc.NextGetWork(doc, s.Now)
	}
	if p >= 0 {
		var req state.WorkRequest
		if r := doc.Request; r != nil && r.Project == doc.Projects[p].Name {
			req = *r
		}
		s.rpc(ctx, p, &req)
	}
	if sess.Kind != rpc.GetWork.String() {
		return
	}
	for {
		i := rpc.NextGetWork(doc, s.Now)
		if i < 0 {
			break
		}
		s.rpc(ctx, i, seed000Request(doc, i))
	}
	for _, i := range rpc.MasterFetches(doc) {
		s.master(ctx, i)
	}
}

// seed000Request asks project p for the work that brings the buffer to the high-water
// mark (rpc.WorkRequestSeconds) of CPU time.
func seed000Request(doc *state.Document, p int) *state.WorkRequest {
	secs := rpc.WorkRequestSeconds(doc)
	return &state.WorkRequest{Project: doc.Projects[p].Name, Reason: "seed 000: get-work session, up to the high-water mark",
		WorkReqSeconds: secs, CPUReqSecs: secs}
}

// rpc performs one RPC to project p asking for req, trying its scheduler URLs in order,
// and records the outcome.
func (s *Session) rpc(ctx context.Context, p int, req *state.WorkRequest) {
	doc := s.Doc
	pr := &doc.Projects[p]
	if len(pr.SchedulerURLs) == 0 && pr.MasterURL != "" {
		if s.master(ctx, p); len(pr.SchedulerURLs) == 0 {
			return // the read failed, which counts as a failed RPC
		}
	}
	body, err := rpc.BuildRequest(doc, p, req).Marshal()
	if err != nil {
		s.Attempts = append(s.Attempts, Attempt{Project: pr.Name, Outcome: "failed: " + err.Error()})
		s.failed(pr)
		return
	}
	nreports := len(rpc.ReportTasks(doc, pr.Name))
	requested := describeRequest(req)
	var rep *boincxml.SchedulerReply
	_, err = rpc.Attempt(pr.SchedulerURLs, func(url string) error {
		a := Attempt{Project: pr.Name, URL: url, Reported: nreports, Requested: requested}
		start := time.Now()
		r, err := s.post(ctx, url, body)
		a.Latency = time.Since(start)
		if err != nil {
			a.Outcome = "failed: " + err.Error()
		} else {
			a.OK, a.Outcome = true, "ok"
			rep = r
		}
		s.Attempts = append(s.Attempts, a)
		s.Log("rpc", "project", pr.Name, "url", url, "latency", a.Latency, "outcome", a.Outcome)
		return err
	})
	if err != nil {
		if len(pr.SchedulerURLs) == 0 {
			s.Attempts = append(s.Attempts, Attempt{Project: pr.Name, Reported: nreports, Requested: requested, Outcome: "failed: " + err.Error()})
		}
		b := s.failed(pr)
		a := &s.Attempts[len(s.Attempts)-1]
		a.Outcome += fmt.Sprintf("; nrpc_failures %d, backoff %s", pr.NRPCFailures, dur(b))
		if pr.MasterFetchPending {
			a.Outcome += ", master file to be read"
		}
		return
	}
	out := rpc.ApplyReply(doc, p, rep, s.Now)
	rpc.RPCSucceeded(pr, s.Now, rep.RequestDelay)
	a := &s.Attempts[len(s.Attempts)-1]
	a.Received = describeJobs(doc, out.Jobs)
	unsupported, ignored := noRscApps(doc, rep.NoRscApps, out.Jobs)
	if want := prsc.Requested(req); len(want) > 0 || len(unsupported) > 0 {
		rp := prsc.Reply{Project: pr.Name, Jobs: out.Jobs, Unsupported: unsupported, InstancesOnly: prsc.InstancesOnly(req)}
		// The jobs' and unsupported types are the host's and disjoint: no error is
		// expected; one is shown, not dropped.
		if err := prsc.ApplyReply(doc, want, rp, s.ThreeState, s.Now, s.Rand); err != nil {
			a.Outcome += "; " + err.Error()
		}
	}
	if len(unsupported) > 0 {
		a.Outcome += fmt.Sprintf("; no app version for %s (no_rsc_apps): D false", strings.Join(unsupported, ", "))
	}
	for _, ig := range ignored {
		a.Outcome += "; " + ig
	}
	if out.Acked < nreports {
		a.Outcome += fmt.Sprintf("; %d of %d reports acknowledged", out.Acked, nreports)
	}
	if rep.RequestDelay > 0 {
		a.Outcome += fmt.Sprintf("; request_delay %s", cliutil.Num(rep.RequestDelay))
	}
	for _, m := range out.Messages {
		a.Outcome += "; message: " + strings.TrimSpace(m)
	}
	for _, sk := range out.Skipped {
		a.Outcome += "; skipped " + sk
	}
}

// noRscApps are the resource types a reply names in <no_rsc_apps>, in bkit's names
// (boincxml.CanonicalType: "CUDA" is NVIDIA), each once: those the host has and got no
// job of, and notes on the others, which are ignored.
func noRscApps(doc *state.Document, names []string, jobs map[string]int) (types, ignored []string) {
	for _, n := range names {
		t := boincxml.CanonicalType(n)
		switch _, ok := doc.Host.Resource(t); {
		case slices.Contains(types, t):
		case !ok:
			ignored = append(ignored, fmt.Sprintf("no_rsc_apps %q ignored: not a resource of this host", n))
		case jobs[t] > 0:
			ignored = append(ignored, fmt.Sprintf("no_rsc_apps %q ignored: jobs of it came", n))
		default:
			types = append(types, t)
		}
	}
	return types, ignored
}

// failed records a failed RPC to pr as the session's kind does (seed 000): a get-work
// session's tenth failure in a row sets the master-fetch flag, a report-result
// session's does not. It returns the backoff, seconds.
func (s *Session) failed(pr *state.Project) float64 {
	if s.Kind == rpc.Report.String() {
		return rpc.ReportFailed(pr, s.Now, s.Rand)
	}
	return rpc.RPCFailed(pr, s.Now, s.Rand)
}

// errStatus is an HTTP answer other than 200.
var errStatus = errors.New("HTTP status")

// post sends one scheduler request and parses the reply.
func (s *Session) post(ctx context.Context, url string, body []byte) (*boincxml.SchedulerReply, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "text/xml")
	resp, err := s.Client.Do(hr)
	if err != nil {
		return nil, netError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil, fmt.Errorf("%w %s", errStatus, resp.Status)
	}
	rep, err := boincxml.ParseSchedulerReply(resp.Body)
	if err != nil {
		if os.IsTimeout(err) {
			return nil, netError(err)
		}
		return nil, fmt.Errorf("bad reply: %v", err)
	}
	return rep, nil
}

// netError shortens the transport's errors to what a reader needs.
func netError(err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return errors.New("timed out")
	case strings.Contains(err.Error(), "connection refused"):
		return errors.New("connection refused")
	}
	return err
}

// master reads project p's master file and records the outcome.
func (s *Session) master(ctx context.Context, p int) {
	pr := &s.Doc.Projects[p]
	a := Attempt{Project: pr.Name, URL: pr.MasterURL, Master: true}
	start := time.Now()
	urls, err := s.fetchMaster(ctx, pr.MasterURL)
	a.Latency = time.Since(start)
	o := rpc.MasterFetched(pr, urls, err, s.Now, s.Rand)
	switch {
	case err != nil:
		a.Outcome = "failed: " + err.Error()
	case len(urls) == 0:
		a.Outcome = "failed: the page names no scheduler"
	default:
		a.OK = true
		a.Outcome = o.String()
		a.Received = strings.Join(urls, " ")
	}
	if o == rpc.MasterFailed {
		a.Outcome += fmt.Sprintf("; nrpc_failures %d, min_rpc_time %s", pr.NRPCFailures, strconv.FormatFloat(pr.MinRPCTime, 'f', -1, 64))
	}
	s.Attempts = append(s.Attempts, a)
	s.Log("master", "project", pr.Name, "url", pr.MasterURL, "outcome", a.Outcome)
}

func (s *Session) fetchMaster(ctx context.Context, url string) ([]string, error) {
	if url == "" {
		return nil, errors.New("the project has no master URL")
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.Client.Do(hr)
	if err != nil {
		return nil, netError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w %s", errStatus, resp.Status)
	}
	urls, err := boincxml.ParseMasterFile(resp.Body)
	if err != nil && os.IsTimeout(err) {
		return nil, netError(err)
	}
	return urls, err
}

func describeRequest(r *state.WorkRequest) string {
	if r == nil {
		return ""
	}
	var parts []string
	if r.CPUReqSecs > 0 || r.CPUReqInstances > 0 {
		parts = append(parts, fmt.Sprintf("cpu %ss", cliutil.Num(r.CPUReqSecs)))
	}
	for _, c := range r.Coprocs {
		if c.ReqSecs > 0 || c.ReqInstances > 0 {
			parts = append(parts, fmt.Sprintf("%s %ss", c.Type, cliutil.Num(c.ReqSecs)))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func describeJobs(doc *state.Document, jobs map[string]int) string {
	var parts []string
	for _, r := range doc.Host.Resources {
		if n := jobs[r.Type]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, r.Type))
		}
	}
	if len(parts) == 0 {
		return "no jobs"
	}
	return strings.Join(parts, ", ") + " jobs"
}

func sessionTable(w io.Writer, s *Session) error {
	if s.Kind == "" {
		_, err := fmt.Fprintln(w, "No session was planned (brpc poll records one in rpc_session).")
		return err
	}
	fmt.Fprintf(w, "Scheduler RPC session (%s) at %s\n\n", s.Kind, cliutil.When(s.Now))
	t := cliutil.NewTable(w, "project", "url", "reported", "requested", "received", "latency", "outcome")
	for _, a := range s.Attempts {
		reported := strconv.Itoa(a.Reported)
		if a.Master {
			reported = "(master file)"
		}
		if err := t.Append([]string{a.Project, a.URL, reported, a.Requested, a.Received,
			a.Latency.Round(time.Millisecond).String(), a.Outcome}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "Estimated work after the session: %s days.\n", cliutil.Num(rpc.EstimatedWorkDays(s.Doc)))
	return err
}
