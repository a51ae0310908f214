package bretry_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

const (
	created = 1_000_000 // when the work was created
	passAt  = 1_200_000 // --now of the passes: every workunit is due
)

// project makes a database with n due workunits of app "sim" in a mix that exercises
// every rule: a third with an error result (retried: 2 new results), a third with a
// success (retried: 1 new), a third never sent (given up); every fifth has one more
// result in progress past its deadline (lost); every tenth with a success waits for
// the validator (validated: no retry). The quotas: each lost result is of one of hosts
// 1–7 (quota 0, the app's 500, less one per lost result), each result to validate of
// one of hosts 100–119 (quota 1, doubled per valid result: 8 or 16; a second doubling
// of any would show), so that a result's change applied twice, or not at all, changes
// the database's dump.
func project(t *testing.T, dsn string, n int) {
	t.Helper()
	// The schema from the template: init then has nothing to migrate.
	storetest.Migrated(t, dsn)
	for _, args := range [][]string{
		{"init", "--db", dsn},
		{"app", "add", "--db", dsn, "--dwu", "1d", "--dresult", "2h", "--nerror", "2", "--ndet", "3", "--nredundancy", "2", "sim"},
	} {
		var out, errb bytes.Buffer
		if code := bserver.Main(append([]string{"bserver"}, args...), nil, &out, &errb); code != 0 {
			t.Fatalf("bserver %v: %d %s", args, code, errb.String())
		}
	}
	s, err := store.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bulkWork(t, s, 1, "sim", 1, n, created+86400, func(i int) (int, int) {
		switch i % 3 {
		case 0:
			return store.ServerStateOver, store.OutcomeClientError
		case 1:
			return store.ServerStateOver, store.OutcomeSuccess
		}
		return store.ServerStateUnsent, 0
	})
	q := `INSERT INTO result (create_time, workunitid, appid, name, server_state, sent_time, report_deadline)
		SELECT 1000000, id, appid, ` + concat(s.Engine(), "name", "'_1'") + `, 4, 1000000, 1003600 FROM workunit WHERE id % 5 = 0`
	if _, err := s.DB.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	av, err := s.AddAppVersion(context.Background(), store.AppVersion{AppName: "sim", VersionNum: 1, AvgNCPUs: 1}, created)
	if err != nil {
		t.Fatal(err)
	}
	hav := []string{}
	for h := 1; h <= 7; h++ {
		hav = append(hav, fmt.Sprintf("(%d, %d, 0, 3, 13)", h, av))
	}
	for h := 100; h < 120; h++ {
		hav = append(hav, fmt.Sprintf("(%d, %d, 1, 3, 13)", h, av))
	}
	for _, q := range []string{
		fmt.Sprintf(`UPDATE result SET app_version_id=%d`, av),
		fmt.Sprintf(`UPDATE result SET hostid=1+workunitid %% 7 WHERE server_state=%d`, store.ServerStateInProgress),
		fmt.Sprintf(`UPDATE workunit SET need_validate=1 WHERE id %% 10 = 1 AND id IN (SELECT workunitid FROM result WHERE outcome=%d)`, store.OutcomeSuccess),
		`UPDATE result SET hostid=100+(workunitid/30) % 20 WHERE workunitid IN (SELECT id FROM workunit WHERE need_validate=1)`,
		`INSERT INTO host_app_version (host_id, app_version_id, max_jobs_per_day, n_jobs_today, jobs_day) VALUES ` + strings.Join(hav, ", "),
	} {
		if _, err := s.DB.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// toValidate is how many of project's n workunits wait for the validator.
func toValidate(n int) int { return (n + 29) / 30 }

func concat(engine, a, b string) string {
	if engine == store.MySQL {
		return "CONCAT(" + a + ", " + b + ")"
	}
	return a + " || " + b
}

// dump is the database as names and states, the same whatever order the batches ran in.
func dump(t *testing.T, dsn string) []string {
	t.Helper()
	s, err := store.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []string
	for _, q := range []string{
		`SELECT CONCAT('wu ', name, ' check=', retry_check_time, ' mask=', error_mask, ' nv=', need_validate) FROM workunit`,
		`SELECT CONCAT('result ', name, ' ', server_state, '/', outcome, '/', validate_state, ' deadline=', report_deadline) FROM result`,
		`SELECT CONCAT('quota ', host_id, '/', app_version_id, ' max=', max_jobs_per_day, ' today=', n_jobs_today, '@', jobs_day) FROM host_app_version`,
		`SELECT CONCAT('giveup ', w.name, ' ', g.reason, ' ', g.message, ' at ', g.create_time) FROM wu_giveup g JOIN workunit w ON w.id=g.workunitid`,
	} {
		if s.Engine() == store.SQLite {
			q = regexp.MustCompile(`CONCAT\((.*)\) FROM`).ReplaceAllStringFunc(q, func(m string) string {
				inner := m[len("CONCAT(") : len(m)-len(") FROM")]
				return regexp.MustCompile(`, `).ReplaceAllString(inner, " || ") + " FROM"
			})
		}
		rows, err := s.DB.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			out = append(out, line)
		}
		rows.Close()
	}
	sort.Strings(out)
	return out
}

func bretryCmd(t *testing.T, dsn string, extra ...string) *exec.Cmd {
	bin, err := exec.LookPath("bretry")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--db", dsn, "--app", "sim", "--once", "--now", strconv.Itoa(passAt)}, extra...)
	return exec.Command(bin, args...)
}

var summary = regexp.MustCompile(`^examined (\d+), retried (\d+) \((\d+) new results\), given up (\d+), lost (\d+), validated (\d+)\n$`)

// runPass runs one bretry process to the end and returns its summary's figures.
func runPass(t *testing.T, cmd *exec.Cmd) []int {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, errb.String())
	}
	m := summary.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("summary %q", out.String())
	}
	var f []int
	for _, s := range m[1:] {
		v, _ := strconv.Atoi(s)
		f = append(f, v)
	}
	return f
}

// engines runs fn on two fresh databases of each engine, the engines at once.
func engines(t *testing.T, fn func(t *testing.T, a, b string)) {
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			b := storetest.SQLiteDSN(t)
			if e.Name == store.MySQL {
				b = storetest.MySQLDSN(t)
			}
			fn(t, e.DSN, b)
		})
	}
}

const nwu = 2001

// TestTwoProcesses runs two bretry passes at once on one database with thousands of
// due workunits. Together they must examine each workunit once, and leave the
// database exactly as one pass alone leaves a copy of it.
func TestTwoProcesses(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, shared, alone string) {
		project(t, shared, nwu)
		project(t, alone, nwu)
		want := runPass(t, bretryCmd(t, alone))
		if want[0] != nwu-toValidate(nwu) || want[3] != nwu/3 || want[4] != nwu/5 || want[5] != toValidate(nwu) {
			t.Fatalf("one pass: %v; want %d examined, %d given up, %d lost, %d validated", want, nwu-toValidate(nwu), nwu/3, nwu/5, toValidate(nwu))
		}
		checkQuotas(t, alone, nwu)
		a, b := bretryCmd(t, shared, "--batch", "100"), bretryCmd(t, shared, "--batch", "100")
		var outA, outB, errA, errB bytes.Buffer
		a.Stdout, a.Stderr, b.Stdout, b.Stderr = &outA, &errA, &outB, &errB
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			cmd *exec.Cmd
			err *bytes.Buffer
		}{{a, &errA}, {b, &errB}} {
			if err := c.cmd.Wait(); err != nil {
				t.Fatalf("%v\n%s", err, c.err.String())
			}
		}
		got := make([]int, 6)
		for _, out := range []string{outA.String(), outB.String()} {
			m := summary.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("summary %q", out)
			}
			for i := range got {
				v, _ := strconv.Atoi(m[i+1])
				got[i] += v
			}
			t.Logf("one process: %s", out)
		}
		// Lost results may be marked by either process's sweep or by the batch that
		// handles their workunit: the total is the same.
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("two processes' summaries added up (-one pass +two)\n%s", d)
		}
		if d := cmp.Diff(dump(t, alone), dump(t, shared)); d != "" {
			t.Errorf("database after two processes (-one pass +two)\n%s", d)
		}
	})
}

// TestKilled SIGKILLs a pass mid-way, reruns it, and checks that the database is
// the one an uninterrupted pass makes: every result's change (its state, its host's
// quota) made once. It kills once early, as soon as the lost-result sweep has
// committed a batch, once in the validator (the two steps that change quotas), and
// once in the retry rules.
func TestKilled(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, killed, whole string) {
		project(t, whole, nwu)
		runPass(t, bretryCmd(t, whole))
		checkQuotas(t, whole, nwu)
		early, validator := storetest.SQLiteDSN(t), storetest.SQLiteDSN(t)
		if strings.HasPrefix(killed, "mysql:") {
			early, validator = storetest.MySQLDSN(t), storetest.MySQLDSN(t)
		}
		for _, k := range []struct {
			name, dsn, done string
		}{
			{"early", early, fmt.Sprintf(`SELECT COUNT(*) FROM result WHERE outcome=%d`, store.OutcomeNoReply)},
			{"in the validator", validator, `SELECT COUNT(*) FROM workunit WHERE canonical_resultid<>0`},
			{"in the retry rules", killed, fmt.Sprintf(`SELECT COUNT(*) FROM workunit WHERE retry_check_time<>%d AND retry_check_time<>0`, created+86400)},
		} {
			project(t, k.dsn, nwu)
			s, err := store.Open(k.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			cmd := bretryCmd(t, k.dsn, "--batch", "10")
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Kill it once some batches of the step have committed and before it ends.
			deadline := time.Now().Add(time.Minute)
			var done int
			for done == 0 && time.Now().Before(deadline) {
				s.DB.QueryRowContext(context.Background(), k.done).Scan(&done)
				if done == 0 {
					s.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM wu_giveup`).Scan(&done)
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			err = cmd.Wait()
			var handled, lost, validated int
			s.DB.QueryRow(`SELECT COUNT(*) FROM workunit WHERE retry_check_time<?`, float64(passAt)).Scan(&handled)
			s.DB.QueryRow(`SELECT COUNT(*) FROM result WHERE outcome=?`, store.OutcomeNoReply).Scan(&lost)
			s.DB.QueryRow(`SELECT COUNT(*) FROM workunit WHERE canonical_resultid<>0`).Scan(&validated)
			t.Logf("killed %s (%v): %d of %d results lost, %d of %d workunits validated, %d of %d still due",
				k.name, err, lost, nwu/5, validated, toValidate(nwu), handled, nwu)
			if err == nil {
				t.Logf("the pass ended before the kill: the rerun has nothing to do (a weaker test this time)")
			}
			if fmt.Sprint(err) != "signal: killed" && err != nil {
				t.Fatalf("%v\n%s", err, errb.String())
			}
			runPass(t, bretryCmd(t, k.dsn))
			if d := cmp.Diff(dump(t, whole), dump(t, k.dsn)); d != "" {
				t.Errorf("database after a kill %s and a rerun (-uninterrupted +killed)\n%s", k.name, d)
			}
		}
	})
}

// TestIntervalSIGTERM runs bretry continuously and stops it with SIGTERM, once
// mid-pass (it stops between batches: exit 0, "stopped early") and once while it
// waits for the next pass (exit 0 at once).
func TestIntervalSIGTERM(t *testing.T) {
	t.Parallel()
	dsn := storetest.SQLiteDSN(t)
	project(t, dsn, nwu)
	bin, err := exec.LookPath("bretry")
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range []string{"1", "10000"} {
		cmd := exec.Command(bin, "--db", dsn, "--app", "sim", "--interval", "1h", "--batch", batch)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		s, err := store.Open(dsn)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			var n int
			s.DB.QueryRow(`SELECT COUNT(*) FROM wu_giveup`).Scan(&n)
			if batch == "1" && n > 0 || batch != "1" && out.Len() > 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		s.Close()
		start := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("--batch %s: %v\n%s", batch, err, errb.String())
		}
		t.Logf("--batch %s: stopped %v after SIGTERM: %s", batch, time.Since(start), out.String())
		if batch == "1" && !bytes.Contains(out.Bytes(), []byte("(stopped early)")) {
			t.Errorf("--batch 1: %q, want a pass stopped early", out.String())
		}
	}
	// A --once pass afterwards finishes the work: nothing is left due.
	out, err := exec.Command(bin, "--db", dsn, "--app", "sim", "--once").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^examined 0, `).Match(out) {
		t.Errorf("after the continuous runs: %s", out)
	}
}

// checkQuotas checks the quotas an undisturbed pass leaves on project's database of n
// workunits: each of hosts 1–7 500 less its lost results, each of hosts 100–119 1
// doubled per valid result, the day's counts untouched.
func checkQuotas(t *testing.T, dsn string, n int) {
	t.Helper()
	want := map[int]int{}
	lost := map[int]int{}
	for id := 5; id <= n; id += 5 {
		lost[1+id%7]++
	}
	for h, k := range lost {
		want[h] = 500 - k
	}
	valid := map[int]int{}
	for id := 1; id <= n; id += 30 {
		valid[100+(id/30)%20]++
	}
	for h := 100; h < 120; h++ {
		want[h] = 1 << valid[h]
	}
	s, err := store.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.DB.Query(`SELECT host_id, max_jobs_per_day, n_jobs_today, jobs_day FROM host_app_version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[int]int{}
	for rows.Next() {
		var h, m, today, day int
		if err := rows.Scan(&h, &m, &today, &day); err != nil {
			t.Fatal(err)
		}
		got[h] = m
		if today != 3 || day != 13 {
			t.Errorf("host %d: the day's count %d@%d, want 3@13 (the scheduler's, untouched)", h, today, day)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("quotas after one pass (-want +got)\n%s", d)
	}
}
