package store_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

func TestParseDSN(t *testing.T) {
	for _, tc := range []struct{ in, engine, driver, err string }{
		{"sqlite:/tmp/p.db", "sqlite", "file:/tmp/p.db?_busy_timeout=2&_foreign_keys=on&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate", ""},
		{"p.db", "sqlite", "file:p.db?_busy_timeout=2&_foreign_keys=on&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate", ""},
		{"sqlite:p.db?synchronous=normal", "sqlite", "file:p.db?_busy_timeout=2&_foreign_keys=on&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate", ""},
		{"sqlite:p.db?synchronous=off", "", "", `sqlite:p.db?synchronous=off: synchronous must be full, normal or extra, got "off"`},
		{"sqlite:p.db?cache=shared", "", "", `sqlite:p.db?cache=shared: unknown option "cache": the only one is synchronous=full|normal|extra`},
		{"mysql://root@127.0.0.1/test", "mysql", "root@tcp(127.0.0.1:3306)/test?interpolateParams=true", ""},
		{"mysql://u:p@db:3307/proj", "mysql", "u:p@tcp(db:3307)/proj?interpolateParams=true", ""},
		{"mysql://u@db", "", "", "mysql://u@db: want mysql://user:pass@host:port/db"},
		{"postgres://x/y", "", "", "postgres://x/y: unknown database scheme: want sqlite:PATH, PATH or mysql://user:pass@host:port/db"},
		{"", "", "", "empty database name: want sqlite:PATH, PATH or mysql://user:pass@host:port/db"},
	} {
		engine, driver, err := store.ParseDSN(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseDSN(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || engine != tc.engine || driver != tc.driver {
			t.Errorf("ParseDSN(%q) = %q, %q, %v; want %q, %q", tc.in, engine, driver, err, tc.engine, tc.driver)
		}
	}
}

// forEngine runs fn on a fresh, migrated database of each engine, the engines at once
// (each test's databases are its own; the tests mostly wait on commits and DDL).
func forEngine(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			fn(t, storetest.Open(t, e.DSN))
		})
	}
}

// TestMigrate migrates an empty database of each engine (not storetest.Open, whose
// MySQL databases come from a template) and then again, which applies nothing.
func TestMigrate(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			ctx := context.Background()
			s, err := store.Open(e.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			applied, err := s.Migrate(ctx, 1)
			if err != nil || len(applied) != store.SchemaVersion || applied[0] != 1 {
				t.Fatalf("first Migrate = %v, %v; want versions 1 to %d", applied, err, store.SchemaVersion)
			}
			if err := s.CheckSchema(ctx); err != nil {
				t.Fatal(err)
			}
			applied, err = s.Migrate(ctx, 2)
			if err != nil || len(applied) != 0 {
				t.Fatalf("second Migrate = %v, %v; want nothing applied", applied, err)
			}
		})
	}
}

func TestCheckSchemaFresh(t *testing.T) {
	s, err := store.Open(storetest.SQLiteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CheckSchema(context.Background()); !errors.Is(err, store.ErrNotInitialised) {
		t.Fatalf("CheckSchema on a fresh file = %v, want ErrNotInitialised", err)
	}
}

func setupWork(t *testing.T, s *store.Store, count, replicas int) (appID, avID int64) {
	ctx := context.Background()
	appID, err := s.AddApp(ctx, "sim", false, 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddApp(ctx, "sim", false, 100); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second AddApp = %v, want ErrExists", err)
	}
	avID, err = s.AddAppVersion(ctx, store.AppVersion{AppName: "sim", VersionNum: 1, AvgNCPUs: 1}, 100)
	if err != nil {
		t.Fatal(err)
	}
	names, err := s.CreateWork(ctx, store.WorkSpec{App: "sim", Count: count, FpopsEst: 1e12, DelayBound: 3600,
		MinQuorum: replicas, TargetNResults: replicas, MaxErrorResults: 3, MaxTotalResults: 10, MaxSuccessResults: 6}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != count || names[0] != "sim_1" {
		t.Fatalf("CreateWork names = %v", names)
	}
	return appID, avID
}

func TestClaimAndReport(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		appID, avID := setupWork(t, s, 1, 2)
		h := &store.Host{Authenticator: store.NewAuthenticator(), PNCPUs: 2}
		var cands []store.Candidate
		err := s.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.CreateHost(h, 200); err != nil {
				return err
			}
			var err error
			cands, err = tx.UnsentCandidates([]int64{appID}, h.ID, 0, 10)
			if err != nil || len(cands) != 2 {
				t.Fatalf("candidates = %v, %v; want both replicas", cands, err)
			}
			ok, err := tx.ClaimResult(cands[0].ResultID, h.ID, avID, 200, 200+cands[0].DelayBound)
			if !ok || err != nil {
				t.Fatalf("claim = %v, %v", ok, err)
			}
			ok, err = tx.ClaimResult(cands[0].ResultID, h.ID, avID, 200, 200)
			if ok || err != nil {
				t.Fatalf("second claim = %v, %v; want false", ok, err)
			}
			// The other replica of the same workunit is not for this host.
			more, err := tx.UnsentCandidates([]int64{appID}, h.ID, 0, 10)
			if err != nil || len(more) != 0 {
				t.Fatalf("candidates after claim = %v, %v; want none", more, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		rep := store.Report{Name: cands[0].ResultName, Success: true, CPUTime: 50}
		var got []store.ReportStatus
		for _, r := range []store.Report{rep, {Name: rep.Name, Success: false, CPUTime: 99}, {Name: cands[1].ResultName}, {Name: "nope"}} {
			err := s.InTx(ctx, func(tx *store.Tx) error {
				st, err := tx.RecordReport(h.ID, r, 300)
				got = append(got, st)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		want := []store.ReportStatus{store.ReportRecorded, store.ReportDuplicate, store.ReportNotYours, store.ReportUnknown}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("report statuses (-want +got)\n%s", d)
		}
		rows, err := s.Results(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r0 := rows[0]
		if r0.ServerState != store.ServerStateOver || r0.Outcome != store.OutcomeSuccess || r0.CPUTime != 50 ||
			r0.ReceivedTime != 300 || r0.ReportDeadline != 3800 || r0.HostID != h.ID {
			t.Errorf("reported result = %+v", r0)
		}
		st, err := s.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantSt := &store.Status{Apps: 1, AppVersions: 1, Hosts: 1, Workunits: 1, Results: []store.StateCount{
			{"sim", "unsent", "init", 1}, {"sim", "over", "success", 1}}, GiveUps: []store.GiveUpCount{}, Lifecycle: &store.LifecycleStatus{}}
		if d := cmp.Diff(wantSt, st); d != "" {
			t.Errorf("status (-want +got)\n%s", d)
		}
	})
}

// TestConcurrentClaims has many transactions race for few results: each result goes
// to exactly one host.
func TestConcurrentClaims(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		appID, avID := setupWork(t, s, 40, 1)
		var mu sync.Mutex
		claimed := map[int64]int64{}
		var wg sync.WaitGroup
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 5; i++ {
					err := s.InTx(ctx, func(tx *store.Tx) error {
						h := &store.Host{Authenticator: store.NewAuthenticator()}
						if err := tx.CreateHost(h, 1); err != nil {
							return err
						}
						cands, err := tx.UnsentCandidates([]int64{appID}, h.ID, 0, 2)
						if err != nil {
							return err
						}
						for _, c := range cands {
							ok, err := tx.ClaimResult(c.ResultID, h.ID, avID, 1, 2)
							if err != nil {
								return err
							}
							if ok {
								mu.Lock()
								if prev, dup := claimed[c.ResultID]; dup {
									t.Errorf("result %d claimed by hosts %d and %d", c.ResultID, prev, h.ID)
								}
								claimed[c.ResultID] = h.ID
								mu.Unlock()
								return nil
							}
						}
						return nil
					})
					if err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		if len(claimed) != 40 {
			t.Errorf("%d results claimed, want all 40", len(claimed))
		}
	})
}

// TestConcurrentReports has the same report arrive many times at once: it is recorded
// exactly once.
func TestConcurrentReports(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		appID, avID := setupWork(t, s, 5, 1)
		h := &store.Host{Authenticator: store.NewAuthenticator()}
		var names []string
		err := s.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.CreateHost(h, 1); err != nil {
				return err
			}
			cands, err := tx.UnsentCandidates([]int64{appID}, h.ID, 0, 5)
			for _, c := range cands {
				if _, err := tx.ClaimResult(c.ResultID, h.ID, avID, 1, 2); err != nil {
					return err
				}
				names = append(names, c.ResultName)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		recorded := map[string]int{}
		var wg sync.WaitGroup
		for g := 0; g < 12; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, name := range names {
					var st store.ReportStatus
					err := s.InTx(ctx, func(tx *store.Tx) error {
						var err error
						st, err = tx.RecordReport(h.ID, store.Report{Name: name, Success: true, CPUTime: float64(g)}, 3)
						return err
					})
					if err != nil {
						t.Error(err)
						return
					}
					if st == store.ReportRecorded {
						mu.Lock()
						recorded[name]++
						mu.Unlock()
					} else if st != store.ReportDuplicate {
						t.Errorf("%s: status %d", name, st)
					}
				}
			}()
		}
		wg.Wait()
		for _, name := range names {
			if recorded[name] != 1 {
				t.Errorf("%s recorded %d times", name, recorded[name])
			}
		}
	})
}

// TestNonFiniteArguments: a NaN or infinity never reaches the SQL, on either engine (on
// MariaDB the driver would interpolate it bare: "Unknown column 'NaN'"), and the row
// keeps its value (issue 18).
func TestNonFiniteArguments(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var id int64
		err := s.InTx(ctx, func(tx *store.Tx) error {
			h := &store.Host{Authenticator: "a", OnFrac: 0.5}
			if err := tx.CreateHost(h, 1); err != nil {
				return err
			}
			id = h.ID
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			err := s.InTx(ctx, func(tx *store.Tx) error {
				h, err := tx.HostByID(id)
				if err != nil {
					return err
				}
				h.OnFrac = v
				return tx.UpdateHostRPC(h)
			})
			if !errors.Is(err, store.ErrNonFinite) {
				t.Errorf("on_frac %v: err = %v, want ErrNonFinite", v, err)
			}
			err = s.InTx(ctx, func(tx *store.Tx) error {
				_, err := tx.Exec(`SELECT id FROM host WHERE on_frac=?`, v)
				return err
			})
			if !errors.Is(err, store.ErrNonFinite) {
				t.Errorf("query with %v: err = %v, want ErrNonFinite", v, err)
			}
			err = s.InTx(ctx, func(tx *store.Tx) error {
				var n int64
				return tx.QueryRow(`SELECT id FROM host WHERE on_frac=?`, v).Scan(&n)
			})
			if !errors.Is(err, sql.ErrNoRows) {
				t.Errorf("QueryRow with %v: err = %v, want no rows", v, err)
			}
		}
		err = s.InTx(ctx, func(tx *store.Tx) error {
			h, err := tx.HostByID(id)
			if err == nil && h.OnFrac != 0.5 {
				t.Errorf("on_frac %v, want 0.5 kept", h.OnFrac)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestDurability: a SQLite database is opened with synchronous=FULL unless its DSN asks
// for less, so an acknowledged report survives a power cut (issue 18, item 7); MariaDB's
// setting is read and told.
func TestDurability(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		durable, setting, err := s.Durability(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s, durable %v", s.Engine(), setting, durable)
		if s.Engine() == store.SQLite && (!durable || setting != "synchronous=FULL") {
			t.Errorf("SQLite opened with %s; want synchronous=FULL", setting)
		}
	})
	s := storetest.Open(t, storetest.SQLiteDSN(t)+"?synchronous=normal")
	if durable, setting, err := s.Durability(context.Background()); err != nil || durable || setting != "synchronous=NORMAL" {
		t.Errorf("?synchronous=normal: %v %q %v", durable, setting, err)
	}
}

// TestCreateAccount: BOINC's create_account.php on each engine: a new address makes an
// account a lookup finds; asking again with the same password hash returns it (not a
// second one); another hash is ErrExists, as is an address 'user add --password-file'
// took, with or without a password, in any case. Eight servers creating one address at once make one account, and all get its
// key.
func TestCreateAccount(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		hash := store.PasswdHash("secret-pw", "dave@example.org")
		u, created, err := s.CreateAccount(ctx, "Dave", "Dave@Example.org", hash, 1)
		if err != nil || !created || u.EmailAddr != "dave@example.org" {
			t.Fatalf("CreateAccount = %+v, %v, %v", u, created, err)
		}
		if auth, err := s.LookupAccount(ctx, "dave@example.org", hash); err != nil || auth != u.Authenticator {
			t.Errorf("lookup after creation: %q, %v; want %q", auth, err, u.Authenticator)
		}
		again, created, err := s.CreateAccount(ctx, "Dave", "dave@example.org", strings.ToUpper(hash), 2)
		if err != nil || created || again.Authenticator != u.Authenticator || again.ID != u.ID {
			t.Errorf("asking again: %+v, created %v, %v; want account %d", again, created, err, u.ID)
		}
		if _, _, err := s.CreateAccount(ctx, "Eve", "dave@example.org", store.PasswdHash("other", "dave@example.org"), 3); !errors.Is(err, store.ErrExists) {
			t.Errorf("another password for a taken address: %v, want ErrExists", err)
		}
		if _, err := s.AddUserWithPassword(ctx, "carol", "carol@example.org", "pw-carol", 4); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.CreateAccount(ctx, "Carol2", "carol@example.org", store.PasswdHash("x", "carol@example.org"), 5); !errors.Is(err, store.ErrExists) {
			t.Errorf("an address user add took: %v, want ErrExists", err)
		}
		if _, err := s.AddUserWithPassword(ctx, "dave2", "dave@example.org", "pw", 6); !errors.Is(err, store.ErrExists) {
			t.Errorf("user add for a created address: %v, want ErrExists", err)
		}
		// An address 'user add' took without a password, in another case (issue 28).
		if u, err := s.AddUser(ctx, "frank", "Frank@Example.org", 6); err != nil || u.EmailAddr != "frank@example.org" {
			t.Fatalf("AddUser = %+v, %v; want the address in lower case", u, err)
		}
		for _, hash := range []string{store.PasswdHash("x", "frank@example.org"), ""} {
			if _, _, err := s.CreateAccount(ctx, "Frank2", "frank@example.org", hash, 6); !errors.Is(err, store.ErrExists) {
				t.Errorf("an address user add took without a password (hash %q): %v, want ErrExists", hash, err)
			}
		}
		if _, err := s.AddUserWithPassword(ctx, "frank3", "FRANK@example.org", "pw-frank", 6); !errors.Is(err, store.ErrExists) {
			t.Errorf("user add --password-file for an address user add took: %v, want ErrExists", err)
		}

		var wg sync.WaitGroup
		keys := make([]string, 8)
		hash = store.PasswdHash("pw", "race@example.org")
		for i := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u, _, err := s.CreateAccount(ctx, "Racer", "race@example.org", hash, 7)
				if err != nil {
					t.Error(err)
					return
				}
				keys[i] = u.Authenticator
			}()
		}
		wg.Wait()
		var n int
		if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM user WHERE email_addr='race@example.org'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%d accounts for one address created at once, want 1", n)
		}
		for _, k := range keys {
			if k != keys[0] {
				t.Errorf("the racers got different keys: %q", keys)
				break
			}
		}
	})
}

// TestOpenMissing: a database that is not there says what to do (issue 32: MySQL's
// "Unknown database" came raw).
func TestOpenMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := store.Open("sqlite:" + filepath.Join(dir, "no", "such", "dir", "p.db"))
	if err == nil || !strings.Contains(err.Error(), "its directory "+filepath.Join(dir, "no", "such", "dir")+" does not exist (bserver init makes it)") {
		t.Errorf("SQLite file in a missing directory: %v", err)
	}
	base := os.Getenv(storetest.EnvMySQL)
	if base == "" {
		t.Logf("%s is not set: MySQL's missing database not tried", storetest.EnvMySQL)
		return
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/bkit_no_such_database"
	_, err = store.Open(u.String())
	if err == nil || !strings.Contains(err.Error(), `database "bkit_no_such_database" does not exist on `+u.Host+": create it first (mariadb -e 'CREATE DATABASE bkit_no_such_database')") {
		t.Errorf("missing MySQL database: %v", err)
	}
}
