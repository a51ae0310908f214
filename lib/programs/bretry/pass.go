package bretry

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/bkit/bkit/lib/quota"
	"github.com/bkit/bkit/lib/retry"
	"github.com/bkit/bkit/lib/store"
)

// DefaultBatch is the most workunits (or results) one transaction handles. On SQLite
// a batch is smaller when that many would hold the write lock for more than a few
// milliseconds (store.Batcher), so the scheduler endpoint keeps answering during a
// pass over a million rows.
const DefaultBatch = 1000

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

	began time.Time // when the running batch's transaction began (its last try's)
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
	steps := []func(context.Context, *Summary, int) (int, error){p.lostBatch}
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
	for _, step := range []func(context.Context, *Summary, int) (int, error){p.lostBatch, p.validateBatch} {
		if err := p.loop(ctx, &sum, step); err != nil || sum.Stopped {
			return sum, err
		}
	}
	return sum, nil
}

// loop runs step until a batch comes back short: then nothing is left that another
// process does not hold. Each batch takes as many rows as the Batcher says (on
// SQLite, what fits in a few milliseconds of the write lock, then a pause as long;
// at most p.Batch).
func (p *Pass) loop(ctx context.Context, sum *Summary, step func(context.Context, *Summary, int) (int, error)) error {
	b := p.Store.Batcher(p.batch())
	for {
		if p.stop() {
			sum.Stopped = true
			return nil
		}
		size := b.Size()
		n, err := step(context.WithoutCancel(ctx), sum, size)
		if err != nil {
			return err
		}
		b.Held(n, time.Since(p.began))
		if n < size {
			return nil
		}
		b.LetWritersIn(ctx) // the scheduler's RPCs between batches (SQLite)
	}
}

// lostBatch marks up to a batch of the app's results lost: sent, past their
// deadline, no reply (outcome "no reply", BOINC's).
func (p *Pass) lostBatch(ctx context.Context, sum *Summary, size int) (int, error) {
	var n, lost int
	err := p.Store.InTx(ctx, func(tx *store.Tx) error {
		p.began = time.Now()
		n, lost = 0, 0
		ids, err := tx.LostCandidates(p.AppID, p.Now, size)
		if err != nil {
			return err
		}
		n = len(ids)
		if n == 0 {
			return nil
		}
		marked, err := tx.MarkLost(ids, true, p.Now)
		if err != nil {
			return err
		}
		lost = len(marked)
		// A result that timed out costs its host one job a day of its app version
		// (BOINC's transitioner, result_timed_out).
		if err := tx.AdjustQuotas(p.AppID, marked, quota.AfterError); err != nil {
			return err
		}
		// A lost result may finish its job (seed 004's transitioner counts it).
		return tx.ResultsChanged(ids, p.Now)
	})
	sum.Lost += lost
	return n, err
}

// validateBatch runs the validator over up to a batch of the app's workunits that
// wait for it.
func (p *Pass) validateBatch(ctx context.Context, sum *Summary, size int) (int, error) {
	var n, validated, invalid int
	err := p.Store.InTx(ctx, func(tx *store.Tx) error {
		p.began = time.Now()
		n, validated, invalid = 0, 0, 0
		wus, err := tx.ValidationCandidates(p.AppID, size)
		if err != nil {
			return err
		}
		n = len(wus)
		var found, waiting, valid, bad []int64
		for _, w := range wus {
			v := retry.Validate(w.Results, w.MinQuorum)
			if v.Canonical != 0 {
				found = append(found, w.ID)
				if err := tx.SetCanonical(w.ID, v.Canonical); err != nil {
					return err
				}
			} else {
				waiting = append(waiting, w.ID)
			}
			valid = append(valid, v.Valid...)
			bad = append(bad, v.Invalid...)
		}
		if err := tx.ValidationWaits(waiting); err != nil {
			return err
		}
		// A result found valid raises its host's daily quota of its app version
		// (quota.AfterSuccess; BOINC's validator, is_valid), once: not again when its
		// workunit is validated once more, nor at report time (docs/decisions.md).
		newlyValid, err := tx.NewlyValid(valid)
		if err != nil {
			return err
		}
		if err := tx.AdjustQuotas(p.AppID, newlyValid, quota.AfterSuccess); err != nil {
			return err
		}
		if err := tx.SetValidateState(store.ValidateValid, valid, p.Now); err != nil {
			return err
		}
		if err := tx.GrantCredit(valid, p.Now); err != nil {
			return err
		}
		if err := tx.SetValidateState(store.ValidateInvalid, bad, p.Now); err != nil {
			return err
		}
		validated, invalid = len(found), len(bad)
		if err := tx.WorkunitsChanged(found, p.Now); err != nil { // finished, for the transitioner
			return err
		}
		return tx.WithdrawUnsent(found)
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
func (p *Pass) retryBatch(ctx context.Context, sum *Summary, size int) (int, error) {
	var n, retried, created, lostHere int
	var gaveUp []giveUpLog
	err := p.Store.InTx(ctx, func(tx *store.Tx) error {
		p.began = time.Now()
		n, retried, created, gaveUp = 0, 0, 0, nil
		wus, err := tx.RetryCandidates(p.AppID, p.Now, size)
		if err != nil {
			return err
		}
		n = len(wus)
		var lost, retryIDs, joining []int64
		byReason := map[retry.Reason][]int64{}
		var newResults []store.NewResult
		for _, w := range wus {
			for _, r := range w.Results {
				if retry.Lost(r, p.Now) {
					lost = append(lost, r.ID)
				}
			}
			d := retry.Decide(w.Results, p.Params, w.Limits, p.Now)
			if d.GiveUp != retry.None {
				byReason[d.GiveUp] = append(byReason[d.GiveUp], w.ID)
				gaveUp = append(gaveUp, giveUpLog{w.ID, w.Name, d.GiveUp, d.Message})
				continue
			}
			retryIDs = append(retryIDs, w.ID)
			if w.InBatch && d.NewResults > 0 {
				joining = append(joining, w.ID)
			}
			for k := 0; k < d.NewResults; k++ {
				newResults = append(newResults, store.NewResult{WorkunitID: w.ID,
					Name: fmt.Sprintf("%s_%d", w.Name, len(w.Results)+k), Deadline: d.NewDeadline})
			}
		}
		// Count the rows this statement changed, not the results read as lost: another
		// process's sweep may have marked some of them since they were read (on MySQL
		// the read is a snapshot), and a result is counted lost once.
		marked, err := tx.MarkLost(lost, false, p.Now)
		if err != nil {
			return err
		}
		if err := tx.AdjustQuotas(p.AppID, marked, quota.AfterError); err != nil { // as lostBatch's
			return err
		}
		if err := tx.RetryLater(retryIDs, p.Now, p.Now+p.Params.DWU); err != nil {
			return err
		}
		for _, reason := range retry.Reasons {
			ids := byReason[reason]
			if err := tx.GiveUpWorkunits(ids, errorMask[reason], p.Now); err != nil {
				return err
			}
			if err := tx.WithdrawUnsent(ids); err != nil {
				return err
			}
		}
		rows := make([]store.GiveUpRow, len(gaveUp))
		for i, g := range gaveUp {
			rows[i] = store.GiveUpRow{WorkunitID: g.wuID, Reason: string(g.reason), Message: g.msg}
		}
		if err := tx.RecordGiveUps(p.AppID, rows, p.Now); err != nil {
			return err
		}
		if err := tx.CreateResults(p.AppID, newResults, p.Now); err != nil {
			return err
		}
		// Lost results, new ones and errors may finish a job or make it unfinished
		// again: RetryLater and GiveUpWorkunits, which every workunit of the batch went
		// through, marked them for the transitioner. A locality job's new results take
		// its cursor and job number (other workunits' results keep cursor 0).
		if err := tx.ResultsJoinJobs(joining); err != nil {
			return err
		}
		retried, created, lostHere = len(retryIDs), len(newResults), len(marked)
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
