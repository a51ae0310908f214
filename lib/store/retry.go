package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// AppRetry holds seed 003's retry parameters of one app (columns retry_* of app):
// what bretry uses when its flags do not say otherwise.
type AppRetry struct {
	AppID       int64
	DWU         float64 // seconds from creation (or a retry) to the next retry check
	Dresult     float64 // seconds from creating a result to its deadline
	NError      int
	Ndet        int
	Nredundancy int
	// The app's quotas (the scheduler's, not bretry's; columns daily_quota,
	// daily_quota_gpu, max_in_progress, max_in_progress_gpu): jobs a day per CPU and
	// per GPU instance, jobs in progress per CPU and per GPU instance; 0 no limit.
	DailyQuota, DailyQuotaGPU, MaxInProgress, MaxInProgressGPU int
}

// AppRetryByName returns the retry parameters of the app named name, or ErrNotFound.
func (s *Store) AppRetryByName(ctx context.Context, name string) (AppRetry, error) {
	var a AppRetry
	err := s.DB.QueryRowContext(ctx, `SELECT id, retry_dwu, retry_dresult, retry_nerror, retry_ndet, retry_nredundancy,
		daily_quota, daily_quota_gpu, max_in_progress, max_in_progress_gpu
		FROM app WHERE name=?`, name).Scan(&a.AppID, &a.DWU, &a.Dresult, &a.NError, &a.Ndet, &a.Nredundancy,
		&a.DailyQuota, &a.DailyQuotaGPU, &a.MaxInProgress, &a.MaxInProgressGPU)
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("app %q: %w", name, ErrNotFound)
	}
	return a, err
}

// AppRetrySet says which retry parameters SetAppRetry changes: nil leaves one as it is.
type AppRetrySet struct {
	DWU, Dresult                                               *float64
	NError, Ndet, Nredundancy                                  *int
	DailyQuota, DailyQuotaGPU, MaxInProgress, MaxInProgressGPU *int
}

// SetAppRetry changes the retry parameters set in p of the app named name and returns
// them all as they now are.
func (s *Store) SetAppRetry(ctx context.Context, name string, p AppRetrySet) (AppRetry, error) {
	var sets []string
	var args []any
	add := func(col string, v any) {
		sets = append(sets, col+"=?")
		args = append(args, v)
	}
	if p.DWU != nil {
		add("retry_dwu", *p.DWU)
	}
	if p.Dresult != nil {
		add("retry_dresult", *p.Dresult)
	}
	if p.NError != nil {
		add("retry_nerror", *p.NError)
	}
	if p.Ndet != nil {
		add("retry_ndet", *p.Ndet)
	}
	if p.Nredundancy != nil {
		add("retry_nredundancy", *p.Nredundancy)
	}
	for _, q := range []struct {
		col string
		v   *int
	}{{"daily_quota", p.DailyQuota}, {"daily_quota_gpu", p.DailyQuotaGPU}, {"max_in_progress", p.MaxInProgress}, {"max_in_progress_gpu", p.MaxInProgressGPU}} {
		if q.v != nil {
			add(q.col, *q.v)
		}
	}
	err := s.InTx(ctx, func(tx *Tx) error {
		id, err := tx.appID(name)
		if err != nil || len(sets) == 0 {
			return err
		}
		_, err = tx.exec(`UPDATE app SET `+strings.Join(sets, ", ")+` WHERE id=?`, append(args, id)...)
		return err
	})
	if err != nil {
		return AppRetry{}, err
	}
	return s.AppRetryByName(ctx, name)
}

// GiveUp is one wu_giveup row with its workunit's and app's names.
type GiveUp struct {
	ID         int64   `json:"id"`
	Time       float64 `json:"time"`
	App        string  `json:"app"`
	WorkunitID int64   `json:"workunit_id"`
	Workunit   string  `json:"workunit"`
	Reason     string  `json:"reason"`
	Message    string  `json:"message"`
}

// GiveUps returns the give-ups recorded at or after since, of the app named app (all
// apps when empty), oldest first, at most limit (0: all).
func (s *Store) GiveUps(ctx context.Context, app string, since float64, limit int) ([]GiveUp, error) {
	q := `SELECT g.id, g.create_time, a.name, g.workunitid, w.name, g.reason, g.message
		FROM wu_giveup g JOIN app a ON a.id=g.appid JOIN workunit w ON w.id=g.workunitid
		WHERE g.create_time>=?`
	args := []any{since}
	if app != "" {
		if _, err := s.AppRetryByName(ctx, app); err != nil {
			return nil, err
		}
		q += ` AND a.name=?`
		args = append(args, app)
	}
	q += ` ORDER BY g.id`
	if limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, limit)
	}
	rows, err := s.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []GiveUp{}
	for rows.Next() {
		var g GiveUp
		if err := rows.Scan(&g.ID, &g.Time, &g.App, &g.WorkunitID, &g.Workunit, &g.Reason, &g.Message); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}
