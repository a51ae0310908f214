package store

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// TraceStatements makes every statement a transaction of s runs (Tx's methods, the
// multi-row INSERTs included) call fn with its SQL and arguments before it runs, until
// TraceStatements(nil). Tests and benchmarks use it to count the statements of a
// scheduler RPC and to check their plans (FullScans); fn must be safe for concurrent
// use when transactions run at once.
func (s *Store) TraceStatements(fn func(query string, args []any)) {
	if fn == nil {
		s.trace.Store(nil)
		return
	}
	s.trace.Store(&fn)
}

// RoundTrips counts the requests this Store has made of the engine since it was
// opened: every statement of a transaction, each transaction's BEGIN and its COMMIT or
// ROLLBACK, and each statement prepared (prepareWanted). On MySQL each is one round
// trip to the server (placeholders are interpolated client-side, so a statement is one
// COM_QUERY); on SQLite each is a call into the library. Benchmarks divide the
// difference over a run by its RPCs. Statements run outside transactions (Store
// methods on s.DB for reports and tests) are not counted.
func (s *Store) RoundTrips() int64 { return s.trips.Load() }

func (s *Store) traced(query string, args []any) {
	s.trips.Add(1)
	if fn := s.trace.Load(); fn != nil {
		(*fn)(query, args)
	}
}

// FullScans returns the steps of the engine's plan for query (run with args) that read
// the whole of one of tables, one line each ("result: type=index key=PRIMARY rows=29687"
// on MySQL/MariaDB, "SCAN r" on SQLite), and none when every such table is read by a key.
// On MySQL a step of type ALL (a table scan) or index (a scan of a whole index) counts,
// and so does any step the optimizer expects to read a quarter of the table or more
// (at least 1,000 rows): an open range of the primary key (id>?) walked for ORDER BY id
// LIMIT reads as much as a scan. On SQLite a SCAN step counts. Aliases in the query (FROM result r) are resolved, so tables
// are named as in the schema. Plans depend on the tables' sizes and statistics: check
// them on a database of a real project's size (Populate, then ANALYZE on MySQL).
func (s *Store) FullScans(ctx context.Context, query string, args []any, tables ...string) ([]string, error) {
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(query)), "INSERT") && !strings.Contains(strings.ToUpper(query), "SELECT") {
		return nil, nil // INSERT … VALUES reads nothing
	}
	alias := tableAliases(query)
	named := func(t string) string {
		if n, ok := alias[strings.ToLower(t)]; ok {
			return n
		}
		return strings.ToLower(t)
	}
	if s.dialect.name == SQLite {
		rows, err := s.DB.QueryContext(ctx, `EXPLAIN QUERY PLAN `+query, args...)
		if err != nil {
			return nil, fmt.Errorf("explain: %w\n%s", err, query)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				return nil, err
			}
			f := strings.Fields(detail)
			if len(f) >= 2 && f[0] == "SCAN" && slices.Contains(tables, named(f[1])) {
				out = append(out, detail)
			}
		}
		return out, rows.Err()
	}
	size, err := s.tableRows(ctx, tables)
	if err != nil {
		return nil, err
	}
	rows, err := s.DB.QueryContext(ctx, `EXPLAIN `+query, args...)
	if err != nil {
		return nil, fmt.Errorf("explain: %w\n%s", err, query)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		col := func(name string) string {
			if i := slices.Index(cols, name); i >= 0 {
				return vals[i].String
			}
			return ""
		}
		// An INSERT's own row (select_type INSERT) names the table written, not read.
		if col("select_type") == "INSERT" {
			continue
		}
		t := named(col("table"))
		if !slices.Contains(tables, t) {
			continue
		}
		est, _ := strconv.ParseInt(col("rows"), 10, 64)
		if col("type") == "ALL" || col("type") == "index" || (est >= 1000 && 4*est >= size[t]) {
			out = append(out, fmt.Sprintf("%s: type=%s key=%s rows=%s %s", t, col("type"), col("key"), col("rows"), col("Extra")))
		}
	}
	return out, rows.Err()
}

// tableRows returns the engine's estimate of each table's rows (MySQL).
func (s *Store) tableRows(ctx context.Context, tables []string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, t := range tables {
		var n sql.NullInt64
		if err := s.DB.QueryRowContext(ctx, `SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA=DATABASE() AND TABLE_NAME=?`, t).
			Scan(&n); err != nil {
			return nil, fmt.Errorf("explain: rows of %s: %w", t, err)
		}
		out[t] = n.Int64
	}
	return out, nil
}

// aliasRE finds a table after FROM, JOIN, UPDATE or INTO with the alias that may follow.
var aliasRE = regexp.MustCompile(`(?i)\b(?:FROM|JOIN|UPDATE|INTO)\s+(\w+)(?:\s+(?:AS\s+)?(\w+))?`)

// tableAliases maps the aliases of a query's tables (lower case) to the tables.
func tableAliases(query string) map[string]string {
	keywords := map[string]bool{"where": true, "set": true, "on": true, "join": true, "left": true, "inner": true, "cross": true,
		"order": true, "group": true, "limit": true, "values": true, "select": true, "using": true, "natural": true, "for": true}
	out := map[string]string{}
	for _, m := range aliasRE.FindAllStringSubmatch(query, -1) {
		if a := strings.ToLower(m[2]); a != "" && !keywords[a] {
			out[a] = strings.ToLower(m[1])
		}
	}
	return out
}
