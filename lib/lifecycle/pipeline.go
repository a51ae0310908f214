package lifecycle

import (
	"context"

	"github.com/bkit/bkit/lib/store"
)

// pipeline is a pass whose database work and file work run side by side. The
// database side is one goroutine's transactions of at most most items, on SQLite as
// many as fit in a few milliseconds of its one write lock (store.Batcher: a scheduler
// RPC that comes during a transaction waits for the rest of it; claims and records of
// a fixed 500 workunits held it 22–27 ms at p99, and the RPCs' p99 during a pass was
// 5–9× the idle one, issue 33), each followed by a pause that lets the scheduler's
// writers in (Batcher.LetWritersIn); the file side takes what the transactions
// claimed in groups of about group items (one or two syncs a group) and works while
// the database side claims the next group and records the last one, so the pauses
// cost the pass no time while the files are the slower side (issue 27's
// assimilation). Claims run at most two groups ahead of the records, so a pass holds
// a bounded number of claims, well within their leases.
//
// J is what a claim returns (a workunit to hand over, a file to delete), O what the
// file work makes of it and record writes.
type pipeline[J, O any] struct {
	store *store.Store
	most  int // the most items a transaction takes
	group int // items the file work takes at once (at least one claim's)
	// busyGroup, when not 0, is group while others write to the database
	// (store.OthersWriting: a scheduler serving RPCs on SQLite beside the pass).
	busyGroup int
	stop      func() bool
	// claim looks at up to n rows in one transaction and returns the items among
	// them; done says the backlog is seen (nothing more to claim in this pass).
	claim func(ctx context.Context, n int) (items []J, done bool, err error)
	// work does the file work of a group and returns the outcomes to record; an
	// error ends the pass.
	work func(items []J) ([]O, error)
	// record writes outcomes in one transaction.
	record func(ctx context.Context, outs []O) error
}

// run runs the pass until the backlog is seen (or stop says so) and every claimed
// item's outcome is recorded. It returns whether stop ended it. On an error the
// file work in flight finishes on its own; its outcomes are not recorded, and its
// claims lapse at their lease (or are released when the process is found dead).
func (p *pipeline[J, O]) run(ctx context.Context) (stopped bool, err error) {
	type worked struct {
		outs []O
		err  error
	}
	todo := make(chan []J, 1)
	done := make(chan worked, 2) // never blocks the file side: at most two groups in flight
	defer close(todo)
	go func() {
		for g := range todo {
			outs, err := p.work(g)
			done <- worked{outs, err}
		}
	}()
	inFlight := 0
	var cur []J
	seen := false
	claims, records := p.store.LifecycleBatcher(p.most), p.store.LifecycleBatcher(p.most)
	// record writes a group's outcomes, a batch a transaction.
	record := func(w worked) error {
		if w.err != nil {
			return w.err
		}
		outs := w.outs
		for lo := 0; lo < len(outs); {
			hi := min(len(outs), lo+records.Size())
			if err := p.record(ctx, outs[lo:hi]); err != nil {
				return err
			}
			records.Held(hi-lo, p.store.LastHold())
			records.LetWritersIn(ctx)
			lo = hi
		}
		return nil
	}
	for {
		// What the file side finished, first: its claims are the oldest.
		select {
		case w := <-done:
			inFlight--
			if err := record(w); err != nil {
				return stopped, err
			}
			continue
		default:
		}
		if !seen && !stopped && p.stop != nil && p.stop() {
			stopped = true
		}
		if !seen && !stopped && inFlight < 2 {
			n := claims.Size()
			items, all, err := p.claim(ctx, n)
			if err != nil {
				return stopped, err
			}
			claims.Held(n, p.store.LastHold())
			claims.LetWritersIn(ctx)
			cur = append(cur, items...)
			seen = all
			if len(cur) > 0 && (len(cur) >= p.groupNow() || seen) {
				todo <- cur
				cur = nil
				inFlight++
			}
			continue
		}
		// Here the claims are over (seen or stopped), or two groups are in flight.
		if (seen || stopped) && len(cur) > 0 { // stopped with a group begun
			todo <- cur
			cur = nil
			inFlight++
		}
		if inFlight == 0 {
			return stopped, nil
		}
		w := <-done
		inFlight--
		if err := record(w); err != nil {
			return stopped, err
		}
	}
}

// groupNow is the group the file side takes next: busyGroup while others write.
func (p *pipeline[J, O]) groupNow() int {
	if p.busyGroup > 0 && p.store.OthersWriting() {
		return p.busyGroup
	}
	return p.group
}
