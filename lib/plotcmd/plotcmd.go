// Package plotcmd owns how bsim has its pictures drawn without linking the plotting
// library: gonum.org/v1/plot and what comes with it (twelve fonts parsed when the
// program starts, image, PDF and LaTeX packages) would cost every bsim run several
// milliseconds of start-up, most of a 10-day run's time, whether it draws or not. So
// bsim hands a run's trace or a comparison, as JSON on standard input, to the program
// bsim-plot (lib/programs/bsimplot), which draws with lib/simplot. A Request is what
// passes between the two.
package plotcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/bkit/bkit/lib/sim"
)

// Program is the drawing program's name.
const Program = "bsim-plot"

// Request is one drawing: a run's Trace titled Title, a Comparison, or Counts, into
// Dir.
type Request struct {
	Dir        string      `json:"dir"`
	Title      string      `json:"title,omitempty"`
	Trace      *sim.Trace  `json:"trace,omitempty"`
	Comparison *Comparison `json:"comparison,omitempty"`
	Counts     *Counts     `json:"counts,omitempty"`
}

// Counts is how many of something were in each state over time: Series[k].Values[i]
// at Times[i] (hours since the start); the full loop (scripts/full-loop.sh --plot)
// draws a project's results and workunits this way.
type Counts struct {
	Title   string
	Summary string // a line under the title of index.html
	Times   []float64
	Series  []CountSeries
}

// CountSeries is one state's count at each of Counts.Times.
type CountSeries struct {
	Name   string
	Values []float64
}

func (c *Counts) check() error {
	for i, t := range c.Times {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("counts.times[%d]: not a finite number", i)
		}
	}
	for k, s := range c.Series {
		if len(s.Values) != len(c.Times) {
			return fmt.Errorf("counts.series[%d]: %d values for %d times", k, len(s.Values), len(c.Times))
		}
		for i, x := range s.Values {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("counts.series[%d].values[%d]: not a finite number", k, i)
			}
		}
	}
	return nil
}

// Comparison is what bsim compare measured: Values[f][s][p] is figure Figures[f] of
// policy Series[p] on scenario Scenarios[s], and Known[f][s][p] whether there is one
// (BOINC's emulator's figures are there only for the scenarios that carry them).
type Comparison struct {
	Title     string
	Figures   []string // "wasted fraction", ...
	Scenarios []string
	Series    []string // the policies, then "BOINC" when any scenario has its figures
	Values    [][][]float64
	Known     [][][]bool
}

// Check reports what makes r impossible to draw, naming the field: the directory, one
// and only one of a trace, a comparison and counts, and a comparison's shape (a trace's own
// check is simplot.Check, where the drawing's rules are).
func (r *Request) Check() error {
	switch {
	case r.Dir == "":
		return errors.New("dir: empty")
	case btoi(r.Trace != nil)+btoi(r.Comparison != nil)+btoi(r.Counts != nil) != 1:
		return errors.New("want one of trace, comparison and counts")
	case r.Comparison != nil:
		return r.Comparison.check()
	case r.Counts != nil:
		return r.Counts.check()
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (c *Comparison) check() error {
	dims := []int{len(c.Figures), len(c.Scenarios), len(c.Series)}
	for _, v := range []struct {
		name string
		n    int
		at   func(f, s int) int // the length of row [f][s]; f, s -1 for outer levels
	}{
		{"values", len(c.Values), func(f, s int) int {
			if s < 0 {
				return len(c.Values[f])
			}
			return len(c.Values[f][s])
		}},
		{"known", len(c.Known), func(f, s int) int {
			if s < 0 {
				return len(c.Known[f])
			}
			return len(c.Known[f][s])
		}},
	} {
		if v.n != dims[0] {
			return fmt.Errorf("comparison.%s: %d figures, want %d", v.name, v.n, dims[0])
		}
		for f := range v.n {
			if n := v.at(f, -1); n != dims[1] {
				return fmt.Errorf("comparison.%s[%d]: %d scenarios, want %d", v.name, f, n, dims[1])
			}
			for s := range dims[1] {
				if n := v.at(f, s); n != dims[2] {
					return fmt.Errorf("comparison.%s[%d][%d]: %d series, want %d", v.name, f, s, n, dims[2])
				}
			}
		}
	}
	for f := range c.Values {
		for s := range c.Values[f] {
			for p, x := range c.Values[f][s] {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return fmt.Errorf("comparison.values[%d][%d][%d]: not a finite number", f, s, p)
				}
			}
		}
	}
	return nil
}

// Decode reads one Request from r, strictly: an unknown field or anything after the
// request is an error, and so is a request that fails Check.
func Decode(r io.Reader) (*Request, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the request")
	}
	if err := req.Check(); err != nil {
		return nil, err
	}
	return &req, nil
}

// Find returns the path of the drawing program: beside the running program first (go
// install puts them in one directory), then in PATH.
func Find() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), Program)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(Program)
	if err != nil {
		return "", fmt.Errorf("the pictures are drawn by %s, which is neither beside this program nor in PATH (go install github.com/bkit/bkit/cmd/%s, or go install ./cmd/... in the repository)", Program, Program)
	}
	return p, nil
}

// Draw runs the drawing program prog on req. Its messages go to stderr.
func Draw(prog string, req *Request, stderr io.Writer) error {
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: %w", Program, err)
	}
	cmd := exec.Command(prog, "--max-input", strconv.Itoa(len(data)))
	cmd.Stdin = bytes.NewReader(data)
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", Program, err)
	}
	return nil
}
