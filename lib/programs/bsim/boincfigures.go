package bsim

// BOINC's emulator's figures kept beside a scenario (boinc_figures.txt), and the verdict
// of a compare row against them.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
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

// readBOINCFigures reads the scenario's BOINC figures, or nil when it has none. With
// several seeds' lines, Figures is their mean and Runs each seed's.
func readBOINCFigures(path string) (*BOINCRun, error) {
	file := boincFiguresPath(path)
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	runs, err := ParseFigures(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	b := &BOINCRun{Figures: runs[0].Figures}
	if len(runs) > 1 || runs[0].Seed != 0 {
		b.Runs = runs
	}
	if b.Runs != nil {
		b.Figures, b.CI, b.Min, b.Max = spread(runs)
	}
	b.Duration, b.Delta = figuresRun(string(data))
	return b, nil
}

// spread is the mean of several runs' figures, the half-widths of the means' 95 %
// confidence intervals, and each figure's least and greatest value.
func spread(runs []SeedFigures) (mean *sim.Result, ci, lo, hi *FiguresCI) {
	res := make([]*sim.Result, len(runs))
	for i, r := range runs {
		res[i] = r.Figures
	}
	mean, ci, lo, hi = &sim.Result{}, &FiguresCI{}, &FiguresCI{}, &FiguresCI{}
	for _, f := range []struct {
		get     func(*sim.Result) float64
		m       *float64
		c, l, h *float64
	}{
		{func(x *sim.Result) float64 { return x.WastedFraction }, &mean.WastedFraction, &ci.WastedFraction, &lo.WastedFraction, &hi.WastedFraction},
		{func(x *sim.Result) float64 { return x.IdleFraction }, &mean.IdleFraction, &ci.IdleFraction, &lo.IdleFraction, &hi.IdleFraction},
		{func(x *sim.Result) float64 { return x.ShareViolation }, &mean.ShareViolation, &ci.ShareViolation, &lo.ShareViolation, &hi.ShareViolation},
		{func(x *sim.Result) float64 { return x.Monotony }, &mean.Monotony, &ci.Monotony, &lo.Monotony, &hi.Monotony},
		{func(x *sim.Result) float64 { return x.RPCsPerJob }, &mean.RPCsPerJob, &ci.RPCsPerJob, &lo.RPCsPerJob, &hi.RPCsPerJob},
	} {
		*f.m, *f.c = meanCI(res, f.get)
		*f.l, *f.h = math.Inf(1), math.Inf(-1)
		for _, x := range res {
			*f.l, *f.h = min(*f.l, f.get(x)), max(*f.h, f.get(x))
		}
	}
	return mean, ci, lo, hi
}

// seedList is seeds as people write them: 1-5, or 1-3,7.
func seedList(seeds []uint64) string {
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", seeds[i], seeds[j]))
		} else {
			parts = append(parts, fmt.Sprint(seeds[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// SeedFigures is one line of a BOINC figures file: the figures of one run of BOINC's
// emulator, and the seed it ran with (0: the line does not say, the one-line form).
type SeedFigures struct {
	Seed    uint64
	Figures *sim.Result
}

// maxFigureSeeds bounds the seed lines of one figures file (a file is a handful of runs,
// not a data set).
const maxFigureSeeds = 1000

// ParseFigures reads a BOINC figures file: lines that are blank or # comments, and
// either one line of BOINC's emulator's figures 'wf W if I sv S m M r R' (one run, seed
// unsaid: the form BOINC's emulator writes) or one or more lines 'seed N wf W if I sv S
// m M r R', one per run of the emulator with its srand seed N (N >= 1, each seed once).
// Errors name the line.
func ParseFigures(r io.Reader) ([]SeedFigures, error) {
	sc := bufio.NewScanner(io.LimitReader(r, 1<<16))
	var runs []SeedFigures
	seen := map[uint64]bool{}
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		var seed uint64
		skip := 0
		if f[0] == "seed" {
			if len(f) < 2 {
				return nil, fmt.Errorf("line %d: want 'seed N wf W if I sv S m M r R', got %q", line, text)
			}
			x, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil || x == 0 {
				return nil, fmt.Errorf("line %d: seed: want a whole number >= 1, got %q", line, f[1])
			}
			if seen[x] {
				return nil, fmt.Errorf("line %d: seed %d a second time", line, x)
			}
			seen[x], seed, skip = true, x, 2
		}
		switch {
		case len(runs) > 0 && (seed == 0 || runs[0].Seed == 0):
			return nil, fmt.Errorf("line %d: one line of figures without 'seed N', or lines that each start 'seed N'; got another: %q", line, text)
		case len(runs) >= maxFigureSeeds:
			return nil, fmt.Errorf("line %d: at most %d seeds", line, maxFigureSeeds)
		}
		res, err := figureWords(text, skip)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		runs = append(runs, SeedFigures{Seed: seed, Figures: res})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no line of figures ('wf W if I sv S m M r R' or 'seed N wf W ...')")
	}
	return runs, nil
}

// figureWords reads the words 'wf W if I sv S m M r R' of one line of figures, text,
// the words from skip on (after 'seed N').
func figureWords(text string, skip int) (*sim.Result, error) {
	f := strings.Fields(text)[skip:]
	want := []string{"wf", "if", "sv", "m", "r"}
	if len(f) != 2*len(want) {
		if skip > 0 {
			return nil, fmt.Errorf("want 'seed N wf W if I sv S m M r R', got %q", text)
		}
		return nil, fmt.Errorf("want 'wf W if I sv S m M r R', got %q", text)
	}
	vals := make([]float64, len(want))
	for k, name := range want {
		if f[2*k] != name {
			return nil, fmt.Errorf("want %q as word %d, got %q", name, skip+2*k+1, f[2*k])
		}
		x, err := strconv.ParseFloat(f[2*k+1], 64)
		if err != nil || x < 0 || x != x || x > 1e300 {
			return nil, fmt.Errorf("%s: want a number >= 0, got %q", name, f[2*k+1])
		}
		vals[k] = x
	}
	return &sim.Result{WastedFraction: vals[0], IdleFraction: vals[1], ShareViolation: vals[2], Monotony: vals[3], RPCsPerJob: vals[4]}, nil
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
		var err error
		if res, err = figureWords(text, 0); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("no line of figures ('wf W if I sv S m M r R')")
	}
	return res, nil
}
