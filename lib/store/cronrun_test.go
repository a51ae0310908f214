package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/bkit/bkit/lib/store"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestCronRuns records runs of two jobs, one of them killed (begun, never ended) and
// two of another ending in the opposite order from their starts, and checks the
// totals, the last run (the one that started last) and the pruning of old rows.
func TestCronRuns(t *testing.T) {
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		run := func(job, app string, start float64) store.CronRun {
			return store.CronRun{Job: job, App: app, Host: "h", PID: 7, Start: start}
		}
		// An old run, pruned by a run more than CronRunKeep later.
		old := run("bretry", "up", 1000)
		id, err := s.BeginCronRun(ctx, old)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.EndCronRun(ctx, id, old, 0.5, 3, nil); err != nil {
			t.Fatal(err)
		}
		a, b := run("bretry", "up", 1000+store.CronRunKeep+10), run("bretry", "up", 1000+store.CronRunKeep+20)
		ida, _ := s.BeginCronRun(ctx, a)
		idb, _ := s.BeginCronRun(ctx, b)
		// b (started last) ends first and fails; a ends after it and succeeds: the last
		// run stays b's.
		if err := s.EndCronRun(ctx, idb, b, 2, 5, errors.New("database is locked")); err != nil {
			t.Fatal(err)
		}
		if err := s.EndCronRun(ctx, ida, a, 1, 7, nil); err != nil {
			t.Fatal(err)
		}
		// A killed run of another job: begun only.
		if _, err := s.BeginCronRun(ctx, run("blocality generate", "", 5000)); err != nil {
			t.Fatal(err)
		}
		// A run whose start could not be recorded (id 0) is written whole at its end.
		c := run("bserver assimilate", "", 6000)
		if err := s.EndCronRun(ctx, 0, c, 0.25, 2, nil); err != nil {
			t.Fatal(err)
		}
		jobs, err := s.CronJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.CronJob{
			{Job: "blocality generate", Running: 1},
			{Job: "bretry", App: "up", Runs: 3, Failures: 1, Rows: 15, Seconds: 3.5, LastStart: b.Start, LastDuration: 2,
				LastRows: 5, LastMessage: "database is locked", LastSuccessTime: a.Start},
			{Job: "bserver assimilate", Runs: 1, Rows: 2, Seconds: 0.25, LastStart: 6000, LastDuration: 0.25, LastSuccess: true, LastRows: 2, LastSuccessTime: 6000},
		}
		sortJobs := cmpopts.SortSlices(func(x, y store.CronJob) bool { return x.Job < y.Job })
		if d := cmp.Diff(want, jobs, sortJobs); d != "" {
			t.Errorf("CronJobs (-want +got):\n%s", d)
		}
		runs, err := s.CronRuns(ctx, "bretry", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || runs[0].Start != b.Start || runs[0].Success || !runs[1].Success || runs[1].Rows != 7 {
			t.Errorf("bretry runs (the old one pruned, newest first) = %+v", runs)
		}
		all, _ := s.CronRuns(ctx, "", 10)
		if len(all) != 4 || all[2].Job != "bserver assimilate" || all[3].Finished {
			t.Errorf("all runs, newest first = %+v", all)
		}
	})
}

// TestCronRunsAtOnce ends many runs of one job at once, the first of them making the
// job's row: every run counts once, on both engines.
func TestCronRunsAtOnce(t *testing.T) {
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := store.CronRun{Job: "blocality credit", Start: float64(100 + i)}
				id, err := s.BeginCronRun(ctx, r)
				if err == nil {
					err = s.EndCronRun(ctx, id, r, 0.1, int64(i), nil)
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		jobs, err := s.CronJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 1 || jobs[0].Runs != n || jobs[0].Rows != n*(n-1)/2 || jobs[0].LastStart != 100+n-1 || jobs[0].LastRows != n-1 {
			t.Errorf("after %d runs at once: %+v", n, jobs)
		}
	})
}

// TestCronRunLongNames clips a job name and a message to their columns at a
// character boundary.
func TestCronRunLongNames(t *testing.T) {
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := store.CronRun{Job: strings.Repeat("é", 200), Start: 1}
		if err := s.EndCronRun(ctx, 0, r, 1, 0, errors.New(strings.Repeat("ü", 300))); err != nil {
			t.Fatal(err)
		}
		jobs, err := s.CronJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 1 || len(jobs[0].Job) > 191 || len(jobs[0].LastMessage) > 254 || !strings.HasPrefix(r.Job, jobs[0].Job) {
			t.Errorf("clipped job: %+v", jobs)
		}
	})
}
