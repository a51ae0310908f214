package store

import (
	"database/sql"
	"errors"
	"strings"

	"github.com/bkit/bkit/lib/credit"
)

// GrantCredit grants each of the results ids, just found valid, its workunit's
// estimated credit (credit.Granted of rsc_fpops_est: BOINC's fixed credit): the
// result's granted_credit, and the total and average credit (credit.UpdateAverage) of
// its host and of the host's user. It is the validator's, inside the transaction that
// marks the results valid; a result already credited is skipped, so that it is
// credited once whoever validates it.
func (t *Tx) GrantCredit(ids []int64, now float64) error {
	type grant struct {
		id, hostID, userID int64
		fpops              float64
	}
	var grants []grant
	for lo := 0; lo < len(ids); lo += 500 {
		part := ids[lo:min(len(ids), lo+500)]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := t.query(`SELECT r.id, w.rsc_fpops_est, r.hostid, COALESCE(h.userid, 0)
			FROM result r JOIN workunit w ON w.id=r.workunitid LEFT JOIN host h ON h.id=r.hostid
			WHERE r.granted_credit=0 AND r.id IN (?`+strings.Repeat(",?", len(part)-1)+`) ORDER BY r.id`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var g grant
			if err := rows.Scan(&g.id, &g.fpops, &g.hostID, &g.userID); err != nil {
				rows.Close()
				return err
			}
			grants = append(grants, g)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for _, g := range grants {
		c := credit.Granted(g.fpops)
		if c == 0 {
			continue
		}
		if _, err := t.exec(`UPDATE result SET granted_credit=? WHERE id=?`, c, g.id); err != nil {
			return err
		}
		if g.hostID != 0 {
			if err := t.addCredit("host", g.hostID, c, now); err != nil {
				return err
			}
		}
		if g.userID != 0 {
			if err := t.addCredit("user", g.userID, c, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// addCredit adds c credits granted at now to the total and average of row id of table
// (host or user, which have the same credit columns); a missing row is skipped.
func (t *Tx) addCredit(table string, id int64, c, now float64) error {
	var start, avg, avgTime float64
	err := t.queryRow(`SELECT create_time, expavg_credit, expavg_time FROM `+table+` WHERE id=?`+t.s.dialect.forUpdate, id).
		Scan(&start, &avg, &avgTime)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	avg, avgTime = credit.UpdateAverage(now, start, c, avg, avgTime)
	_, err = t.exec(`UPDATE `+table+` SET total_credit=total_credit+?, expavg_credit=?, expavg_time=? WHERE id=?`, c, avg, avgTime, id)
	return err
}
