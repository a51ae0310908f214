package server

import (
	"math"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/store"
)

// estTimeLeft is seed 004's est_time_left(cursor) = remaining_credit / expavg_credit:
// 0 for a cursor whose jobs are all finished, and infinite for a team with no credit
// yet (DESIGN.md section 5).
func estTimeLeft(c store.Cursor) float64 {
	switch {
	case c.RemainingCredit <= 0:
		return 0
	case c.ExpavgCredit <= 0:
		return math.Inf(1)
	}
	return c.RemainingCredit / c.ExpavgCredit
}

// chooseCursor is seed 004's host assignment for one batch. A host new to the batch
// (current 0) joins the cursor with the greatest est_time_left (DESIGN.md section 5
// reads "least greatest" so). A host already on cursor C moves to that cursor D when
// est_time_left(C) < 0.5 × est_time_left(D). Ties go to the lowest cursor id; a batch
// whose cursors are all finished gets no new hosts (0).
func chooseCursor(cursors []store.Cursor, current int64) int64 {
	var d *store.Cursor
	for i := range cursors {
		c := &cursors[i]
		if estTimeLeft(*c) > 0 && (d == nil || estTimeLeft(*c) > estTimeLeft(*d)) {
			d = c
		}
	}
	if d == nil {
		return current
	}
	if current == 0 {
		return d.ID
	}
	for _, c := range cursors {
		if c.ID == current && estTimeLeft(c) < 0.5*estTimeLeft(*d) {
			return d.ID
		}
	}
	return current
}

// sendLocality sends jobs of locality-scheduled apps for one resource: for each batch
// of those apps, put the host on a cursor (moving it if seed 004 says so), then send
// unsent results of that cursor's jobs in job order, with the batch files they use as
// sticky input files.
func (s *Server) sendLocality(tx *store.Tx, host *store.Host, best map[int64]store.AppVersion, appIDs []int64,
	caps hostCaps, n *need, reply *boincxml.SchedulerReply, st *sendState, now float64) error {
	batches, err := tx.SendableBatches(appIDs)
	if err != nil {
		return err
	}
	for _, batch := range batches {
		if !n.more() || st.full(reply) {
			return nil
		}
		cursors, err := tx.LockCursors(batch)
		if err != nil {
			return err
		}
		current, err := tx.HostCursor(batch, host.ID)
		if err != nil {
			return err
		}
		to := chooseCursor(cursors, current)
		if to == 0 {
			continue
		}
		if to != current {
			if err := tx.MoveHost(batch, host.ID, current, to, host.ExpavgCredit); err != nil {
				return err
			}
		}
		for n.more() && !st.full(reply) {
			cands, err := tx.UnsentCursorCandidates(to, host.ID, min(batchSize(*n, best), st.maxJobs-len(reply.ResultsSent)))
			if err != nil {
				return err
			}
			progress := false
			for _, c := range cands {
				if !n.more() || st.full(reply) {
					break
				}
				av, ok := best[c.AppID]
				if !ok {
					continue
				}
				ok, err := tx.ClaimResult(c.ResultID, host.ID, av.ID, now, now+c.DelayBound)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				progress = true
				files, err := tx.BatchFiles(c.BatchID, c.FirstFileNum, c.LastFileNum)
				if err != nil {
					return err
				}
				n.fill(av, c.FpopsEst, caps)
				if err := st.addJob(reply, c.Candidate, av, now+c.DelayBound, files); err != nil {
					return err
				}
			}
			if !progress {
				break // the cursor has no more jobs this host may take
			}
		}
	}
	return nil
}

// deleteStickyFiles tells the host which of the sticky files it holds it may delete.
func deleteStickyFiles(tx *store.Tx, host *store.Host, req *boincxml.SchedulerRequest, reply *boincxml.SchedulerReply) error {
	for _, f := range req.FileInfos {
		unneeded, err := tx.StickyFileUnneeded(host.ID, f.Name)
		if err != nil {
			return err
		}
		if unneeded {
			reply.DeleteFiles = append(reply.DeleteFiles, boincxml.NameRef{Name: f.Name})
		}
	}
	return nil
}
