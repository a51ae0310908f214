package store

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/bkit/bkit/lib/quota"
)

// QuotaStates returns the quota state of each app version the host has one of
// (host_app_version), by app version id; a version without a row has the zero state.
// The rows are read locked until commit (MySQL: FOR UPDATE; SQLite: the write lock):
// the request writes them back (SaveQuotaState) whole, and a bretry pass may change
// max_jobs_per_day meanwhile (AdjustQuotas), which a snapshot read would overwrite.
func (t *Tx) QuotaStates(hostID int64) (map[int64]quota.State, error) {
	rows, err := t.query(`SELECT app_version_id, max_jobs_per_day, n_jobs_today, jobs_day FROM host_app_version WHERE host_id=?`+t.s.dialect.forUpdate, hostID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]quota.State{}
	for rows.Next() {
		var id int64
		var q quota.State
		if err := rows.Scan(&id, &q.MaxPerDay, &q.Today, &q.Day); err != nil {
			return nil, err
		}
		out[id] = q
	}
	return out, rows.Err()
}

// SaveQuotaState writes the host's quota state of app version avID; exists says
// whether QuotaStates, in this transaction, found a row. The host's own row, updated
// earlier in every scheduler request, serialises the requests of one host, so the row
// cannot appear meanwhile.
func (t *Tx) SaveQuotaState(hostID, avID int64, q quota.State, exists bool) error {
	if exists {
		_, err := t.exec(`UPDATE host_app_version SET max_jobs_per_day=?, n_jobs_today=?, jobs_day=? WHERE host_id=? AND app_version_id=?`,
			q.MaxPerDay, q.Today, q.Day, hostID, avID)
		return err
	}
	_, err := t.exec(`INSERT INTO host_app_version (host_id, app_version_id, max_jobs_per_day, n_jobs_today, jobs_day) VALUES (?, ?, ?, ?, ?)`,
		hostID, avID, q.MaxPerDay, q.Today, q.Day)
	return err
}

// InProgressByVersion counts the host's results in progress by app version id.
func (t *Tx) InProgressByVersion(hostID int64) (map[int64]int, error) {
	rows, err := t.query(`SELECT app_version_id, COUNT(*) FROM result WHERE hostid=? AND server_state=? GROUP BY app_version_id`, hostID, ServerStateInProgress)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

// ResultHost is a result with the host and app version it was sent to and with: what
// a change of the result's state does to that host's quota of that version.
type ResultHost struct {
	ResultID, HostID, AppVersionID int64
}

// resultHosts reads the results of query (id, hostid, app_version_id).
func (t *Tx) resultHosts(query string, args ...any) ([]ResultHost, error) {
	rows, err := t.query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ResultHost
	for rows.Next() {
		var r ResultHost
		if err := rows.Scan(&r.ResultID, &r.HostID, &r.AppVersionID); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// NewlyValid returns those of the results ids that are not valid yet, locked until
// commit (MySQL; SQLite's transaction holds the write lock): the ones whose
// validation now changes their host's quota. A result judged valid again (its
// workunit validated once more) is not among them, so its quota rises once.
func (t *Tx) NewlyValid(ids []int64) ([]ResultHost, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list, args := inList(ids)
	return t.resultHosts(`SELECT id, hostid, app_version_id FROM result WHERE validate_state<>? AND id IN `+list+t.s.dialect.forUpdate,
		append([]any{ValidateValid}, args...)...)
}

// quotaPairs bounds the (host, app version) pairs of one statement of AdjustQuotas.
const quotaPairs = 500

// AdjustQuotas applies change (quota.AfterError, quota.AfterSuccess) to the daily
// quota (max_jobs_per_day) of the host and app version of each of results, once per
// result, as BOINC's transitioner and validator do when a result times out or is
// found valid. The results are of the app appID. A pair without a host_app_version
// row (the scheduler writes one when it sends the host a job of the version, so only
// results sent before quotas existed) is left as it is, as BOINC's result_timed_out
// does when hav_lookup finds none. The rows are read locked (MySQL: FOR UPDATE;
// SQLite: the write lock), so two passes changing one host's quota at once both
// count, and written by one statement per 500 pairs; only max_jobs_per_day is
// written, so the day's count of jobs sent, the scheduler's, is never overwritten.
func (t *Tx) AdjustQuotas(appID int64, results []ResultHost, change func(quota.Limits, quota.State) quota.State) error {
	type pair struct{ host, av int64 }
	count := map[pair]int{}
	for _, r := range results {
		if r.HostID != 0 && r.AppVersionID != 0 {
			count[pair{r.HostID, r.AppVersionID}]++
		}
	}
	if len(count) == 0 {
		return nil
	}
	limits, err := t.appQuotaLimits(appID)
	if err != nil {
		return err
	}
	pairs := slices.SortedFunc(maps.Keys(count), func(a, b pair) int {
		return cmp.Or(cmp.Compare(a.host, b.host), cmp.Compare(a.av, b.av))
	})
	for lo := 0; lo < len(pairs); lo += quotaPairs {
		part := pairs[lo:min(len(pairs), lo+quotaPairs)]
		where := make([]string, len(part))
		var args []any
		for i, p := range part {
			where[i] = `(host_id=? AND app_version_id=?)`
			args = append(args, p.host, p.av)
		}
		cond := strings.Join(where, ` OR `)
		rows, err := t.query(`SELECT host_id, app_version_id, max_jobs_per_day, n_jobs_today, jobs_day FROM host_app_version WHERE `+cond+t.s.dialect.forUpdate, args...)
		if err != nil {
			return err
		}
		var cases []string
		var setArgs []any
		for rows.Next() {
			var p pair
			var s quota.State
			if err := rows.Scan(&p.host, &p.av, &s.MaxPerDay, &s.Today, &s.Day); err != nil {
				rows.Close()
				return err
			}
			l, ok := limits[p.av]
			if !ok {
				continue
			}
			n := s
			for range count[p] {
				n = change(l, n)
			}
			if n.MaxPerDay != s.MaxPerDay {
				cases = append(cases, `WHEN host_id=? AND app_version_id=? THEN ?`)
				setArgs = append(setArgs, p.host, p.av, n.MaxPerDay)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(cases) == 0 {
			continue
		}
		if _, err := t.exec(`UPDATE host_app_version SET max_jobs_per_day=CASE `+strings.Join(cases, ` `)+` ELSE max_jobs_per_day END WHERE `+cond,
			append(setArgs, args...)...); err != nil {
			return err
		}
	}
	return nil
}

// appQuotaLimits returns the quotas of each version of the app appID (deprecated ones
// too: their results still time out and validate), by app version id.
func (t *Tx) appQuotaLimits(appID int64) (map[int64]quota.Limits, error) {
	rows, err := t.query(`SELECT v.id, v.coproc_type, a.daily_quota, a.daily_quota_gpu, a.max_in_progress, a.max_in_progress_gpu
		FROM app_version v JOIN app a ON a.id=v.appid WHERE v.appid=?`, appID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]quota.Limits{}
	for rows.Next() {
		var id int64
		var coproc string
		var cpu, gpu quota.Limits
		if err := rows.Scan(&id, &coproc, &cpu.PerDay, &gpu.PerDay, &cpu.InProgress, &gpu.InProgress); err != nil {
			return nil, err
		}
		if out[id] = cpu; coproc != "" {
			out[id] = gpu
		}
	}
	return out, rows.Err()
}
