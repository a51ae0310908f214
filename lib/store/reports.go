package store

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// A scheduler request's reports: the results a host says it finished, recorded in one
// read and one batch of updates.

// Report is a finished result a host reports.
type Report struct {
	Name        string
	Success     bool
	CPUTime     float64
	ElapsedTime float64
	ExitStatus  int
	ClientState int
	// OutputDigest is what the validator compares: the digest of the uploaded
	// output files (ReportedOutputs) for a result that declares some, else the
	// client's own (a bkit extension of the scheduler request); empty when neither.
	OutputDigest string
	// OutputError, for a success, says why its output cannot be validated (a declared
	// output file not uploaded, or a client's digest that is not its files'): it is
	// recorded as BOINC's validator records a result whose files it cannot read, a
	// validate error, invalid, which the retry rules count as an error.
	OutputError string
	// StderrOut is the client's account of the run (BOINC's stderr_out), kept
	// (valid UTF-8, at most MaxStderrBytes) when the report is recorded.
	StderrOut string
	// AppVersionID is not the host's to say: RecordReports sets it, for each report
	// it records, to the app version the result was sent with (what the report does
	// to the host's quota depends on it), from the read it makes of the reports'
	// results anyway.
	AppVersionID int64
	// AbortAsked is not the host's to say either: RecordReports sets it when the
	// project had reason to tell the client to abort the task (the scheduler's
	// abort-if-not-started: its workunit done, validated or given up, or the task
	// timed out), so that an exit status of "aborted by project" is believed only
	// then (the quota's exemption, lib/server's adjustQuotas).
	AbortAsked bool
}

// MaxStderrBytes is the most of a report's stderr_out kept (it fits a MySQL TEXT);
// the end is kept, where an app's last words and the client's exit message are.
const MaxStderrBytes = 60000

// ReportStatus says what RecordReport did with a report.
type ReportStatus int

// What became of a report. Every status but ReportRecorded left the database as it was.
const (
	ReportRecorded  ReportStatus = iota // recorded now
	ReportDuplicate                     // this host reported it before: nothing to do
	ReportNotYours                      // the result was sent to another host, or never sent
	ReportUnknown                       // no such result
)

// RecordReport records r for hostID exactly once: the result must be this host's and
// in progress (or timed out with no reply, which a late report still fills in). The
// conditional UPDATE makes a repeated report a no-op even when two arrive at once.
func (t *Tx) RecordReport(hostID int64, r Report, now float64) (ReportStatus, error) {
	st, err := t.RecordReports(hostID, []Report{r}, now)
	if err != nil {
		return 0, err
	}
	return st[0], nil
}

// RecordReports is RecordReport for each of a request's reports, in order, in a fixed
// number of statements whatever their number (issue 33: a report cost an UPDATE of its
// own, a request of 10 reports 10 round trips): the reported results are read by name
// in one query (shared with ReportedOutputs when the scheduler called it first), the
// recordable ones updated in one UPDATE whose CASE gives each its own figures, their
// stderr inserted in one multi-row INSERT, and their workunits marked in one UPDATE per
// outcome. Every write names its rows by primary key: an UPDATE of workunit through a
// subquery on result planned as a scan of all of workunit on MariaDB (issue 28). The
// UPDATE keeps RecordReport's condition, so a result is still recorded once when two
// reports of it race; should another transaction have recorded one of them between the
// read and the write, the count of rows changed differs and the transaction fails with
// an error InTx retries (it then reads the result as a duplicate).
func (t *Tx) RecordReports(hostID int64, reports []Report, now float64) ([]ReportStatus, error) {
	out := make([]ReportStatus, len(reports))
	names := make([]string, len(reports))
	for i, r := range reports {
		names[i] = r.Name
	}
	known, err := t.reportedRows(names)
	if err != nil {
		return nil, err
	}
	type rec struct {
		Report
		id, wu            int64
		outcome, validate int
	}
	var recs []rec
	seen := make(map[string]bool, len(reports))
	for i, r := range reports {
		res, ok := known[r.Name]
		switch {
		case !ok:
			out[i] = ReportUnknown
			continue
		case res.hostID != hostID:
			out[i] = ReportNotYours
			continue
		case seen[r.Name] || !(res.serverState == ServerStateInProgress || res.serverState == ServerStateOver && res.outcome == OutcomeNoReply):
			if res.serverState == ServerStateOver || seen[r.Name] {
				out[i] = ReportDuplicate
			} else {
				out[i] = ReportNotYours // never sent (unsent) to anyone
			}
			continue
		}
		seen[r.Name] = true
		outcome, validate := OutcomeClientError, ValidateInit
		switch {
		case r.Success && r.OutputError != "":
			outcome, validate = OutcomeValidateError, ValidateInvalid
		case r.Success:
			outcome = OutcomeSuccess
		}
		reports[i].AppVersionID = res.appVersionID
		reports[i].AbortAsked = res.wuDone || res.serverState == ServerStateOver
		recs = append(recs, rec{Report: reports[i], id: res.id, wu: res.wu, outcome: outcome, validate: validate})
		out[i] = ReportRecorded
	}
	const chunk = 200 // 14 arguments a report: within SQLite's 32,766
	var succeeded, failed []any
	var stderrs []rec
	for lo := 0; lo < len(recs); lo += chunk {
		part := recs[lo:min(len(recs), lo+chunk)]
		cases := func(col string, val func(r rec) any) (string, []any) {
			var b strings.Builder
			args := make([]any, 0, 2*len(part))
			b.WriteString(col + "=CASE id")
			for _, r := range part {
				b.WriteString(" WHEN ? THEN ?")
				args = append(args, r.id, val(r))
			}
			b.WriteString(" ELSE " + col + " END")
			return b.String(), args
		}
		cols := []struct {
			name string
			val  func(r rec) any
		}{
			{"outcome", func(r rec) any { return r.outcome }},
			{"client_state", func(r rec) any { return r.ClientState }},
			{"cpu_time", func(r rec) any { return r.CPUTime }},
			{"elapsed_time", func(r rec) any { return r.ElapsedTime }},
			{"exit_status", func(r rec) any { return r.ExitStatus }},
			{"validate_state", func(r rec) any { return r.validate }},
			{"output_digest", func(r rec) any { return r.OutputDigest }},
		}
		set := []string{"server_state=?", "received_time=?"}
		args := []any{ServerStateOver, now}
		for _, c := range cols {
			if len(part) == 1 {
				// One report (the common request): a plain SET, one prepared form.
				set = append(set, c.name+"=?")
				args = append(args, c.val(part[0]))
				continue
			}
			s, a := cases(c.name, c.val)
			set = append(set, s)
			args = append(args, a...)
		}
		for _, r := range part {
			args = append(args, r.id)
		}
		args = append(args, hostID, ServerStateInProgress, ServerStateOver, OutcomeNoReply)
		done, err := t.exec(`UPDATE result SET `+strings.Join(set, ", ")+` WHERE id IN (?`+strings.Repeat(",?", len(part)-1)+`)
			AND hostid=? AND (server_state=? OR (server_state=? AND outcome=?))`, args...)
		if err != nil {
			return nil, err
		}
		n, err := done.RowsAffected()
		if err != nil {
			return nil, err
		}
		if n != int64(len(part)) {
			return nil, fmt.Errorf("%w: %d of %d reports recorded", errReportRace, n, len(part))
		}
		for _, r := range part {
			if r.StderrOut != "" {
				stderrs = append(stderrs, r)
			}
			if r.outcome == OutcomeSuccess {
				succeeded = append(succeeded, r.wu)
			} else {
				failed = append(failed, r.wu)
			}
		}
	}
	if len(stderrs) > 0 {
		if err := t.insertRowsN(`INSERT INTO result_stderr (resultid, stderr_out)`, 2, len(stderrs), 500, func(i int) []any {
			return []any{stderrs[i].id, clipStderr(stderrs[i].StderrOut)}
		}); err != nil {
			return nil, err
		}
	}
	// Wake the transitioner (WorkunitsChanged) and the retry job for the recorded
	// results' workunits; a success of a workunit still looking for its canonical
	// result waits for the validator (bretry validate), and the retry job leaves it
	// alone until then.
	for lo := 0; lo < len(failed); lo += 500 {
		part := failed[lo:min(len(failed), lo+500)]
		if _, err := t.exec(`UPDATE workunit SET transition_time=? WHERE id IN (?`+strings.Repeat(",?", len(part)-1)+`)`,
			append([]any{ChangedAt(now)}, part...)...); err != nil {
			return nil, err
		}
	}
	for lo := 0; lo < len(succeeded); lo += 500 {
		part := succeeded[lo:min(len(succeeded), lo+500)]
		if _, err := t.exec(`UPDATE workunit SET transition_time=?,
			need_validate=CASE WHEN canonical_resultid=0 AND error_mask=0 THEN 1 ELSE need_validate END
			WHERE id IN (?`+strings.Repeat(",?", len(part)-1)+`)`,
			append([]any{ChangedAt(now)}, part...)...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// errReportRace is a report RecordReports read as recordable and found recorded by
// another transaction when it wrote; InTx runs the transaction again.
var errReportRace = errors.New("store: a report read as recordable was recorded by another transaction")

// reportedRow is what recording a report needs of its result, and (declared) the
// output files its workunit declares.
type reportedRow struct {
	id, wu, hostID       int64
	appVersionID         int64
	serverState, outcome int
	wuDone               bool // its workunit validated or given up
	declared             []int
}

// reportedRows reads the named results (absent: no such result) with their declared
// output files, in one query per 500 names. The rows ReportedOutputs read in this
// transaction are taken from it (it reads every reported result, so that the
// scheduler's request reads them once).
func (t *Tx) reportedRows(names []string) (map[string]reportedRow, error) {
	out := make(map[string]reportedRow, len(names))
	var missing []any
	asked := make(map[string]bool, len(names))
	for _, n := range names {
		if r, ok := t.reported[n]; ok {
			out[n] = r
		} else if !asked[n] {
			asked[n] = true
			missing = append(missing, n)
		}
	}
	t.reported = nil // read once: what follows may change the rows
	for lo := 0; lo < len(missing); lo += 500 {
		part := missing[lo:min(len(missing), lo+500)]
		rows, err := t.query(`SELECT r.id, r.name, r.workunitid, r.hostid, r.app_version_id, r.server_state, r.outcome,
			COALESCE(w.canonical_resultid<>0 OR w.error_mask<>0, 0), COALESCE(o.file_num, -1)
			FROM result r LEFT JOIN workunit w ON w.id=r.workunitid LEFT JOIN wu_output o ON o.workunitid=r.workunitid
			WHERE r.name IN (?`+strings.Repeat(",?", len(part)-1)+`)`, part...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var name string
			var r reportedRow
			var k int
			if err := rows.Scan(&r.id, &name, &r.wu, &r.hostID, &r.appVersionID, &r.serverState, &r.outcome, &r.wuDone, &k); err != nil {
				rows.Close()
				return nil, err
			}
			r.declared = out[name].declared
			if k >= 0 {
				r.declared = append(r.declared, k)
			}
			out[name] = r
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// clipStderr makes s storable on both engines: valid UTF-8 (MySQL refuses other
// bytes in a utf8mb4 column), its last MaxStderrBytes bytes at most.
func clipStderr(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxStderrBytes {
		return s
	}
	s = s[len(s)-MaxStderrBytes:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}
