package storetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bkit/bkit/lib/store"
)

// readyTable marks a template whose migration finished; a template without it (its
// maker killed half-way) is dropped and made again.
const readyTable = "bkit_template_ready"

// template is this process's copy of the template, read once.
var template struct {
	once     sync.Once
	name     string
	tables   []string // its tables, sorted
	creates  []string // their CREATE TABLE statements, in the same order
	versions []string // the version rows' INSERTs
	err      error
	loaded   atomic.Bool // once is done and err is nil
}

// fillFromTemplate gives the empty database dsn names the schema's tables and the
// template's schema_version rows, so Migrate finds nothing to do: a spare's tables
// (spares.go) if there is one, else tables created from the template's statements.
func fillFromTemplate(dsn string) error {
	template.once.Do(func() {
		template.name, template.tables, template.creates, template.versions, template.err = loadTemplate(dsn)
		template.loaded.Store(template.err == nil)
	})
	if template.err != nil {
		return template.err
	}
	_, driverDSN, err := store.ParseDSN(dsn)
	if err != nil {
		return err
	}
	if u, err := url.Parse(dsn); err == nil && ownerOpened() != nil && fillFromSpare(owner.db, strings.TrimPrefix(u.Path, "/")) {
		return nil
	}
	db, err := sql.Open("mysql", driverDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A CREATE TABLE waits mostly on the server's disk, and the server makes several
	// at once about as fast as one: a few connections share them.
	const ways = 5
	errs := make([]error, ways)
	var wg sync.WaitGroup
	for w := range ways {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(ctx)
			if err != nil {
				errs[w] = err
				return
			}
			defer conn.Close()
			// Tables refer to each other; without the checks they can be made in any order.
			if _, err := conn.ExecContext(ctx, "SET FOREIGN_KEY_CHECKS=0"); err != nil {
				errs[w] = err
				return
			}
			for i := w; i < len(template.creates); i += ways {
				if _, err := conn.ExecContext(ctx, template.creates[i]); err != nil {
					errs[w] = fmt.Errorf("copying the template: %w\n%s", err, template.creates[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, st := range template.versions {
		if _, err := db.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("copying the template: %w\n%s", err, st)
		}
	}
	return nil
}

// loadTemplate makes sure the server holds a complete template for this schema
// (making it if not, under a lock other test processes wait on) and returns its name
// and its tables, their CREATE TABLE statements and its version rows' INSERTs. dsn is
// any database on the server.
func loadTemplate(dsn string) (name string, tables, creates, versions []string, err error) {
	name = "bkit_test_template_" + store.SchemaDigest(store.MySQL)[:16]
	_, driverDSN, err := store.ParseDSN(dsn)
	if err != nil {
		return "", nil, nil, nil, err
	}
	db, err := sql.Open("mysql", driverDSN)
	if err != nil {
		return "", nil, nil, nil, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", nil, nil, nil, err
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 60)", name).Scan(&got); err != nil {
		return "", nil, nil, nil, err
	}
	if got.Int64 != 1 {
		return "", nil, nil, nil, errors.New("timed out waiting for another test process to make the template " + name)
	}
	defer conn.ExecContext(context.Background(), "SELECT RELEASE_LOCK(?)", name)
	list := func() ([]string, bool, error) {
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
	names, ready, err := list()
	if err != nil {
		return "", nil, nil, nil, err
	}
	if !ready {
		if err := makeTemplate(ctx, conn, dsn, name); err != nil {
			return "", nil, nil, nil, fmt.Errorf("making the template %s: %w", name, err)
		}
		if names, _, err = list(); err != nil {
			return "", nil, nil, nil, err
		}
	}
	slices.Sort(names)
	for _, n := range names {
		var table, create string
		if err := conn.QueryRowContext(ctx, "SHOW CREATE TABLE "+name+"."+n).Scan(&table, &create); err != nil {
			return "", nil, nil, nil, err
		}
		creates = append(creates, create)
	}
	// The version rows too, as statements: filling a database then reads nothing of
	// the template, which a test process of another schema may drop meanwhile.
	rows, err := conn.QueryContext(ctx, "SELECT version, applied_time FROM "+name+".schema_version ORDER BY version")
	if err != nil {
		return "", nil, nil, nil, err
	}
	versions, err = versionInserts(rows)
	return name, names, creates, versions, err
}

// versionInserts reads the rows of SELECT version, applied_time FROM schema_version
// as the INSERTs that make them, and closes rows.
func versionInserts(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v int64
		var at float64
		if err := rows.Scan(&v, &at); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("INSERT INTO schema_version (version, applied_time) VALUES (%d, %s)", v, strconv.FormatFloat(at, 'g', -1, 64)))
	}
	return out, rows.Err()
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
