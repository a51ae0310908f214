package store

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// CronRunKeep is how long a cron job's run rows are kept (seconds); its totals in
// cron_job are kept for ever.
const CronRunKeep = 30 * 86400

// CronRun is one run of a cron job as the jobs record it (issue 31): every front end
// (bserver status, the status page, /metrics) reads the same rows.
type CronRun struct {
	Job   string  `json:"job"`           // "bretry", "bretry validate", "blocality generate", "assimilate", …
	App   string  `json:"app,omitempty"` // the app of a per-app job ("" otherwise)
	Host  string  `json:"host"`          // the machine it ran on
	PID   int     `json:"pid"`
	Start float64 `json:"start"` // the job's time (its --now, or the clock)
}

// BeginCronRun records that run r started and returns its row's id, which EndCronRun
// completes. A run killed before it ends keeps finished=0: the status page shows it
// as running or killed.
func (s *Store) BeginCronRun(ctx context.Context, r CronRun) (int64, error) {
	var id int64
	err := s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.exec(`INSERT INTO cron_run (job, app, host, pid, start_time) VALUES (?, ?, ?, ?, ?)`,
			clip191(r.Job), clip191(r.App), clip(r.Host), r.PID, r.Start)
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("cron run record: %w", err)
	}
	return id, nil
}

// EndCronRun completes the run row id (0: BeginCronRun failed, so the whole row is
// written now) and adds the run to its job's totals, in one transaction: duration
// in seconds, nrows the rows it handled, runErr its failure (nil: success). Run rows
// of the job older than CronRunKeep before r.Start are deleted.
func (s *Store) EndCronRun(ctx context.Context, id int64, r CronRun, duration float64, nrows int64, runErr error) error {
	ok, msg := 1, ""
	if runErr != nil {
		ok, msg = 0, clip(runErr.Error())
	}
	job, app := clip191(r.Job), clip191(r.App)
	err := s.InTx(ctx, func(tx *Tx) error {
		if id != 0 {
			if _, err := tx.exec(`UPDATE cron_run SET duration=?, finished=1, success=?, nrows=?, message=? WHERE id=?`,
				duration, ok, nrows, msg, id); err != nil {
				return err
			}
		} else if _, err := tx.exec(`INSERT INTO cron_run (job, app, host, pid, start_time, duration, finished, success, nrows, message)
			VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`, clip191(r.Job), clip191(r.App), clip(r.Host), r.PID, r.Start, duration, ok, nrows, msg); err != nil {
			return err
		}
		lastOK := 0.0
		if ok == 1 {
			lastOK = r.Start
		}
		update := func() (bool, error) {
			// The last run is the one that started last: two runs at once may end in
			// either order.
			res, err := tx.exec(`UPDATE cron_job SET runs=runs+1, failures=failures+?, nrows=nrows+?, seconds=seconds+?,
				last_duration=(CASE WHEN last_start<=? THEN ? ELSE last_duration END),
				last_success=(CASE WHEN last_start<=? THEN ? ELSE last_success END),
				last_nrows=(CASE WHEN last_start<=? THEN ? ELSE last_nrows END),
				last_message=(CASE WHEN last_start<=? THEN ? ELSE last_message END),
				last_success_time=(CASE WHEN last_success_time<? THEN ? ELSE last_success_time END),
				last_start=(CASE WHEN last_start<=? THEN ? ELSE last_start END)
				WHERE job=? AND app=?`, 1-ok, nrows, duration,
				r.Start, duration, r.Start, ok, r.Start, nrows, r.Start, msg, lastOK, lastOK, r.Start, r.Start, job, app)
			if err != nil {
				return false, err
			}
			n, err := res.RowsAffected()
			return n == 1, err
		}
		done, err := update()
		if err != nil {
			return err
		}
		if !done {
			_, err = tx.exec(`INSERT INTO cron_job (job, app) VALUES (?, ?)`, job, app)
			if err != nil && !isUniqueViolation(err) {
				return err // a unique violation: another run made the row meanwhile
			}
			if done, err = update(); err == nil && !done {
				err = errors.New("cron_job row vanished")
			}
			if err != nil {
				return err
			}
		}
		_, err = tx.exec(`DELETE FROM cron_run WHERE job=? AND app=? AND start_time<?`, job, app, r.Start-CronRunKeep)
		return err
	})
	if err != nil {
		return fmt.Errorf("cron run record: %w", err)
	}
	return nil
}

// CronJob is a cron job's totals and last run (a cron_job row).
type CronJob struct {
	Job             string  `json:"job"`
	App             string  `json:"app,omitempty"`
	Runs            int64   `json:"runs"`
	Failures        int64   `json:"failures"`
	Rows            int64   `json:"rows"`
	Seconds         float64 `json:"seconds"`
	LastStart       float64 `json:"last_start"`
	LastDuration    float64 `json:"last_duration"`
	LastSuccess     bool    `json:"last_success"`
	LastRows        int64   `json:"last_rows"`
	LastMessage     string  `json:"last_message,omitempty"`
	LastSuccessTime float64 `json:"last_success_time"`
	// Running counts the runs that started after the last finished one began and
	// have not finished (running now, or killed).
	Running int64 `json:"running"`
}

// CronJobs returns every job's totals, by job and app, with the runs started after
// its last finished run that have not finished.
func (s *Store) CronJobs(ctx context.Context) ([]CronJob, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT j.job, j.app, j.runs, j.failures, j.nrows, j.seconds, j.last_start, j.last_duration,
		j.last_success, j.last_nrows, j.last_message, j.last_success_time FROM cron_job j ORDER BY j.job, j.app`)
	if err != nil {
		return nil, err
	}
	jobs := []CronJob{}
	for rows.Next() {
		var j CronJob
		var ok int
		if err := rows.Scan(&j.Job, &j.App, &j.Runs, &j.Failures, &j.Rows, &j.Seconds, &j.LastStart, &j.LastDuration,
			&ok, &j.LastRows, &j.LastMessage, &j.LastSuccessTime); err != nil {
			rows.Close()
			return nil, err
		}
		j.LastSuccess = ok == 1
		jobs = append(jobs, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Unfinished runs of jobs that never finished one have no cron_job row yet.
	unfinished, err := s.DB.QueryContext(ctx, `SELECT job, app, start_time FROM cron_run WHERE finished=0`)
	if err != nil {
		return nil, err
	}
	defer unfinished.Close()
	index := map[[2]string]int{}
	for i, j := range jobs {
		index[[2]string{j.Job, j.App}] = i
	}
	for unfinished.Next() {
		var job, app string
		var start float64
		if err := unfinished.Scan(&job, &app, &start); err != nil {
			return nil, err
		}
		i, ok := index[[2]string{job, app}]
		if !ok {
			i = len(jobs)
			index[[2]string{job, app}] = i
			jobs = append(jobs, CronJob{Job: job, App: app})
		}
		if start >= jobs[i].LastStart {
			jobs[i].Running++
		}
	}
	return jobs, unfinished.Err()
}

// CronRuns returns the latest n run rows of job (all jobs when job is ""), newest
// first.
func (s *Store) CronRuns(ctx context.Context, job string, n int) ([]CronRunRow, error) {
	q := `SELECT id, job, app, host, pid, start_time, duration, finished, success, nrows, message FROM cron_run`
	args := []any{}
	if job != "" {
		q += ` WHERE job=?`
		args = append(args, job)
	}
	q += ` ORDER BY start_time DESC, id DESC LIMIT ?`
	args = append(args, n)
	rows, err := s.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []CronRunRow{}
	for rows.Next() {
		var r CronRunRow
		var fin, ok int
		if err := rows.Scan(&r.ID, &r.Job, &r.App, &r.Host, &r.PID, &r.Start, &r.Duration, &fin, &ok, &r.Rows, &r.Message); err != nil {
			return nil, err
		}
		r.Finished, r.Success = fin == 1, ok == 1
		out = append(out, r)
	}
	return out, rows.Err()
}

// CronRunRow is a cron_run row.
type CronRunRow struct {
	ID int64 `json:"id"`
	CronRun
	Duration float64 `json:"duration"`
	Finished bool    `json:"finished"`
	Success  bool    `json:"success"`
	Rows     int64   `json:"rows"`
	Message  string  `json:"message,omitempty"`
}

// clip cuts s to a VARCHAR(254) column at a character boundary.
func clip(s string) string { return clipTo(s, maxMessageLength) }

// clip191 cuts a job or app name to the 191 bytes of cron_job's key columns (two
// utf8mb4 columns within MySQL's key limit); cron_run holds them clipped alike.
func clip191(s string) string { return clipTo(s, 191) }

func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
