package store

import (
	"context"
	"fmt"
)

// TakeAccountRequest takes one request from the account-request bucket of network (a
// client's address block, lib/server), kept in the database so that every server of
// the project draws on the same bucket. The bucket holds burst requests and refills one
// every interval seconds: the generic cell rate algorithm, whose whole state is one
// time per network (tat, when the bucket will be full again plus one interval), updated
// by a conditional UPDATE, so two servers taking at once serialise on the row. It
// reports whether the request may go on. Rows of full buckets are deleted when a new
// network comes.
func (s *Store) TakeAccountRequest(ctx context.Context, network string, now, interval float64, burst int) (bool, error) {
	limit := now + float64(max(1, burst))*interval
	allowed := false
	err := s.InTx(ctx, func(tx *Tx) error {
		allowed = false
		take := func() (bool, error) {
			res, err := tx.exec(`UPDATE account_bucket SET tat=(CASE WHEN tat>? THEN tat ELSE ? END)+?
				WHERE network=? AND (CASE WHEN tat>? THEN tat ELSE ? END)+?<=?`, now, now, interval, network, now, now, interval, limit)
			if err != nil {
				return false, err
			}
			n, err := res.RowsAffected()
			return n == 1, err
		}
		ok, err := take()
		if err != nil || ok {
			allowed = ok
			return err
		}
		var n int
		if err := tx.queryRow(`SELECT COUNT(*) FROM account_bucket WHERE network=?`, network).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			// The row is there: a spent bucket, or one another server made and
			// committed after the update above looked (InnoDB's count reads a
			// snapshot taken after it), which still has room. Take from it again:
			// refusing here refused a fresh bucket's request (8 at once on a bucket
			// of 3 on MariaDB: 2 allowed).
			allowed, err = take()
			return err
		}
		if _, err := tx.exec(`DELETE FROM account_bucket WHERE tat<?`, now); err != nil {
			return err
		}
		_, err = tx.exec(`INSERT INTO account_bucket (network, tat) VALUES (?, ?)`, network, now+interval)
		if isUniqueViolation(err) {
			// Another server made the row since the count: take from it.
			allowed, err = take()
			return err
		}
		allowed = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("account request limit: %w", err)
	}
	return allowed, nil
}
