package storetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/bkit/bkit/lib/store"
)

// readyTable marks a template whose migration finished; a template without it (its
// maker killed half-way) is dropped and made again.
const readyTable = "bkit_template_ready"

// template is this process's copy of the template, read once.
var template struct {
	once  sync.Once
	name  string
	stmts []string // CREATE TABLE statements (in no particular order), then the version rows' INSERTs
	err   error
}

// fillFromTemplate creates the schema's tables in the empty database dsn names and
// the template's schema_version rows, so Migrate finds nothing to do.
func fillFromTemplate(dsn string) error {
	template.once.Do(func() { template.name, template.stmts, template.err = loadTemplate(dsn) })
	if template.err != nil {
		return template.err
	}
	_, driverDSN, err := store.ParseDSN(dsn)
	if err != nil {
		return err
	}
	db, err := sql.Open("mysql", driverDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Tables refer to each other; without the checks they can be made in any order.
	if _, err := conn.ExecContext(ctx, "SET FOREIGN_KEY_CHECKS=0"); err != nil {
		return err
	}
	for _, st := range template.stmts {
		if _, err := conn.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("copying the template: %w\n%s", err, st)
		}
	}
	return nil
}

// loadTemplate makes sure the server holds a complete template for this schema
// (making it if not, under a lock other test processes wait on) and returns its name
// and its tables' CREATE TABLE statements. dsn is any database on the server.
func loadTemplate(dsn string) (string, []string, error) {
	name := "bkit_test_template_" + store.SchemaDigest(store.MySQL)[:16]
	_, driverDSN, err := store.ParseDSN(dsn)
	if err != nil {
		return "", nil, err
	}
	db, err := sql.Open("mysql", driverDSN)
	if err != nil {
		return "", nil, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 60)", name).Scan(&got); err != nil {
		return "", nil, err
	}
	if got.Int64 != 1 {
		return "", nil, errors.New("timed out waiting for another test process to make the template " + name)
	}
	defer conn.ExecContext(context.Background(), "SELECT RELEASE_LOCK(?)", name)
	tables := func() ([]string, bool, error) {
		rows, err := conn.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema=?", name)
		if err != nil {
			return nil, false, err
		}
		defer rows.Close()
		var names []string
		ready := false
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return nil, false, err
			}
			if n == readyTable {
				ready = true
				continue
			}
			names = append(names, n)
		}
		return names, ready, rows.Err()
	}
	names, ready, err := tables()
	if err != nil {
		return "", nil, err
	}
	if !ready {
		if err := makeTemplate(ctx, conn, dsn, name); err != nil {
			return "", nil, fmt.Errorf("making the template %s: %w", name, err)
		}
		if names, _, err = tables(); err != nil {
			return "", nil, err
		}
	}
	var stmts []string
	for _, n := range names {
		var table, create string
		if err := conn.QueryRowContext(ctx, "SHOW CREATE TABLE "+name+"."+n).Scan(&table, &create); err != nil {
			return "", nil, err
		}
		stmts = append(stmts, create)
	}
	// The version rows too, as statements: filling a database then reads nothing of
	// the template, which a test process of another schema may drop meanwhile.
	rows, err := conn.QueryContext(ctx, "SELECT version, applied_time FROM "+name+".schema_version ORDER BY version")
	if err != nil {
		return "", nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		var at float64
		if err := rows.Scan(&v, &at); err != nil {
			return "", nil, err
		}
		stmts = append(stmts, fmt.Sprintf("INSERT INTO schema_version (version, applied_time) VALUES (%d, %s)", v, strconv.FormatFloat(at, 'g', -1, 64)))
	}
	return name, stmts, rows.Err()
}

// makeTemplate (re)creates the template database name by migrating it, and marks it
// complete last. The templates of other schemas (older checkouts) are dropped unless
// another process holds one's lock, so the server keeps few.
func makeTemplate(ctx context.Context, conn *sql.Conn, dsn, name string) error {
	rows, err := conn.QueryContext(ctx, "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'bkit\\_test\\_template\\_%'")
	if err != nil {
		return err
	}
	var old []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		old = append(old, n)
	}
	rows.Close()
	for _, n := range append(old, name) {
		// A template another test process is making or reading holds its lock:
		// dropping it then failed that process's migration ("Table … doesn't
		// exist") whenever checkouts of two schemas ran tests at once.
		var user sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", n).Scan(&user); err != nil {
			return err
		}
		if n != name && user.Valid {
			continue
		}
		if _, err := conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+n); err != nil {
			return err
		}
	}
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return err
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return err
	}
	u.Path = "/" + name
	s, err := store.Open(u.String())
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Migrate(ctx, 1); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "CREATE TABLE "+name+"."+readyTable+" (made DOUBLE NOT NULL)")
	return err
}
