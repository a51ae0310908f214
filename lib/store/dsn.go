package store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// ParseDSN splits a --db value into the engine and the driver's own DSN.
func ParseDSN(dsn string) (engine, driverDSN string, err error) {
	switch {
	case dsn == "":
		return "", "", errors.New("empty database name: want sqlite:PATH, PATH or mysql://user:pass@host:port/db")
	case strings.HasPrefix(dsn, "mysql://"):
		u, err := url.Parse(dsn)
		if err != nil {
			return "", "", fmt.Errorf("%s: %v", dsn, err)
		}
		db := strings.TrimPrefix(u.Path, "/")
		if db == "" || strings.Contains(db, "/") {
			return "", "", fmt.Errorf("%s: want mysql://user:pass@host:port/db", dsn)
		}
		cfg := mysql.NewConfig()
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net = "tcp"
		cfg.Addr = u.Host
		if u.Port() == "" {
			cfg.Addr = u.Host + ":3306"
		}
		cfg.DBName = db
		// Placeholders are interpolated client-side: one round trip per statement
		// instead of prepare+execute+close.
		cfg.InterpolateParams = true
		cfg.Params = map[string]string{}
		for k, v := range u.Query() {
			cfg.Params[k] = v[0]
		}
		return MySQL, cfg.FormatDSN(), nil
	case strings.Contains(dsn, "://"):
		return "", "", fmt.Errorf("%s: unknown database scheme: want sqlite:PATH, PATH or mysql://user:pass@host:port/db", dsn)
	}
	path, sync, err := sqliteOptions(dsn)
	if err != nil {
		return "", "", err
	}
	return SQLite, sqliteDriverDSN(path, sync), nil
}

// sqliteDriverDSN is go-sqlite3's DSN for the file at path at the synchronous level
// sync.
func sqliteDriverDSN(path, sync string) string {
	// WAL lets readers run beside the writer. synchronous=FULL syncs the WAL at every
	// commit, so a transaction the scheduler has answered for (a report acknowledged to
	// a client, which then forgets it) survives a power cut, not just a process crash,
	// as it does on MariaDB with innodb_flush_log_at_trx_commit=1 (docs/bserver.md);
	// Open gives a Store at FULL a connection at NORMAL and makes that sync itself,
	// after the write lock (walsync.go).
	// _txlock=immediate takes the write lock at BEGIN, so two processes never both read
	// then deadlock trying to upgrade to write.
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", fmt.Sprint(sqliteBusyPoll.Milliseconds()))
	q.Set("_txlock", "immediate")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", sync)
	return "file:" + path + "?" + q.Encode()
}

// sqliteOptions splits "sqlite:PATH[?synchronous=full|normal|extra]" into the path and
// the synchronous setting (FULL unless the DSN says otherwise: NORMAL trades the last
// commits before a power cut for speed).
func sqliteOptions(dsn string) (path, sync string, err error) {
	path, query, _ := strings.Cut(strings.TrimPrefix(dsn, "sqlite:"), "?")
	if path == "" {
		return "", "", fmt.Errorf("%s: missing file name", dsn)
	}
	sync = "FULL"
	opts, err := url.ParseQuery(query)
	if err != nil {
		return "", "", fmt.Errorf("%s: %v", dsn, err)
	}
	for k, v := range opts {
		if k != "synchronous" {
			return "", "", fmt.Errorf("%s: unknown option %q: the only one is synchronous=full|normal|extra", dsn, k)
		}
		switch s := strings.ToUpper(v[len(v)-1]); s {
		case "FULL", "NORMAL", "EXTRA":
			sync = s
		default:
			return "", "", fmt.Errorf("%s: synchronous must be full, normal or extra, got %q", dsn, v[len(v)-1])
		}
	}
	return path, sync, nil
}

// SQLitePath returns the file of a SQLite DSN, and false for other engines.
func SQLitePath(dsn string) (string, bool) {
	engine, _, err := ParseDSN(dsn)
	if err != nil || engine != SQLite {
		return "", false
	}
	path, _, _ := sqliteOptions(dsn)
	return path, true
}
