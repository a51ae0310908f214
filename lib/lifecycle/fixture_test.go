package lifecycle_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/filetree"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary run as bserver, for the tests that start (and kill)
// processes.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"bserver": func() { os.Exit(bserver.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

const created = 1_000_000 // when the work was made; passes run later

// project is a database and project directory with n workunits of app "sim", each
// with an input file shared by all, one output file per result and two results:
// workunit i (from 1) is, by i % 4,
//
//	0: validated (canonical result 0, whose output is uploaded; result 1 invalid,
//	   its output uploaded too)
//	1: given up (too many errors; a wu_giveup row)
//	2: validated, with result 1 still in progress (its input is still needed)
//	3: still waiting (both results unsent)
type project struct {
	dsn, dir string
	s        *store.Store
	names    []string // workunit names, by id
	tx       *sql.Tx  // while the fixture is made: one transaction
}

func newProject(t *testing.T, dsn string, n int) *project {
	t.Helper()
	p := &project{dsn: dsn, dir: t.TempDir()}
	p.s = storetest.Open(t, dsn)
	ctx := context.Background()
	if _, err := p.s.AddApp(ctx, "sim", false, created); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(p.dir, "download"), 0o755)
	os.MkdirAll(filepath.Join(p.dir, "upload"), 0o755)
	if err := os.WriteFile(filepath.Join(p.dir, "download", "shared_in"), []byte("input"), 0o644); err != nil {
		t.Fatal(err)
	}
	names, err := p.s.CreateWork(ctx, store.WorkSpec{App: "sim", Count: n, FpopsEst: 1e12, DelayBound: 86400,
		MinQuorum: 1, TargetNResults: 2, MaxErrorResults: 3, MaxTotalResults: 10, MaxSuccessResults: 6,
		Inputs:  []store.WUFile{{Name: "shared_in", OpenName: "in", NBytes: 5}},
		Outputs: []store.WUOutput{{OpenName: "out", MaxNBytes: 1000}}}, created)
	if err != nil {
		t.Fatal(err)
	}
	p.names = names
	if p.tx, err = p.s.DB.Begin(); err != nil {
		t.Fatal(err)
	}
	// Set-based, so a fixture of hundreds of workunits costs a few statements: result
	// k of workunit w has id 2w-1+k (CreateWork makes them in order).
	p.exec(t, `UPDATE result SET server_state=5, outcome=1, validate_state=1, hostid=1 WHERE id%2=1 AND workunitid%2=0`)
	p.exec(t, `UPDATE result SET server_state=5, outcome=1, validate_state=2, hostid=2 WHERE id%2=0 AND workunitid%4=0`)
	p.exec(t, `UPDATE result SET server_state=4, hostid=2, sent_time=?, report_deadline=? WHERE id%2=0 AND workunitid%4=2`, created, created+86400)
	p.exec(t, `UPDATE workunit SET canonical_resultid=2*id-1, retry_check_time=0 WHERE id%2=0`)
	p.exec(t, `UPDATE result SET server_state=5, outcome=3 WHERE workunitid%4=1`)
	p.exec(t, `UPDATE workunit SET error_mask=2, retry_check_time=0 WHERE id%4=1`)
	p.exec(t, `INSERT INTO wu_giveup (create_time, workunitid, appid, reason, message) SELECT ?, id, 1, 'errors', '2 error results (NError 2)' FROM workunit WHERE id%4=1`, created)
	var files []any
	for i, name := range names {
		wu := i + 1
		if wu%2 == 0 {
			files = append(files, p.upload(t, 2*wu-1, name+"_0", 0, "output of "+name)...)
		}
		if wu%4 == 0 {
			files = append(files, p.upload(t, 2*wu, name+"_1", 0, "wrong "+name)...)
		}
	}
	for lo := 0; lo < len(files); lo += 5 * 200 {
		part := files[lo:min(len(files), lo+5*200)]
		p.exec(t, `INSERT INTO result_file (resultid, file_num, name, nbytes, md5_cksum, sha256, upload_time) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, '', '', ?),", len(part)/5), ","), part...)
	}
	if err := p.tx.Commit(); err != nil {
		t.Fatal(err)
	}
	p.tx = nil
	return p
}

func (p *project) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	exec := p.s.DB.Exec
	if p.tx != nil {
		exec = p.tx.Exec
	}
	if _, err := exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// upload puts output file k of result (id rid) into the upload tree, as the upload
// handler does, and returns its result_file row's values.
func (p *project) upload(t *testing.T, rid int, result string, k int, data string) []any {
	t.Helper()
	name := fmt.Sprintf("%s_%d", result, k)
	path := filepath.Join(p.dir, "upload", filetree.Path(name))
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return []any{rid, k, name, len(data), created}
}

// bserver runs bserver in-process with the project's --db and --project-dir.
func (p *project) bserver(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"bserver", "--db", p.dsn, "--project-dir", p.dir}, args...)
	code := bserver.Main(full, nil, &out, &errb)
	return code, out.String(), errb.String()
}

// must runs bserver and fails t unless it exits 0; it returns standard output.
func (p *project) must(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := p.bserver(t, args...)
	if code != 0 {
		t.Fatalf("bserver %v: exit %d\n%s", args, code, errs)
	}
	return out
}

// rows is the result of a query as lines, sorted.
func (p *project) rows(t *testing.T, q string) []string {
	t.Helper()
	rows, err := p.s.DB.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			parts = append(parts, fmt.Sprint(v))
		}
		out = append(out, strings.Join(parts, " "))
	}
	sort.Strings(out)
	return out
}

// readTree is every file under dir with its content.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, path)
			b, _ := os.ReadFile(path)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	return out
}
