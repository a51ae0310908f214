package store

import (
	"context"
	"fmt"
	"strconv"
)

// PopulateSpec describes synthetic rows that give a database a real project's size:
// the history of finished work that makes the workunit and result tables large, some
// work in progress on many hosts, and some unsent. Benchmarks and plan tests at scale
// (EXPLAIN) use it; the rows are what the scheduler and the cron jobs would have left.
type PopulateSpec struct {
	App string // an existing app; every workunit is of it
	// Hosts are new bkit hosts (authenticators "populate_HOSTID"), of one new account
	// (as the scheduler requires), the finished and in-progress results are spread
	// over, round robin; at least 1.
	Hosts int
	// Done workunits have their canonical result: every result over, a success and
	// valid, received long ago; assimilated and their files deleted.
	Done int
	// InProgress workunits have every result sent to a host, reported by none yet.
	InProgress int
	// DoneAssimilated: the Done workunits are also assimilated and their files
	// deleted, as the lifecycle jobs leave a running project's history; else they
	// are all waiting for the assimilator (its backlog).
	DoneAssimilated bool
	// Unsent workunits have every result unsent.
	Unsent int
	// ResultsPerWorkunit is each workunit's number of results (1 when 0).
	ResultsPerWorkunit int
}

// populateChunk is how many workunits one transaction of Populate writes (with their
// results): big enough that a million take a few hundred transactions, small enough
// that none holds SQLite's write lock or MariaDB's undo log for long.
const populateChunk = 5000

// populateRows is how many rows one multi-row INSERT of Populate carries: within
// SQLite's 32,766 parameters and MariaDB's default 16 MB packet at 19 columns.
const populateRows = 1000

// Populate adds spec's hosts, workunits and results with multi-row INSERTs in short
// transactions (1,000,000 workunits in well under a minute on SQLite). Workunits are
// named "populate_ID", results "populate_ID_K"; ids follow those in the tables. On
// MySQL the tables are analysed at the end, as InnoDB would do some time later.
func (s *Store) Populate(ctx context.Context, spec PopulateSpec, now float64) error {
	nres := max(1, spec.ResultsPerWorkunit)
	hosts := max(1, spec.Hosts)
	var appid int64
	var firstHost int64
	err := s.InTx(ctx, func(tx *Tx) error {
		var err error
		if appid, err = tx.appID(spec.App); err != nil {
			return err
		}
		if err := tx.queryRow(`SELECT COALESCE(MAX(id), 0)+1 FROM host`).Scan(&firstHost); err != nil {
			return err
		}
		r, err := tx.exec(`INSERT INTO user (create_time, name, email_addr, authenticator) VALUES (?, ?, ?, ?)`,
			now, "populate", "", NewAuthenticator())
		if err != nil {
			return err
		}
		userid, err := r.LastInsertId()
		if err != nil {
			return err
		}
		return tx.insertRowsN(`INSERT INTO host (id, create_time, authenticator, rpc_time, p_ncpus, p_fpops, userid)`, 7, hosts, populateRows,
			func(i int) []any {
				id := firstHost + int64(i)
				return []any{id, now, "populate_" + strconv.FormatInt(id, 10), now, 1, 1e9, userid}
			})
	})
	if err != nil {
		return fmt.Errorf("populate hosts: %w", err)
	}
	kinds := []struct {
		n     int
		state int
	}{{spec.Done, ServerStateOver}, {spec.InProgress, ServerStateInProgress}, {spec.Unsent, ServerStateUnsent}}
	for _, k := range kinds {
		for lo := 0; lo < k.n; lo += populateChunk {
			n := min(populateChunk, k.n-lo)
			err := s.InTx(ctx, func(tx *Tx) error {
				var wu0, res0 int64
				if err := tx.queryRow(`SELECT COALESCE(MAX(id), 0)+1 FROM workunit`).Scan(&wu0); err != nil {
					return err
				}
				if err := tx.queryRow(`SELECT COALESCE(MAX(id), 0)+1 FROM result`).Scan(&res0); err != nil {
					return err
				}
				err := tx.insertRowsN(`INSERT INTO workunit (id, create_time, appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound,
					min_quorum, target_nresults, max_error_results, max_total_results, max_success_results, transition_time,
					retry_check_time, canonical_resultid, assimilate_state, assimilate_time, file_delete_state, file_delete_time)`, 19, n, populateRows,
					func(i int) []any {
						id := wu0 + int64(i)
						check, canonical := now+86400, int64(0)
						assimilated, deleted, at := AssimilateInit, FileDeleteInit, 0.0
						if k.state == ServerStateOver {
							// Finished long ago: assimilated and its files deleted, as
							// the lifecycle jobs leave the history of a running project.
							check, canonical = 0, res0+int64(i*nres)
							assimilated, deleted, at = AssimilateDone, FileDeleteDone, now-1800
							if !spec.DoneAssimilated {
								assimilated, deleted, at = AssimilateInit, FileDeleteInit, 0
							}
						}
						return []any{id, now - 86400, appid, "populate_" + strconv.FormatInt(id, 10), 1e12, 1e13, 86400,
							nres, nres, 3, 10, 6, 0, check, canonical, assimilated, at, deleted, at}
					})
				if err != nil {
					return err
				}
				return tx.insertRowsN(`INSERT INTO result (id, create_time, workunitid, appid, name, server_state, outcome, validate_state,
					hostid, sent_time, received_time, report_deadline, cpu_time)`, 13, n*nres, populateRows, func(i int) []any {
					wu := wu0 + int64(i/nres)
					var host int64
					outcome, valid, sent, received, cpu := OutcomeInit, ValidateInit, 0.0, 0.0, 0.0
					if k.state != ServerStateUnsent {
						host = firstHost + (res0+int64(i))%int64(hosts)
						sent = now - 3600
					}
					if k.state == ServerStateOver {
						outcome, valid, received, cpu = OutcomeSuccess, ValidateValid, now-1800, 1000
					}
					return []any{res0 + int64(i), now - 86400, wu, appid, "populate_" + strconv.FormatInt(wu, 10) + "_" + strconv.Itoa(i%nres),
						k.state, outcome, valid, host, sent, received, sent + 86400, cpu}
				})
			})
			if err != nil {
				return fmt.Errorf("populate workunits: %w", err)
			}
		}
	}
	if s.dialect.name == MySQL {
		// InnoDB would update the statistics in the background some time after; plans
		// read right after Populate should see the tables' size.
		rows, err := s.DB.QueryContext(ctx, `ANALYZE TABLE host, workunit, result`)
		if err != nil {
			return fmt.Errorf("populate: %w", err)
		}
		rows.Close()
	}
	return nil
}
