package bretry

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/bkit/bkit/lib/retry"
	"github.com/bkit/bkit/lib/store"
)

// DefaultBatch is how many workunits (or results) one transaction handles: small
// enough that the write lock is held for milliseconds, so the scheduler endpoint
// keeps answering during a pass over a million rows.
const DefaultBatch = 1000

// insertRows bounds the rows of one INSERT (6 placeholders each; SQLite allows 32,766).
const insertRows = 1000

// Pass is one pass of the retry job over one app: lost results first, then (unless
// NoValidate) the validator, then seed 003's rules over the due workunits. Every
// batch is one transaction that re-reads what it changes, so two passes at once
// (two processes, two machines on MySQL) never handle a workunit twice, and a pass
// killed at any moment leaves whole batches done and the rest for the next pass.
type Pass struct {
	Store      *store.Store
	AppID      int64
	App        string
	Params     retry.Params
	Now        float64
	Batch      int
	NoValidate bool
	Log        *slog.Logger
	// Stop is asked between batches; true ends the pass early (SIGTERM).
	Stop func() bool
}

// Summary counts what a pass did.
type Summary struct {
	Examined   int  `json:"examined"`    // due workunits the rules looked at
	Retried    int  `json:"retried"`     // of them, given another check time
	NewResults int  `json:"new_results"` // results created for them
	GivenUp    int  `json:"given_up"`
	Lost       int  `json:"lost"`      // results marked lost (no reply by the deadline)
	Validated  int  `json:"validated"` // workunits that got a canonical result
	Invalid    int  `json:"invalid"`   // results the validator found to disagree
	Stopped    bool `json:"stopped,omitempty"`
}

func (s Summary) String() string {
	st := ""
	if s.Stopped {
		st = " (stopped early)"
	}
	return fmt.Sprintf("examined %d, retried %d (%d new results), given up %d, lost %d, validated %d%s",
		s.Examined, s.Retried, s.NewResults, s.GivenUp, s.Lost, s.Validated, st)
}

func (p *Pass) batch() int {
	if p.Batch <= 0 {
		return DefaultBatch
	}
	return p.Batch
}

func (p *Pass) stop() bool { return p.Stop != nil && p.Stop() }

// Run runs the whole pass. The context only stops it between batches: a batch that
// has begun is committed (or rolled back by the engine), never cut off half-way.
func (p *Pass) Run(ctx context.Context) (Summary, error) {
	var sum Summary
	steps := []func(context.Context, *Summary) (int, error){p.lostBatch}
	if !p.NoValidate {
		steps = append(steps, p.validateBatch)
	}
	steps = append(steps, p.retryBatch)
	for _, step := range steps {
		if err := p.loop(ctx, &sum, step); err != nil || sum.Stopped {
			return sum, err
		}
	}
	return sum, nil
}

// Validate runs only the lost-result sweep and the validator (bretry validate).
func (p *Pass) Validate(ctx context.Context) (Summary, error) {
	var sum Summary
	for _, step := range []func(context.Context, *Summary) (int, error){p.lostBatch, p.validateBatch} {
		if err := p.loop(ctx, &sum, step); err != nil || sum.Stopped {
			return sum, err
		}
	}
	return sum, nil
}

// loop runs step until a batch comes back short: then nothing is left that another
// process does not hold.
func (p *Pass) loop(ctx context.Context, sum *Summary, step func(context.Context, *Summary) (int, error)) error {
	for {
		if p.stop() {
			sum.Stopped = true
			return nil
		}
		n, err := step(context.WithoutCancel(ctx), sum)
		if err != nil {
			return err
		}
		if n < p.batch() {
			return nil
		}
	}
}

func placeholders(n int) string {
	return "?" + strings.Repeat(",?", n-1)
}

func idArgs(ids []int64) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// lostBatch marks up to a batch of the app's results lost: sent, past their
// deadline, no reply (outcome "no reply", BOINC's).
func (p *Pass) lostBatch(ctx context.Context, sum *Summary) (int, error) {
	var n, lost int
	err := p.Store.InTx(ctx, func(tx *store.Tx) error {
		n, lost = 0, 0
		rows, err := tx.Query(`SELECT id FROM result WHERE appid=? AND server_state=? AND report_deadline<? LIMIT ?`+tx.ForUpdateSkipLocked(),
			p.AppID, store.ServerStateInProgress, p.Now, p.batch())
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		n = len(ids)
		if n == 0 {
			return nil
		}
		res, err := tx.Exec(`UPDATE result SET server_state=?, outcome=? WHERE server_state=? AND report_deadline<? AND id IN (`+placeholders(n)+`)`,
			append([]any{store.ServerStateOver, store.OutcomeNoReply, store.ServerStateInProgress, p.Now}, idArgs(ids)...)...)
		if err != nil {
			return err
		}
		k, err := res.RowsAffected()
		lost = int(k)
		if err != nil {
			return err
		}
		// A lost result may finish its job (seed 004's transitioner counts it).
		return tx.ResultsChanged(ids, p.Now)
	})
	sum.Lost += lost
	return n, err
}

// wuRow is a workunit a batch handles, with its results.
type wuRow struct {
	id        int64
	name      string
	checkTime float64
	minQuorum int
	limits    retry.Limits
	results   []retry.Result
}

// wuColumns are the workunit columns readWorkunits scans, in its order.
const wuColumns = `id, name, retry_check_time, min_quorum, max_error_results, max_success_results, max_total_results`

// readWorkunits reads the workunits a batch query selects (wuColumns) and their
// results.
func readWorkunits(tx *store.Tx, query string, args ...any) ([]*wuRow, error) {
	rows, err := tx.Query(query, args...)
	if err != nil {
		return nil, err
	}
	var wus []*wuRow
	byID := map[int64]*wuRow{}
	for rows.Next() {
		w := &wuRow{}
		if err := rows.Scan(&w.id, &w.name, &w.checkTime, &w.minQuorum,
			&w.limits.MaxErrorResults, &w.limits.MaxSuccessResults, &w.limits.MaxTotalResults); err != nil {
			rows.Close()
			return nil, err
		}
		wus = append(wus, w)
		byID[w.id] = w
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(wus) == 0 {
		return nil, err
	}
	ids := make([]int64, len(wus))
	for i, w := range wus {
		ids[i] = w.id
	}
	rows, err = tx.Query(`SELECT id, workunitid, server_state, outcome, validate_state, report_deadline, output_digest
		FROM result WHERE workunitid IN (`+placeholders(len(ids))+`) ORDER BY id`, idArgs(ids)...)
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
		byID[wuid].results = append(byID[wuid].results, r)
	}
	return wus, rows.Err()
}

// setValidateState sets validate_state of the results ids.
func setValidateState(tx *store.Tx, state int, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(`UPDATE result SET validate_state=? WHERE id IN (`+placeholders(len(ids))+`)`, append([]any{state}, idArgs(ids)...)...)
	return err
}

// claimAll moves the workunits ids from where the batch found them, failing the
// transaction (which is then rolled back and retried) if any changed meanwhile: the
// batch query locked them (MySQL) or holds the database (SQLite), so that means a bug.
func claimAll(tx *store.Tx, set string, setArgs []any, where string, whereArgs []any, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	args := append(append(append([]any{}, setArgs...), whereArgs...), idArgs(ids)...)
	res, err := tx.Exec(`UPDATE workunit SET `+set+` WHERE `+where+` AND id IN (`+placeholders(len(ids))+`)`, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || int(n) != len(ids) {
		return fmt.Errorf("claimed %d of %d workunits (%v): another process changed them", n, len(ids), err)
	}
	return nil
}

// didntNeed withdraws the unsent results of the workunits ids: they have a canonical
// result or were given up, so sending them would waste a host's time.
func didntNeed(tx *store.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(`UPDATE result SET server_state=?, outcome=? WHERE server_state=? AND workunitid IN (`+placeholders(len(ids))+`)`,
		append([]any{store.ServerStateOver, store.OutcomeDidntNeed, store.ServerStateUnsent}, idArgs(ids)...)...)
	return err
}

// validateBatch runs the validator over up to a batch of the app's workunits that
// wait for it.
func (p *Pass) validateBatch(ctx context.Context, sum *Summary) (int, error) {
	var n, validated, invalid int
	err := p.Store.InTx(ctx, func(tx *store.Tx) error {
		n, validated, invalid = 0, 0, 0
		wus, err := readWorkunits(tx, `SELECT `+wuColumns+` FROM workunit
			WHERE appid=? AND need_validate=1 LIMIT ?`+tx.ForUpdateSkipLocked(), p.AppID, p.batch())
		if err != nil {
			return err
		}
		n = len(wus)
		var found, waiting, valid, bad []int64
		for _, w := range wus {
			v := retry.Validate(w.results, w.minQuorum)
			if v.Canonical != 0 {
				found = append(found, w.id)
				if _, err := tx.Exec(`UPDATE workunit SET canonical_resultid=?, retry_check_time=0, need_validate=0 WHERE id=? AND need_validate=1`,
					v.Canonical, w.id); err != nil {
					return err
				}
			} else {
				waiting = append(waiting, w.id)
			}
			valid = append(valid, v.Valid...)
			bad = append(bad, v.Invalid...)
		}
		if err := claimAll(tx, `need_validate=0`, nil, `need_validate=1`, nil, waiting); err != nil {
			return err
		}
		if err := setValidateState(tx, store.ValidateValid, valid); err != nil {
			return err
		}
		if err := tx.GrantCredit(valid, p.Now); err != nil {
			return err
		}
		if err := setValidateState(tx, store.ValidateInvalid, bad); err != nil {
			return err
		}
		validated, invalid = len(found), len(bad)
		if err := tx.WorkunitsChanged(found, p.Now); err != nil { // finished, for the transitioner
			return err
		}
		return didntNeed(tx, found)
	})
	sum.Validated += validated
	sum.Invalid += invalid
	return n, err
}

// giveUpLog is a give-up to log once its transaction has committed.
type giveUpLog struct {
	wuID   int64
	name   string
	reason retry.Reason
	msg    string
}

// errorMask is the workunit error_mask bit of each reason to give up (BOINC's).
var errorMask = map[retry.Reason]int{
	retry.NotSentYet:            store.WUErrorCouldntSendResult,
	retry.TooManyErr:            store.WUErrorTooManyErrorResults,
	retry.TooManyErrorResults:   store.WUErrorTooManyErrorResults,
	retry.TooManyDet:            store.WUErrorTooManySuccessResults,
	retry.TooManySuccessResults: store.WUErrorTooManySuccessResults,
	retry.TooManyTotalResults:   store.WUErrorTooManyTotalResults,
}

// retryBatch applies seed 003's rules to up to a batch of the app's due workunits.
func (p *Pass) retryBatch(ctx context.Context, sum *Summary) (int, error) {
	var n, retried, created, lostHere int
	var gaveUp []giveUpLog
	err := p.Store.InTx(ctx, func(tx *store.Tx) error {
		n, retried, created, gaveUp = 0, 0, 0, nil
		wus, err := readWorkunits(tx, `SELECT `+wuColumns+` FROM workunit
			WHERE appid=? AND need_validate=0 AND retry_check_time>0 AND retry_check_time<? AND canonical_resultid=0 AND error_mask=0
			LIMIT ?`+tx.ForUpdateSkipLocked(),
			p.AppID, p.Now, p.batch())
		if err != nil {
			return err
		}
		n = len(wus)
		var lost, retryIDs []int64
		byReason := map[retry.Reason][]int64{}
		var newRows []any
		nNew := 0
		for _, w := range wus {
			for _, r := range w.results {
				if retry.Lost(r, p.Now) {
					lost = append(lost, r.ID)
				}
			}
			d := retry.Decide(w.results, p.Params, w.limits, p.Now)
			if d.GiveUp != retry.None {
				byReason[d.GiveUp] = append(byReason[d.GiveUp], w.id)
				gaveUp = append(gaveUp, giveUpLog{w.id, w.name, d.GiveUp, d.Message})
				continue
			}
			retryIDs = append(retryIDs, w.id)
			for k := 0; k < d.NewResults; k++ {
				newRows = append(newRows, p.Now, w.id, p.AppID, fmt.Sprintf("%s_%d", w.name, len(w.results)+k),
					store.ServerStateUnsent, d.NewDeadline)
				nNew++
			}
		}
		// Count the rows this statement changed, not the results read as lost: another
		// process's sweep may have marked some of them since they were read (on MySQL
		// the read is a snapshot), and a result is counted lost once.
		marked := 0
		if len(lost) > 0 {
			res, err := tx.Exec(`UPDATE result SET server_state=?, outcome=? WHERE server_state=? AND id IN (`+placeholders(len(lost))+`)`,
				append([]any{store.ServerStateOver, store.OutcomeNoReply, store.ServerStateInProgress}, idArgs(lost)...)...)
			if err != nil {
				return err
			}
			k, err := res.RowsAffected()
			if err != nil {
				return err
			}
			marked = int(k)
		}
		// A workunit some other job already marked in error (error_mask) is not the
		// retry job's any more.
		due := `need_validate=0 AND retry_check_time>0 AND retry_check_time<? AND canonical_resultid=0 AND error_mask=0`
		if err := claimAll(tx, `retry_check_time=?`, []any{p.Now + p.Params.DWU}, due, []any{p.Now}, retryIDs); err != nil {
			return err
		}
		for _, reason := range retry.Reasons {
			ids := byReason[reason]
			if err := claimAll(tx, `retry_check_time=0, error_mask=error_mask+?`, []any{errorMask[reason]}, due, []any{p.Now}, ids); err != nil {
				return err
			}
			if err := didntNeed(tx, ids); err != nil {
				return err
			}
		}
		if len(gaveUp) > 0 {
			var rows []any
			for _, g := range gaveUp {
				rows = append(rows, p.Now, g.wuID, p.AppID, string(g.reason), g.msg)
			}
			if _, err := tx.Exec(`INSERT INTO wu_giveup (create_time, workunitid, appid, reason, message) VALUES `+
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?),", len(gaveUp)), ","), rows...); err != nil {
				return err
			}
		}
		// Multi-row inserts of at most insertRows rows: far fewer statements, and
		// within both engines' limits on placeholders.
		for i := 0; i < nNew; i += insertRows {
			k := min(insertRows, nNew-i)
			if _, err := tx.Exec(`INSERT INTO result (create_time, workunitid, appid, name, server_state, report_deadline) VALUES `+
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?),", k), ","), newRows[6*i:6*(i+k)]...); err != nil {
				return err
			}
		}
		// Lost results, new ones and errors may finish a job or make it unfinished
		// again: the transitioner looks at these workunits again.
		changed := make([]int64, len(wus))
		for i, w := range wus {
			changed[i] = w.id
		}
		if err := tx.WorkunitsChanged(changed, p.Now); err != nil {
			return err
		}
		if nNew > 0 {
			if err := tx.ResultsJoinJobs(retryIDs); err != nil { // a locality job's new results
				return err
			}
		}
		retried, created, lostHere = len(retryIDs), nNew, marked
		return nil
	})
	if err != nil {
		return n, err
	}
	sum.Examined += n
	sum.Lost += lostHere
	sum.Retried += retried
	sum.NewResults += created
	sum.GivenUp += len(gaveUp)
	for _, g := range gaveUp {
		p.Log.Warn("workunit given up", "app", p.App, "workunit", g.name, "workunit_id", g.wuID, "reason", string(g.reason), "message", g.msg)
	}
	return n, nil
}
