package main

import (
	"context"
	"fmt"

	"github.com/bkit/bkit/lib/plotcmd"
	"github.com/bkit/bkit/lib/store"
	"path/filepath"
)

// sample is project A's results and workunits in each state at one time.
type sample struct {
	t      float64
	counts [len(sampleNames)]float64
}

var sampleNames = [...]string{"results unsent", "in progress", "reported", "lost", "workunits validated", "workunits given up"}

// sample counts project A's jobs in each state now (--plot).
func (l *loop) sample(ctx context.Context) error {
	s := sample{t: (l.now - start) / 3600}
	qs := []string{
		fmt.Sprintf(`SELECT COUNT(*) FROM result WHERE server_state = %d`, store.ServerStateUnsent),
		fmt.Sprintf(`SELECT COUNT(*) FROM result WHERE server_state = %d`, store.ServerStateInProgress),
		fmt.Sprintf(`SELECT COUNT(*) FROM result WHERE outcome IN (%d, %d)`, store.OutcomeSuccess, store.OutcomeClientError),
		fmt.Sprintf(`SELECT COUNT(*) FROM result WHERE outcome = %d`, store.OutcomeNoReply),
		`SELECT COUNT(*) FROM workunit WHERE canonical_resultid > 0`,
		`SELECT COUNT(DISTINCT workunitid) FROM wu_giveup`,
	}
	for i, q := range qs {
		n, err := count(ctx, l.dbA, q)
		if err != nil {
			return err
		}
		s.counts[i] = float64(n)
	}
	l.samples = append(l.samples, s)
	return nil
}

// plot has the samples drawn into cfg.Plot.
func (l *loop) plot() error {
	c := &plotcmd.Counts{Title: "Project A: jobs in each state",
		Summary: fmt.Sprintf("The full loop: %d clients, %s simulated in steps of %s.", len(l.clients), human(l.cfg.Duration), human(l.cfg.Delta))}
	for _, s := range l.samples {
		c.Times = append(c.Times, s.t)
	}
	for k, name := range sampleNames {
		cs := plotcmd.CountSeries{Name: name}
		for _, s := range l.samples {
			cs.Values = append(cs.Values, s.counts[k])
		}
		c.Series = append(c.Series, cs)
	}
	// bsim-plot draws it (lib/plotcmd): the driver, and the test binary that runs as
	// every program, do not link the plotting library and its start-up.
	if err := plotcmd.Draw(filepath.Join(l.cfg.Bin, plotcmd.Program), &plotcmd.Request{Dir: l.cfg.Plot, Counts: c}, l.log); err != nil {
		return err
	}
	l.progress("pictures in %s: counts.svg, counts.png, index.html", l.cfg.Plot)
	return nil
}
