package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/store"
)

// Handle answers one scheduler request without HTTP, as serve does for each POST:
// base is the project's URL as the client reached it. A request the scheduler turns
// down is an error; nothing changed then. The emulators (blocality simulate) call it.
func (s *Server) Handle(ctx context.Context, req *boincxml.SchedulerRequest, now float64, base string) (*boincxml.SchedulerReply, error) {
	return s.handle(ctx, req, now, base)
}

// handle runs one scheduler request in one transaction and returns the reply. A
// *refusal error means the request was turned down and nothing changed.
// base is the project's URL as the client reached it (for file URLs).
func (s *Server) handle(ctx context.Context, req *boincxml.SchedulerRequest, now float64, base string) (*boincxml.SchedulerReply, error) {
	var reply *boincxml.SchedulerReply
	err := s.Store.InTx(ctx, func(tx *store.Tx) error {
		// InTx may run this again after a contention abort: start from nothing.
		reply = &boincxml.SchedulerReply{SchedulerVersion: boincxml.SchedulerVersion, RequestDelay: s.Config.RequestDelay}
		host, err := s.authenticate(tx, req, reply, now)
		if err != nil {
			return err
		}
		book := newQuotaBook(tx, host.ID)
		if err := s.recordReports(tx, host, book, req, reply, now); err != nil {
			return err
		}
		if s.Config.CodeSignKey != "" && strings.Join(strings.Fields(req.CodeSignKey), "") != strings.Join(strings.Fields(s.Config.CodeSignKey), "") {
			// A client takes a key it lacks; a different one it would take only with a
			// signature by the old key (BOINC's key change), which bkit does not make.
			reply.CodeSignKey = &boincxml.RawText{Text: "\n" + s.Config.CodeSignKey}
		}
		if err := s.abortUnwanted(tx, host, req, reply); err != nil {
			return err
		}
		if err := s.sendWork(tx, host, book, req, reply, now, base); err != nil {
			return err
		}
		return book.flush()
	})
	return reply, err
}

// authenticate finds the requesting host, or creates it on its first request, and
// saves what the request says about it. A BOINC client presents its user's account
// key, with host id 0 until the reply gives it one, and the new host belongs to that
// user. Only with Config.AnonymousHosts (testing) may a request without an account key
// (no authenticator, no host id) create a host of no account, which then presents the
// host authenticator the reply gave it; otherwise such requests, and those of hosts of
// no account made before, are refused as BOINC refuses a missing or unknown account
// key, and nothing is written.
func (s *Server) authenticate(tx *store.Tx, req *boincxml.SchedulerRequest, reply *boincxml.SchedulerReply, now float64) (*store.Host, error) {
	var host *store.Host
	var err error
	switch {
	case req.Authenticator == "" && req.HostID != 0:
		return nil, refuseKey(fmt.Sprintf("host %d: the request has no authenticator", req.HostID))
	case req.Authenticator == "" && !s.Config.AnonymousHosts:
		return nil, refuseKey("the request has no account key")
	case req.Authenticator == "":
		host = &store.Host{Authenticator: store.NewAuthenticator()}
		fillHost(host, req, now)
		if err := tx.CreateHost(host, now); err != nil {
			return nil, err
		}
		reply.HostID, reply.Authenticator = host.ID, host.Authenticator
		return host, nil
	case req.HostID != 0:
		host, err = tx.HostByID(req.HostID)
		if errors.Is(err, store.ErrNotFound) {
			// A client whose host the project no longer has: with a known account
			// key it becomes a new host of that user, as in BOINC.
			if u, uerr := tx.UserByAuthenticator(req.Authenticator); uerr == nil {
				return s.newUserHost(tx, u, req, reply, now)
			} else if !errors.Is(uerr, store.ErrNotFound) {
				return nil, uerr
			}
			return nil, refuseKey(fmt.Sprintf("unknown host %d", req.HostID))
		}
		if err == nil && !s.hostKeyMatches(tx, host, req.Authenticator, reply) {
			return nil, refuseKey(fmt.Sprintf("wrong authenticator for host %d", req.HostID))
		}
	default:
		host, err = tx.HostByAuthenticator(req.Authenticator)
		if errors.Is(err, store.ErrNotFound) {
			u, uerr := tx.UserByAuthenticator(req.Authenticator)
			if errors.Is(uerr, store.ErrNotFound) {
				return nil, refuseKey("unknown authenticator")
			}
			if uerr != nil {
				return nil, uerr
			}
			return s.newUserHost(tx, u, req, reply, now)
		}
		if err == nil {
			reply.HostID = host.ID // the client lost its host id; tell it again
		}
	}
	if err != nil {
		return nil, err
	}
	if host.UserID == 0 && !s.Config.AnonymousHosts {
		return nil, refuseKey(fmt.Sprintf("host %d belongs to no account", host.ID))
	}
	fillHost(host, req, now)
	return host, tx.UpdateHostRPC(host)
}

// hostKeyMatches reports whether auth is the host's own authenticator or its user's
// account key (constant-time compares), and for a user's host fills in the user.
func (s *Server) hostKeyMatches(tx *store.Tx, host *store.Host, auth string, reply *boincxml.SchedulerReply) bool {
	if subtle.ConstantTimeCompare([]byte(host.Authenticator), []byte(auth)) == 1 {
		return true
	}
	if host.UserID == 0 {
		return false
	}
	u, err := tx.UserByID(host.UserID)
	if err != nil || subtle.ConstantTimeCompare([]byte(u.Authenticator), []byte(auth)) != 1 {
		return false
	}
	fillUser(reply, u, host)
	return true
}

// newUserHost gives a client of user u without a host id (a new attach) its host id:
// that of the user's host with the same BOINC host cross-project id when there is
// one (the client detached and attached again, or lost its state: BOINC's scheduler
// does the same, and the tasks the host had and the client lost are resent, sendWork),
// else a new host's.
func (s *Server) newUserHost(tx *store.Tx, u *store.User, req *boincxml.SchedulerRequest, reply *boincxml.SchedulerReply, now float64) (*store.Host, error) {
	if cpid := req.HostInfo.HostCPID; cpid != "" {
		host, err := tx.HostByUserCPID(u.ID, cpid)
		if err == nil {
			reply.HostID = host.ID
			fillUser(reply, u, host)
			fillHost(host, req, now)
			s.log().Info("host attached again", "host", host.ID, "user", u.ID)
			return host, tx.UpdateHostRPC(host)
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	if most := orDefault(s.Config.MaxNewHostsPerDay, DefaultMaxNewHostsPerDay); most > 0 {
		made, err := tx.HostsMadeSince(u.ID, now-86400, most)
		if err != nil {
			return nil, err
		}
		if made >= most {
			return nil, &refusal{msg: fmt.Sprintf("This account has attached %d new computers in the last 24 hours, the most this project allows; try again later.", made),
				delay: newHostsDelay}
		}
	}
	host := &store.Host{UserID: u.ID, Authenticator: store.NewAuthenticator()}
	fillHost(host, req, now)
	if err := tx.CreateHost(host, now); err != nil {
		return nil, err
	}
	reply.HostID = host.ID
	fillUser(reply, u, host)
	s.log().Info("new host of a user", "host", host.ID, "user", u.ID, "platform", req.PlatformName)
	return host, nil
}

// newHostsDelay is the request delay of a client refused a new host: an hour, as for
// a missing account key (a day's limit frees up over the day).
const newHostsDelay = 3600

// fillUser puts what BOINC's scheduler tells a client about its account and host in
// the reply (host is nil for a host not made yet).
func fillUser(reply *boincxml.SchedulerReply, u *store.User, host *store.Host) {
	venue := ""
	reply.UserID, reply.UserName, reply.HostVenue = u.ID, u.Name, &venue
	reply.UserTotalCredit, reply.UserExpavgCredit = u.TotalCredit, u.ExpavgCredit
	if host != nil {
		reply.HostTotalCredit, reply.HostExpavgCredit = host.TotalCredit, host.ExpavgCredit
	}
}

// fillHost copies the request's description of the host into h.
func fillHost(h *store.Host, req *boincxml.SchedulerRequest, now float64) {
	h.RPCSeqno, h.RPCTime, h.PlatformName = req.RPCSeqno, now, req.PlatformName
	h.PNCPUs, h.PFpops, h.MNBytes = req.HostInfo.PNCPUs, req.HostInfo.PFpops, req.HostInfo.MNBytes
	h.Coprocs = req.HostCoprocs().Column()
	if req.HostInfo.HostCPID != "" {
		h.HostCPID = req.HostInfo.HostCPID
	}
	if ts := req.TimeStats; ts != nil {
		h.OnFrac, h.ConnectedFrac, h.ActiveFrac = ts.OnFrac, ts.ConnectedFrac, ts.ActiveFrac
	}
}

// recordReports records each reported result exactly once and acknowledges every
// report, so the client stops sending it: a duplicate was recorded before, and a
// report of someone else's or an unknown result can never be recorded (BOINC acks
// those too, for the same reason).
func (s *Server) recordReports(tx *store.Tx, host *store.Host, book *quotaBook, req *boincxml.SchedulerRequest, reply *boincxml.SchedulerReply, now float64) error {
	success := func(r boincxml.ReportedResult) bool {
		return r.ExitStatus == 0 && (r.State == 0 || r.State == boincxml.ResultFilesUploaded)
	}
	// A result whose workunit declares output files is validated on what the host
	// uploaded, as BOINC's validator reads the files: the digest of the uploaded files
	// (store.Tx.ReportedOutputs, which also holds off uploads of the reported results
	// until the reports are recorded). A declared file not uploaded, or a client's own
	// digest that is not its files', makes a success a validate error: an empty digest
	// would agree with every other result, and a claimed one could copy another host's.
	// The client's <bkit_output_digest> counts only for results without output files
	// (bkit's own clients, which upload nothing).
	// Every reported result is read here, failures too: RecordReports then reads none
	// again (one query for a request's reports); only successes' outputs are used.
	all := make([]string, len(req.Results))
	for i, r := range req.Results {
		all[i] = r.Name
	}
	outputs, err := tx.ReportedOutputs(all)
	if err != nil {
		return fmt.Errorf("reports: output files: %w", err)
	}
	reports := make([]store.Report, len(req.Results))
	for i, r := range req.Results {
		success := success(r)
		digest, outErr := r.OutputDigest, ""
		if o, ok := outputs[r.Name]; ok && success {
			digest = o.Digest
			switch {
			case len(o.Missing) > 0:
				outErr = fmt.Sprintf("output file %s was not uploaded", OutputFileName(r.Name, o.Missing[0]))
			case r.OutputDigest != "" && r.OutputDigest != o.Digest:
				outErr = fmt.Sprintf("the reported output digest %q is not that of the uploaded files (%s)", r.OutputDigest, o.Digest)
			}
		}
		reports[i] = store.Report{
			Name: r.Name, Success: success, CPUTime: r.FinalCPUTime, ElapsedTime: r.FinalElapsedTime,
			ExitStatus: r.ExitStatus, ClientState: r.State, OutputDigest: digest, OutputError: outErr,
		}
		if r.StderrOut != nil {
			reports[i].StderrOut = strings.TrimSpace(r.StderrOut.Text)
		}
	}
	var named int
	notYours, unknown := ignoredNames{shared: &named}, ignoredNames{shared: &named}
	statuses, err := tx.RecordReports(host.ID, reports, now)
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	var recorded []store.Report
	for i, st := range statuses {
		if st == store.ReportRecorded {
			recorded = append(recorded, reports[i])
		}
	}
	if err := adjustQuotas(book, recorded); err != nil {
		return fmt.Errorf("reports: quotas: %w", err)
	}
	for i, r := range req.Results {
		st := statuses[i]
		switch st {
		case store.ReportRecorded:
			if e := reports[i].OutputError; e != "" {
				s.log().Warn("reported success without valid output: recorded as a validate error", "host", host.ID, "result", r.Name, "reason", e)
				reply.Messages = append(reply.Messages, boincxml.Message{Priority: boincxml.PriorityLow,
					Text: fmt.Sprintf("result %s: %s; it cannot be validated", r.Name, e)})
			}
		case store.ReportNotYours:
			notYours.add(r.Name, reply, "result %s was not sent to this host; report ignored")
		case store.ReportUnknown:
			unknown.add(r.Name, reply, "no result named %s; report ignored")
		}
		reply.ResultAcks = append(reply.ResultAcks, boincxml.NameRef{Name: r.Name})
	}
	if n := notYours.n + unknown.n; n > maxNamedIgnored {
		reply.Messages = append(reply.Messages, boincxml.Message{Priority: boincxml.PriorityLow,
			Text: fmt.Sprintf("%d more reports ignored (results not sent to this host, or unknown)", n-maxNamedIgnored)})
	}
	notYours.log(s.log(), slog.LevelWarn, "report of a result not sent to this host", host.ID)
	unknown.log(s.log(), slog.LevelWarn, "report of an unknown result", host.ID)
	return nil
}

// maxNamedIgnored bounds the names a request's ignored reports and unwanted tasks put
// in the reply's messages and in the log. A request may hold some 100,000 made-up
// result names within its size limit; a message and a log line for each made a 3 MB
// request cost a 12 MB reply and 9 MB of log, again at every request.
const maxNamedIgnored = 10

// ignoredNames counts the names of one kind a request's handling ignores (or tells the
// client to abort) and keeps the first maxNamedIgnored of them for the log. shared
// counts the messages already put in the reply by every ignoredNames of the request.
type ignoredNames struct {
	n      int
	first  []string
	shared *int
}

// add counts name and, while the request's named messages are below the bound, puts
// msg (a format with one %s, the name) in the reply.
func (g *ignoredNames) add(name string, reply *boincxml.SchedulerReply, msg string) {
	g.n++
	if len(g.first) < maxNamedIgnored {
		g.first = append(g.first, name)
	}
	if msg != "" && *g.shared < maxNamedIgnored {
		*g.shared++
		reply.Messages = append(reply.Messages, boincxml.Message{Priority: boincxml.PriorityLow, Text: fmt.Sprintf(msg, name)})
	}
}

// log writes one line for all the names counted: how many, and the first ones.
func (g *ignoredNames) log(log *slog.Logger, level slog.Level, msg string, host int64, attrs ...any) {
	switch {
	case g.n == 0:
	case g.n == 1:
		log.Log(context.Background(), level, msg, append([]any{"host", host, "result", g.first[0]}, attrs...)...)
	default:
		log.Log(context.Background(), level, msg, append([]any{"host", host, "count", g.n, "first", g.first}, attrs...)...)
	}
}

// abortUnwanted tells the client which of the tasks it lists in <other_results> the
// project no longer wants, as BOINC's scheduler does (send_result_abort): a task the
// project does not know or did not send to this host is aborted; one whose workunit is
// done (validated or given up), or that timed out (the retry job marked it lost), is
// aborted if it has not started (a late result is still accepted). Nothing changes in
// the database: the client reports the aborted tasks as it reports its user's aborts.
func (s *Server) abortUnwanted(tx *store.Tx, host *store.Host, req *boincxml.SchedulerRequest, reply *boincxml.SchedulerReply) error {
	if len(req.OtherResults) == 0 {
		return nil
	}
	names := make([]string, len(req.OtherResults))
	for i, o := range req.OtherResults {
		names[i] = o.Name
	}
	known, err := tx.ListedResults(names)
	if err != nil {
		return fmt.Errorf("listed tasks: %w", err)
	}
	// Logged by kind, one line each (ignoredNames): the list is the client's to make up.
	var named int
	foreign, done, timedOut := ignoredNames{shared: &named}, ignoredNames{shared: &named}, ignoredNames{shared: &named}
	for _, name := range names {
		r, ok := known[name]
		switch {
		case !ok || r.HostID != host.ID:
			reply.ResultAborts = append(reply.ResultAborts, boincxml.NameRef{Name: name})
			foreign.add(name, reply, "")
		case r.ServerState == store.ServerStateInProgress && r.Done,
			r.ServerState == store.ServerStateOver && r.Outcome == store.OutcomeNoReply:
			reply.ResultAbortsIfNotStarted = append(reply.ResultAbortsIfNotStarted, boincxml.NameRef{Name: name})
			if r.ServerState == store.ServerStateOver {
				timedOut.add(name, reply, "")
			} else {
				done.add(name, reply, "")
			}
		}
	}
	foreign.log(s.log(), slog.LevelInfo, "telling the client to abort a task", host.ID, "reason", "not sent to this host")
	done.log(s.log(), slog.LevelInfo, "telling the client to abort a task if not started", host.ID, "reason", "workunit done")
	timedOut.log(s.log(), slog.LevelInfo, "telling the client to abort a task if not started", host.ID, "reason", "timed out")
	return nil
}
