package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bkit/bkit/lib/quota"
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

// HostsMadeSince counts the hosts of user userID made after since, up to most (it
// stops counting there).
func (t *Tx) HostsMadeSince(userID int64, since float64, most int) (int, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM (SELECT 1 FROM host WHERE userid=? AND create_time>? LIMIT ?) made`, userID, since, most).Scan(&n)
	return n, err
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
