package bsim

// BOINC's emulator's figures kept beside a scenario (boinc_figures.txt), and the verdict
// of a compare row against them.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/sim"
)

// margin is how much worse than BOINC's a figure may be and still count as "at least as
// good" (issue 29's measure).
const margin = 0.01

// versus is the verdict of row r against BOINC's figures b: "ok" when r's wf, if and sv
// are each within +margin of BOINC's (with several seeds: the top of each confidence
// interval), "worse: ..." the figures that are not (the bottom of the interval above),
// "unsure: ..." those whose interval straddles the line; or, when the two cannot be
// compared, why not.
func versus(r CompareRow, b *BOINCRun) string {
	switch {
	case r.Conventions != "boinc":
		return "not compared: bsim's conventions (use --emulate boinc)"
	case b.Duration == 0:
		return "not compared: BOINC's figures do not say their simulated time"
	case b.Duration != r.Duration || (b.Delta != 0 && b.Delta != r.Delta):
		return fmt.Sprintf("not compared: BOINC's figures are for %s, delta %s s; this run %s, delta %s s",
			span(b.Duration), cliutil.Num(b.Delta), span(r.Duration), cliutil.Num(r.Delta))
	}
	var worse, unsure []string
	for _, f := range verdictFigures {
		mean, half := f.get(&r)
		line := f.boinc(b.Figures) + margin
		switch {
		case mean-half > line:
			worse = append(worse, f.name)
		case mean+half > line:
			unsure = append(unsure, f.name)
		}
	}
	var parts []string
	if len(worse) > 0 {
		parts = append(parts, "worse: "+strings.Join(worse, ","))
	}
	if len(unsure) > 0 {
		parts = append(parts, "unsure: "+strings.Join(unsure, ","))
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, "; ")
}

// verdictFigures are the figures a verdict weighs: a row's mean and CI half-width, and
// BOINC's figure.
var verdictFigures = []struct {
	name  string
	get   func(r *CompareRow) (mean, half float64)
	boinc func(b *sim.Result) float64
}{
	{"wf", func(r *CompareRow) (float64, float64) { return r.WastedFraction, r.ci().WastedFraction },
		func(b *sim.Result) float64 { return b.WastedFraction }},
	{"if", func(r *CompareRow) (float64, float64) { return r.IdleFraction, r.ci().IdleFraction },
		func(b *sim.Result) float64 { return b.IdleFraction }},
	{"sv", func(r *CompareRow) (float64, float64) { return r.ShareViolation, r.ci().ShareViolation },
		func(b *sim.Result) float64 { return b.ShareViolation }},
}

func (r *CompareRow) ci() FiguresCI {
	if r.CI == nil {
		return FiguresCI{}
	}
	return *r.CI
}

// boincFiguresPath is where scenario path keeps BOINC's figures.
func boincFiguresPath(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return filepath.Join(path, BOINCFigures)
	}
	return path + "." + BOINCFigures
}

// readBOINCFigures reads the scenario's BOINC figures, or nil when it has none.
func readBOINCFigures(path string) (*BOINCRun, error) {
	file := boincFiguresPath(path)
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	res, err := ParseOneLine(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	b := &BOINCRun{Figures: res}
	b.Duration, b.Delta = figuresRun(string(data))
	return b, nil
}

var (
	runDays  = regexp.MustCompile(`(?m)^#.*?\b([0-9]+(?:\.[0-9]+)?) simulated days?\b`)
	runDelta = regexp.MustCompile(`(?m)^#.*?\bdelta ([0-9]+(?:\.[0-9]+)?)\b`)
)

// figuresRun is the simulated time and step a figures file's comments say its figures
// are for ('# BOINC's client emulator ..., 10 simulated days, delta 60'), seconds; 0
// where they do not say.
func figuresRun(text string) (duration, delta float64) {
	num := func(s string) float64 {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || x > 1e12 {
			return 0 // not a run anyone made: as if unsaid
		}
		return x
	}
	if m := runDays.FindStringSubmatch(text); m != nil {
		duration = num(m[1]) * 86400
	}
	if m := runDelta.FindStringSubmatch(text); m != nil {
		delta = num(m[1])
	}
	return duration, delta
}

// ParseOneLine reads BOINC's emulator's one-line figures 'wf W if I sv S m M r R' (the
// first line that is not blank or a # comment; nothing may follow it but those).
func ParseOneLine(r io.Reader) (*sim.Result, error) {
	sc := bufio.NewScanner(io.LimitReader(r, 1<<16))
	var res *sim.Result
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if res != nil {
			return nil, fmt.Errorf("line %d: one line of figures only, got another: %q", line, text)
		}
		f := strings.Fields(text)
		want := []string{"wf", "if", "sv", "m", "r"}
		if len(f) != 2*len(want) {
			return nil, fmt.Errorf("line %d: want 'wf W if I sv S m M r R', got %q", line, text)
		}
		vals := make([]float64, len(want))
		for k, name := range want {
			if f[2*k] != name {
				return nil, fmt.Errorf("line %d: want %q as word %d, got %q", line, name, 2*k+1, f[2*k])
			}
			x, err := strconv.ParseFloat(f[2*k+1], 64)
			if err != nil || x < 0 || x != x || x > 1e300 {
				return nil, fmt.Errorf("line %d: %s: want a number >= 0, got %q", line, name, f[2*k+1])
			}
			vals[k] = x
		}
		res = &sim.Result{WastedFraction: vals[0], IdleFraction: vals[1], ShareViolation: vals[2], Monotony: vals[3], RPCsPerJob: vals[4]}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("no line of figures ('wf W if I sv S m M r R')")
	}
	return res, nil
}
