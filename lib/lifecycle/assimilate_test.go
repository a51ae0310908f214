package lifecycle_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/bkit/bkit/lib/lifecycle"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

const passAt = "1100000"

func TestBackoff(t *testing.T) {
	for n, want := range map[int]float64{0: 60, 1: 60, 2: 120, 3: 240, 11: 61440, 12: 86400, 100: 86400} {
		if got := lifecycle.Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %g, want %g", n, got, want)
		}
	}
}

// treeLayout is a layout of the --to tree, for the tests: the flags that ask for it
// and where it puts a workunit's file (an output's upload name, or MetaFile).
type treeLayout struct {
	name  string
	flags []string
	path  func(workunit, file string) string
}

var treeLayouts = []treeLayout{
	{"dirs", nil, func(wu, file string) string { return "sim/_nobatch/000000/" + wu + "/" + file }},
	{"flat", []string{"--layout", "flat"}, func(wu, file string) string {
		if file == lifecycle.MetaFile {
			return "sim/_nobatch/000000/" + wu + ".json"
		}
		return "sim/_nobatch/000000/" + file
	}},
}

// eachLayout runs f in each layout of the --to tree, in parallel.
func eachLayout(t *testing.T, f func(t *testing.T, l treeLayout)) {
	t.Parallel()
	for _, l := range treeLayouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			f(t, l)
		})
	}
}

// TestAssimilateTo: in each layout, every validated and every given-up workunit is
// written once, with the canonical output (not the invalid one), a given-up one its
// description; a second pass finds nothing; the workunits still waiting are left
// alone.
func TestAssimilateTo(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		for _, l := range treeLayouts {
			t.Run(e.Name+"/"+l.name, func(t *testing.T) {
				e.Require(t)
				t.Parallel()
				testAssimilateTo(t, freshDSN(t, e.Name), l)
			})
		}
	}
}

func testAssimilateTo(t *testing.T, dsn string, l treeLayout) {
	p := newProject(t, dsn, 8)
	to := filepath.Join(p.dir, "results")
	// A validated workunit whose canonical result has no output file: its
	// directory has workunit.json, not nothing.
	bare := p.names[7]
	p.exec(t, `DELETE FROM result_file WHERE name='`+bare+`_0_0'`)
	if out := p.must(t, append([]string{"--now", passAt, "assimilate", "--to", to, "--once", "--batch", "2"}, l.flags...)...); out != "assimilated 6, failed 0\n" {
		t.Fatalf("first pass: %q", out)
	}
	tree := readTree(t, to)
	var want []string
	for i, name := range p.names {
		switch (i + 1) % 4 {
		case 0, 2:
			if name == bare {
				want = append(want, l.path(name, lifecycle.MetaFile))
				var meta store.AssimilateJob
				if err := json.Unmarshal([]byte(tree[l.path(name, lifecycle.MetaFile)]), &meta); err != nil || meta.Outcome != "success" || len(meta.Files) != 0 {
					t.Errorf("%s, validated without output files: %+v, %v", name, meta, err)
				}
				continue
			}
			want = append(want, l.path(name, name+"_0_0"))
			if got := tree[l.path(name, name+"_0_0")]; got != "output of "+name {
				t.Errorf("%s: output %q", name, got)
			}
		case 1:
			want = append(want, l.path(name, lifecycle.MetaFile))
		}
	}
	var got []string
	for k := range tree {
		got = append(got, k)
	}
	if diff := cmp.Diff(want, got, cmpSorted); diff != "" {
		t.Fatalf("tree (-want +got):\n%s", diff)
	}
	var meta store.AssimilateJob
	if err := json.Unmarshal([]byte(tree[l.path(p.names[0], lifecycle.MetaFile)]), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Outcome != "error" || meta.Error != "errors: 2 error results (NError 2)" || len(meta.Files) != 0 {
		t.Errorf("given-up workunit's description: %+v", meta)
	}
	if out := p.must(t, append([]string{"--now", passAt, "assimilate", "--to", to, "--once"}, l.flags...)...); out != "assimilated 0, failed 0\n" {
		t.Fatalf("second pass: %q", out)
	}
	if diff := cmp.Diff(tree, readTree(t, to)); diff != "" {
		t.Errorf("the second pass changed the tree:\n%s", diff)
	}
	if got := p.rows(t, `SELECT assimilate_state, COUNT(*) FROM workunit GROUP BY assimilate_state`); !cmp.Equal(got, []string{"0 2", "2 6"}) {
		t.Errorf("assimilate states: %v", got)
	}
	if left := p.rows(t, `SELECT name FROM workunit WHERE lifecycle_owner<>'' OR lifecycle_lease<>0`); len(left) != 0 {
		t.Errorf("claims left: %v", left)
	}
	// A workunit validated later is handed over by the next pass.
	p.exec(t, `UPDATE workunit SET canonical_resultid=1 WHERE id=3`)
	if out := p.must(t, append([]string{"--now", passAt, "assimilate", "--to", to, "--once"}, l.flags...)...); out != "assimilated 1, failed 0\n" {
		t.Fatalf("third pass: %q", out)
	}
	st := p.must(t, "status")
	if !strings.Contains(st, "assimilation: 0 waiting (0 failing, 0 failures), 7 assimilated") {
		t.Errorf("status:\n%s", st)
	}
}

// TestAssimilateToWorkunitJSON: with --workunit-json a success has its description
// too (canonical result, open names) beside its output, in each layout; without the
// flag it has only the output (TestAssimilateTo), and --exec refuses the flag.
func TestAssimilateToWorkunitJSON(t *testing.T) {
	eachLayout(t, func(t *testing.T, l treeLayout) {
		p := newProject(t, storetest.SQLiteDSN(t), 4)
		to := filepath.Join(p.dir, "results")
		if code, _, errs := p.bserver(t, "--now", passAt, "assimilate", "--exec", "true", "--workunit-json", "--once"); code != 2 || !strings.Contains(errs, "--workunit-json: only with --to") {
			t.Errorf("--exec with --workunit-json: exit %d, %q", code, errs)
		}
		if out := p.must(t, append([]string{"--now", passAt, "assimilate", "--to", to, "--workunit-json", "--once"}, l.flags...)...); out != "assimilated 3, failed 0\n" {
			t.Fatalf("pass: %q", out)
		}
		tree := readTree(t, to)
		if got := tree[l.path(p.names[1], p.names[1]+"_0_0")]; got != "output of "+p.names[1] {
			t.Errorf("output %q", got)
		}
		var meta store.AssimilateJob
		if err := json.Unmarshal([]byte(tree[l.path(p.names[1], lifecycle.MetaFile)]), &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Outcome != "success" || meta.Canonical != p.names[1]+"_0" || len(meta.Files) != 1 || meta.Files[0].OpenName != "out" {
			t.Errorf("validated workunit's description: %+v", meta)
		}
		if err := json.Unmarshal([]byte(tree[l.path(p.names[0], lifecycle.MetaFile)]), &meta); err != nil || meta.Outcome != "error" {
			t.Errorf("given-up workunit's description: %+v, %v", meta, err)
		}
	})
}

var cmpSorted = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
})

// TestAssimilateExec: the command sees each workunit's description and files; one
// that fails keeps its workunit for a later pass after a backoff, counted in status;
// one that hangs is killed at --exec-timeout.
func TestAssimilateExec(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			p := newProject(t, e.DSN, 4)
			log := filepath.Join(p.dir, "log")
			script := `printf '%s %s %s [%s] %s %s\n' "$BKIT_WORKUNIT" "$BKIT_APP" "$BKIT_OUTCOME" "$BKIT_ERROR" "$BKIT_OPEN_NAMES" "$(cat $BKIT_FILES </dev/null)" >> ` + log
			if out := p.must(t, "--now", passAt, "assimilate", "--exec", script, "--once"); out != "assimilated 3, failed 0\n" {
				t.Fatalf("pass: %q", out)
			}
			b, _ := os.ReadFile(log)
			want := p.names[0] + " sim error [errors: 2 error results (NError 2)]  \n" +
				p.names[1] + " sim success [] out output of " + p.names[1] + "\n" +
				p.names[3] + " sim success [] out output of " + p.names[3] + "\n"
			if diff := cmp.Diff(want, string(b)); diff != "" {
				t.Errorf("what the command saw (-want +got):\n%s", diff)
			}

			// A failing command: the workunit waits, with a backoff and a count.
			p.exec(t, `UPDATE workunit SET canonical_resultid=1 WHERE id=3`)
			code, out, errs := p.bserver(t, "--now", passAt, "assimilate", "--exec", "echo no space left >&2; exit 3", "--once")
			if code != 0 || out != "assimilated 0, failed 1\n" || !strings.Contains(errs, "no space left") {
				t.Fatalf("failing command: %d %q %s", code, out, errs)
			}
			// Backoff(1) = 60 s after the pass's time (which runs on with the wall clock).
			if got := p.rows(t, `SELECT assimilate_state, assimilate_errors, CASE WHEN assimilate_retry_time>=1100060 AND assimilate_retry_time<1100070 THEN 'retry in 60 s' ELSE assimilate_retry_time END, assimilate_message FROM workunit WHERE id=3`); !cmp.Equal(got,
				[]string{"0 1 retry in 60 s --exec: exit status 3: no space left"}) {
				t.Errorf("failed workunit: %v", got)
			}
			if out := p.must(t, "--now", passAt, "assimilate", "--exec", "true", "--once"); out != "assimilated 0, failed 0\n" {
				t.Errorf("during the backoff: %q", out)
			}
			if st := p.must(t, "status"); !strings.Contains(st, "assimilation: 1 waiting (1 failing, 1 failures), 3 assimilated") {
				t.Errorf("status:\n%s", st)
			}
			// A command that hangs is killed (with what it started) and counts as a failure.
			code, out, errs = p.bserver(t, "--now", "1100061", "assimilate", "--exec", "sleep 30 & sleep 30", "--exec-timeout", "200ms", "--once")
			if code != 0 || out != "assimilated 0, failed 1\n" {
				t.Fatalf("hanging command: %d %q %s", code, out, errs)
			}
			if got := p.rows(t, `SELECT assimilate_errors, assimilate_message FROM workunit WHERE id=3`); !cmp.Equal(got, []string{"2 --exec: killed after --exec-timeout 200ms"}) {
				t.Errorf("timed-out workunit: %v", got)
			}
			// After the backoff (2 minutes now), a working command hands it over.
			if out := p.must(t, "--now", "1100300", "assimilate", "--exec", "true", "--once"); out != "assimilated 1, failed 0\n" {
				t.Errorf("after the backoff: %q", out)
			}
		})
	}
}

// TestAssimilateHostile: an output file recorded under a name that leads out of the
// upload directory, or missing, is never handed over; the workunit fails and waits.
func TestAssimilateHostile(t *testing.T) { eachLayout(t, testAssimilateHostile) }

func testAssimilateHostile(t *testing.T, l treeLayout) {
	p := newProject(t, storetest.SQLiteDSN(t), 4)
	os.WriteFile(filepath.Join(p.dir, "secret"), []byte("secret"), 0o644)
	p.exec(t, `UPDATE result_file SET name='../secret' WHERE name=?`, p.names[1]+"_0_0")
	os.Symlink(filepath.Join(p.dir, "secret"), filepath.Join(p.dir, "upload", "link_0"))
	p.exec(t, `UPDATE result_file SET name='link_0' WHERE name=?`, p.names[3]+"_0_0")
	to := filepath.Join(p.dir, "results")
	if out := p.must(t, append([]string{"--now", passAt, "assimilate", "--to", to, "--once"}, l.flags...)...); out != "assimilated 1, failed 2\n" {
		t.Fatalf("pass: %q", out)
	}
	for k, v := range readTree(t, to) {
		if strings.Contains(v, "secret") {
			t.Errorf("%s holds the file from outside the upload directory", k)
		}
	}
	if got := p.rows(t, `SELECT name, assimilate_message FROM workunit WHERE assimilate_errors>0`); !cmp.Equal(got, []string{
		p.names[1] + ` output file "../secret": not in the upload directory`, p.names[3] + ` output file "link_0": not in the upload directory`}) {
		t.Errorf("failures: %v", got)
	}
	log := filepath.Join(p.dir, "log")
	if out := p.must(t, "--now", "1200000", "assimilate", "--exec", "cat $BKIT_FILES >> "+log, "--once"); out != "assimilated 0, failed 2\n" {
		t.Fatalf("exec pass: %q", out)
	}
	if b, _ := os.ReadFile(log); len(b) != 0 {
		t.Errorf("the command was run: %q", b)
	}
}

func TestAssimilateUsage(t *testing.T) {
	t.Parallel()
	p := newProject(t, storetest.SQLiteDSN(t), 1)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"assimilate", "--once"}, "bserver: want --to DIR or --exec CMD\n"},
		{[]string{"assimilate", "--once", "--to", "x", "--exec", "true"}, "bserver: --to and --exec: give one\n"},
		{[]string{"assimilate", "--to", "x"}, "bserver: want --once (one pass, for cron) or --interval DURATION (continuous)\n"},
		{[]string{"assimilate", "--to", "x", "--once", "--batch", "0"}, "bserver: --batch: must be 1 to 10000, got 0\n"},
		{[]string{"assimilate", "--exec", "true", "--once", "--exec-timeout", "0s"}, "bserver: --exec-timeout: must be > 0, got 0s\n"},
		{[]string{"assimilate", "--exec", "true", "--interval", "1m", "--once"}, "bserver: --once and --interval: give one\n"},
		{[]string{"assimilate", "--to", "x", "--once", "--layout", "tree"}, "bserver: --layout: \"tree\": want dirs or flat\n"},
		{[]string{"assimilate", "--exec", "true", "--once", "--layout", "flat"}, "bserver: --layout: only with --to\n"},
	} {
		code, _, errs := p.bserver(t, c.args...)
		if code != 2 || errs != c.msg {
			t.Errorf("%v: exit %d, %q; want 2, %q", c.args, code, errs, c.msg)
		}
	}
}

// TestAssimilateFlatRerun: a flat pass after one killed before the database heard
// finds the output it linked in place (the same file) and replaces the description
// it was writing; nothing temporary is left.
func TestAssimilateFlatRerun(t *testing.T) {
	t.Parallel()
	p := newProject(t, storetest.SQLiteDSN(t), 4)
	to := filepath.Join(p.dir, "results")
	dir := filepath.Join(to, "sim", lifecycle.NoBatch, "000000")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, p.names[1]+"_0_0"), []byte("output of "+p.names[1]), 0o644)
	os.WriteFile(filepath.Join(dir, ".tmp-"+p.names[0]+".json"), []byte("{half"), 0o644)
	if out := p.must(t, "--now", passAt, "assimilate", "--to", to, "--layout", "flat", "--once"); out != "assimilated 3, failed 0\n" {
		t.Fatalf("pass: %q", out)
	}
	tree := readTree(t, to)
	var got []string
	for k := range tree {
		got = append(got, k)
	}
	l := treeLayouts[1]
	want := []string{l.path(p.names[0], lifecycle.MetaFile), l.path(p.names[1], p.names[1]+"_0_0"), l.path(p.names[3], p.names[3]+"_0_0")}
	if diff := cmp.Diff(want, got, cmpSorted); diff != "" {
		t.Fatalf("tree (-want +got):\n%s", diff)
	}
	var meta store.AssimilateJob
	if err := json.Unmarshal([]byte(tree[want[0]]), &meta); err != nil || meta.Outcome != "error" {
		t.Errorf("given-up workunit's description: %+v, %v", meta, err)
	}
}

// TestAssimilateFlatCopies: where an output cannot be linked (the tree on another
// file system) a flat pass copies it under a temporary name, a killed pass's
// leftover there included, and moves it into place; in the other layout the copy
// goes into the workunit's directory. Not parallel: it replaces the link for every
// pass in the process.
func TestAssimilateFlatCopies(t *testing.T) {
	defer lifecycle.SetLinkFile(func(int, string, int, string, int) error { return syscall.EXDEV })()
	for _, l := range treeLayouts {
		t.Run(l.name, func(t *testing.T) {
			p := newProject(t, storetest.SQLiteDSN(t), 4)
			to := filepath.Join(p.dir, "results")
			dir := filepath.Join(to, "sim", lifecycle.NoBatch, "000000")
			if l.name == "flat" {
				os.MkdirAll(dir, 0o755)
				os.WriteFile(filepath.Join(dir, ".tmp-"+p.names[1]+"_0_0"), []byte("output of som"), 0o644)
			}
			if out := p.must(t, append([]string{"--now", passAt, "assimilate", "--to", to, "--once"}, l.flags...)...); out != "assimilated 3, failed 0\n" {
				t.Fatalf("pass: %q", out)
			}
			tree := readTree(t, to)
			for _, name := range []string{p.names[1], p.names[3]} {
				path := l.path(name, name+"_0_0")
				if got := tree[path]; got != "output of "+name {
					t.Errorf("%s: %q", path, got)
				}
				if st, err := os.Stat(filepath.Join(to, path)); err != nil || st.Sys().(*syscall.Stat_t).Nlink != 1 {
					t.Errorf("%s: not a copy of its own: %v", path, err)
				}
			}
			if len(tree) != 3 {
				t.Errorf("tree: %v", tree)
			}
		})
	}
}

// TestNoBatchDir: workunits outside batches share a directory by NoBatchShard, named
// so that a listing sorts them in order.
func TestNoBatchDir(t *testing.T) {
	for id, want := range map[int64]string{1: "000000", 9999: "000000", 10000: "000001", 123456789: "012345", 99999999999: "9999999"} {
		if got := lifecycle.NoBatchDir(id); got != want {
			t.Errorf("NoBatchDir(%d) = %q, want %q", id, got, want)
		}
	}
}

// TestAssimilateNoBatchShards: a pass puts each workunit outside batches into the
// directory of its own id's shard, in each layout.
func TestAssimilateNoBatchShards(t *testing.T) {
	eachLayout(t, func(t *testing.T, l treeLayout) {
		to := t.TempDir()
		layout, _ := lifecycle.ParseLayout(l.name)
		a := &lifecycle.Assimilator{Store: storetest.Open(t, storetest.SQLiteDSN(t)), UploadDir: t.TempDir(), To: to, Layout: layout}
		var jobs []store.AssimilateJob
		for _, id := range []int64{7, 12345, 20000} {
			jobs = append(jobs, store.AssimilateJob{WorkunitID: id, Workunit: fmt.Sprint("w", id), App: "sim", Outcome: store.AssimilateError, Error: "given up"})
		}
		for i, out := range lifecycle.ToTree(a, jobs) {
			if out.Failed {
				t.Errorf("%s: %s", jobs[i].Workunit, out.Message)
			}
		}
		var got []string
		for k := range readTree(t, to) {
			got = append(got, k)
		}
		want := []string{l.path("w7", lifecycle.MetaFile), l.path("w12345", lifecycle.MetaFile), l.path("w20000", lifecycle.MetaFile)}
		want[1] = strings.Replace(want[1], "/000000/", "/000001/", 1)
		want[2] = strings.Replace(want[2], "/000000/", "/000002/", 1)
		if diff := cmp.Diff(want, got, cmpSorted); diff != "" {
			t.Errorf("tree (-want +got):\n%s", diff)
		}
	})
}
