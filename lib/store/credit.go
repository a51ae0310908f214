package store

import (
	"context"
	"strings"

	"github.com/bkit/bkit/lib/locality"
)

// Credit is one pass of seed 004's locality daemon over the open batches, each batch
// in one transaction with its cursor rows locked: hosts silent since before
// now−timeout leave their teams (an empty team's cursor waits, with infinite
// est_time_left, for the next host), and each cursor's expavg_credit, team size and
// fastest member are recomputed from its members' current rates (locality.HostRate).
// It returns how many hosts left teams.
func (s *Store) Credit(ctx context.Context, timeout, now float64) (left int, err error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT id FROM batch WHERE state<=? ORDER BY id`, BatchInProgress)
	if err != nil {
		return 0, err
	}
	var batches []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		batches = append(batches, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, batch := range batches {
		n := 0
		err := s.InTx(ctx, func(tx *Tx) error {
			cursors, err := tx.LockCursors(batch)
			if err != nil {
				return err
			}
			// The silent members are read first and deleted by id: a DELETE whose
			// subquery reads host takes shared locks on host rows (InnoDB), which the
			// scheduler locks before the cursor rows it places a host with, while this
			// transaction holds the cursors: the daemon and the scheduler deadlocked on
			// MariaDB.
			var silent []int64
			rows, err := tx.query(`SELECT bh.host_id FROM batch_host bh JOIN host h ON h.id=bh.host_id WHERE bh.batch_id=? AND h.rpc_time<?`, batch, now-timeout)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				silent = append(silent, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			n = 0
			for lo := 0; lo < len(silent); lo += 500 {
				part := silent[lo:min(len(silent), lo+500)]
				args := []any{batch}
				for _, id := range part {
					args = append(args, id)
				}
				r, err := tx.exec(`DELETE FROM batch_host WHERE batch_id=? AND host_id IN (?`+strings.Repeat(",?", len(part)-1)+`)`, args...)
				if err != nil {
					return err
				}
				gone, err := r.RowsAffected()
				if err != nil {
					return err
				}
				n += int(gone)
			}
			type member struct {
				host   int64
				cursor int64
				rate   float64
				stored float64 // batch_host.credit
			}
			rows, err = tx.query(`SELECT bh.host_id, bh.cursor_id, bh.credit, h.expavg_credit, h.p_fpops, h.p_ncpus, h.on_frac, h.active_frac
				FROM batch_host bh JOIN host h ON h.id=bh.host_id WHERE bh.batch_id=?`, batch)
			if err != nil {
				return err
			}
			var members []member
			for rows.Next() {
				var m member
				var expavg, fpops, on, active float64
				var ncpus int
				if err := rows.Scan(&m.host, &m.cursor, &m.stored, &expavg, &fpops, &ncpus, &on, &active); err != nil {
					rows.Close()
					return err
				}
				m.rate = locality.HostRate(expavg, fpops, ncpus, on, active)
				members = append(members, m)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			// Only rows whose values change are written: most members' rates and most
			// teams are the same from one pass to the next.
			rates := map[int64][]float64{}
			for _, m := range members {
				rates[m.cursor] = append(rates[m.cursor], m.rate)
				if m.rate == m.stored {
					continue
				}
				if _, err := tx.exec(`UPDATE batch_host SET credit=? WHERE batch_id=? AND host_id=?`, m.rate, batch, m.host); err != nil {
					return err
				}
			}
			for _, c := range cursors {
				sum, fastest := locality.TeamCredit(rates[c.ID])
				if sum == c.ExpavgCredit && len(rates[c.ID]) == c.NHosts && fastest == c.MaxHostCredit {
					continue
				}
				if _, err := tx.exec(`UPDATE locality_cursor SET expavg_credit=?, nhosts=?, max_host_credit=? WHERE id=?`,
					sum, len(rates[c.ID]), fastest, c.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return left, err
		}
		left += n
	}
	return left, nil
}
