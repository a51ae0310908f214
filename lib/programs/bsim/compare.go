package bsim

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/plotcmd"
	"github.com/bkit/bkit/lib/sim"
	"github.com/urfave/cli/v3"
)

// BOINCFigures is the file, in a scenario directory (or beside a scenario file X as
// X.boinc_figures.txt), that holds BOINC's emulator's figures for the scenario: one line
// in the emulator's own form, 'wf W if I sv S m M r R'; lines starting with # are
// comments.
const BOINCFigures = "boinc_figures.txt"

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "run every policy on every scenario and print one table of the figures (the policy lab)",
		UsageText: "bsim compare SCENARIO... [--policy P1,P2,...] [--duration D] [--delta S] [--seed N] [-o table|json|csv] [--plot DIR]",
		Description: cliutil.Help(`
Runs each policy of --policy (default: every policy) on each SCENARIO, as 'bsim run'
would with the same flags, in parallel (one run per processor), and prints one table of
the figures of merit: a row per scenario and policy, in the order given. A scenario
that carries BOINC's emulator's figures has a row 'BOINC' beside its policies: a
directory's `+BOINCFigures+`, or X.boinc_figures.txt beside a scenario file X, holding
the emulator's one-line output 'wf W if I sv S m M r R' (# starts a comment line).
The runs are independent and each is deterministic, so the table is the same whatever
the order they finish in, and each row is what 'bsim run' prints for that pair.

Columns: wf, if, sv, m, r as 'bsim run' defines them; 'wf wall' and 'if wall' are the
wasted and idle fractions over BOINC's emulator's total, the peak FLOPs of the whole
simulated time (its emulator counts every step, the host on or off, and lets running
tasks compute while it is off); on a host always on they equal wf and if. 'vs BOINC'
says, on a scenario with BOINC's figures, whether the policy's wf, if and sv are each
within +0.01 of BOINC's (ok) or which are not.

-o json writes the rows as a JSON array, -o csv as CSV with a header. --plot DIR
draws one grouped bar chart per figure (wf, if, sv, m, r), SVG and PNG, with
DIR/index.html.`,
			[]string{
				"bsim compare scenarios/* --duration 10d",
				"bsim compare --policy seed,goals scenarios/down-2cpu scenarios/part-time-4cpu -o csv > lab.csv",
				"bsim compare scenarios/* --duration 10d --plot lab",
			}, ""),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagDuration, Value: "1d", Usage: "simulated time of each run, `D`: seconds or with a unit (90m, 36h, 10d, 2w)"},
			&cli.StringFlag{Name: flagDelta, Value: "60", Usage: "step length, `S` seconds (or with a unit)"},
			&cli.StringFlag{Name: flagPolicy, Value: strings.Join(sim.Policies(), ","), Usage: "the policies to compare, `P1,P2,...`: " + strings.Join(sim.Policies(), ", ")},
			cliutil.SeedFlag(),
			cliutil.FormatFlag("table", "json", "csv"),
			&cli.StringFlag{Name: flagPlot, Usage: "also draw the comparison, SVG and PNG with an index.html, in `DIR`"},
			existingFlag(),
			threeStateFlag(),
			cliutil.MaxInputFlag(),
			cliutil.VerboseFlag(),
		},
		Action: runCompare,
	}
}

// CompareRow is one row of the comparison: a policy's figures on a scenario, or BOINC's
// emulator's (Policy "BOINC", with no wall-time fractions of its own: its wf and if are
// on the wall time already).
type CompareRow struct {
	Scenario       string  `json:"scenario"`
	Policy         string  `json:"policy"`
	WastedFraction float64 `json:"wasted_fraction"`
	IdleFraction   float64 `json:"idle_fraction"`
	ShareViolation float64 `json:"share_violation"`
	Monotony       float64 `json:"monotony"`
	RPCsPerJob     float64 `json:"rpcs_per_job"`
	WastedWall     float64 `json:"wasted_fraction_wall"`
	IdleWall       float64 `json:"idle_fraction_wall"`
	VsBOINC        string  `json:"vs_boinc,omitempty"`
}

func runCompare(_ context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() == 0 {
		return cliutil.Usagef("want at least one SCENARIO (see 'bsim compare --help')")
	}
	var policies []string
	for _, p := range strings.Split(cmd.String(flagPolicy), ",") {
		p = strings.TrimSpace(p)
		if _, err := sim.NewPolicy(p); err != nil {
			return cliutil.Usagef("--policy: %v", err)
		}
		policies = append(policies, p)
	}
	if _, err := runConfig(cmd, runDefaults{}); err != nil {
		return err
	}
	scenarios := cmd.Args().Slice()
	// Every scenario and its BOINC figures are read before any run, so that a bad one
	// costs nothing.
	boinc := make([]*sim.Result, len(scenarios))
	cfgs := make([]sim.Config, len(scenarios))
	for i, path := range scenarios {
		_, defaults, err := loadScenario(cmd, path)
		if err != nil {
			return err
		}
		if cfgs[i], err = runConfig(cmd, defaults); err != nil {
			return err
		}
		if boinc[i], err = readBOINCFigures(path); err != nil {
			return cliutil.BadInput(err)
		}
	}
	limit, err := cliutil.MaxInput(cmd)
	if err != nil {
		return err
	}
	rows, err := Compare(scenarios, policies, cfgs, limit, runtime.GOMAXPROCS(0))
	if err != nil {
		return err
	}
	var out []CompareRow
	for i, path := range scenarios {
		for k := range policies {
			r := rows[i*len(policies)+k]
			if b := boinc[i]; b != nil {
				r.VsBOINC = versus(r, b)
			}
			out = append(out, r)
		}
		if b := boinc[i]; b != nil {
			out = append(out, CompareRow{Scenario: path, Policy: "BOINC", WastedFraction: b.WastedFraction, IdleFraction: b.IdleFraction,
				ShareViolation: b.ShareViolation, Monotony: b.Monotony, RPCsPerJob: b.RPCsPerJob, WastedWall: b.WastedFraction, IdleWall: b.IdleFraction})
		}
	}
	w := cmd.Root().Writer
	switch cmd.String(cliutil.FlagOutput) {
	case "json":
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		if err != nil {
			return err
		}
	case "csv":
		if err := compareCSV(w, out); err != nil {
			return err
		}
	default:
		if err := compareTable(w, cfgs[0], out); err != nil {
			return err
		}
	}
	if dir := cmd.String(flagPlot); dir != "" {
		prog, err := plotcmd.Find()
		if err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		if err := plotcmd.Draw(prog, &plotcmd.Request{Dir: dir, Comparison: comparison(scenarios, policies, out, boinc)}, cmd.Root().ErrWriter); err != nil {
			return err
		}
		_, err = fmt.Fprintf(cmd.Root().ErrWriter, "bsim: pictures of the comparison in %s\n", filepath.Join(dir, "index.html"))
		return err
	}
	return nil
}

// Compare runs every policy on every scenario (scenario i with cfgs[i]), workers at a
// time, and returns the rows in scenario-major order. Each run loads its scenario
// afresh (a run takes its document over), so runs share nothing and the rows do not
// depend on the order they finish in.
func Compare(scenarios, policies []string, cfgs []sim.Config, limit int64, workers int) ([]CompareRow, error) {
	n := len(scenarios) * len(policies)
	rows := make([]CompareRow, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				i, k := j/len(policies), j%len(policies)
				rows[j], errs[j] = compareOne(scenarios[i], policies[k], cfgs[i], limit)
			}
		}()
	}
	for j := range n {
		next <- j
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

func compareOne(path, policy string, cfg sim.Config, limit int64) (CompareRow, error) {
	sc, err := readScenario(path, limit)
	if err != nil {
		return CompareRow{}, err
	}
	cfg.Policy = policy
	res, err := sim.Run(sc, cfg)
	if err != nil {
		return CompareRow{}, cliutil.BadInput(fmt.Errorf("%s: %w", path, err))
	}
	ww, iw := res.OnWallTime()
	return CompareRow{Scenario: path, Policy: policy, WastedFraction: res.WastedFraction, IdleFraction: res.IdleFraction,
		ShareViolation: res.ShareViolation, Monotony: res.Monotony, RPCsPerJob: res.RPCsPerJob, WastedWall: ww, IdleWall: iw}, nil
}

// versus is "ok" when r's wf, if and sv are each within +0.01 of BOINC's figures b, else
// the figures that are not.
func versus(r CompareRow, b *sim.Result) string {
	var worse []string
	if r.WastedFraction > b.WastedFraction+0.01 {
		worse = append(worse, "wf")
	}
	if r.IdleFraction > b.IdleFraction+0.01 {
		worse = append(worse, "if")
	}
	if r.ShareViolation > b.ShareViolation+0.01 {
		worse = append(worse, "sv")
	}
	if len(worse) == 0 {
		return "ok"
	}
	return "worse: " + strings.Join(worse, ",")
}

// boincFiguresPath is where scenario path keeps BOINC's figures.
func boincFiguresPath(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return filepath.Join(path, BOINCFigures)
	}
	return path + "." + BOINCFigures
}

// readBOINCFigures reads the scenario's BOINC figures, or nil when it has none.
func readBOINCFigures(path string) (*sim.Result, error) {
	file := boincFiguresPath(path)
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := ParseOneLine(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return res, nil
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

func f6(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }

func compareTable(w io.Writer, cfg sim.Config, rows []CompareRow) error {
	fmt.Fprintf(w, "Seed %d, %s simulated in steps of %s s (a scenario's own defaults where it has them and no flag is given)\n\n",
		cfg.Seed, days(cfg.Duration), cliutil.Num(cfg.Delta))
	t := cliutil.NewTable(w, "scenario", "policy", "wf", "if", "sv", "m", "r", "wf wall", "if wall", "vs BOINC")
	for _, r := range rows {
		if err := t.Append([]string{r.Scenario, r.Policy, f6(r.WastedFraction), f6(r.IdleFraction), f6(r.ShareViolation),
			f6(r.Monotony), f6(r.RPCsPerJob), f6(r.WastedWall), f6(r.IdleWall), r.VsBOINC}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

func compareCSV(w io.Writer, rows []CompareRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"scenario", "policy", "wasted_fraction", "idle_fraction", "share_violation", "monotony", "rpcs_per_job",
		"wasted_fraction_wall", "idle_fraction_wall", "vs_boinc"}); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write([]string{r.Scenario, r.Policy, f6(r.WastedFraction), f6(r.IdleFraction), f6(r.ShareViolation),
			f6(r.Monotony), f6(r.RPCsPerJob), f6(r.WastedWall), f6(r.IdleWall), r.VsBOINC}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// comparison is the table as lib/simplot draws it.
func comparison(scenarios, policies []string, rows []CompareRow, boinc []*sim.Result) *plotcmd.Comparison {
	series := append([]string(nil), policies...)
	anyBOINC := false
	for _, b := range boinc {
		anyBOINC = anyBOINC || b != nil
	}
	if anyBOINC {
		series = append(series, "BOINC")
	}
	c := &plotcmd.Comparison{Title: "bsim compare", Figures: []string{"wasted fraction", "idle fraction", "share violation", "monotony", "RPCs per job"},
		Series: series}
	for _, s := range scenarios {
		c.Scenarios = append(c.Scenarios, filepath.Base(filepath.Clean(s)))
	}
	get := []func(r CompareRow) float64{
		func(r CompareRow) float64 { return r.WastedFraction }, func(r CompareRow) float64 { return r.IdleFraction },
		func(r CompareRow) float64 { return r.ShareViolation }, func(r CompareRow) float64 { return r.Monotony },
		func(r CompareRow) float64 { return r.RPCsPerJob },
	}
	c.Values = make([][][]float64, len(get))
	c.Known = make([][][]bool, len(get))
	for f := range get {
		c.Values[f] = make([][]float64, len(scenarios))
		c.Known[f] = make([][]bool, len(scenarios))
		for s := range scenarios {
			c.Values[f][s] = make([]float64, len(series))
			c.Known[f][s] = make([]bool, len(series))
		}
	}
	for _, r := range rows {
		s := indexOf(scenarios, r.Scenario)
		k := indexOf(series, r.Policy)
		for f, g := range get {
			c.Values[f][s][k], c.Known[f][s][k] = g(r), true
		}
	}
	return c
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}
