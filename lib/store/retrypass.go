package store

import (
	"strings"

	"github.com/bkit/bkit/lib/retry"
)

// The statements of bretry's pass (seed 003: the lost-result sweep, the validator and
// the retry rules). bretry decides with lib/retry's pure functions and orders the
// steps of each batch; the SQL of every step is here, so that one package owns the
// schema and every statement's plan can be checked in one place.

// RetryWorkunit is a workunit as a batch of bretry reads it, with its results in id
// order.
type RetryWorkunit struct {
	ID        int64
	Name      string
	CheckTime float64
	MinQuorum int
	Limits    retry.Limits
	// InBatch: the workunit is a locality job (a cursor's), whose new results need
	// ResultsJoinJobs.
	InBatch bool
	Results []retry.Result
}

// insertRows bounds the rows of one INSERT (6 placeholders each; SQLite allows 32,766).
const insertRows = 1000

// retryDue is the condition of a workunit the retry rules look at now (one argument:
// now). A workunit some other job already marked in error (error_mask) is not the
// retry job's any more.
const retryDue = `need_validate=0 AND retry_check_time>0 AND retry_check_time<? AND canonical_resultid=0 AND error_mask=0`

// LostCandidates claims up to limit of the app's results that are sent, past their
// deadline at now and not reported (MySQL: locked, skipping those another
// transaction holds).
func (t *Tx) LostCandidates(appID int64, now float64, limit int) ([]int64, error) {
	return t.ids(`SELECT id FROM result WHERE appid=? AND server_state=? AND report_deadline<? LIMIT ?`+t.s.dialect.skipLocked,
		appID, ServerStateInProgress, now, limit)
}

// MarkLost marks the results ids lost (over, outcome "no reply", BOINC's) where they
// are still in progress, and, when deadlineBefore is true, past their deadline at now.
// It returns the results it marked, with their hosts and app versions (each one's
// daily quota loses one, AdjustQuotas): another process's sweep may have marked some
// since they were read, and a result is marked, counted and held against its host
// once. The results are read locked first (MySQL: FOR UPDATE; SQLite: the write
// lock), so the update marks exactly the ones returned.
func (t *Tx) MarkLost(ids []int64, deadlineBefore bool, now float64) ([]ResultHost, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list, idArgs := inList(ids)
	cond := `server_state=? AND id IN ` + list
	args := append([]any{ServerStateInProgress}, idArgs...)
	if deadlineBefore {
		cond = `server_state=? AND report_deadline<? AND id IN ` + list
		args = append([]any{ServerStateInProgress, now}, idArgs...)
	}
	marked, err := t.resultHosts(`SELECT id, hostid, app_version_id FROM result WHERE `+cond+t.s.dialect.forUpdate, args...)
	if err != nil || len(marked) == 0 {
		return nil, err
	}
	ids = make([]int64, len(marked))
	for i, r := range marked {
		ids[i] = r.ResultID
	}
	list, idArgs = inList(ids)
	_, err = t.exec(`UPDATE result SET server_state=?, outcome=? WHERE server_state=? AND id IN `+list,
		append([]any{ServerStateOver, OutcomeNoReply, ServerStateInProgress}, idArgs...)...)
	return marked, err
}

// retryWorkunitColumns are the workunit columns readRetryWorkunits scans, in its order.
const retryWorkunitColumns = `id, name, retry_check_time, min_quorum, max_error_results, max_success_results, max_total_results, cursor_id<>0`

// ValidationCandidates claims up to limit of the app's workunits that wait for the
// validator, with their results.
func (t *Tx) ValidationCandidates(appID int64, limit int) ([]*RetryWorkunit, error) {
	return t.readRetryWorkunits(`SELECT `+retryWorkunitColumns+` FROM workunit
		WHERE appid=? AND need_validate=1 LIMIT ?`+t.s.dialect.skipLocked, appID, limit)
}

// RetryCandidates claims up to limit of the app's workunits whose retry check time
// has come at now, with their results.
func (t *Tx) RetryCandidates(appID int64, now float64, limit int) ([]*RetryWorkunit, error) {
	return t.readRetryWorkunits(`SELECT `+retryWorkunitColumns+` FROM workunit`+t.s.dialect.retryIndex+`
		WHERE appid=? AND `+retryDue+`
		LIMIT ?`+t.s.dialect.skipLocked, appID, now, limit)
}

// readRetryWorkunits reads the workunits query selects (retryWorkunitColumns) and
// their results.
func (t *Tx) readRetryWorkunits(query string, args ...any) ([]*RetryWorkunit, error) {
	rows, err := t.query(query, args...)
	if err != nil {
		return nil, err
	}
	var wus []*RetryWorkunit
	byID := map[int64]*RetryWorkunit{}
	for rows.Next() {
		w := &RetryWorkunit{}
		if err := rows.Scan(&w.ID, &w.Name, &w.CheckTime, &w.MinQuorum,
			&w.Limits.MaxErrorResults, &w.Limits.MaxSuccessResults, &w.Limits.MaxTotalResults, &w.InBatch); err != nil {
			rows.Close()
			return nil, err
		}
		wus = append(wus, w)
		byID[w.ID] = w
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(wus) == 0 {
		return nil, err
	}
	ids := make([]int64, len(wus))
	for i, w := range wus {
		ids[i] = w.ID
	}
	list, idArgs := inList(ids)
	rows, err = t.query(`SELECT id, workunitid, server_state, outcome, validate_state, report_deadline, output_digest
		FROM result WHERE workunitid IN `+list+` ORDER BY id`, idArgs...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r retry.Result
		var wuid int64
		if err := rows.Scan(&r.ID, &wuid, &r.ServerState, &r.Outcome, &r.ValidateState, &r.ReportDeadline, &r.OutputDigest); err != nil {
			return nil, err
		}
		byID[wuid].Results = append(byID[wuid].Results, r)
	}
	return wus, rows.Err()
}

// SetCanonical records the validator's canonical result of a workunit that waited
// for it: it is done with validation and with retry checks.
func (t *Tx) SetCanonical(wuID, resultID int64) error {
	_, err := t.exec(`UPDATE workunit SET canonical_resultid=?, retry_check_time=0, need_validate=0 WHERE id=? AND need_validate=1`,
		resultID, wuID)
	return err
}

// ValidationWaits takes the workunits ids, which the validator found no canonical
// result for yet, off its queue until a report puts them back.
func (t *Tx) ValidationWaits(ids []int64) error {
	return t.claimAll(`need_validate=0`, nil, `need_validate=1`, nil, ids)
}

// SetValidateState sets validate_state of the results ids, judged at now
// (validate_time: the status page counts the results validated in the last hour).
func (t *Tx) SetValidateState(state int, ids []int64, now float64) error {
	if len(ids) == 0 {
		return nil
	}
	list, args := inList(ids)
	_, err := t.exec(`UPDATE result SET validate_state=?, validate_time=? WHERE id IN `+list, append([]any{state, now}, args...)...)
	return err
}

// WithdrawUnsent withdraws the unsent results of the workunits ids (outcome "didn't
// need"): they have a canonical result or were given up, so sending them would
// waste a host's time.
func (t *Tx) WithdrawUnsent(ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	list, args := inList(ids)
	_, err := t.exec(`UPDATE result SET server_state=?, outcome=? WHERE server_state=? AND workunitid IN `+list,
		append([]any{ServerStateOver, OutcomeDidntNeed, ServerStateUnsent}, args...)...)
	return err
}

// RetryLater gives the workunits ids, still due at now, their next retry check time,
// and marks them changed for the transitioner (WorkunitsChanged: their results may
// have been lost or added to), in the same statement: one write of each row, not
// two (issue 33: a MariaDB pass spent a fifth of its time on the second).
func (t *Tx) RetryLater(ids []int64, now, next float64) error {
	return t.claimAll(`retry_check_time=?, transition_time=?`, []any{next, ChangedAt(now)}, retryDue, []any{now}, ids)
}

// GiveUpWorkunits gives up the workunits ids, still due at now: no more retry checks,
// and the error_mask bit mask (BOINC's) of the reason; marked changed for the
// transitioner as RetryLater's.
func (t *Tx) GiveUpWorkunits(ids []int64, mask int, now float64) error {
	return t.claimAll(`retry_check_time=0, error_mask=error_mask+?, transition_time=?`, []any{mask, ChangedAt(now)}, retryDue, []any{now}, ids)
}

// claimAll is claimIDs for a batch that may be empty.
func (t *Tx) claimAll(set string, setArgs []any, where string, whereArgs []any, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	return t.claimIDs(set, setArgs, where, whereArgs, ids)
}

// GiveUpRow is a give-up to record (wu_giveup).
type GiveUpRow struct {
	WorkunitID int64
	Reason     string
	Message    string
}

// RecordGiveUps records the give-ups of the app's workunits at now.
func (t *Tx) RecordGiveUps(appID int64, rows []GiveUpRow, now float64) error {
	if len(rows) == 0 {
		return nil
	}
	var args []any
	for _, g := range rows {
		args = append(args, now, g.WorkunitID, appID, g.Reason, g.Message)
	}
	_, err := t.exec(`INSERT INTO wu_giveup (create_time, workunitid, appid, reason, message) VALUES `+
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?),", len(rows)), ","), args...)
	return err
}

// NewResult is an unsent result the retry rules create.
type NewResult struct {
	WorkunitID int64
	Name       string
	Deadline   float64
}

// CreateResults inserts unsent results of the app at now (a retry's: each keeps its
// Dresult, Deadline − now, for the scheduler's deadline when it sends it), by multi-row inserts of at
// most insertRows rows: far fewer statements, and within both engines' limits on
// placeholders.
func (t *Tx) CreateResults(appID int64, results []NewResult, now float64) error {
	for i := 0; i < len(results); i += insertRows {
		part := results[i:min(len(results), i+insertRows)]
		args := make([]any, 0, 7*len(part))
		for _, r := range part {
			// dresult: the deadline's distance from now (seed 003's Dresult), which
			// the scheduler gives the result again from the time it sends it.
			args = append(args, now, r.WorkunitID, appID, r.Name, ServerStateUnsent, r.Deadline, r.Deadline-now)
		}
		if _, err := t.exec(`INSERT INTO result (create_time, workunitid, appid, name, server_state, report_deadline, dresult) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?),", len(part)), ","), args...); err != nil {
			return err
		}
	}
	return nil
}
