package server

import (
	"cmp"
	"slices"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/store"
)

// assignCursor is seed 004's host assignment for one batch with the team rules
// (lib/locality.ChooseCursor): it puts the host on a cursor, or moves it, and returns
// that cursor (ok false: the batch has no unfinished cursor for it). It reads the
// host's cursor and the cursors in order of decreasing est_time_left up to the first
// whose team admits the host: ChooseCursor's answer over those is its answer over all
// of the batch's cursors, since it picks the greatest est_time_left among admitting
// cursors (ties: lowest id), else the greatest overall, and compares it with the
// host's own.
func assignCursor(tx *store.Tx, batch int64, host *store.Host) (cursor store.Cursor, ok bool, err error) {
	current, err := tx.HostCursor(batch, host.ID)
	if err != nil {
		return cursor, false, err
	}
	users, err := tx.UserCursors(batch, host.UserID, host.ID)
	if err != nil {
		return cursor, false, err
	}
	rate := locality.HostRate(host.ExpavgCredit, host.PFpops, host.PNCPUs, host.OnFrac, host.ActiveFrac)
	conv := func(c store.Cursor) locality.Cursor {
		return locality.Cursor{ID: c.ID, RemainingCredit: c.RemainingCredit, ExpavgCredit: c.ExpavgCredit,
			NHosts: c.NHosts, MaxHostCredit: c.MaxHostCredit, HasUser: users[c.ID]}
	}
	ids := []int64{}
	if current != 0 {
		ids = append(ids, current)
	}
	err = tx.CursorsByEstTimeLeft(batch, func(c store.Cursor) bool {
		if c.ID == current {
			return true
		}
		ids = append(ids, c.ID)
		return !locality.Admits(conv(c), rate)
	})
	if err != nil {
		return cursor, false, err
	}
	// The cursors read, locked and read again (another scheduler may have changed
	// them in between), in est_time_left order for ChooseCursor's ties.
	rows, err := tx.LockCursorIDs(ids)
	if err != nil {
		return cursor, false, err
	}
	slices.SortStableFunc(rows, func(a, b store.Cursor) int {
		return cmp.Compare(locality.EstTimeLeft(conv(b)), locality.EstTimeLeft(conv(a)))
	})
	cs := make([]locality.Cursor, len(rows))
	for i, c := range rows {
		cs[i] = conv(c)
	}
	to := locality.ChooseCursor(cs, current, rate)
	if to == 0 {
		return cursor, false, nil
	}
	if to != current {
		if err := tx.MoveHost(batch, host.ID, host.UserID, current, to, rate); err != nil {
			return cursor, false, err
		}
	}
	for _, c := range rows {
		if c.ID == to {
			cursor = c
		}
	}
	return cursor, true, nil
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
		cursor, ok, err := assignCursor(tx, batch.ID, host)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		span := locality.Range{First: cursor.FirstUnfinishedJobNum, Last: cursor.LastJobNum}
		stream, prev := int64(-1), int64(-1)
		if batch.StreamJobs > 0 {
			if stream, err = tx.HostStream(batch.ID, host.ID); err != nil {
				return err
			}
		}
		// A host that finds nothing in its stream chooses another; a few tries, since
		// another scheduler may claim what a choice found.
		for tries := 0; n.more() && !st.full(reply) && tries < 4; {
			if batch.StreamJobs > 0 {
				if stream < 0 {
					tries++
					if stream, err = chooseStream(tx, cursor, host.ID, batch, prev); err != nil {
						return err
					}
					if stream < 0 {
						break // nothing in the cursor this host may take
					}
					if err := tx.SetHostStream(batch.ID, host.ID, stream); err != nil {
						return err
					}
				}
				r := locality.StreamRange(locality.Range{First: cursor.FirstJobNum, Last: cursor.LastJobNum}, batch.StreamJobs, stream)
				span = locality.Range{First: max(r.First, cursor.FirstUnfinishedJobNum), Last: r.Last}
			}
			// A page returns every unsent replica of a job and the host takes one, so it
			// asks for the jobs it wants times the batch's redundancy: one query where a
			// page used by half took two (the same jobs, in the same order). On MySQL
			// the replicas it leaves stay locked until the request commits, as a page's
			// always were.
			limit := min(batchSize(*n, best), st.maxJobs-len(reply.ResultsSent)) * max(1, batch.Redundancy)
			cands, err := tx.UnsentCursorCandidates(cursor.ID, span.First, span.Last, host.ID, limit)
			if err != nil {
				return err
			}
			// Choose the page's jobs, claim them in one UPDATE per app version and
			// deadline (usually one), then read their files in one query each (the
			// batch files of a page of candidates are one contiguous run).
			var claimed []store.LocalityCandidate
			var versions []store.AppVersion
			for _, c := range cands {
				if !n.more() || st.full(reply) || len(reply.ResultsSent)+len(claimed) >= st.maxJobs {
					break
				}
				av, ok := best[c.AppID]
				if !ok || st.wus[c.WUID] || !st.quotas.mayTake(av) {
					continue // a second replica of a job this reply already carries, or the host's quota is spent
				}
				st.quotas.took(av)
				st.wus[c.WUID] = true
				n.fill(av, c.FpopsEst, caps)
				claimed = append(claimed, c)
				versions = append(versions, av)
			}
			if err := claimAll(tx, claimed, versions, host.ID, now); err != nil {
				return err
			}
			progress := len(claimed) > 0
			if progress {
				if err := st.prefetch(claimed); err != nil {
					return err
				}
			}
			for i, c := range claimed {
				if err := st.addJob(reply, c.Candidate, versions[i], c.Deadline(now), st.batchFiles(c)); err != nil {
					return err
				}
			}
			if !progress {
				if batch.StreamJobs == 0 {
					break // the cursor has no more jobs this host may take
				}
				prev, stream = stream, -1 // the stream has nothing more for this host: choose another
			}
		}
	}
	return nil
}

// claimAll claims the chosen candidates for the host (store.Tx.ClaimResults: all or
// the transaction runs again), grouped by app version and deadline.
func claimAll(tx *store.Tx, cands []store.LocalityCandidate, versions []store.AppVersion, hostID int64, now float64) error {
	type key struct {
		version  int64
		deadline float64
	}
	var order []key
	ids := map[key][]int64{}
	for i, c := range cands {
		k := key{versions[i].ID, c.Deadline(now)}
		if _, ok := ids[k]; !ok {
			order = append(order, k)
		}
		ids[k] = append(ids[k], c.ResultID)
	}
	for _, k := range order {
		if err := tx.ClaimResults(ids[k], hostID, k.version, now, k.deadline); err != nil {
			return err
		}
	}
	return nil
}

// chooseStream finds the streams of cursor with work host may take, oldest first, up
// to the first that needs a host (no other member of the team works on it and could
// take its next job), and chooses among them (locality.ChooseStream); -1: the cursor
// has nothing for the host. The stream after prev (the host's last one) comes first
// when it needs a host: its first files are the last of prev, which the host holds.
// "Could take" matters: a leader that ran ahead on its stream cannot take the second
// results of its own jobs, so its stream still needs a follower, while a trail one
// follower already works on needs nobody else (a second follower would be a third
// copy of its files).
func chooseStream(tx *store.Tx, cursor store.Cursor, hostID int64, batch store.SendableBatch, prev int64) (int64, error) {
	whole := locality.Range{First: cursor.FirstJobNum, Last: cursor.LastJobNum}
	if next := locality.StreamRange(whole, batch.StreamJobs, prev+1); prev >= 0 && next.First <= whole.Last {
		j, ok, err := tx.FirstTakeableJob(cursor.ID, max(next.First, cursor.FirstUnfinishedJobNum), hostID)
		if err != nil {
			return -1, err
		}
		if ok && j <= next.Last {
			n, err := tx.StreamServers(cursor.ID, prev+1, j, hostID)
			if err != nil {
				return -1, err
			}
			if n == 0 {
				return prev + 1, nil
			}
		}
	}
	var streams []locality.Stream
	for from := cursor.FirstUnfinishedJobNum; from <= cursor.LastJobNum; {
		j, ok, err := tx.FirstTakeableJob(cursor.ID, from, hostID)
		if err != nil {
			return -1, err
		}
		if !ok {
			break
		}
		s := locality.StreamOf(cursor.FirstJobNum, batch.StreamJobs, j)
		n, err := tx.StreamServers(cursor.ID, s, j, hostID)
		if err != nil {
			return -1, err
		}
		streams = append(streams, locality.Stream{Num: s, Members: n})
		if n == 0 {
			break
		}
		from = locality.StreamRange(whole, batch.StreamJobs, s).Last + 1
	}
	return locality.ChooseStream(streams), nil
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
