package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/lifecycle"
	"github.com/bkit/bkit/lib/store"
)

// archiveDir is where bserver purge moves project name's old rows.
func (l *loop) archiveDir(name string) string {
	return filepath.Join(l.dir, name, "archive")
}

// mergedTables are the tables the summary and the invariants read: those purge moves
// into the archive, and those they join with.
var mergedTables = append(append([]string{}, store.PurgeTables...), "app", "batch", "batch_file", "locality_cursor")

// merged is project name's database as if nothing had been purged: a scratch SQLite
// database in memory holding the project's rows of mergedTables and the archive's
// rows, so that the counts and invariants read every workunit and result the run
// made, whether it is still in the database or archived. It returns the scratch
// database and how many workunits the archive holds. A row both archived and in the
// database, or archived twice, is a broken invariant.
func (l *loop) merged(ctx context.Context, db *store.Store, name string) (*store.Store, int, error) {
	m, err := store.Open("sqlite::memory:")
	if err != nil {
		return nil, 0, err
	}
	if _, err := m.Migrate(ctx, start); err != nil {
		m.Close()
		return nil, 0, err
	}
	// The rows come table by table, children before parents for the archive's.
	if _, err := m.DB.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		m.Close()
		return nil, 0, err
	}
	purged, err := l.fillMerged(ctx, db, m, name)
	if err != nil {
		m.Close()
		return nil, 0, err
	}
	return m, purged, nil
}

func (l *loop) fillMerged(ctx context.Context, db, m *store.Store, name string) (int, error) {
	// Asked before the transaction: the scratch database has one connection.
	generated := map[string]map[string]bool{}
	for _, t := range mergedTables {
		g, err := generatedColumns(ctx, m, t)
		if err != nil {
			return 0, err
		}
		generated[t] = g
	}
	tx, err := m.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	seen := map[string]map[int64]bool{} // table → ids, for the tables with an id
	for _, t := range mergedTables {
		rows, err := db.DB.QueryContext(ctx, `SELECT * FROM `+t)
		if err != nil {
			return 0, err
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return 0, err
			}
			row := map[string]any{}
			for i, c := range cols {
				if b, ok := vals[i].([]byte); ok {
					vals[i] = string(b) // MySQL's text protocol; SQLite's column affinity converts numbers
				}
				row[c] = vals[i]
			}
			if err := l.insertMerged(ctx, tx, name, t, "database", row, generated[t], seen); err != nil {
				rows.Close()
				return 0, err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, err
		}
	}
	purged := 0
	for _, t := range store.PurgeTables {
		files, _ := filepath.Glob(filepath.Join(l.archiveDir(name), "*", t+".jsonl.gz"))
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				return 0, err
			}
			err = lifecycle.ReadArchive(fh, func(batch int64, line []byte) error {
				dec := json.NewDecoder(strings.NewReader(string(line)))
				dec.UseNumber()
				var row map[string]any
				if err := dec.Decode(&row); err != nil {
					return err
				}
				for k, v := range row {
					if n, ok := v.(json.Number); ok {
						if i, err := n.Int64(); err == nil {
							row[k] = i
						} else {
							row[k], _ = n.Float64()
						}
					}
				}
				if t == "workunit" {
					purged++
				}
				return l.insertMerged(ctx, tx, name, t, "archive", row, generated[t], seen)
			})
			fh.Close()
			if err != nil {
				l.breakf("project %s: archive file %s: %v", name, f, err)
			}
		}
	}
	return purged, tx.Commit()
}

// insertMerged adds one row to the scratch database; a table's id seen before is a
// broken invariant, and the row is left out.
func (l *loop) insertMerged(ctx context.Context, tx *sql.Tx, project, table, from string, row map[string]any, generated map[string]bool, seen map[string]map[int64]bool) error {
	id, ok := row["id"].(int64)
	if s, isString := row["id"].(string); isString { // from MySQL
		var err error
		id, err = strconv.ParseInt(s, 10, 64)
		ok = err == nil
	}
	if ok {
		if seen[table] == nil {
			seen[table] = map[int64]bool{}
		}
		if seen[table][id] {
			l.breakf("project %s: %s row %d is in the archive twice, or in the archive and the database (the second from the %s)", project, table, id, from)
			return nil
		}
		seen[table][id] = true
	}
	var cols, marks []string
	var args []any
	for c, v := range row {
		if generated[c] {
			continue
		}
		cols = append(cols, `"`+c+`"`)
		marks = append(marks, "?")
		args = append(args, v)
	}
	_, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (%s) VALUES (%s)`, table, strings.Join(cols, ", "), strings.Join(marks, ", ")), args...)
	if err != nil {
		return fmt.Errorf("%s row from the %s: %w", table, from, err)
	}
	return nil
}

// generatedColumns are the columns of table the engine computes (assimilate_ready).
func generatedColumns(ctx context.Context, m *store.Store, table string) (map[string]bool, error) {
	rows, err := m.DB.QueryContext(ctx, `SELECT name FROM pragma_table_xinfo(?) WHERE hidden IN (2, 3)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out[n] = true
	}
	return out, rows.Err()
}

// treeBytes is the bytes of the regular files under dir.
func treeBytes(dir string) float64 {
	var n float64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += float64(fi.Size())
			}
		}
		return nil
	})
	return n
}
