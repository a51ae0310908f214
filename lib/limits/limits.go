// Package limits owns the bounds bkit sets on outside input, in one place so that every
// reader applies the same ones and a new reader (an endpoint, a file format) reuses
// them: how many bytes a reader takes of a file, standard input or an HTTP body before
// it refuses the input (Reader, ReadAll, TooLargeError), and how long and how large the
// fields the scheduler endpoint stores may be (fields.go).
//
// A size limit is a refusal, never a truncation: a document cut at the limit could
// still parse and mean something else. Programs raise a limit with --max-input
// (lib/cliutil); a library reader given a plain io.Reader applies its default, and one
// given a *Reader keeps the caller's limit.
package limits

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Default byte limits. A state document of 10,000 tasks is about 3 MB of JSON and a
// large real client_state.xml about 10 MB, so DocumentBytes leaves room for ten times
// that while a hostile /dev/zero stops at a bounded cost (decoding takes a few times
// the input's size in memory).
const (
	// DocumentBytes bounds a state document, a scenario file, each file of a BOINC
	// scenario directory, a client_state.xml or global_prefs.xml, and a bsim world file.
	DocumentBytes int64 = 64 << 20
	// MasterFileBytes bounds a project's master page (a home page: small).
	MasterFileBytes int64 = 1 << 20
	// SchedulerRequestBytes bounds a scheduler request body: a client reporting a
	// thousand results writes about 300 KB.
	SchedulerRequestBytes int64 = 4 << 20
	// SchedulerReplyBytes bounds a scheduler reply: at most a few hundred jobs with their
	// file references.
	SchedulerReplyBytes int64 = 16 << 20
	// TemplateBytes bounds a BOINC result template (a few <file_info> elements).
	TemplateBytes int64 = 1 << 20
	// LineBytes bounds a file of one short line: a password file, a clock file.
	LineBytes int64 = 4 << 10
)

// Flag is the option that raises a program's input limit; messages name it.
const Flag = "--max-input"

// TooLargeError is an input refused for its size. Programs treat it as invalid input
// (exit status 2).
type TooLargeError struct {
	Name  string // the input: a path, "stdin", a URL
	Limit int64
	Fixed bool // no flag raises the limit (ReadFile's)
}

func (e *TooLargeError) Error() string {
	if e.Fixed {
		return fmt.Sprintf("%s: larger than %s, the size limit of this input", e.Name, FormatBytes(e.Limit))
	}
	return fmt.Sprintf("%s: larger than %s, the input size limit (%s SIZE raises it)", e.Name, FormatBytes(e.Limit), Flag)
}

// IsTooLarge reports whether err is, or wraps, a *TooLargeError.
func IsTooLarge(err error) bool {
	var e *TooLargeError
	return errors.As(err, &e)
}

// Reader reads at most Limit bytes of R and fails with a *TooLargeError when R holds
// more.
type Reader struct {
	R     io.Reader
	Name  string
	Limit int64
	Fixed bool // the limit is not the program's --max-input (see TooLargeError)
	n     int64
	err   error
}

// NewReader returns r limited to limit bytes; name is how messages call r. A limit <= 0
// means def. When r is already a *Reader it is returned as it is: its limit was the
// caller's choice.
func NewReader(r io.Reader, name string, limit int64) *Reader {
	if lr, ok := r.(*Reader); ok {
		return lr
	}
	return &Reader{R: r, Name: name, Limit: limit}
}

// Wrap is NewReader with the reader's default limit def, for library readers: a
// *Reader from the program keeps its own limit, anything else gets def.
func Wrap(r io.Reader, name string, def int64) *Reader { return NewReader(r, name, def) }

func (l *Reader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.n >= l.Limit {
		// At the limit: one byte more means too large, EOF means the input fits.
		var one [1]byte
		for {
			n, err := l.R.Read(one[:])
			if n > 0 {
				l.err = &TooLargeError{Name: l.Name, Limit: l.Limit, Fixed: l.Fixed}
				return 0, l.err
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if int64(len(p)) > l.Limit-l.n {
		p = p[:l.Limit-l.n]
	}
	n, err := l.R.Read(p)
	l.n += int64(n)
	return n, err
}

// Err is the *TooLargeError the reader met, or nil: for callers whose decoder does not
// keep the reader's error in its own.
func (l *Reader) Err() error { return l.err }

// ReadAll reads everything r holds, refusing more than the limit: r's own when r is a
// *Reader, else def.
//
// A file that says its size (an *os.File of a regular file) is read into a buffer of
// that size, in one piece: io.ReadAll's doubling would copy a 2.4 MB document through
// buffers of three times its size in all, and on a machine where touching a fresh page
// of memory costs as much as this program's decision, that is most of a read.
func ReadAll(r io.Reader, name string, def int64) ([]byte, error) {
	lr := Wrap(r, name, def)
	size := int64(-1)
	if f, ok := lr.R.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	if size < 0 || size > lr.Limit-lr.n {
		return io.ReadAll(lr)
	}
	// One byte more than the size, so that the read that finds the end needs no larger
	// buffer (and a file that grew meanwhile is still read whole).
	b := make([]byte, 0, size+1)
	for {
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grew: let append choose the next size
		}
	}
}

// ReadFile is os.ReadFile refusing more than limit bytes with a *TooLargeError that
// names path: for every file whose size its reader does not choose (/dev/zero, a
// FIFO, a mistaken path to a disk image).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(&Reader{R: f, Name: path, Limit: limit, Fixed: true}, path, limit)
}

// ReadAllFixed is ReadAll of r with a limit no flag raises, for small inputs of a
// program without --max-input (a password on standard input).
func ReadAllFixed(r io.Reader, name string, limit int64) ([]byte, error) {
	return ReadAll(&Reader{R: r, Name: name, Limit: limit, Fixed: true}, name, limit)
}

// ParseBytes reads a size: a number of bytes, or a number with a unit k, M, G (powers
// of 1024; "KiB", "MB" and the like are read the same way).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	lower := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"gib", 1 << 30}, {"gb", 1 << 30}, {"g", 1 << 30}, {"mib", 1 << 20}, {"mb", 1 << 20}, {"m", 1 << 20},
		{"kib", 1 << 10}, {"kb", 1 << 10}, {"k", 1 << 10}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			mult, t = u.mult, strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || v*float64(mult) > 1<<62 || v != v {
		return 0, fmt.Errorf("want a size > 0: bytes, or a number with a unit k, M or G (e.g. 256M), got %q", s)
	}
	return int64(v * float64(mult)), nil
}

// FormatBytes writes n as ParseBytes reads it: "64 MiB" when it is a whole number of
// a unit, else "N bytes".
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
