package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

var errRollback = errors.New("roll back")

// TestAssignCursorMatchesAll: assignCursor, which reads only the host's cursor and
// the cursors with the greatest est_time_left up to the first that admits the host,
// decides as locality.ChooseCursor does over all of the batch's cursors, with ties,
// finished cursors, teams without credit, full teams and users' other hosts.
func TestAssignCursorMatchesAll(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			ctx := context.Background()
			st := storetest.Open(t, e.DSN)
			if _, err := st.AddApp(ctx, "loc", true, 1); err != nil {
				t.Fatal(err)
			}
			const nCursors, nHosts = 40, 60
			spec := store.BatchSpec{Name: "b", App: "loc", DelayBound: 1, MinQuorum: 1, TargetNResults: 1, MaxErrorResults: 1, MaxTotalResults: 1, MaxSuccessResults: 1,
				Files: []store.BatchFile{{Name: "b_f0", NBytes: 1}}}
			for j := 0; j < nCursors; j++ {
				spec.Jobs = append(spec.Jobs, store.BatchJob{JobNum: int64(j), FpopsEst: 1e12})
				spec.Cursors = append(spec.Cursors, locality.Range{First: int64(j), Last: int64(j)})
			}
			if _, err := st.CreateBatch(ctx, spec, 1); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(4, 4))
			pick := func(vs ...float64) float64 { return vs[r.IntN(len(vs))] }
			err := st.InTx(ctx, func(tx *store.Tx) error {
				for c := 1; c <= nCursors; c++ {
					if _, err := tx.Exec(`UPDATE locality_cursor SET remaining_credit=?, expavg_credit=?, nhosts=?, max_host_credit=? WHERE id=?`,
						pick(0, 10, 20, 40), pick(0, 5, 10), r.IntN(4), pick(1, 3, 6), c); err != nil {
						return err
					}
				}
				for h := 1; h <= nHosts; h++ {
					if _, err := tx.Exec(`INSERT INTO host (id, userid, authenticator, p_fpops, p_ncpus, expavg_credit) VALUES (?, ?, ?, 1e9, 1, ?)`,
						h, r.IntN(8), fmt.Sprint("a", h), pick(1, 2, 5, 8)); err != nil {
						return err
					}
					if h%2 == 0 { // half the hosts are on a cursor already
						if _, err := tx.Exec(`INSERT INTO batch_host (batch_id, host_id, cursor_id, userid, credit) VALUES (1, ?, ?, (SELECT userid FROM host WHERE id=?), 1)`,
							h, 1+r.IntN(nCursors), h); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for h := int64(1); h <= nHosts; h++ {
				var want, got int64
				err := st.InTx(ctx, func(tx *store.Tx) error {
					host, err := tx.HostByID(h)
					if err != nil {
						return err
					}
					all, err := tx.LockCursors(1)
					if err != nil {
						return err
					}
					current, err := tx.HostCursor(1, h)
					if err != nil {
						return err
					}
					users, err := tx.UserCursors(1, host.UserID, h)
					if err != nil {
						return err
					}
					var cs []locality.Cursor
					for _, c := range all {
						cs = append(cs, locality.Cursor{ID: c.ID, RemainingCredit: c.RemainingCredit, ExpavgCredit: c.ExpavgCredit,
							NHosts: c.NHosts, MaxHostCredit: c.MaxHostCredit, HasUser: users[c.ID]})
					}
					want = locality.ChooseCursor(cs, current, locality.HostRate(host.ExpavgCredit, host.PFpops, host.PNCPUs, host.OnFrac, host.ActiveFrac))
					c, ok, err := assignCursor(tx, 1, host)
					if err != nil {
						return err
					}
					if ok {
						got = c.ID
					}
					return errRollback // the next host sees the same cursors
				})
				if !errors.Is(err, errRollback) {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("host %d: assignCursor chose cursor %d, ChooseCursor over all cursors %d", h, got, want)
				}
			}
		})
	}
}
