package cliutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/tempfile"
)

// TestWriteFileAtomicSymlink: writing through a link replaces the file it points to,
// in that file's directory, and the link stays a link (issue 18, item 3).
func TestWriteFileAtomicSymlink(t *testing.T) {
	root := t.TempDir()
	real, links := filepath.Join(root, "real"), filepath.Join(root, "links")
	os.Mkdir(real, 0o755)
	os.Mkdir(links, 0o755)
	target := filepath.Join(real, "s.yaml")
	if err := os.WriteFile(target, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	must(t, os.Symlink("../real/s.yaml", filepath.Join(links, "rel.yaml")))        // relative, other directory
	must(t, os.Symlink(target, filepath.Join(real, "abs.yaml")))                   // absolute, same directory
	must(t, os.Symlink("rel.yaml", filepath.Join(links, "chain.yaml")))            // a link to a link
	must(t, os.Symlink("../real/new.yaml", filepath.Join(links, "dangling.yaml"))) // target not there yet
	for i, l := range []string{filepath.Join(links, "rel.yaml"), filepath.Join(real, "abs.yaml"), filepath.Join(links, "chain.yaml")} {
		want := fmt.Sprintf("new %d", i)
		if err := WriteFileAtomic(l, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(l); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symbolic link", l)
		}
		got, _ := os.ReadFile(target)
		fi, _ := os.Stat(target)
		if string(got) != want || fi.Mode().Perm() != 0o640 {
			t.Errorf("through %s: target holds %q mode %v, want %q 0640", l, got, fi.Mode().Perm(), want)
		}
	}
	if err := WriteFileAtomic(filepath.Join(links, "dangling.yaml"), []byte("made")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(real, "new.yaml")); string(got) != "made" {
		t.Errorf("dangling link's target holds %q", got)
	}
	must(t, os.Symlink("loop.yaml", filepath.Join(root, "loop.yaml")))
	if err := WriteFileAtomic(filepath.Join(root, "loop.yaml"), []byte("x")); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Errorf("a link loop: %v", err)
	}
	assertNoTemps(t, real, links)
}

// TestWriteFileAtomicOrphans: temporary files that killed writes left are removed by the
// next write; one a live writer holds, and files of other names, are not.
func TestWriteFileAtomicOrphans(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, name := range []string{".state.json.tmp123", ".state.json.tmp9", ".state.json.tmpx", ".other.json.tmp1", ".state.json.tmp77"} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte("half"), 0o600))
	}
	held, err := os.OpenFile(filepath.Join(dir, ".state.json.tmp77"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	must(t, tempfile.Lock(held))
	must(t, WriteFileAtomic(path, []byte("new")))
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := ".other.json.tmp1 .state.json.tmp77 .state.json.tmpx state.json"; strings.Join(left, " ") != want {
		t.Errorf("left %v, want %s", left, want)
	}
}

// TestWriteFileAtomicConcurrent: writers of one file at once all succeed (each sweeps
// the others' temporary files only when no one holds them) and leave no litter.
func TestWriteFileAtomicConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if err := WriteFileAtomic(path, []byte(fmt.Sprintf("writer %d write %d", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got, _ := os.ReadFile(path); !strings.HasPrefix(string(got), "writer ") {
		t.Errorf("file holds %q", got)
	}
	assertNoTemps(t, dir)
}

// TestWriteFileAtomicKilled SIGKILLs a process in the middle of its writes: the file is
// always the old or the new document whole, and the next write sweeps the orphans.
func TestWriteFileAtomicKilled(t *testing.T) {
	if path := os.Getenv("BKIT_ATOMIC_WRITER"); path != "" {
		for i := 0; ; i++ {
			WriteFileAtomic(path, bytes.Repeat([]byte{byte('a' + i%2)}, 8<<20))
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "doc")
	must(t, os.WriteFile(path, bytes.Repeat([]byte{'a'}, 8<<20), 0o644))
	orphans := 0
	for kill := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFileAtomicKilled$")
		cmd.Env = append(os.Environ(), "BKIT_ATOMIC_WRITER="+path)
		must(t, cmd.Start())
		time.Sleep(time.Duration(50+40*kill) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		data, err := os.ReadFile(path)
		if err != nil || len(data) != 8<<20 || (!bytes.Equal(data, bytes.Repeat(data[:1], len(data)))) {
			t.Fatalf("after kill %d: %d bytes, err %v: not a whole document", kill, len(data), err)
		}
		entries, _ := os.ReadDir(dir)
		orphans += len(entries) - 1
	}
	must(t, WriteFileAtomic(path, []byte("last")))
	assertNoTemps(t, dir)
	t.Logf("6 kills left %d temporary files behind; the next write removed them", orphans)
}

// TestWriteFileAtomicOrphanOfKilled: the temporary file of a writer that is alive is
// left alone by another write, and removed by the first write after the writer is
// SIGKILLed (the kernel drops its lock).
func TestWriteFileAtomicOrphanOfKilled(t *testing.T) {
	if path := os.Getenv("BKIT_ATOMIC_HOLDER"); path != "" {
		tmp, err := os.CreateTemp(filepath.Dir(path), tempPrefix(filepath.Base(path))+"*")
		if err == nil && tempfile.Lock(tmp) == nil {
			fmt.Println(tmp.Name())
			time.Sleep(time.Minute)
		}
		os.Exit(1)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "doc")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFileAtomicOrphanOfKilled$")
	cmd.Env = append(os.Environ(), "BKIT_ATOMIC_HOLDER="+path)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	line := make([]byte, 4096)
	n, _ := out.Read(line)
	tmp := strings.TrimSpace(string(line[:n]))
	if !strings.HasPrefix(tmp, filepath.Join(dir, ".doc.tmp")) {
		cmd.Process.Kill()
		t.Fatalf("holder said %q", tmp)
	}
	must(t, WriteFileAtomic(path, []byte("1")))
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("a live writer's temporary file was removed: %v", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	must(t, WriteFileAtomic(path, []byte("2")))
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("the killed writer's temporary file %s was left", tmp)
	}
	assertNoTemps(t, dir)
}

func assertNoTemps(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.Contains(e.Name(), ".tmp") {
				t.Errorf("%s: temporary file %s left", d, e.Name())
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
