package tempfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemoveOrphans: a file no process holds is removed; one held by this process,
// one held by another live process, a file that does not match and a directory stay.
func TestRemoveOrphans(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".tmp-orphan"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "kept"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, ".tmp-dir"), 0o755)
	mine, err := Create(dir, ".tmp-*")
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	// Another process holds a lock on its file while it sleeps.
	other := filepath.Join(dir, ".tmp-other")
	os.WriteFile(other, []byte("x"), 0o644)
	cmd := exec.Command("flock", other, "sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Logf("NOT TESTED: a file held by another process (no flock(1): %v)", err)
		os.Remove(other)
		other = ""
	} else {
		defer func() {
			cmd.Process.Kill()
			cmd.Wait()
		}()
		for i := 0; i < 100; i++ { // until flock(1) holds it
			f, _ := os.Open(other)
			if f == nil || !Orphan(f) {
				if f != nil {
					f.Close()
				}
				break
			}
			f.Close() // our probe's lock goes with the descriptor
			exec.Command("sleep", "0.02").Run()
		}
	}
	n, err := RemoveOrphans(dir, func(name string) bool { return strings.HasPrefix(name, ".tmp-") })
	if err != nil || n != 1 {
		t.Errorf("RemoveOrphans: %d, %v; want 1 removed", n, err)
	}
	for _, p := range []string{"kept", ".tmp-dir", filepath.Base(mine.Name()), filepath.Base(other)} {
		if _, err := os.Stat(filepath.Join(dir, p)); p != "" && err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".tmp-orphan")); !os.IsNotExist(err) {
		t.Errorf("the orphan is still there: %v", err)
	}
}
