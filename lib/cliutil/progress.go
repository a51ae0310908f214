package cliutil

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
)

// Progress is a progress bar on standard error for long runs (DESIGN.md: the emulator,
// big batches): drawn only when standard error is a terminal, only once the run has
// taken longer than Delay, at most every Interval, and erased at the end, so that
// short runs, pipes and logs never see it. Standard output is never touched.
type Progress struct {
	w        io.Writer
	label    string
	on       bool
	start    time.Time
	last     time.Time
	drawn    bool
	Delay    time.Duration
	Interval time.Duration
	now      func() time.Time
}

// NewProgress returns a progress bar on w labelled label; it draws nothing unless w is
// a terminal.
func NewProgress(w io.Writer, label string) *Progress {
	f, ok := w.(*os.File)
	on := ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
	return newProgress(w, label, on, time.Now)
}

func newProgress(w io.Writer, label string, on bool, now func() time.Time) *Progress {
	t := now()
	return &Progress{w: w, label: label, on: on, start: t, last: t, Delay: time.Second, Interval: 100 * time.Millisecond, now: now}
}

const progressWidth = 30

// Due reports whether Update would draw now: a caller whose detail costs something to
// build (an allocation per call, over a million steps) asks first.
func (p *Progress) Due() bool {
	if !p.on {
		return false
	}
	t := p.now()
	return t.Sub(p.start) >= p.Delay && t.Sub(p.last) >= p.Interval
}

// Update shows fraction (0 to 1) done, with detail after the bar (e.g. "4.5 of 10
// days simulated").
func (p *Progress) Update(fraction float64, detail string) {
	if !p.Due() {
		return
	}
	t := p.now()
	p.last = t
	fraction = min(1, max(0, fraction))
	n := int(fraction * progressWidth)
	eta := ""
	if fraction > 0 {
		left := time.Duration(float64(t.Sub(p.start)) * (1 - fraction) / fraction)
		eta = fmt.Sprintf(", %s left", left.Round(time.Second))
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%% %s%s\x1b[K", p.label, strings.Repeat("#", n), strings.Repeat("-", progressWidth-n), 100*fraction, detail, eta)
	p.drawn = true
}

// Done erases the bar.
func (p *Progress) Done() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}
