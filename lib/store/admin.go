package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/bkit/bkit/lib/quota"
	"github.com/bkit/bkit/lib/retry"
)

// Result server states, outcomes and validate states, with BOINC's numbers so that
// queries written for BOINC's database read bkit's the same way; the ones seed 003's
// rules use are lib/retry's, so the two packages cannot drift apart.
const (
	ServerStateInactive   = retry.ServerStateInactive
	ServerStateUnsent     = retry.ServerStateUnsent
	ServerStateInProgress = retry.ServerStateInProgress
	ServerStateOver       = retry.ServerStateOver

	OutcomeInit          = retry.OutcomeInit
	OutcomeSuccess       = retry.OutcomeSuccess
	OutcomeCouldntSend   = retry.OutcomeCouldntSend
	OutcomeClientError   = retry.OutcomeClientError
	OutcomeNoReply       = retry.OutcomeNoReply
	OutcomeDidntNeed     = retry.OutcomeDidntNeed
	OutcomeValidateError = retry.OutcomeValidateError

	ValidateInit         = retry.ValidateInit
	ValidateValid        = retry.ValidateValid
	ValidateInvalid      = retry.ValidateInvalid
	ValidateNoCheck      = 3
	ValidateInconclusive = 4
)

// Workunit error mask bits (BOINC's).
const (
	WUErrorCouldntSendResult     = 1
	WUErrorTooManyErrorResults   = 2
	WUErrorTooManySuccessResults = 4
	WUErrorTooManyTotalResults   = 8
	WUErrorCancelled             = 16
	WUErrorNoCanonicalResult     = 32
)

// ServerStateName and OutcomeName name the states for people.
var (
	ServerStateName = map[int]string{ServerStateInactive: "inactive", ServerStateUnsent: "unsent", ServerStateInProgress: "in_progress", ServerStateOver: "over"}
	OutcomeName     = map[int]string{OutcomeInit: "init", OutcomeSuccess: "success", OutcomeCouldntSend: "couldnt_send", OutcomeClientError: "client_error", OutcomeNoReply: "no_reply", OutcomeDidntNeed: "didnt_need", OutcomeValidateError: "validate_error"}
)

// ErrExists and ErrNotFound classify the caller's mistakes so programs can exit 2.
var (
	ErrExists   = errors.New("already exists")
	ErrNotFound = errors.New("not found")
)

// AddApp creates an application and returns its id. With locality, its jobs are sent
// by seed 004's locality scheduling: from the host's cursor, in job order.
func (s *Store) AddApp(ctx context.Context, name string, locality bool, now float64) (int64, error) {
	var id int64
	err := s.InTx(ctx, func(tx *Tx) error {
		var n int
		if err := tx.queryRow(`SELECT COUNT(*) FROM app WHERE name=?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("app %q: %w", name, ErrExists)
		}
		loc := 0
		if locality {
			loc = 1
		}
		r, err := tx.exec(`INSERT INTO app (create_time, name, locality_scheduling) VALUES (?, ?, ?)`, now, name, loc)
		if err != nil {
			return err
		}
		id, err = r.LastInsertId()
		return err
	})
	return id, err
}

// AppVersion is a version of an app: the resources it uses and its speed, and for a
// version a real client downloads, its platform and files. A version with no platform
// is platform-free (any host can run it; emulated and bkit clients need no files).
type AppVersion struct {
	ID          int64
	AppID       int64
	AppName     string
	VersionNum  int
	Platform    string // e.g. x86_64-pc-linux-gnu; "" for a platform-free version
	PlanClass   string
	AvgNCPUs    float64
	CoprocType  string  // "" for a CPU version
	CoprocCount float64 // instances of CoprocType, possibly fractional
	Flops       float64 // FLOPS a job of this version gets; 0: use the host's figures
	Locality    bool    // the app uses locality scheduling (read only)
	Files       []AppVersionFile
	// Quota is the app's quotas for this version's resource (its CPU or its GPU
	// limits; read only, Tx.AppVersions).
	Quota quota.Limits
}

// appID returns the id of the app named name.
func (t *Tx) appID(name string) (int64, error) {
	var id int64
	err := t.queryRow(`SELECT id FROM app WHERE name=?`, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("app %q: %w", name, ErrNotFound)
	}
	return id, err
}

// AddAppVersion creates an app version of the app av.AppName and returns its id.
func (s *Store) AddAppVersion(ctx context.Context, av AppVersion, now float64) (int64, error) {
	var id int64
	err := s.InTx(ctx, func(tx *Tx) error {
		appid, err := tx.appID(av.AppName)
		if err != nil {
			return err
		}
		var n int
		if err := tx.queryRow(`SELECT COUNT(*) FROM app_version WHERE appid=? AND version_num=? AND platform=? AND plan_class=?`,
			appid, av.VersionNum, av.Platform, av.PlanClass).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			if av.Platform != "" {
				return fmt.Errorf("app version %s %d %s %q: %w", av.AppName, av.VersionNum, av.Platform, av.PlanClass, ErrExists)
			}
			return fmt.Errorf("app version %s %d %q: %w", av.AppName, av.VersionNum, av.PlanClass, ErrExists)
		}
		r, err := tx.exec(`INSERT INTO app_version (create_time, appid, version_num, platform, plan_class, avg_ncpus, coproc_type, coproc_count, flops)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, now, appid, av.VersionNum, av.Platform, av.PlanClass, av.AvgNCPUs, av.CoprocType, av.CoprocCount, av.Flops)
		if err != nil {
			return err
		}
		if id, err = r.LastInsertId(); err != nil {
			return err
		}
		for i, f := range av.Files {
			main := 0
			if f.MainProgram {
				main = 1
			}
			if _, err := tx.exec(`INSERT INTO app_version_file (app_version_id, file_num, name, open_name, main_program, nbytes, md5_cksum, file_signature)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, i, f.Name, f.OpenName, main, f.NBytes, f.MD5, f.Signature); err != nil {
				return err
			}
		}
		return nil
	})
	return id, err
}

// WorkSpec is what create_work needs: the app, how many workunits, their estimates and
// their redundancy and error limits.
type WorkSpec struct {
	App               string
	Count             int
	NamePrefix        string // workunit names are PREFIX_ID; default the app name
	FpopsEst          float64
	FpopsBound        float64 // default 10 × FpopsEst
	DelayBound        float64 // seconds from sending to the report deadline
	MinQuorum         int
	TargetNResults    int
	MaxErrorResults   int
	MaxTotalResults   int
	MaxSuccessResults int
	// RetryDelay sets the first retry check time, now + RetryDelay; 0 means the app's
	// DWU (seed 003: "initially set to now + DWU"), the delay bretry adds at each check.
	RetryDelay float64
	BatchID    int64
	// Inputs are the input files every workunit of the spec reads (already in the
	// download directory); Outputs the output files each of their results writes.
	Inputs  []WUFile
	Outputs []WUOutput
}

// CreateWork creates spec.Count workunits, each with TargetNResults unsent results, in
// one transaction, and returns the workunit names.
func (s *Store) CreateWork(ctx context.Context, spec WorkSpec, now float64) ([]string, error) {
	if spec.NamePrefix == "" {
		spec.NamePrefix = spec.App
	}
	if spec.FpopsBound == 0 {
		spec.FpopsBound = 10 * spec.FpopsEst
	}
	var names []string
	err := s.InTx(ctx, func(tx *Tx) error {
		names = names[:0]
		appid, err := tx.appID(spec.App)
		if err != nil {
			return err
		}
		// Seed 003: a workunit's first retry check is now + DWU, a result's deadline
		// now + Dresult (the scheduler sets send time + delay_bound when it sends it).
		var dwu, dresult float64
		if err := tx.queryRow(`SELECT retry_dwu, retry_dresult FROM app WHERE id=?`, appid).Scan(&dwu, &dresult); err != nil {
			return err
		}
		check := now + dwu
		if spec.RetryDelay != 0 {
			check = now + spec.RetryDelay
		}
		var tmp [8]byte
		for i := 0; i < spec.Count; i++ {
			// The name holds the id, which is known only after the insert: insert
			// under a unique temporary name, then rename.
			rand.Read(tmp[:])
			r, err := tx.exec(`INSERT INTO workunit (create_time, appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound,
				min_quorum, target_nresults, max_error_results, max_total_results, max_success_results,
				transition_time, retry_check_time, batch_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				now, appid, "tmp_"+hex.EncodeToString(tmp[:]), spec.FpopsEst, spec.FpopsBound, spec.DelayBound,
				spec.MinQuorum, spec.TargetNResults, spec.MaxErrorResults, spec.MaxTotalResults, spec.MaxSuccessResults,
				check, check, spec.BatchID)
			if err != nil {
				return err
			}
			wuid, err := r.LastInsertId()
			if err != nil {
				return err
			}
			name := fmt.Sprintf("%s_%d", spec.NamePrefix, wuid)
			if _, err := tx.exec(`UPDATE workunit SET name=? WHERE id=?`, name, wuid); err != nil {
				if isUniqueViolation(err) {
					return fmt.Errorf("workunit %q: %w", name, ErrExists)
				}
				return err
			}
			for i, f := range spec.Inputs {
				if _, err := tx.exec(`INSERT INTO wu_file (workunitid, file_num, name, open_name, nbytes, md5_cksum) VALUES (?, ?, ?, ?, ?, ?)`,
					wuid, i, f.Name, f.OpenName, f.NBytes, f.MD5); err != nil {
					return err
				}
			}
			for i, o := range spec.Outputs {
				if _, err := tx.exec(`INSERT INTO wu_output (workunitid, file_num, open_name, max_nbytes) VALUES (?, ?, ?, ?)`,
					wuid, i, o.OpenName, o.MaxNBytes); err != nil {
					return err
				}
			}
			for k := 0; k < spec.TargetNResults; k++ {
				if _, err := tx.exec(`INSERT INTO result (create_time, workunitid, appid, name, server_state, report_deadline) VALUES (?, ?, ?, ?, ?, ?)`,
					now, wuid, appid, fmt.Sprintf("%s_%d", name, k), ServerStateUnsent, now+dresult); err != nil {
					return err
				}
			}
			names = append(names, name)
		}
		return nil
	})
	return names, err
}

// isUniqueViolation tells whether err is a unique key's refusal (either engine); nil
// is not.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "Duplicate entry")
}

// StateCount is a number of results in one (server state, outcome) pair.
type StateCount struct {
	App         string `json:"app"`
	ServerState string `json:"server_state"`
	Outcome     string `json:"outcome"`
	Count       int64  `json:"count"`
}

// Status is what `bserver status` shows: the database's contents counted by state.
type Status struct {
	Apps        int64 `json:"apps"`
	AppVersions int64 `json:"app_versions"`
	Users       int64 `json:"users,omitempty"`
	Hosts       int64 `json:"hosts"`
	Workunits   int64 `json:"workunits"`
	// Validated counts the workunits with a canonical result (bretry's validator
	// chose one).
	Validated int64        `json:"validated"`
	Results   []StateCount `json:"results"`
	// GiveUps counts the workunits the retry job gave up on, by app and reason
	// (wu_giveup rows; bretry report lists them).
	GiveUps []GiveUpCount `json:"giveups"`
	// Lifecycle is the backlog of assimilation and file deletion.
	Lifecycle *LifecycleStatus `json:"lifecycle"`
	// CronJobs are the cron jobs' recorded runs: totals and the last (CronJobs).
	CronJobs []CronJob `json:"cron_jobs,omitempty"`
}

// GiveUpCount is a number of give-ups of one app for one reason.
type GiveUpCount struct {
	App    string `json:"app"`
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// Status counts apps, versions, hosts, workunits (and those validated) and results by
// app, server state and outcome.
func (s *Store) Status(ctx context.Context) (*Status, error) {
	st := &Status{Results: []StateCount{}, GiveUps: []GiveUpCount{}}
	for _, c := range []struct {
		q string
		n *int64
	}{
		{`SELECT COUNT(*) FROM app`, &st.Apps}, {`SELECT COUNT(*) FROM app_version`, &st.AppVersions},
		{`SELECT COUNT(*) FROM host`, &st.Hosts}, {`SELECT COUNT(*) FROM user`, &st.Users}, {`SELECT COUNT(*) FROM workunit`, &st.Workunits},
		{`SELECT COUNT(*) FROM workunit WHERE canonical_resultid<>0`, &st.Validated},
	} {
		if err := s.DB.QueryRowContext(ctx, c.q).Scan(c.n); err != nil {
			return nil, err
		}
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT a.name, r.server_state, r.outcome, COUNT(*) FROM result r JOIN app a ON a.id=r.appid
		GROUP BY a.name, r.server_state, r.outcome ORDER BY a.name, r.server_state, r.outcome`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var c StateCount
		var ss, oc int
		if err := rows.Scan(&c.App, &ss, &oc, &c.Count); err != nil {
			return nil, err
		}
		c.ServerState, c.Outcome = nameOr(ServerStateName, ss), nameOr(OutcomeName, oc)
		st.Results = append(st.Results, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	rows, err = s.DB.QueryContext(ctx, `SELECT a.name, g.reason, COUNT(*) FROM wu_giveup g JOIN app a ON a.id=g.appid
		GROUP BY a.name, g.reason ORDER BY a.name, g.reason`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var c GiveUpCount
		if err := rows.Scan(&c.App, &c.Reason, &c.Count); err != nil {
			return nil, err
		}
		st.GiveUps = append(st.GiveUps, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if st.Lifecycle, err = s.Lifecycle(ctx); err != nil {
		return nil, err
	}
	jobs, err := s.CronJobs(ctx)
	if len(jobs) > 0 {
		st.CronJobs = jobs
	}
	return st, err
}

func nameOr(m map[int]string, v int) string {
	if n, ok := m[v]; ok {
		return n
	}
	return fmt.Sprint(v)
}

// finite reports whether v is a usable number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
