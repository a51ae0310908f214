package store

import (
	"context"
	"fmt"
)

// AppBacklog is one app's jobs at each stage of their life (issue 31's status page,
// BOINC's server_status.php): results unsent and in progress, workunits waiting for
// the validator, the assimilator and the file deleter.
type AppBacklog struct {
	App            string `json:"app" xml:"name"`
	Unsent         int64  `json:"unsent" xml:"unsent"`
	InProgress     int64  `json:"in_progress" xml:"in_progress"`
	WaitValidate   int64  `json:"waiting_for_validation" xml:"waiting_for_validation"`
	WaitAssimilate int64  `json:"waiting_for_assimilation" xml:"waiting_for_assimilation"`
	WaitDelete     int64  `json:"waiting_for_deletion" xml:"waiting_for_deletion"`
}

// ProjectStatus is what the status page shows of the database at Time.
type ProjectStatus struct {
	Time float64      `json:"time"`
	Apps []AppBacklog `json:"apps"`
	// Results reported (received) and validated (judged valid by the validator) in
	// the last hour and the last day before Time.
	ReportedHour  int64 `json:"results_reported_last_hour"`
	ReportedDay   int64 `json:"results_reported_last_day"`
	ValidatedHour int64 `json:"results_validated_last_hour"`
	ValidatedDay  int64 `json:"results_validated_last_day"`
	// Hosts that made a scheduler request in the last day, and the users they
	// belong to (bkit's own hosts have none).
	HostsActiveDay int64 `json:"hosts_active_last_day"`
	UsersActiveDay int64 `json:"users_active_last_day"`
	Hosts          int64 `json:"hosts"`
	Users          int64 `json:"users"`
	// CronJobs are the cron jobs' recorded runs.
	CronJobs []CronJob `json:"cron_jobs"`
}

// ProjectStatus reads the status page's figures at now. Every count is one index
// range (migration 14 indexes the times), so a page over a million results stays
// fast: per app, the unsent and in-progress results by (server_state, appid), the
// workunits waiting for validation by (appid, need_validate), those waiting for
// assimilation and deletion by their lifecycle indexes.
func (s *Store) ProjectStatus(ctx context.Context, now float64) (*ProjectStatus, error) {
	st := &ProjectStatus{Time: now, Apps: []AppBacklog{}}
	apps := map[int64]int{}
	rows, err := s.DB.QueryContext(ctx, `SELECT id, name FROM app ORDER BY name`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var a AppBacklog
		if err := rows.Scan(&id, &a.App); err != nil {
			rows.Close()
			return nil, err
		}
		apps[id] = len(st.Apps)
		st.Apps = append(st.Apps, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	perApp := []struct {
		q   string
		get func(*AppBacklog) *int64
	}{
		{`SELECT appid, COUNT(*) FROM result WHERE server_state=2 GROUP BY appid`, func(a *AppBacklog) *int64 { return &a.Unsent }},
		{`SELECT appid, COUNT(*) FROM result WHERE server_state=4 GROUP BY appid`, func(a *AppBacklog) *int64 { return &a.InProgress }},
		{`SELECT appid, COUNT(*) FROM workunit WHERE assimilate_ready=1 GROUP BY appid`, func(a *AppBacklog) *int64 { return &a.WaitAssimilate }},
		{`SELECT appid, COUNT(*) FROM workunit WHERE assimilate_state=2 AND file_delete_state=0 GROUP BY appid`, func(a *AppBacklog) *int64 { return &a.WaitDelete }},
	}
	for _, c := range perApp {
		if err := s.countByApp(ctx, c.q, nil, func(appid, n int64) {
			if i, ok := apps[appid]; ok {
				*c.get(&st.Apps[i]) = n
			}
		}); err != nil {
			return nil, err
		}
	}
	// need_validate leads no index; (appid, need_validate) does: one range per app.
	for id, i := range apps {
		if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM workunit WHERE appid=? AND need_validate=1`, id).Scan(&st.Apps[i].WaitValidate); err != nil {
			return nil, err
		}
	}
	for _, c := range []struct {
		q    string
		args []any
		n    *int64
	}{
		{`SELECT COUNT(*) FROM result WHERE received_time>?`, []any{now - 3600}, &st.ReportedHour},
		{`SELECT COUNT(*) FROM result WHERE received_time>?`, []any{now - 86400}, &st.ReportedDay},
		{`SELECT COUNT(*) FROM result WHERE validate_time>? AND validate_state=1`, []any{now - 3600}, &st.ValidatedHour},
		{`SELECT COUNT(*) FROM result WHERE validate_time>? AND validate_state=1`, []any{now - 86400}, &st.ValidatedDay},
		{`SELECT COUNT(*) FROM host WHERE rpc_time>?`, []any{now - 86400}, &st.HostsActiveDay},
		{`SELECT COUNT(DISTINCT userid) FROM host WHERE rpc_time>? AND userid<>0`, []any{now - 86400}, &st.UsersActiveDay},
		{`SELECT COUNT(*) FROM host`, nil, &st.Hosts},
		{`SELECT COUNT(*) FROM user`, nil, &st.Users},
	} {
		if err := s.DB.QueryRowContext(ctx, c.q, c.args...).Scan(c.n); err != nil {
			return nil, fmt.Errorf("%s: %w", c.q, err)
		}
	}
	st.CronJobs, err = s.CronJobs(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// countByApp runs a "SELECT appid, COUNT(*) … GROUP BY appid" and hands each row to f.
func (s *Store) countByApp(ctx context.Context, q string, args []any, f func(appid, n int64)) error {
	rows, err := s.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var appid, n int64
		if err := rows.Scan(&appid, &n); err != nil {
			return err
		}
		f(appid, n)
	}
	return rows.Err()
}
