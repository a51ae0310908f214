package store

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestClipStderr: what is kept of a report's stderr is valid UTF-8 and at most
// MaxStderrBytes, the end of it (where the failure is).
func TestClipStderr(t *testing.T) {
	long := strings.Repeat("é", MaxStderrBytes) + "the end"
	got := clipStderr(long)
	if len(got) > MaxStderrBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "éthe end") {
		t.Errorf("clipped: %d bytes, valid %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-10:])
	}
	if got := clipStderr("a\xffb"); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8: %q", got)
	}
}
