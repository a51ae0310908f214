package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Making a test database's tables costs a file per table (some 25 CREATE TABLEs, a
// second or more on the shared test machine) and dropping them as much again: most
// of a short MySQL test's time. So a database a test is done with is not dropped but
// emptied, if it still has exactly the template's schema, and kept as a spare; Open
// then moves a spare's tables into the next fresh database (one RENAME TABLE, all or
// nothing) instead of creating them. The fresh database stays what MySQLDSN promises,
// empty until Open fills it, and its name is new.
//
// Spares outlive their process (go test ends it without telling anyone), so every
// database made here is owned through a named lock, held on one connection of the
// process for as long as the database is in use or spare. A database of ours whose
// lock is free is an orphan (its process ended): another process may adopt it as a
// spare after checking it as carefully as its own, or drop it.

// dbPrefix names the databases made here. The older storetest made bkit_test_<hex>
// without locks: those are never touched.
const dbPrefix = "bkit_t_"

// spareRowsMax: a database holding more rows than this is dropped rather than
// emptied row by row.
const spareRowsMax = 5000

// owner is this process's connection to the test server: the named locks on its
// databases live on lock.
var owner struct {
	once   sync.Once
	db     *sql.DB
	lock   *sql.Conn
	err    error
	mu     sync.Mutex // serialises the lock connection
	spares []string   // emptied databases with the template's tables, owned
}

// ownerDB opens the process's connection to the server (driverDSN names any database
// on it) once.
func ownerDB(driverDSN string) (*sql.DB, error) {
	owner.once.Do(func() {
		owner.db, owner.err = sql.Open("mysql", driverDSN)
		if owner.err != nil {
			return
		}
		owner.lock, owner.err = owner.db.Conn(context.Background())
	})
	return owner.db, owner.err
}

// ownerOpened is the process's connection to the server, or nil before the first
// database was made.
func ownerOpened() *sql.DB {
	owner.once.Do(func() { owner.err = errors.New("no test database made yet") })
	if owner.err != nil {
		return nil
	}
	return owner.db
}

// lockQuery runs a GET_LOCK-family query on the lock connection, each ? the name.
func lockQuery(q, name string) (sql.NullInt64, error) {
	owner.mu.Lock()
	defer owner.mu.Unlock()
	var got sql.NullInt64
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := make([]any, strings.Count(q, "?"))
	for i := range args {
		args[i] = name
	}
	err := owner.lock.QueryRowContext(ctx, q, args...).Scan(&got)
	return got, err
}

// newDatabase creates a database with a new name (prefix and random hex), owned by
// this process.
func newDatabase(db *sql.DB, prefix string) (string, error) {
	var b [6]byte
	rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	// The lock first: a database of ours without it is an orphan to others.
	if got, err := lockQuery("SELECT GET_LOCK(?, 0)", name); err != nil || got.Int64 != 1 {
		return "", fmt.Errorf("locking %s: %v (%v)", name, got, err)
	}
	if _, err := db.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		lockQuery("SELECT RELEASE_LOCK(?)", name)
		return "", err
	}
	return name, nil
}

// release ends a test's use of database name: kept as a spare if it empties to the
// template's schema, else dropped. It returns at once: the test need not wait, and
// if the process ends first, the database is an orphan the next process adopts.
func release(db *sql.DB, name string) {
	go func() {
		if template.loaded.Load() && recycle(db, name, time.Second) == nil {
			owner.mu.Lock()
			owner.spares = append(owner.spares, name)
			owner.mu.Unlock()
			return
		}
		drop(db, name)
	}()
}

// drop drops an owned database and gives up its lock.
func drop(db *sql.DB, name string) {
	db.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name)
	lockQuery("SELECT RELEASE_LOCK(?)", name)
}

// takeSpare returns an owned spare database, one of this process's or an orphan
// adopted, or "" when there is none.
func takeSpare(db *sql.DB) string {
	owner.mu.Lock()
	if n := len(owner.spares); n > 0 {
		name := owner.spares[n-1]
		owner.spares = owner.spares[:n-1]
		owner.mu.Unlock()
		return name
	}
	owner.mu.Unlock()
	return adoptOrphan(db, dbPrefix)
}

// adoptOrphan takes over one database of ours (named prefix…) whose process ended: a
// spare of the template's schema if it empties to it; otherwise it is dropped and the
// next looked at.
func adoptOrphan(db *sql.DB, prefix string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE ?",
		strings.ReplaceAll(prefix, "_", `\_`)+"%")
	if err != nil {
		return ""
	}
	var names []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			names = append(names, n)
		}
	}
	rows.Close()
	for _, n := range names {
		// A connection may take a lock it holds again: ours are in use too.
		if got, err := lockQuery("SELECT IF(IS_USED_LOCK(?) IS NULL, GET_LOCK(?, 0), 0)", n); err != nil || got.Int64 != 1 {
			continue // in use, by a live process or by us
		}
		switch err := recycle(db, n, 0); {
		case err == nil:
			return n
		case errors.Is(err, errInUse):
			// Not ours to drop: its owner's lock may be gone with its connection to
			// the server while its tests still run.
			lockQuery("SELECT RELEASE_LOCK(?)", n)
		default:
			drop(db, n)
		}
	}
	return ""
}

// errInUse: a connection is on the database.
var errInUse = errors.New("connections on the database")

// autoIncrement is the table option SHOW CREATE TABLE shows once rows were inserted.
var autoIncrement = regexp.MustCompile(` AUTO_INCREMENT=\d+`)

// recycle empties database name and checks it is then exactly what the template
// makes: no connection on it (after waiting up to wait for them to go), the template's tables (SHOW CREATE TABLE alike, so
// every column, key, foreign key and table option, and no AUTO_INCREMENT counter
// moved), nothing else in it, and the template's version rows.
func recycle(db *sql.DB, name string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var n int
	// A connection still on the database (a killed process's, until the server sees it
	// gone) may hold locks or commit later. The server takes a closed connection off
	// its list a little after the client closed it: a test's own database is given a
	// second for that.
	for until := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE db=?", name).Scan(&n)
		if err == nil && n == 0 {
			break
		}
		if err != nil {
			return err
		}
		if time.Now().After(until) {
			return fmt.Errorf("%s: %d: %w", name, n, errInUse)
		}
	}
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM information_schema.triggers WHERE trigger_schema=?) +
		(SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema=?) +
		(SELECT COUNT(*) FROM information_schema.events WHERE event_schema=?)`, name, name, name).Scan(&n); err != nil || n != 0 {
		return fmt.Errorf("%d triggers, routines or events in %s (%v)", n, name, err)
	}
	rows, err := conn.QueryContext(ctx, "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema=?", name)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var t, typ string
		if err := rows.Scan(&t, &typ); err != nil {
			rows.Close()
			return err
		}
		if typ != "BASE TABLE" {
			rows.Close()
			return fmt.Errorf("%s.%s is a %s", name, t, typ)
		}
		tables = append(tables, t)
	}
	rows.Close()
	slices.Sort(tables)
	if !slices.Equal(tables, template.tables) {
		return fmt.Errorf("%s has tables %q, the template %q", name, tables, template.tables)
	}
	// Rows (at most spareRowsMax+1 counted per table).
	var counts []string
	for _, t := range tables {
		if t != "schema_version" {
			counts = append(counts, fmt.Sprintf("SELECT '%s', COUNT(*) FROM (SELECT 1 FROM %s.%s LIMIT %d) x", t, name, t, spareRowsMax+1))
		}
	}
	rows, err = conn.QueryContext(ctx, strings.Join(counts, " UNION ALL "))
	if err != nil {
		return err
	}
	var full []string
	total := 0
	for rows.Next() {
		var t string
		var c int
		if err := rows.Scan(&t, &c); err != nil {
			rows.Close()
			return err
		}
		if c > 0 {
			full = append(full, t)
			total += c
		}
	}
	rows.Close()
	if total > spareRowsMax {
		return fmt.Errorf("%s holds over %d rows", name, spareRowsMax)
	}
	if len(full) > 0 {
		// One transaction: one sync; the tables refer to each other, in any order.
		if _, err := conn.ExecContext(ctx, "SET FOREIGN_KEY_CHECKS=0"); err != nil {
			return err
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for _, t := range full {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+name+"."+t); err != nil {
				tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	for i, t := range tables {
		show := func() (string, error) {
			var table, create string
			err := conn.QueryRowContext(ctx, "SHOW CREATE TABLE "+name+"."+t).Scan(&table, &create)
			return create, err
		}
		create, err := show()
		if err != nil {
			return err
		}
		if create != template.creates[i] && autoIncrement.MatchString(create) &&
			autoIncrement.ReplaceAllString(create, "") == template.creates[i] {
			// Emptied, the table takes the counter back to 1.
			if _, err := conn.ExecContext(ctx, "ALTER TABLE "+name+"."+t+" AUTO_INCREMENT=1"); err != nil {
				return err
			}
			if create, err = show(); err != nil {
				return err
			}
		}
		if create != template.creates[i] {
			return fmt.Errorf("%s.%s differs from the template:\n%s", name, t, create)
		}
	}
	vrows, err := conn.QueryContext(ctx, "SELECT version, applied_time FROM "+name+".schema_version ORDER BY version")
	if err != nil {
		return err
	}
	versions, err := versionInserts(vrows)
	if err != nil {
		return err
	}
	if !slices.Equal(versions, template.versions) {
		return errors.New(name + ": schema_version differs from the template's")
	}
	return nil
}

// fillFromSpare moves the tables of a spare database into the empty database name,
// and drops the spare; false when there is no spare or the move failed (the database
// is then as empty as before: RENAME TABLE moves all the tables or none).
func fillFromSpare(db *sql.DB, name string) bool {
	spare := takeSpare(db)
	return spare != "" && moveSpare(db, spare, name)
}

// moveSpare moves the tables of the spare database into the empty database name,
// and drops the spare.
func moveSpare(db *sql.DB, spare, name string) bool {
	moves := make([]string, len(template.tables))
	for i, t := range template.tables {
		moves[i] = spare + "." + t + " TO " + name + "." + t
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := db.ExecContext(ctx, "RENAME TABLE "+strings.Join(moves, ", "))
	drop(db, spare)
	return err == nil
}
