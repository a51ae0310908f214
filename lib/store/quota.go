package store

import (
	"strings"

	"github.com/bkit/bkit/lib/quota"
)

// QuotaStates returns the quota state of each app version the host has one of
// (host_app_version), by app version id; a version without a row has the zero state.
func (t *Tx) QuotaStates(hostID int64) (map[int64]quota.State, error) {
	rows, err := t.query(`SELECT app_version_id, max_jobs_per_day, n_jobs_today, jobs_day FROM host_app_version WHERE host_id=?`, hostID)
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

// ResultVersions returns the app version each named result of the host was sent with.
func (t *Tx) ResultVersions(hostID int64, names []string) (map[string]int64, error) {
	out := map[string]int64{}
	for lo := 0; lo < len(names); lo += 500 {
		part := names[lo:min(len(names), lo+500)]
		args := []any{hostID}
		for _, n := range part {
			args = append(args, n)
		}
		rows, err := t.query(`SELECT name, app_version_id FROM result WHERE hostid=? AND name IN (?`+strings.Repeat(", ?", len(part)-1)+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var name string
			var id int64
			if err := rows.Scan(&name, &id); err != nil {
				rows.Close()
				return nil, err
			}
			out[name] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
