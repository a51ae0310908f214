package filetree_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bkit/bkit/lib/filetree"
)

// BOINC's dir_hier_path for "uppercase_1_0_0": md5 09c0164e…, digits 2–8 "9c0164e"
// = 163583566, mod 1024 = 590 = 0x24e (computed apart, with Python's hashlib).
func TestDirIsBOINCs(t *testing.T) {
	if got := filetree.Dir("uppercase_1_0_0"); got != "24e" {
		t.Errorf("Dir = %q, want 24e", got)
	}
	seen := map[string]bool{}
	for i := 0; i < 20000; i++ {
		d := filetree.Dir("r_" + strconv.Itoa(i) + "_0")
		x, err := strconv.ParseInt(d, 16, 64)
		if err != nil || x < 0 || x >= filetree.Fanout {
			t.Fatalf("Dir %q out of range", d)
		}
		seen[d] = true
	}
	if len(seen) < filetree.Fanout*9/10 {
		t.Errorf("20,000 names use %d of %d directories", len(seen), filetree.Fanout)
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	up := filepath.Join(dir, "upload")
	os.MkdirAll(filepath.Join(up, filetree.Dir("tree_0")), 0o755)
	os.WriteFile(filepath.Join(up, filetree.Path("tree_0")), []byte("t"), 0o644)
	os.WriteFile(filepath.Join(up, "flat_0"), []byte("f"), 0o644)
	os.WriteFile(filepath.Join(dir, "secret"), []byte("s"), 0o644)
	os.Symlink(filepath.Join(dir, "secret"), filepath.Join(up, "link_0"))
	os.Mkdir(filepath.Join(up, "adir"), 0o755)
	root, err := os.OpenRoot(up)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for name, want := range map[string]string{
		"tree_0": filetree.Path("tree_0"), "flat_0": "flat_0",
		"nosuch": "", "../secret": "", "link_0": "", "adir": "", ".": "", "": "", "a/../../secret": "",
	} {
		rel, ok, err := filetree.Find(root, name)
		if err != nil || ok != (want != "") || rel != want {
			t.Errorf("Find(%q) = %q, %v, %v; want %q", name, rel, ok, err, want)
		}
	}
}

// TestTreeFind: a Tree finds what Find finds, by the same rules (a regular file in
// the tree or flat, nothing out of the directory), and a fan-out directory made after
// a look-up found none.
func TestTreeFind(t *testing.T) {
	dir := t.TempDir()
	up := filepath.Join(dir, "upload")
	os.MkdirAll(filepath.Join(up, filetree.Dir("tree_0")), 0o755)
	os.WriteFile(filepath.Join(up, filetree.Path("tree_0")), []byte("tree"), 0o644)
	os.WriteFile(filepath.Join(up, "flat_0"), []byte("f"), 0o644)
	os.WriteFile(filepath.Join(dir, "secret"), []byte("s"), 0o644)
	os.Symlink(filepath.Join(dir, "secret"), filepath.Join(up, "link_0"))
	os.Mkdir(filepath.Join(up, "adir"), 0o755)
	tree, err := filetree.OpenTree(up)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	for name, want := range map[string]string{
		"tree_0": filetree.Path("tree_0"), "flat_0": "flat_0", "late_0": "",
		"nosuch": "", "../secret": "", "link_0": "", "adir": "", ".": "", "": "", "a/../../secret": "",
	} {
		f, ok, err := tree.Find(name)
		if err != nil || ok != (want != "") || f.Rel != want {
			t.Errorf("Find(%q) = %q, %v, %v; want %q", name, f.Rel, ok, err, want)
		}
		if name == "tree_0" && f.Size != 4 {
			t.Errorf("Find(tree_0): size %d, want 4", f.Size)
		}
	}
	// An upload made after the look-up found no directory for it.
	os.MkdirAll(filepath.Join(up, filetree.Dir("late_0")), 0o755)
	os.WriteFile(filepath.Join(up, filetree.Path("late_0")), []byte("l"), 0o644)
	if f, ok, err := tree.Find("late_0"); err != nil || !ok || f.Rel != filetree.Path("late_0") {
		t.Errorf("Find(late_0) after its upload = %q, %v, %v", f.Rel, ok, err)
	}
}
