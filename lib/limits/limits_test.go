package limits

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReader(t *testing.T) {
	for _, c := range []struct {
		size, limit int64
		tooLarge    bool
	}{{0, 10, false}, {9, 10, false}, {10, 10, false}, {11, 10, true}, {1 << 20, 10, true}, {1 << 20, 1 << 20, false}} {
		data, err := ReadAll(bytes.NewReader(make([]byte, c.size)), "in", c.limit)
		switch {
		case c.tooLarge && !IsTooLarge(err):
			t.Errorf("%d bytes, limit %d: err %v, want too large", c.size, c.limit, err)
		case !c.tooLarge && (err != nil || int64(len(data)) != c.size):
			t.Errorf("%d bytes, limit %d: %d bytes, err %v", c.size, c.limit, len(data), err)
		}
	}
	var e *TooLargeError
	_, err := ReadAll(strings.NewReader("12345"), "f.yaml", 4)
	if !errors.As(err, &e) || err.Error() != "f.yaml: larger than 4 bytes, the input size limit (--max-input SIZE raises it)" {
		t.Errorf("err = %v", err)
	}
	// The caller's *Reader keeps its limit when a library wraps it again with its default.
	r := NewReader(strings.NewReader("123456"), "mine", 100)
	if data, err := ReadAll(r, "lib", 3); err != nil || string(data) != "123456" {
		t.Errorf("caller's limit not kept: %q %v", data, err)
	}
	// An endless input stops at the limit.
	if _, err := io.Copy(io.Discard, NewReader(zeros{}, "/dev/zero", 1<<20)); !IsTooLarge(err) {
		t.Errorf("endless input: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestParseFormatBytes(t *testing.T) {
	for s, want := range map[string]int64{"1": 1, "1k": 1024, "64M": 64 << 20, "64MiB": 64 << 20, "2 GB": 2 << 30, "1.5k": 1536, "100b": 100} {
		got, err := ParseBytes(s)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "-1", "x", "1x", "NaN", "1e300G"} {
		if _, err := ParseBytes(s); err == nil {
			t.Errorf("ParseBytes(%q): no error", s)
		}
	}
	for n, want := range map[int64]string{64 << 20: "64 MiB", 1 << 30: "1 GiB", 1536: "1536 bytes", 2048: "2 KiB", 5: "5 bytes"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestReadFile: a file of endless bytes stops at the limit with an error naming it and
// no flag; a file within the limit is read whole; the limit's own size fits.
func TestReadFile(t *testing.T) {
	_, err := ReadFile("/dev/zero", 1<<10)
	if !IsTooLarge(err) || err.Error() != "/dev/zero: larger than 1 KiB, the size limit of this input" {
		t.Errorf("/dev/zero: %v", err)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("1234"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(path, 4); err != nil || string(b) != "1234" {
		t.Errorf("%q %v", b, err)
	}
	if _, err := ReadFile(path, 3); !IsTooLarge(err) {
		t.Errorf("4 bytes, limit 3: %v", err)
	}
	if _, err := ReadAllFixed(zeros{}, "standard input", 10); !IsTooLarge(err) || strings.Contains(err.Error(), Flag) {
		t.Errorf("ReadAllFixed: %v", err)
	}
}
