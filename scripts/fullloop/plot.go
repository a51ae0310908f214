package main

import (
	"context"
	"fmt"

	"github.com/bkit/bkit/lib/simplot"
	"github.com/bkit/bkit/lib/store"
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

// plot draws the samples into cfg.Plot.
func (l *loop) plot() error {
	c := &simplot.Counts{Title: "Project A: jobs in each state",
		Summary: fmt.Sprintf("The full loop: %d clients, %s simulated in steps of %s.", len(l.clients), human(l.cfg.Duration), human(l.cfg.Delta))}
	for _, s := range l.samples {
		c.Times = append(c.Times, s.t)
	}
	for k, name := range sampleNames {
		cs := simplot.CountSeries{Name: name}
		for _, s := range l.samples {
			cs.Values = append(cs.Values, s.counts[k])
		}
		c.Series = append(c.Series, cs)
	}
	names, err := simplot.WriteCounts(l.cfg.Plot, c)
	if err == nil {
		l.progress("pictures in %s: %v", l.cfg.Plot, names)
	}
	return err
}
