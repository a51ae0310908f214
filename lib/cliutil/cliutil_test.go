package cliutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1700000000", 1700000000, true},
		{"1700000000.5", 1700000000.5, true},
		{"2023-11-14T22:13:20Z", 1700000000, true},
		{"2023-11-14T23:13:20+01:00", 1700000000, true},
		{"-1", 0, false},
		{"NaN", 0, false},
		{"yesterday", 0, false},
		// Issue 18: times outside a sane range are refused.
		{"1e300", 0, false}, {"4102444800", 4102444800, true}, {"4102444801", 0, false},
		{"9999-12-31T23:59:59Z", 0, false}, {"1969-12-31T23:59:59Z", 0, false}, {"Inf", 0, false},
	} {
		got, err := ParseTime(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseTime(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"60", 60, true}, {"90s", 90, true}, {"30m", 1800, true}, {"36h", 129600, true},
		{"10d", 864000, true}, {"2w", 1209600, true}, {"1.5d", 129600, true},
		{"-5", 0, false}, {"d", 0, false}, {"10x", 0, false}, {"", 0, false},
	} {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestExitStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("disk on fire"), 1},
		{Usagef("bad flag"), 2},
		{fmt.Errorf("wrapped: %w", BadInput(errors.New("bad doc"))), 2},
		{&StatusError{Code: 10}, 10},
	} {
		if got := ExitStatus(c.err); got != c.want {
			t.Errorf("ExitStatus(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// WriteFileAtomic replaces the file, keeps its permissions and leaves no temporary file.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(got) != "new" || fi.Mode().Perm() != 0o600 {
		t.Errorf("got %q with mode %v, want \"new\" with 0600", got, fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only state.json", len(entries))
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "x.json"), []byte("x")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
