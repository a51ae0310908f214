package lifecycle_test

import (
	"bytes"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

// process starts bserver ARGS in its own process.
func (p *project) process(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	bin, err := exec.LookPath("bserver")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--db", p.dsn, "--project-dir", p.dir}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

var (
	assimilated   = regexp.MustCompile(`assimilated (\d+), failed 0`)
	filesDeleted  = regexp.MustCompile(`files deleted (\d+) `)
	lifecycleLine = regexp.MustCompile(`assimilation: .*`)
)

// stateOf is what a lifecycle stage leaves in the database, comparable between
// projects made alike.
func (p *project) stateOf(t *testing.T) []string {
	return append(p.rows(t, `SELECT name, assimilate_state, assimilate_errors, file_delete_state, lifecycle_owner, lifecycle_lease FROM workunit`),
		p.rows(t, `SELECT directory, name, nbytes, done, message FROM deleted_file`)...)
}

// runConcurrently runs the same pass in two processes at once, and in a loop of
// processes killed (SIGKILL) at a random 33–133 % of the undisturbed pass's time
// (a process starts slower than the in-process pass) followed by one run
// to the end; each must leave the database and the files as one undisturbed pass
// does. count reads a pass's figure from its output, and the figures of the two
// processes at once must add up to the undisturbed pass's (nothing done twice).
func runConcurrently(t *testing.T, n int, prepare func(p *project), stage func(p *project) []string, files func(p *project) map[string]string, count func(string) int) {
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			dsns := []string{e.DSN, storetest.SQLiteDSN(t)}
			if e.Name != "sqlite" {
				dsns[1] = storetest.MySQLDSN(t)
			}
			t0 := time.Now()
			ref := newProject(t, dsns[0], n)
			prepare(ref)
			t1 := time.Now()
			out := ref.must(t, stage(ref)...)
			d := time.Since(t1)
			t.Logf("fixture %v, undisturbed pass %v", t1.Sub(t0), d)
			want, wantFiles := ref.stateOf(t), files(ref)

			two := newProject(t, dsns[1], n)
			prepare(two)
			var wg sync.WaitGroup
			var outs [2]*bytes.Buffer
			var errs [2]error
			for i := range 2 {
				cmd, o := two.process(t, stage(two)...)
				outs[i] = o
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = cmd.Wait() }()
			}
			wg.Wait()
			for i := range 2 {
				if errs[i] != nil {
					t.Fatalf("process %d: %v\n%s", i, errs[i], outs[i])
				}
			}
			if got := count(outs[0].String()) + count(outs[1].String()); got != count(out) {
				t.Errorf("two at once did %d (%q, %q), one alone %d", got, outs[0], outs[1], count(out))
			}
			if diff := cmp.Diff(want, two.stateOf(t)); diff != "" {
				t.Errorf("two at once: database (-alone +two):\n%s", diff)
			}
			if diff := cmp.Diff(wantFiles, files(two)); diff != "" {
				t.Errorf("two at once: files (-alone +two):\n%s", diff)
			}

			// The same project again, from the reference's starting point: kill, then rerun.
			killed := newProject(t, freshDSN(t, e.Name), n)
			prepare(killed)
			rng := rand.New(rand.NewPCG(1, uint64(n)))
			for range 3 {
				cmd, _ := killed.process(t, stage(killed)...)
				time.Sleep(d/3 + time.Duration(rng.Float64()*float64(d)))
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
			}
			t.Logf("after the kills: %s", strings.TrimSpace(lifecycleLine.FindString(killed.must(t, "status"))))
			killed.must(t, stage(killed)...)
			if e.Name != "sqlite" && cmp.Diff(want, killed.stateOf(t)) != "" {
				// MariaDB rolls back a killed process's transaction only once it sees the
				// connection gone; a rerun that starts before skips the rows it still
				// locks (SKIP LOCKED), and the next cron pass takes them.
				t.Logf("rerun left work (rows a killed connection still locked?): %s; once more",
					strings.TrimSpace(lifecycleLine.FindString(killed.must(t, "status"))))
				time.Sleep(time.Second)
				killed.must(t, stage(killed)...)
			}
			if diff := cmp.Diff(want, killed.stateOf(t)); diff != "" {
				t.Errorf("killed and rerun: database (-undisturbed +killed):\n%s", diff)
			}
			if diff := cmp.Diff(wantFiles, files(killed)); diff != "" {
				t.Errorf("killed and rerun: files (-undisturbed +killed):\n%s", diff)
			}
		})
	}
}

func freshDSN(t *testing.T, engine string) string {
	if engine == "sqlite" {
		return storetest.SQLiteDSN(t)
	}
	return storetest.MySQLDSN(t)
}

func TestAssimilateConcurrentAndKilled(t *testing.T) {
	t.Parallel()
	runConcurrently(t, 200, func(*project) {},
		func(p *project) []string {
			return []string{"--now", passAt, "assimilate", "--to", filepath.Join(p.dir, "results"), "--once", "--batch", "10"}
		},
		func(p *project) map[string]string { return readTree(t, filepath.Join(p.dir, "results")) },
		func(out string) int {
			if m := assimilated.FindStringSubmatch(out); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n
			}
			return -1
		})
}

// TestAssimilateFlatConcurrentAndKilled: the same in the flat layout, where a killed
// pass leaves links in place and descriptions under temporary names.
func TestAssimilateFlatConcurrentAndKilled(t *testing.T) {
	t.Parallel()
	runConcurrently(t, 200, func(*project) {},
		func(p *project) []string {
			return []string{"--now", passAt, "assimilate", "--to", filepath.Join(p.dir, "results"), "--layout", "flat", "--once", "--batch", "10"}
		},
		func(p *project) map[string]string { return readTree(t, filepath.Join(p.dir, "results")) },
		func(out string) int {
			if m := assimilated.FindStringSubmatch(out); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n
			}
			return -1
		})
}

func TestDeleteFilesConcurrentAndKilled(t *testing.T) {
	t.Parallel()
	runConcurrently(t, 100,
		func(p *project) {
			// Everything over and assimilated, so every file is deleted in the end.
			p.exec(t, `UPDATE result SET server_state=5, outcome=1 WHERE server_state IN (2, 4)`)
			p.exec(t, `UPDATE workunit SET canonical_resultid=2*id-1 WHERE canonical_resultid=0 AND error_mask=0`)
			p.must(t, "--now", passAt, "assimilate", "--exec", "true", "--once")
		},
		func(p *project) []string {
			return []string{"--now", "1200000", "delete-files", "--once", "--batch", "5"}
		},
		func(p *project) map[string]string {
			tree := readTree(t, filepath.Join(p.dir, "upload"))
			for k, v := range readTree(t, filepath.Join(p.dir, "download")) {
				tree["download/"+k] = v
			}
			return tree
		},
		func(out string) int {
			if m := filesDeleted.FindStringSubmatch(out); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n
			}
			return -1
		})
}
