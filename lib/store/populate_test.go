package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/bkit/bkit/lib/store"
)

// TestPopulateAndFullScans: Populate makes the rows its spec asks for, in the states it
// names; FullScans finds a scan of result (under an alias) and none in a read by key.
func TestPopulateAndFullScans(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.AddApp(ctx, "big", false, 1); err != nil {
			t.Fatal(err)
		}
		spec := store.PopulateSpec{App: "big", Hosts: 7, Done: 5200, InProgress: 30, Unsent: 20, ResultsPerWorkunit: 2}
		if err := s.Populate(ctx, spec, 1000); err != nil {
			t.Fatal(err)
		}
		var hosts, wus, done, inProgress, unsent, canonical int
		err := s.InTx(ctx, func(tx *store.Tx) error {
			for _, q := range []struct {
				sql string
				n   *int
			}{
				{`SELECT COUNT(*) FROM host`, &hosts},
				{`SELECT COUNT(*) FROM workunit`, &wus},
				{`SELECT COUNT(*) FROM result WHERE server_state=5 AND outcome=1 AND validate_state=1 AND hostid>0`, &done},
				{`SELECT COUNT(*) FROM result WHERE server_state=4 AND hostid>0`, &inProgress},
				{`SELECT COUNT(*) FROM result WHERE server_state=2 AND hostid=0`, &unsent},
				{`SELECT COUNT(*) FROM workunit w JOIN result r ON r.id=w.canonical_resultid AND r.workunitid=w.id`, &canonical},
			} {
				if err := tx.QueryRow(q.sql).Scan(q.n); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if hosts != 7 || wus != 5250 || done != 10400 || inProgress != 60 || unsent != 40 || canonical != 5200 {
			t.Errorf("hosts %d, workunits %d, results done %d, in progress %d, unsent %d, canonical %d; want 7, 5250, 10400, 60, 40, 5200",
				hosts, wus, done, inProgress, unsent, canonical)
		}
		scans, err := s.FullScans(ctx, `SELECT r.id FROM result r WHERE r.cpu_time>?`, []any{1.0}, "workunit", "result")
		if err != nil || len(scans) != 1 {
			t.Errorf("scan of result by cpu_time: %q, %v; want one full scan", scans, err)
		}
		scans, err = s.FullScans(ctx, `SELECT r.id FROM result r JOIN workunit w ON w.id=r.workunitid WHERE r.name=?`, []any{"populate_9_1"}, "workunit", "result")
		if err != nil || len(scans) != 0 {
			t.Errorf("read by name: %q, %v; want no full scan", scans, err)
		}
	})
}

// TestTakeAccountRequest: a network's bucket gives burst requests at once, then one
// per interval; other networks have their own; eight servers taking from a fresh
// bucket at once get burst requests between them.
func TestTakeAccountRequest(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		take := func(network string, now float64) bool {
			t.Helper()
			ok, err := s.TakeAccountRequest(ctx, network, now, 20, 3)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		for i := range 3 {
			if !take("10.0.0.0/24", 1000) {
				t.Fatalf("request %d of 3 refused", i+1)
			}
		}
		if take("10.0.0.0/24", 1000) || take("10.0.0.0/24", 1019) {
			t.Error("a 4th request within 20 s allowed")
		}
		if !take("10.0.0.0/24", 1020) || take("10.0.0.0/24", 1021) {
			t.Error("one request back after 20 s: wrong")
		}
		if !take("10.0.1.0/24", 1021) {
			t.Error("another network refused")
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		n := 0
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.TakeAccountRequest(ctx, "2001:db8::/64", 2000, 20, 3)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					n++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if n != 3 {
			t.Errorf("8 requests at once on a fresh bucket of 3: %d allowed", n)
		}
	})
}
