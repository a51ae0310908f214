package bretry_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/store"
)

// bulkWork inserts n workunits of app appID named PREFIX_I (I from first), created at
// created with retry check time check, each with one result PREFIX_I_0 in the state
// state(i) gives (server state, outcome), by multi-row inserts: bserver work create
// takes a statement per row, too slow for the million rows of the benchmark.
func bulkWork(tb testing.TB, s *store.Store, appID int64, prefix string, first, n int, check float64, state func(i int) (int, int)) {
	tb.Helper()
	const chunk = 500
	for lo := first; lo < first+n; lo += chunk {
		hi := min(lo+chunk, first+n)
		var wus, res []string
		var wargs, rargs []any
		for i := lo; i < hi; i++ {
			wus = append(wus, "(?, ?, ?, 1e12, 1e13, 3600, 1, 1, ?)")
			wargs = append(wargs, float64(created), appID, fmt.Sprintf("%s_%d", prefix, i), check)
		}
		tx, err := s.DB.Begin()
		if err != nil {
			tb.Fatal(err)
		}
		r, err := tx.Exec(`INSERT INTO workunit (create_time, appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound, min_quorum,
			target_nresults, retry_check_time) VALUES `+strings.Join(wus, ","), wargs...)
		if err != nil {
			tb.Fatal(err)
		}
		// A multi-row insert takes consecutive ids (MySQL: a simple insert with
		// innodb_autoinc_lock_mode 1 or 2; SQLite: always); MySQL reports the first,
		// SQLite the last.
		id0, err := r.LastInsertId()
		if err != nil {
			tb.Fatal(err)
		}
		if s.Engine() == store.SQLite {
			id0 -= int64(hi - lo - 1)
		}
		for i := lo; i < hi; i++ {
			ss, oc := state(i)
			sent, deadline := 0.0, 0.0
			if ss != store.ServerStateUnsent {
				sent, deadline = float64(created), float64(created+3600)
			}
			res = append(res, "(?, ?, ?, ?, ?, ?, ?, ?)")
			rargs = append(rargs, float64(created), id0+int64(i-lo), appID, fmt.Sprintf("%s_%d_0", prefix, i), ss, oc, sent, deadline)
		}
		if _, err := tx.Exec(`INSERT INTO result (create_time, workunitid, appid, name, server_state, outcome, sent_time, report_deadline)
			VALUES `+strings.Join(res, ","), rargs...); err != nil {
			tb.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
}
