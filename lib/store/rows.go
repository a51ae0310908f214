package store

import "database/sql"

// collect reads every row of a query (rows, err: what the query returned) into a
// slice, one scan a row, and closes the rows: the loop of Next, Scan, Close and Err
// that a read of many rows is.
func collect[T any](rows *sql.Rows, err error, scan func(*sql.Rows, *T) error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
