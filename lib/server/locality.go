package server

import (
	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/store"
)

// chooseCursor is seed 004's host assignment with the team rules (lib/locality) for a
// host of the given user and credit rate on cursor current (0: new to the batch).
func chooseCursor(cursors []store.Cursor, userCursors map[int64]bool, current int64, rate float64) int64 {
	cs := make([]locality.Cursor, len(cursors))
	for i, c := range cursors {
		cs[i] = locality.Cursor{ID: c.ID, RemainingCredit: c.RemainingCredit, ExpavgCredit: c.ExpavgCredit,
			NHosts: c.NHosts, MaxHostCredit: c.MaxHostCredit, HasUser: userCursors[c.ID]}
	}
	return locality.ChooseCursor(cs, current, rate)
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
		users, err := tx.UserCursors(batch, host.UserID, host.ID)
		if err != nil {
			return err
		}
		rate := locality.HostRate(host.ExpavgCredit, host.PFpops, host.PNCPUs, host.OnFrac, host.ActiveFrac)
		to := chooseCursor(cursors, users, current, rate)
		if to == 0 {
			continue
		}
		if to != current {
			if err := tx.MoveHost(batch, host.ID, host.UserID, current, to, rate); err != nil {
				return err
			}
		}
		for n.more() && !st.full(reply) {
			cands, err := tx.UnsentCursorCandidates(to, firstUnfinished(cursors, to), host.ID, min(batchSize(*n, best), st.maxJobs-len(reply.ResultsSent)))
			if err != nil {
				return err
			}
			progress := false
			for _, c := range cands {
				if !n.more() || st.full(reply) {
					break
				}
				av, ok := best[c.AppID]
				if !ok || st.wus[c.WUID] {
					continue // a second replica of a job this reply already carries
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

// firstUnfinished is cursor id's first_unfinished_job_num.
func firstUnfinished(cursors []store.Cursor, id int64) int64 {
	for _, c := range cursors {
		if c.ID == id {
			return c.FirstUnfinishedJobNum
		}
	}
	return 0
}
