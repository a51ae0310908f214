package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSlot runs the app in a slot laid out as a BOINC client lays it out: link files
// pointing into the project directory.
func TestSlot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	slot, proj := filepath.Join(root, "slots", "0"), filepath.Join(root, "projects", "p")
	os.MkdirAll(slot, 0o755)
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "input_1"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(slot, "in"), []byte("<soft_link>../../projects/p/input_1</soft_link>\n"), 0o644)
	os.WriteFile(filepath.Join(slot, "out"), []byte("<soft_link>../../projects/p/wu_1_0_0</soft_link>\n"), 0o644)
	if err := run(slot); err != nil {
		t.Fatal(err)
	}
	finish(slot, 0)
	got, err := os.ReadFile(filepath.Join(proj, "wu_1_0_0"))
	if err != nil || string(got) != "HELLO\n5 bytes\n" {
		t.Fatalf("output %q, %v", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(slot, "boinc_finish_called")); string(b) != "0\n" {
		t.Fatalf("finish file %q", b)
	}
}

// TestCopiedFiles: with copy_file the slot holds the data itself.
func TestCopiedFiles(t *testing.T) {
	t.Parallel()
	slot := t.TempDir()
	os.WriteFile(filepath.Join(slot, "in"), []byte("abc"), 0o644)
	if err := run(slot); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(slot, "out")); string(got) != "ABC\n3 bytes\n" {
		t.Fatalf("output %q", got)
	}
}
