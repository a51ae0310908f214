package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/go-sql-driver/mysql"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// TxStats counts what InTx met since the store was opened: transactions run again
// after the engine aborted them for contention (or a claim lost its race), and
// transactions that failed with an engine error (bserver serve's /metrics).
type TxStats struct {
	Retries int64
	Errors  int64
}

// TxStats returns the store's transaction counts.
func (s *Store) TxStats() TxStats {
	return TxStats{Retries: s.txRetries.Load(), Errors: s.txErrors.Load()}
}

// engineError tells an error of the database (the engine refused or failed a
// statement, the connection broke) from a caller's own (a refusal, not found).
func engineError(err error) bool {
	if err == nil {
		return false
	}
	var se sqlite3.Error
	var me *mysql.MySQLError
	return errors.As(err, &se) || errors.As(err, &me) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, sql.ErrTxDone)
}
