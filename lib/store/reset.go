package store

import (
	"context"
	"fmt"
)

// DropTables drops every table of the database (on MySQL/MariaDB those of the DSN's
// database, on SQLite those of the file), so that a harness that made the database
// can make it again: the full loop (scripts/fullloop) reuses the --db it is given.
// A project never calls it; the caller decides that the database is its own.
func (s *Store) DropTables(ctx context.Context) error {
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	quote := `"%s"`
	list, off, on := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`,
		`PRAGMA foreign_keys = OFF`, `PRAGMA foreign_keys = ON`
	if s.dialect.name == MySQL {
		quote = "`%s`"
		list, off, on = `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()`,
			`SET FOREIGN_KEY_CHECKS = 0`, `SET FOREIGN_KEY_CHECKS = 1`
	}
	rows, err := conn.QueryContext(ctx, list)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, off); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), on)
	for _, n := range names {
		if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+fmt.Sprintf(quote, n)); err != nil {
			return fmt.Errorf("%s: dropping table %s: %w", redact(s.dsn), n, err)
		}
	}
	s.mu.Lock()
	for q, st := range s.stmts {
		st.Close()
		delete(s.stmts, q)
	}
	s.mu.Unlock()
	return nil
}
