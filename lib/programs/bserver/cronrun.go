package bserver

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/bkit/bkit/lib/store"
)

// RecordRun runs pass as one run of the cron job named job (and app, for per-app jobs)
// and records it in the database (store.BeginCronRun, store.EndCronRun): when it
// started (now, the job's own time), how long it took on the wall clock, whether it
// succeeded and how many rows it handled, so that every front end (bserver status, the
// status page, /metrics) shows the same runs. A failure to record is logged, not
// returned: the pass's own work and error come first, and a database that cannot take
// the record fails the pass too. Every cron program (bretry, blocality's daemons, the
// lifecycle jobs) runs its passes through it.
func RecordRun(ctx context.Context, s *store.Store, job, app string, now float64, log *slog.Logger, pass func(context.Context) (int64, error)) error {
	host, _ := os.Hostname()
	run := store.CronRun{Job: job, App: app, Host: host, PID: os.Getpid(), Start: now}
	// A signal ends the pass (ctx), not its record.
	rctx := context.WithoutCancel(ctx)
	id, err := s.BeginCronRun(rctx, run)
	if err != nil {
		log.Warn("could not record the start of a run", "job", job, "err", err)
	}
	start := time.Now()
	rows, perr := pass(ctx)
	if err := s.EndCronRun(rctx, id, run, time.Since(start).Seconds(), rows, perr); err != nil {
		log.Warn("could not record the end of a run", "job", job, "err", err)
	}
	return perr
}
