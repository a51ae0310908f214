package store

import "strings"

// dialect holds everything that differs between SQLite and MySQL/MariaDB. The rest of
// the package writes SQL both accept.
type dialect struct {
	name string
	// id is the column definition of an auto-increment primary key.
	id string
	// tableOptions follows every CREATE TABLE.
	tableOptions string
	// skipLocked follows the candidate query of a job claim: on MySQL it locks the
	// candidates and skips those another transaction holds, so concurrent schedulers
	// pick different rows instead of queueing on the same one. SQLite has one writer
	// at a time and needs nothing.
	skipLocked string
	// unsentIndex follows the result table in the scheduler's candidate query
	// (UnsentCandidates): MariaDB's optimizer would walk the primary key instead.
	unsentIndex string
	// assimilateIndex follows workunit in the assimilator's claim (ClaimAssimilation).
	assimilateIndex string
	// retryIndex follows workunit in bretry's claim (RetryCandidates): MariaDB's plan
	// flips between workunit_due and the shorter workunit_retry, which reads every
	// workunit of the app whose retry time has passed, validated or not.
	retryIndex string
	// forUpdate locks rows read until commit (MySQL); SQLite's immediate transactions
	// already hold the database's write lock.
	forUpdate string
	// prepare: keep prepared statements. SQLite parses SQL in-process, so preparing
	// once saves real time; MySQL interpolates placeholders client-side instead, which
	// saves the round trips a per-transaction prepare would cost.
	prepare bool
}

var dialects = map[string]dialect{
	SQLite: {
		name:    SQLite,
		id:      "INTEGER PRIMARY KEY AUTOINCREMENT",
		prepare: true,
	},
	MySQL: {
		name:            MySQL,
		id:              "BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
		tableOptions:    " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
		skipLocked:      " FOR UPDATE SKIP LOCKED",
		unsentIndex:     " FORCE INDEX (result_unsent)",
		assimilateIndex: " FORCE INDEX (workunit_assimilate)",
		retryIndex:      " FORCE INDEX (workunit_due)",
		forUpdate:       " FOR UPDATE",
	},
}

// ddl rewrites the dialect placeholders of a schema statement: {ID} for an
// auto-increment key, {TABLE} after a CREATE TABLE's closing parenthesis, and
// {ON table} after DROP INDEX name (MySQL names the table; SQLite's index names are
// the schema's own).
func (d dialect) ddl(stmt string) string {
	stmt = strings.NewReplacer("{ID}", d.id, "{TABLE}", d.tableOptions).Replace(stmt)
	if i := strings.Index(stmt, "{ON "); i >= 0 {
		if j := strings.Index(stmt[i:], "}"); j > 0 {
			on := ""
			if d.name == MySQL {
				on = " " + stmt[i+1:i+j]
			}
			stmt = stmt[:i] + on + stmt[i+j+1:]
		}
	}
	return stmt
}
