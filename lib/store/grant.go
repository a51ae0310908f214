package store

import (
	"database/sql"
	"errors"

	"github.com/bkit/bkit/lib/credit"
)

// GrantCredit grants each of the results ids, just found valid, its workunit's
// estimated credit (credit.Granted of rsc_fpops_est: BOINC's fixed credit): the
// result's granted_credit, and the total and average credit (credit.UpdateAverage) of
// its host and of the host's user. It is the validator's, inside the transaction that
// marks the results valid; a result already credited is skipped, so that it is
// credited once whoever validates it.
func (t *Tx) GrantCredit(ids []int64, now float64) error {
	for _, id := range ids {
		var fpops float64
		var hostID int64
		err := t.queryRow(`SELECT w.rsc_fpops_est, r.hostid FROM result r JOIN workunit w ON w.id=r.workunitid
			WHERE r.id=? AND r.granted_credit=0`, id).Scan(&fpops, &hostID)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		c := credit.Granted(fpops)
		if c == 0 {
			continue
		}
		if _, err := t.exec(`UPDATE result SET granted_credit=? WHERE id=?`, c, id); err != nil {
			return err
		}
		var userID int64
		if hostID != 0 {
			if err := t.queryRow(`SELECT userid FROM host WHERE id=?`, hostID).Scan(&userID); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if err := t.addCredit("host", hostID, c, now); err != nil {
				return err
			}
		}
		if userID != 0 {
			if err := t.addCredit("user", userID, c, now); err != nil {
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
