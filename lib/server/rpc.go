package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/store"
)

// handle runs one scheduler request in one transaction and returns the reply. A
// *refusal error means the request was turned down and nothing changed.
func (s *Server) handle(ctx context.Context, req *boincxml.SchedulerRequest, now float64) (*boincxml.SchedulerReply, error) {
	var reply *boincxml.SchedulerReply
	err := s.Store.InTx(ctx, func(tx *store.Tx) error {
		// InTx may run this again after a contention abort: start from nothing.
		reply = &boincxml.SchedulerReply{SchedulerVersion: boincxml.SchedulerVersion, RequestDelay: s.Config.RequestDelay}
		host, err := s.authenticate(tx, req, reply, now)
		if err != nil {
			return err
		}
		if err := s.recordReports(tx, host, req, reply, now); err != nil {
			return err
		}
		return s.sendWork(tx, host, req, reply, now)
	})
	return reply, err
}

// authenticate finds the requesting host, or creates it on its first request, and
// saves what the request says about it.
func (s *Server) authenticate(tx *store.Tx, req *boincxml.SchedulerRequest, reply *boincxml.SchedulerReply, now float64) (*store.Host, error) {
	var host *store.Host
	var err error
	switch {
	case req.Authenticator == "" && req.HostID != 0:
		return nil, refuse("host %d: the request has no authenticator", req.HostID)
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
			return nil, refuse("unknown host %d", req.HostID)
		}
		if err == nil && subtle.ConstantTimeCompare([]byte(host.Authenticator), []byte(req.Authenticator)) != 1 {
			return nil, refuse("wrong authenticator for host %d", req.HostID)
		}
	default:
		host, err = tx.HostByAuthenticator(req.Authenticator)
		if errors.Is(err, store.ErrNotFound) {
			return nil, refuse("unknown authenticator")
		}
		if err == nil {
			reply.HostID = host.ID // the client lost its host id; tell it again
		}
	}
	if err != nil {
		return nil, err
	}
	fillHost(host, req, now)
	return host, tx.UpdateHostRPC(host)
}

// fillHost copies the request's description of the host into h.
func fillHost(h *store.Host, req *boincxml.SchedulerRequest, now float64) {
	h.RPCSeqno, h.RPCTime, h.PlatformName = req.RPCSeqno, now, req.PlatformName
	h.PNCPUs, h.PFpops, h.MNBytes = req.HostInfo.PNCPUs, req.HostInfo.PFpops, req.HostInfo.MNBytes
	h.Coprocs = req.HostCoprocs().Column()
	if ts := req.TimeStats; ts != nil {
		h.OnFrac, h.ConnectedFrac, h.ActiveFrac = ts.OnFrac, ts.ConnectedFrac, ts.ActiveFrac
	}
}

// recordReports records each reported result exactly once and acknowledges every
// report, so the client stops sending it: a duplicate was recorded before, and a
// report of someone else's or an unknown result can never be recorded (BOINC acks
// those too, for the same reason).
func (s *Server) recordReports(tx *store.Tx, host *store.Host, req *boincxml.SchedulerRequest, reply *boincxml.SchedulerReply, now float64) error {
	for _, r := range req.Results {
		success := r.ExitStatus == 0 && (r.State == 0 || r.State == boincxml.ResultFilesUploaded)
		st, err := tx.RecordReport(host.ID, store.Report{
			Name: r.Name, Success: success, CPUTime: r.FinalCPUTime, ElapsedTime: r.FinalElapsedTime,
			ExitStatus: r.ExitStatus, ClientState: r.State,
		}, now)
		if err != nil {
			return fmt.Errorf("report %s: %w", r.Name, err)
		}
		switch st {
		case store.ReportNotYours:
			s.log().Warn("report of a result not sent to this host", "host", host.ID, "result", r.Name)
			reply.Messages = append(reply.Messages, boincxml.Message{Priority: boincxml.PriorityLow,
				Text: fmt.Sprintf("result %s was not sent to this host; report ignored", r.Name)})
		case store.ReportUnknown:
			s.log().Warn("report of an unknown result", "host", host.ID, "result", r.Name)
			reply.Messages = append(reply.Messages, boincxml.Message{Priority: boincxml.PriorityLow,
				Text: fmt.Sprintf("no result named %s; report ignored", r.Name)})
		}
		reply.ResultAcks = append(reply.ResultAcks, boincxml.NameRef{Name: r.Name})
	}
	return nil
}
