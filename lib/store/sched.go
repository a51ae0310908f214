package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/bkit/bkit/lib/quota"
	"slices"
	"strings"
	"unicode/utf8"
)

// Host is a volunteer's computer as the scheduler knows it.
type Host struct {
	ID            int64
	UserID        int64
	Authenticator string
	RPCSeqno      int64
	RPCTime       float64
	PlatformName  string
	PNCPUs        int
	PFpops        float64
	MNBytes       float64
	// Coprocs lists the host's coprocessors as "TYPE:COUNT:PEAK_FLOPS" joined by
	// commas; the scheduler owns the format (lib/server).
	Coprocs       string
	OnFrac        float64
	ConnectedFrac float64
	ActiveFrac    float64
	TotalCredit   float64
	ExpavgCredit  float64
	ExpavgTime    float64
	// HostCPID is the BOINC client's host cross-project id ('' from bkit's clients).
	HostCPID string
}

// NewAuthenticator returns a fresh host authenticator: 128 random bits, hex-encoded.
func NewAuthenticator() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand never fails on the systems Go supports; a predictable key would
		// be worse than stopping.
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

const hostColumns = `id, userid, authenticator, rpc_seqno, rpc_time, platform_name, p_ncpus, p_fpops, m_nbytes, coprocs,
	on_frac, connected_frac, active_frac, total_credit, expavg_credit, expavg_time, host_cpid`

func scanHost(row *sql.Row) (*Host, error) {
	var h Host
	err := row.Scan(&h.ID, &h.UserID, &h.Authenticator, &h.RPCSeqno, &h.RPCTime, &h.PlatformName, &h.PNCPUs, &h.PFpops,
		&h.MNBytes, &h.Coprocs, &h.OnFrac, &h.ConnectedFrac, &h.ActiveFrac, &h.TotalCredit, &h.ExpavgCredit, &h.ExpavgTime, &h.HostCPID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return &h, err
}

// HostByID returns the host with id, or ErrNotFound.
func (t *Tx) HostByID(id int64) (*Host, error) {
	return scanHost(t.queryRow(`SELECT `+hostColumns+` FROM host WHERE id=?`, id))
}

// HostByAuthenticator returns the host holding auth, or ErrNotFound.
func (t *Tx) HostByAuthenticator(auth string) (*Host, error) {
	return scanHost(t.queryRow(`SELECT `+hostColumns+` FROM host WHERE authenticator=?`, auth))
}

// HostByUserCPID returns the user's latest host with BOINC host cross-project id
// cpid, or ErrNotFound.
func (t *Tx) HostByUserCPID(userID int64, cpid string) (*Host, error) {
	return scanHost(t.queryRow(`SELECT `+hostColumns+` FROM host WHERE userid=? AND host_cpid=? ORDER BY id DESC LIMIT 1`, userID, cpid))
}

// CreateHost inserts h (its Authenticator set by the caller) and sets h.ID. A user's
// host with a BOINC host cpid is unique per user and cpid: when another transaction
// made it first, CreateHost fails with an error InTx retries, and the transaction run
// again finds that host (HostByUserCPID) instead of making a second.
func (t *Tx) CreateHost(h *Host, now float64) error {
	var key any
	if h.UserID != 0 && h.HostCPID != "" {
		key = h.HostCPID
	}
	r, err := t.exec(`INSERT INTO host (create_time, userid, authenticator, rpc_seqno, rpc_time, platform_name, p_ncpus, p_fpops,
		m_nbytes, coprocs, on_frac, connected_frac, active_frac, host_cpid, cpid_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		now, h.UserID, h.Authenticator, h.RPCSeqno, h.RPCTime, h.PlatformName, h.PNCPUs, h.PFpops, h.MNBytes, h.Coprocs,
		h.OnFrac, h.ConnectedFrac, h.ActiveFrac, h.HostCPID, key)
	if key != nil && isUniqueViolation(err) {
		return fmt.Errorf("host of user %d with cpid %q: %w", h.UserID, h.HostCPID, errHostRace)
	}
	if err != nil {
		return err
	}
	h.ID, err = r.LastInsertId()
	return err
}

// errHostRace is a user's host made by another transaction between this one's look
// for it and its insert; InTx runs the transaction again, which finds it.
var errHostRace = errors.New("store: the host was made at the same time by another request")

// UpdateHostRPC saves what a scheduler request tells about the host. A host whose
// cpid changes gives up its cpid_key (set before host_cpid: MySQL assigns left to
// right), so the key never names a cpid the host no longer has.
func (t *Tx) UpdateHostRPC(h *Host) error {
	_, err := t.exec(`UPDATE host SET cpid_key=CASE WHEN host_cpid=? THEN cpid_key ELSE NULL END, rpc_seqno=?, rpc_time=?,
		platform_name=?, p_ncpus=?, p_fpops=?, m_nbytes=?, coprocs=?, on_frac=?, connected_frac=?, active_frac=?, host_cpid=? WHERE id=?`,
		h.HostCPID, h.RPCSeqno, h.RPCTime, h.PlatformName, h.PNCPUs, h.PFpops, h.MNBytes, h.Coprocs, h.OnFrac, h.ConnectedFrac, h.ActiveFrac,
		h.HostCPID, h.ID)
	return err
}

// AppVersions returns every app version not deprecated, of apps not deprecated.
func (t *Tx) AppVersions() ([]AppVersion, error) {
	rows, err := t.query(`SELECT v.id, v.appid, a.name, v.version_num, v.platform, v.plan_class, v.avg_ncpus, v.coproc_type, v.coproc_count, v.flops,
		a.locality_scheduling, a.daily_quota, a.daily_quota_gpu, a.max_in_progress, a.max_in_progress_gpu
		FROM app_version v JOIN app a ON a.id=v.appid WHERE v.deprecated=0 AND a.deprecated=0 ORDER BY v.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AppVersion
	for rows.Next() {
		var v AppVersion
		var loc int
		var cpu, gpu quota.Limits
		if err := rows.Scan(&v.ID, &v.AppID, &v.AppName, &v.VersionNum, &v.Platform, &v.PlanClass, &v.AvgNCPUs, &v.CoprocType, &v.CoprocCount, &v.Flops, &loc,
			&cpu.PerDay, &gpu.PerDay, &cpu.InProgress, &gpu.InProgress); err != nil {
			return nil, err
		}
		v.Locality = loc != 0
		if v.Quota = cpu; v.CoprocType != "" {
			v.Quota = gpu
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

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
		rows, err := t.query(`SELECT r.id, r.name, r.workunitid, r.hostid, r.app_version_id, r.server_state, r.outcome, COALESCE(o.file_num, -1)
			FROM result r LEFT JOIN wu_output o ON o.workunitid=r.workunitid WHERE r.name IN (?`+strings.Repeat(",?", len(part)-1)+`)`, part...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var name string
			var r reportedRow
			var k int
			if err := rows.Scan(&r.id, &name, &r.wu, &r.hostID, &r.appVersionID, &r.serverState, &r.outcome, &k); err != nil {
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

// Candidate is an unsent result with its workunit's figures: a job the scheduler may
// send.
type Candidate struct {
	ResultID   int64
	ResultName string
	AppID      int64
	WUID       int64
	WUName     string
	FpopsEst   float64
	FpopsBound float64
	DelayBound float64
	// Dresult is seed 003's Dresult a retry gave the result (result.dresult), 0 for a
	// workunit's first results.
	Dresult float64
}

// Deadline is the report deadline of the result sent at now: now + the Dresult of a
// result a retry made (seed 003: "the deadline of these results is now + Dresult",
// counted from when the result goes out, as BOINC sets report_deadline at sending),
// else now + the workunit's delay bound.
func (c Candidate) Deadline(now float64) float64 {
	if c.Dresult > 0 {
		return now + c.Dresult
	}
	return now + c.DelayBound
}

// UnsentCandidates returns up to limit unsent results of the given apps with ids above
// afterID, oldest first, skipping workunits that already have a result on hostID (two
// replicas of one job on one host would defeat validation) other than client errors:
// a host whose task failed or was aborted may get the retry, as in BOINC by default,
// since that result can never count; else a project with one host would never rerun
// a job it failed. On MySQL the rows are locked and rows other transactions hold are
// skipped; the claim still re-checks.
//
// One query per app, each a range of the unsent-results index in id order that stops
// at limit: with several apps in one IN list the engine would sort every unsent result
// of them. On MySQL the index is forced: MariaDB otherwise walks the primary key from
// afterID (ORDER BY id with LIMIT), which reads every finished result first, as
// unsent ones are the newest (issue 28: 4 RPC/s at 100,000 workunits).
func (t *Tx) UnsentCandidates(appIDs []int64, hostID, afterID int64, limit int) ([]Candidate, error) {
	q := `SELECT r.id, r.name, r.appid, w.id, w.name, w.rsc_fpops_est, w.rsc_fpops_bound, w.delay_bound, r.dresult
		FROM result r` + t.s.dialect.unsentIndex + ` JOIN workunit w ON w.id=r.workunitid
		WHERE r.server_state=? AND r.appid=? AND r.id>?
		AND NOT EXISTS (SELECT 1 FROM result r2 WHERE r2.workunitid=r.workunitid AND r2.hostid=?
			AND NOT (r2.server_state=? AND r2.outcome=?))
		ORDER BY r.id LIMIT ?` + t.s.dialect.skipLocked
	var out []Candidate
	for _, app := range appIDs {
		rows, err := t.query(q, ServerStateUnsent, app, afterID, hostID, ServerStateOver, OutcomeClientError, limit)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c Candidate
			if err := rows.Scan(&c.ResultID, &c.ResultName, &c.AppID, &c.WUID, &c.WUName, &c.FpopsEst, &c.FpopsBound, &c.DelayBound, &c.Dresult); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	if len(appIDs) > 1 {
		slices.SortFunc(out, func(a, b Candidate) int { return cmp.Compare(a.ResultID, b.ResultID) })
		out = out[:min(len(out), limit)]
	}
	return out, nil
}

// HeldResult is a result in progress on a host, with what resending it needs: for a
// locality job (CursorID ≠ 0) its batch and run of batch files too.
type HeldResult struct {
	LocalityCandidate
	AppVersionID   int64
	ReportDeadline float64
	CursorID       int64
}

// ResultsInProgress returns the results in progress on hostID, by id: the scheduler
// resends those a client no longer holds.
func (t *Tx) ResultsInProgress(hostID int64) ([]HeldResult, error) {
	rows, err := t.query(`SELECT r.id, r.name, r.appid, w.id, w.name, w.rsc_fpops_est, w.rsc_fpops_bound, w.delay_bound,
		r.app_version_id, r.report_deadline, r.cursor_id, w.batch_id, w.first_file_num, w.last_file_num
		FROM result r JOIN workunit w ON w.id=r.workunitid WHERE r.hostid=? AND r.server_state=? ORDER BY r.id`, hostID, ServerStateInProgress)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []HeldResult
	for rows.Next() {
		var h HeldResult
		c := &h.Candidate
		if err := rows.Scan(&c.ResultID, &c.ResultName, &c.AppID, &c.WUID, &c.WUName, &c.FpopsEst, &c.FpopsBound, &c.DelayBound,
			&h.AppVersionID, &h.ReportDeadline, &h.CursorID, &h.BatchID, &h.FirstFileNum, &h.LastFileNum); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// ListedResult is what the scheduler knows of a result a client says it holds.
type ListedResult struct {
	HostID      int64
	ServerState int
	Outcome     int
	// Done: the result's workunit has its canonical result or was given up.
	Done bool
}

// ListedResults returns what is known of the named results (absent: no such result).
func (t *Tx) ListedResults(names []string) (map[string]ListedResult, error) {
	out := make(map[string]ListedResult, len(names))
	for lo := 0; lo < len(names); lo += 500 {
		part := names[lo:min(len(names), lo+500)]
		args := make([]any, len(part))
		for i, n := range part {
			args[i] = n
		}
		rows, err := t.query(`SELECT r.name, r.hostid, r.server_state, r.outcome, w.canonical_resultid<>0 OR w.error_mask<>0
			FROM result r JOIN workunit w ON w.id=r.workunitid WHERE r.name IN (?`+strings.Repeat(",?", len(part)-1)+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var name string
			var l ListedResult
			if err := rows.Scan(&name, &l.HostID, &l.ServerState, &l.Outcome, &l.Done); err != nil {
				rows.Close()
				return nil, err
			}
			out[name] = l
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ClaimResult hands an unsent result to hostID. It returns false when another
// transaction (in this process or another) claimed it first; then nothing changed.
func (t *Tx) ClaimResult(resultID, hostID, appVersionID int64, now, deadline float64) (bool, error) {
	res, err := t.exec(`UPDATE result SET server_state=?, hostid=?, app_version_id=?, sent_time=?, report_deadline=?
		WHERE id=? AND server_state=?`, ServerStateInProgress, hostID, appVersionID, now, deadline, resultID, ServerStateUnsent)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if n > 1 {
		return false, fmt.Errorf("claim of result %d changed %d rows", resultID, n)
	}
	return n == 1, nil
}

// errClaimRace is a result a transaction read as its candidate and found claimed by
// another when it claimed it (ClaimResults); InTx runs the transaction again.
var errClaimRace = errors.New("store: a result read as a candidate was claimed by another transaction")

// ClaimResults hands unsent results to hostID, all of them or none, in one UPDATE
// (one per request's page of jobs instead of one per job). It is for results this
// transaction read as candidates (UnsentCursorCandidates): on MySQL the candidate
// query locked them, and on SQLite the transaction holds the write lock from its
// BEGIN, so no other transaction can claim them meanwhile. Should one be claimed all
// the same, the transaction fails with an error InTx retries, so nothing is sent
// twice. (The unary plus keeps SQLite's planner off the server_state index, which
// would scan every unsent result; both engines then read the rows by id.)
func (t *Tx) ClaimResults(resultIDs []int64, hostID, appVersionID int64, now, deadline float64) error {
	for lo := 0; lo < len(resultIDs); lo += 500 {
		part := resultIDs[lo:min(len(resultIDs), lo+500)]
		args := []any{ServerStateInProgress, hostID, appVersionID, now, deadline, ServerStateUnsent}
		for _, id := range part {
			args = append(args, id)
		}
		res, err := t.exec(`UPDATE result SET server_state=?, hostid=?, app_version_id=?, sent_time=?, report_deadline=?
		WHERE +server_state=? AND id IN (?`+strings.Repeat(",?", len(part)-1)+`)`, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n != int64(len(part)) {
			return fmt.Errorf("%w: %d of %d results claimed", errClaimRace, n, len(part))
		}
	}
	return nil
}

// ResultRow is a result as tests and reports read it.
type ResultRow struct {
	ID             int64
	Name           string
	WUID           int64
	ServerState    int
	Outcome        int
	HostID         int64
	SentTime       float64
	ReceivedTime   float64
	ReportDeadline float64
	CPUTime        float64
	AppVersionID   int64
}

// Results returns every result, by id (for tests and small projects' reports).
func (s *Store) Results(ctx context.Context) ([]ResultRow, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT id, name, workunitid, server_state, outcome, hostid, sent_time, received_time,
		report_deadline, cpu_time, app_version_id FROM result ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ResultRow
	for rows.Next() {
		var r ResultRow
		if err := rows.Scan(&r.ID, &r.Name, &r.WUID, &r.ServerState, &r.Outcome, &r.HostID, &r.SentTime, &r.ReceivedTime,
			&r.ReportDeadline, &r.CPUTime, &r.AppVersionID); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
