package cliutil

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	var b bytes.Buffer
	p := newProgress(&b, "bsim", true, now)
	p.Update(0.1, "early")
	clock = clock.Add(time.Second - time.Millisecond)
	p.Update(0.2, "just before the delay")
	if b.Len() != 0 || p.Due() {
		t.Fatalf("drawn before the delay: %q", b.String())
	}
	clock = clock.Add(time.Millisecond)
	if !p.Due() {
		t.Fatal("not due once the delay has passed")
	}
	p.Update(0.25, "at the delay")
	if !strings.Contains(b.String(), "at the delay") {
		t.Fatalf("not drawn once the delay has passed: %q", b.String())
	}
	b.Reset()
	clock = clock.Add(time.Second)
	p.Update(0.5, "1 of 2 days")
	want := "\rbsim [###############---------------]  50% 1 of 2 days, 2s left\x1b[K"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	clock = clock.Add(10 * time.Millisecond)
	p.Update(0.6, "too soon")
	if b.Len() != 0 || p.Due() {
		t.Fatalf("drawn within the interval: %q", b.String())
	}
	clock = clock.Add(90 * time.Millisecond)
	p.Update(0.7, "after the interval")
	if !strings.Contains(b.String(), "after the interval") {
		t.Fatalf("not drawn once the interval has passed: %q", b.String())
	}
	b.Reset()
	p.Done()
	if b.String() != "\r\x1b[K" {
		t.Fatalf("Done wrote %q", b.String())
	}

	// Not a terminal: nothing, ever.
	b.Reset()
	p = NewProgress(&b, "bsim")
	clock = clock.Add(time.Hour)
	p.Update(0.5, "x")
	p.Done()
	if b.Len() != 0 || p.Due() || strings.Contains(b.String(), "#") {
		t.Fatalf("a buffer got %q", b.String())
	}
}
