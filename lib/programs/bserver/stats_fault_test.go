package bserver_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

// exportFiles reads the statistics export in dir: each file's content (gzipped ones
// unpacked, which fails on a file cut short), and every other name in the directory.
func exportFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err == nil {
				b, err = io.ReadAll(zr)
			}
			if err != nil {
				t.Fatalf("%s: not a whole gzip file: %v", e.Name(), err)
			}
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestStatsExportTwiceAndKilled: two `bserver stats export` processes at once into one
// directory, and processes SIGKILLed at random moments then one run to the end, leave
// the files one undisturbed export writes and nothing else; after each kill every
// file there is whole (the previous export's or this one's, never half of one).
func TestStatsExportTwiceAndKilled(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			pdir := t.TempDir()
			db := e.DSN
			// The schema from the template: init then has nothing to migrate.
			storetest.Migrated(t, db)
			run(t, "init", "--db", db, "--project-dir", pdir)
			run(t, "app", "add", "--db", db, "--project-dir", pdir, "sim")
			st, err := store.Open(db)
			if err != nil {
				t.Fatal(err)
			}
			// Enough hosts that an export takes a while to write.
			err = st.Populate(context.Background(), store.PopulateSpec{App: "sim", Hosts: 20000}, 1e6)
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			const now = "1000000"
			export := func(dir string) *exec.Cmd {
				bin, err := exec.LookPath("bserver")
				if err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(bin, "stats", "export", "--db", db, "--project-dir", pdir, "--now", now, dir)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				return cmd
			}

			ref := filepath.Join(t.TempDir(), "stats")
			t0 := time.Now()
			if err := export(ref).Wait(); err != nil {
				t.Fatal(err)
			}
			d := time.Since(t0)
			want := exportFiles(t, ref)
			if len(want) != 4 || !strings.Contains(want["host.gz"], "<host>") {
				t.Fatalf("the undisturbed export wrote %d files", len(want))
			}

			two := filepath.Join(t.TempDir(), "stats")
			var wg sync.WaitGroup
			for range 2 {
				cmd := export(two)
				wg.Go(func() {
					if err := cmd.Wait(); err != nil {
						t.Errorf("an export of two at once: %v", err)
					}
				})
			}
			wg.Wait()
			if diff := cmp.Diff(want, exportFiles(t, two)); diff != "" {
				t.Errorf("two at once (-undisturbed +two):\n%s", diff)
			}

			killed := filepath.Join(t.TempDir(), "stats")
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 4 {
				cmd := export(killed)
				time.Sleep(time.Duration(rng.Float64() * float64(d)))
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				if _, err := os.Stat(killed); err != nil {
					continue // killed before it made the directory
				}
				for name, content := range exportFiles(t, killed) {
					if !strings.HasPrefix(name, ".tmp-") && content != want[name] {
						t.Errorf("after kill %d: %s is not the whole export's", i+1, name)
					}
				}
			}
			if err := export(killed).Wait(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, exportFiles(t, killed)); diff != "" {
				t.Errorf("killed and rerun (-undisturbed +killed):\n%s", diff)
			}
		})
	}
}
