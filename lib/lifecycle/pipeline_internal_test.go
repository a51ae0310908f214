package lifecycle

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// TestPipeline: every claimed item is worked once and recorded once, in groups of at
// least the group size but the last, never more than two groups in flight; a stop
// ends the claims and records what was claimed; a file error ends the pass.
func TestPipeline(t *testing.T) {
	st := storetest.Open(t, storetest.SQLiteDSN(t))
	const total = 1000
	run := func(stopAfter int, workErr error) (claimed, recorded []int, groups []int, stopped bool, err error) {
		next := 0
		var inFlight, most atomic.Int32
		p := pipeline[int, int]{
			store: st, most: 30, group: 100,
			stop: func() bool { return stopAfter > 0 && next >= stopAfter },
			claim: func(ctx context.Context, n int) ([]int, bool, error) {
				var items []int
				for ; next < total && len(items) < n; next++ {
					items = append(items, next)
				}
				claimed = append(claimed, items...)
				return items, next == total, nil
			},
			work: func(items []int) ([]int, error) {
				if n := inFlight.Add(1); n > most.Load() {
					most.Store(n)
				}
				defer inFlight.Add(-1)
				groups = append(groups, len(items))
				return slices.Clone(items), workErr
			},
			record: func(ctx context.Context, outs []int) error {
				if len(outs) > 30 {
					t.Errorf("a record of %d outcomes, want at most 30", len(outs))
				}
				recorded = append(recorded, outs...)
				return nil
			},
		}
		stopped, err = p.run(context.Background())
		if most.Load() > 1 {
			t.Errorf("%d groups worked at once, want one", most.Load())
		}
		return claimed, recorded, groups, stopped, err
	}

	claimed, recorded, groups, stopped, err := run(0, nil)
	if err != nil || stopped {
		t.Fatalf("whole pass: stopped %v, err %v", stopped, err)
	}
	if len(claimed) != total || !slices.Equal(claimed, recorded) {
		t.Errorf("whole pass: claimed %d, recorded %d (in claim order: %v)", len(claimed), len(recorded), slices.Equal(claimed, recorded))
	}
	for i, g := range groups {
		if g < 100 && i != len(groups)-1 {
			t.Errorf("group %d of %d items, want at least 100 but the last: %v", i, g, groups)
		}
	}

	claimed, recorded, _, stopped, err = run(450, nil)
	if err != nil || !stopped {
		t.Fatalf("stopped pass: stopped %v, err %v", stopped, err)
	}
	if len(claimed) < 450 || len(claimed) >= total || !slices.Equal(claimed, recorded) {
		t.Errorf("stopped pass: claimed %d, recorded %d: want every claim recorded, and the claims to end", len(claimed), len(recorded))
	}

	boom := errors.New("disk full")
	_, recorded, _, _, err = run(0, boom)
	if !errors.Is(err, boom) || len(recorded) != 0 {
		t.Errorf("failing file work: err %v, recorded %d; want the error and nothing recorded", err, len(recorded))
	}
}

// TestPipelineHoldsShort: on SQLite, while another connection keeps writing (a
// scheduler's RPCs), a pass's claims and records are sized to hold the write lock a
// few milliseconds at the rate its last transactions went (store.Batcher), not the
// most a transaction may take (issue 33: a fixed 500 workunits held it 22–27 ms at
// p99).
func TestPipelineHoldsShort(t *testing.T) {
	ctx := context.Background()
	st := storeBesideWriter(t)
	const perItem = 100 * time.Microsecond // 10 items fill the lifecycle passes' 1 ms (store.LifecycleBatcher)
	hold := func(n int) error {
		return st.InTx(ctx, func(*store.Tx) error { time.Sleep(time.Duration(n) * perItem); return nil })
	}
	const total = 600
	next := 0
	var claims, records []int
	p := pipeline[int, int]{
		store: st, most: 500, group: 100,
		claim: func(ctx context.Context, n int) ([]int, bool, error) {
			claims = append(claims, n)
			var items []int
			for ; next < total && len(items) < n; next++ {
				items = append(items, next)
			}
			return items, next == total, hold(len(items))
		},
		work: func(items []int) ([]int, error) { return items, nil },
		record: func(ctx context.Context, outs []int) error {
			records = append(records, len(outs))
			return hold(len(outs))
		},
	}
	if _, err := p.run(ctx); err != nil {
		t.Fatal(err)
	}
	// The first of each is 100 (nothing measured yet); after it the sizes fit 1 ms of
	// the sleep, and the commit's own time makes them smaller still.
	for what, sizes := range map[string][]int{"claims": claims, "records": records} {
		if len(sizes) < 4 {
			t.Fatalf("%s: %v, want several transactions", what, sizes)
		}
		for _, n := range sizes[1:] {
			if n > int(1500*time.Microsecond/perItem) {
				t.Errorf("%s of %v: %d items hold the lock %v, want about 1 ms", what, sizes, n, time.Duration(n)*perItem)
			}
		}
	}
}

// TestPipelineGroupsWhileOthersWrite: on SQLite, while another connection keeps
// writing (a scheduler's RPCs), the file side takes groups of about busyGroup items,
// not group's (fewer files between two syncs: shorter bursts on a shared disk).
func TestPipelineGroupsWhileOthersWrite(t *testing.T) {
	ctx := context.Background()
	st := storeBesideWriter(t)
	const total, most, busy = 600, 20, 50
	next := 0
	var groups []int
	p := pipeline[int, int]{
		store: st, most: most, group: 1000, busyGroup: busy,
		claim: func(ctx context.Context, n int) ([]int, bool, error) {
			var items []int
			for ; next < total && len(items) < n; next++ {
				items = append(items, next)
			}
			return items, next == total, st.InTx(ctx, func(*store.Tx) error { return nil })
		},
		work:   func(items []int) ([]int, error) { groups = append(groups, len(items)); return items, nil },
		record: func(ctx context.Context, outs []int) error { return nil },
	}
	if _, err := p.run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(groups) < total/(busy+most) {
		t.Fatalf("groups %v: want about %d items each while another connection writes", groups, busy)
	}
	for _, g := range groups {
		if g >= busy+most {
			t.Errorf("a group of %d items in %v, want fewer than %d while another connection writes", g, groups, busy+most)
		}
	}
}

// storeBesideWriter opens a SQLite store beside another connection that commits every
// few milliseconds (a scheduler's RPCs) until the test ends.
func storeBesideWriter(t *testing.T) *store.Store {
	dsn := storetest.SQLiteDSN(t)
	st := storetest.Open(t, dsn)
	storetest.KeepWriting(t, dsn)
	return st
}
