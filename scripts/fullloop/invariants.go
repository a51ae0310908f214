package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bkit/bkit/lib/filetree"
	"github.com/bkit/bkit/lib/store"
)

// The full loop's invariants, checked on each project's database (and its purge
// archive) at the end of a run.

// invariants checks project name's database at the end of the run:
//
//   - every result sent was reported, or was lost after its deadline and its workunit
//     retried (a later result, or a retry pending, or the workunit settled), or is in
//     progress with its deadline still ahead;
//   - every report a front end acknowledged to a client is recorded, or was of a result
//     the database no longer held then (purged before the report came), which the
//     archive must hold;
//   - every workunit is validated, or given up with a wu_giveup row, or in progress (a
//     result unsent or in progress, validation pending, or a retry check to come);
//   - every result the offline client lost was marked lost and retried, or is in
//     progress with its deadline after the end of the run, or (if the server sent it
//     again when the client came back before its deadline) was reported;
//   - every validated or given-up workunit was assimilated exactly once (the
//     assimilator's command logged it once, and no other), and none other was;
//   - no file was deleted while needed: no deletion recorded for a workunit that is
//     not assimilated, has a result unsent or in progress, or awaits validation; and
//     every input and uploaded output of a workunit whose files stay is on disk.
//
// The summary calls it on the database and its purge archive together (merged, which
// also breaks an invariant for a row archived twice, or archived and still in the
// database); rowsBounded checks, on the database alone, that purge keeps up.
func (l *loop) invariants(ctx context.Context, db *store.Store, name string) error {
	end := l.end
	rows, err := db.DB.QueryContext(ctx, `SELECT r.id, r.name, r.server_state, r.outcome, r.report_deadline,
			w.canonical_resultid, w.error_mask, w.retry_check_time,
			(SELECT COUNT(*) FROM result r2 WHERE r2.workunitid = w.id AND r2.id > r.id)
		FROM result r JOIN workunit w ON w.id = r.workunitid WHERE r.sent_time > 0`)
	if err != nil {
		return err
	}
	type res struct {
		state, outcome int
		retried        bool
	}
	got := map[string]res{}
	for rows.Next() {
		var id, state, outcome, canonical, errMask, later int64
		var rname string
		var deadline, check float64
		if err := rows.Scan(&id, &rname, &state, &outcome, &deadline, &canonical, &errMask, &check, &later); err != nil {
			rows.Close()
			return err
		}
		settled := canonical > 0 || errMask != 0
		retried := later > 0 || settled || check >= end
		got[rname] = res{int(state), int(outcome), retried}
		switch {
		case outcome == store.OutcomeSuccess || outcome == store.OutcomeClientError:
		case state == store.ServerStateInProgress:
			if deadline < end {
				l.breakf("project %s: result %s is in progress past its deadline (%s) after the last retry pass", name, rname, human(deadline-start))
			}
		case outcome == store.OutcomeNoReply:
			if deadline >= end {
				l.breakf("project %s: result %s marked lost before its deadline", name, rname)
			}
			if !retried {
				l.breakf("project %s: result %s was lost and its workunit neither retried nor settled", name, rname)
			}
		default:
			l.breakf("project %s: sent result %s ended as server state %d, outcome %d", name, rname, state, outcome)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	acked := map[string]ack{}
	for n, a := range l.acked {
		acked[n] = a
	}
	l.mu.Unlock()
	for n, a := range acked {
		if a.project != name {
			continue
		}
		r, ok := got[n]
		if a.purged {
			// Reported after its workunit was purged: acknowledged and not recorded, as
			// BOINC's scheduler does with a result it does not know (docs/decisions.md).
			// The archive must hold it.
			if !ok {
				l.breakf("project %s: the report of %s by %s at %s was acknowledged as of a purged result, which is neither in the database nor in the archive", name, n, a.client, human(a.at-start))
			}
			continue
		}
		if !ok || (r.outcome != store.OutcomeSuccess && r.outcome != store.OutcomeClientError) {
			l.breakf("project %s: the report of %s by %s was acknowledged but is not recorded (outcome %d)", name, n, a.client, r.outcome)
		}
	}
	for _, c := range l.clients {
		for _, t := range c.lost {
			if t.Project != name {
				continue
			}
			n := t.Name
			r := got[n]
			switch {
			case r.outcome == store.OutcomeNoReply && r.retried:
			case t.ReportDeadline >= end && r.state == store.ServerStateInProgress:
				// Its deadline is still ahead when the run ends: in progress.
			case c.resent[n] && (r.outcome == store.OutcomeSuccess || r.outcome == store.OutcomeClientError):
				// The client came back before the deadline and the server sent the
				// result again (docs/bserver.md, lost tasks); it was reported, maybe
				// late, which the server accepts.
			case c.resent[n]:
				l.breakf("project %s: %s lost %s and was sent it again, which ended with outcome %d (retried: %v), not reported nor lost and retried", name, c.name, n, r.outcome, r.retried)
			default:
				l.breakf("project %s: %s lost %s, which ended with outcome %d (retried: %v), not lost and retried", name, c.name, n, r.outcome, r.retried)
			}
		}
	}
	wrows, err := db.DB.QueryContext(ctx, fmt.Sprintf(`SELECT w.name, w.canonical_resultid, w.error_mask, w.need_validate, w.retry_check_time,
			(SELECT COUNT(*) FROM result r WHERE r.workunitid = w.id AND r.server_state IN (%d, %d)),
			(SELECT COUNT(*) FROM wu_giveup g WHERE g.workunitid = w.id)
		FROM workunit w`, store.ServerStateUnsent, store.ServerStateInProgress))
	if err != nil {
		return err
	}
	defer wrows.Close()
	for wrows.Next() {
		var wname string
		var canonical, errMask, needValidate, active, giveups int64
		var check float64
		if err := wrows.Scan(&wname, &canonical, &errMask, &needValidate, &check, &active, &giveups); err != nil {
			return err
		}
		switch {
		case canonical > 0:
		case errMask != 0:
			if giveups == 0 {
				l.breakf("project %s: workunit %s is in error without a wu_giveup row", name, wname)
			}
		case active > 0 || needValidate != 0 || check > 0:
		default:
			l.breakf("project %s: workunit %s is stuck: no canonical result, not given up, nothing in progress and no retry to come", name, wname)
		}
	}
	if err := wrows.Err(); err != nil {
		return err
	}
	return l.lifecycleInvariants(ctx, db, name)
}

// lifecycleInvariants checks assimilation and file deletion (see invariants).
func (l *loop) lifecycleInvariants(ctx context.Context, db *store.Store, name string) error {
	logged := map[string]int{}
	if b, err := os.ReadFile(l.assimilatedLog(name)); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				logged[f[0]]++
			}
		}
	}
	rows, err := db.DB.QueryContext(ctx, `SELECT name, canonical_resultid <> 0 OR error_mask <> 0, assimilate_state FROM workunit`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var wname string
		var settled bool
		var state int
		if err := rows.Scan(&wname, &settled, &state); err != nil {
			rows.Close()
			return err
		}
		n := logged[wname]
		delete(logged, wname)
		switch {
		case settled && (n != 1 || state != store.AssimilateDone):
			l.breakf("project %s: workunit %s was validated or given up and assimilated %d times (state %d), not once", name, wname, n, state)
		case !settled && (n != 0 || state != store.AssimilateInit):
			l.breakf("project %s: workunit %s, neither validated nor given up, was assimilated %d times (state %d)", name, wname, n, state)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for wname := range logged {
		l.breakf("project %s: the assimilator handed over %s, which is no workunit of the project", name, wname)
	}
	bad, err := count(ctx, db, fmt.Sprintf(`SELECT COUNT(*) FROM deleted_file d JOIN workunit w ON w.id = d.workunitid
		WHERE w.assimilate_state <> %d OR w.need_validate <> 0
		OR EXISTS (SELECT 1 FROM result r WHERE r.workunitid = w.id AND r.server_state IN (%d, %d))`,
		store.AssimilateDone, store.ServerStateUnsent, store.ServerStateInProgress))
	if err != nil {
		return err
	}
	if bad > 0 {
		l.breakf("project %s: %d files deleted while a result or the validator still needed them", name, bad)
	}
	// What stays must be there: inputs in download/, uploads in upload/ (tree or flat).
	frows, err := db.DB.QueryContext(ctx, fmt.Sprintf(`SELECT 'download', f.name FROM wu_file f JOIN workunit w ON w.id = f.workunitid WHERE w.file_delete_state <> %d
		UNION SELECT 'upload', f.name FROM result_file f JOIN result r ON r.id = f.resultid JOIN workunit w ON w.id = r.workunitid WHERE w.file_delete_state <> %d`,
		store.FileDeleteDone, store.FileDeleteDone))
	if err != nil {
		return err
	}
	defer frows.Close()
	dir := filepath.Join(l.dir, name)
	for frows.Next() {
		var sub, fname string
		if err := frows.Scan(&sub, &fname); err != nil {
			return err
		}
		paths := []string{filepath.Join(dir, sub, fname)}
		if sub == "upload" {
			paths = append(paths, filepath.Join(dir, sub, filetree.Path(fname)))
		}
		found := false
		for _, p := range paths {
			if _, err := os.Stat(p); err == nil {
				found = true
			}
		}
		if !found {
			l.breakf("project %s: %s/%s is gone while a workunit whose files stay reads it", name, sub, fname)
		}
	}
	return frows.Err()
}
