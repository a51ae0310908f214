package bsim

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/urfave/cli/v3"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/plotcmd"
	"github.com/bkit/bkit/lib/sim"
)

// BOINCFigures is the file, in a scenario directory (or beside a scenario file X as
// X.boinc_figures.txt), that holds BOINC's emulator's figures for the scenario: one line
// in the emulator's own form, 'wf W if I sv S m M r R', or one line per run of the
// emulator with its srand seed N, 'seed N wf W if I sv S m M r R' (ParseFigures); lines
// starting with # are comments.
const BOINCFigures = "boinc_figures.txt"

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "run every policy on every scenario and print one table of the figures (the policy lab)",
		UsageText: "bsim compare SCENARIO... [--policy P1,P2,...] [--duration D] [--delta S] [--seed N | --seeds A-B] [--emulate bsim|boinc] [--summary] [-o table|json|csv] [--plot DIR]",
		Description: cliutil.Help(`
Runs each policy of --policy (default: every policy) on each SCENARIO, as 'bsim run'
would with the same flags, in parallel (one run per processor), and prints one table of
the figures of merit: a row per scenario and policy, in the order given, with the
simulated time and step it ran for and the conventions it ran under. The runs are
independent and each is deterministic, so the table is the same whatever the order they
finish in, and each row of one seed is what 'bsim run' prints for that pair.

A scenario that carries BOINC's emulator's figures has a row 'BOINC' beside its
policies: a directory's `+BOINCFigures+`, or X.boinc_figures.txt beside a scenario file
X, holding the emulator's one-line output 'wf W if I sv S m M r R' and, in a # comment,
the run they are for ('# ... 10 simulated days, delta 60'). BOINC's emulator is noisy
(other srand seeds of it differ from its seed 1 by more than 0.01 on most corpus
scenarios), so the file may instead hold one line per run of the emulator, 'seed N wf W
if I sv S m M r R' (the corpus's hold seeds 1-5): then BOINC's row is their mean ± its
confidence interval, the verdict and the summary weigh each policy against that mean,
and the output says so ("BOINC: mean of seeds 1-5"); -o csv then adds, after its usual
columns, boinc_seeds and each figure's least and greatest over BOINC's seeds
(min_wasted_fraction ... max_rpcs_per_job; empty in the policies' rows), -o json the
fields boinc_seeds, min and max. Without --duration and
--delta such a scenario runs for its figures' time and step. 'vs BOINC' says whether
the policy's wf, if and sv are each within +0.01 of BOINC's (ok) or which are not. It is
given only where the comparison means something: under --emulate boinc (BOINC's
emulator's conventions: running tasks compute while the host is off, totals over the
whole simulated time; bsim's own, the default, stop the host's work when it is off and
count only the time it could compute), and for the simulated time and step BOINC's
figures are for; elsewhere it says why not.

A scenario that needs a live project server (no emulated apps and no jobs of its own,
like scenarios/live-2cpu.yaml) is left out, with a note on standard error, and so is a
directory that holds scenarios rather than being one (scenarios/corpus: give
scenarios/corpus/* to compare its scenarios).

--seeds A-B (or a list, 1,4,9) runs every pair once per seed and prints each figure's
mean ± the half-width of its 95 % confidence interval (Student's t); the verdict uses
the interval: ok when its top is within +0.01 of BOINC's figure, worse when its bottom
is not, unsure between. BOINC's figure is one run of its emulator, or the mean of the
seeds its file holds.

Below the table, when some rows have a verdict: a summary per policy, on how many
scenarios it is at least as good as BOINC (within +0.01) on each of wf, if and sv and
on all three; on how many it is in band (wf, if and sv within 0.01 of BOINC's either
way and r within 20 %: issue 30's test of a faithful emulation); and its worst cases
(the scenarios where a figure exceeds BOINC's most).
--summary prints only that. -o json writes the rows as a JSON array, -o csv as CSV
with a header. --plot DIR draws one grouped bar chart per figure (wf, if, sv, m, r),
SVG and PNG, with DIR/index.html.`,
			[]string{
				"bsim compare scenarios/*",
				"bsim compare --emulate boinc --summary scenarios/corpus/*",
				"bsim compare --emulate boinc --seeds 1-5 --policy goals scenarios/corpus/c01*",
				"bsim compare --policy seed,goals scenarios/down-2cpu scenarios/part-time-4cpu -o csv > lab.csv",
				"bsim compare scenarios/* --duration 10d --plot lab",
			}, ""),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagDuration, Value: "1d", Usage: "simulated time of each run, `D`: seconds or with a unit (90m, 36h, 10d, 2w); default: the scenario's own (its BOINC figures' time), else 1d"},
			&cli.StringFlag{Name: flagDelta, Value: "60", Usage: "step length, `S` seconds (or with a unit)"},
			&cli.StringFlag{Name: flagPolicy, Value: strings.Join(sim.Policies(), ","), Usage: "the policies to compare, `P1,P2,...`: " + strings.Join(sim.Policies(), ", ")},
			cliutil.SeedFlag(),
			&cli.StringFlag{Name: flagSeeds, Usage: "run each pair once per seed of `A-B` (or A,B,C) and print means with 95 % confidence intervals (instead of --seed)"},
			emulateFlag(),
			&cli.BoolFlag{Name: flagSummary, Usage: "print only the summary against BOINC's figures, not the table"},
			cliutil.FormatFlag("table", "json", "csv"),
			&cli.StringFlag{Name: flagPlot, Usage: "also draw the comparison, SVG and PNG with an index.html, in `DIR`"},
			existingFlag(),
			threeStateFlag(),
			forceFlag(),
			cliutil.MaxInputFlag(),
			cliutil.VerboseFlag(),
		},
		Action: runCompare,
	}
}

const (
	flagSeeds   = "seeds"
	flagSummary = "summary"
)

// CompareRow is one row of the comparison: a policy's figures on a scenario (the means
// over Seeds, with the half-widths of their 95 % confidence intervals in CI when there
// are several), or BOINC's emulator's (Policy "BOINC", Seeds 0, Duration and Delta
// those its figures say, 0 when they do not say).
type CompareRow struct {
	Scenario       string     `json:"scenario"`
	Policy         string     `json:"policy"`
	Duration       float64    `json:"duration"`
	Delta          float64    `json:"delta"`
	Conventions    string     `json:"conventions"` // bsim or boinc
	Seeds          int        `json:"seeds"`
	WastedFraction float64    `json:"wasted_fraction"`
	IdleFraction   float64    `json:"idle_fraction"`
	ShareViolation float64    `json:"share_violation"`
	Monotony       float64    `json:"monotony"`
	RPCsPerJob     float64    `json:"rpcs_per_job"`
	CI             *FiguresCI `json:"ci95,omitempty"`
	VsBOINC        string     `json:"vs_boinc,omitempty"`
	// BOINC's row when its figures file holds several seeds' runs: those seeds, and
	// each figure's least and greatest over them (the row's figures are their means).
	BOINCSeeds []uint64 `json:"boinc_seeds,omitempty"`
	Min        *Figures `json:"min,omitempty"`
	Max        *Figures `json:"max,omitempty"`
}

// FiguresCI are the half-widths of the 95 % confidence intervals of a row's means.
type FiguresCI = Figures

// Figures are the five figures of merit, as one row's CI, or BOINC's least or greatest
// over its seeds.
type Figures struct {
	WastedFraction float64 `json:"wasted_fraction"`
	IdleFraction   float64 `json:"idle_fraction"`
	ShareViolation float64 `json:"share_violation"`
	Monotony       float64 `json:"monotony"`
	RPCsPerJob     float64 `json:"rpcs_per_job"`
}

// BOINCRun is BOINC's emulator's figures for a scenario and the run they are for (0:
// not said). With several seeds' runs (Runs), Figures is their mean, CI the half-widths
// of its 95 % confidence intervals, Min and Max each figure's extremes.
type BOINCRun struct {
	Figures         *sim.Result
	Duration, Delta float64
	Runs            []SeedFigures // nil: one line without a seed
	CI, Min, Max    *FiguresCI
}

// row is BOINC's row of the comparison for scenario path.
func (b *BOINCRun) row(path string) CompareRow {
	f := b.Figures
	r := CompareRow{Scenario: path, Policy: "BOINC", Duration: b.Duration, Delta: b.Delta, Conventions: "boinc",
		WastedFraction: f.WastedFraction, IdleFraction: f.IdleFraction, ShareViolation: f.ShareViolation, Monotony: f.Monotony, RPCsPerJob: f.RPCsPerJob}
	if b.Runs != nil {
		r.Seeds = len(b.Runs)
		for _, x := range b.Runs {
			r.BOINCSeeds = append(r.BOINCSeeds, x.Seed)
		}
		r.CI, r.Min, r.Max = b.CI, b.Min, b.Max
	}
	return r
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
	seeds := []uint64{cmd.Uint64(cliutil.FlagSeed)}
	if cmd.IsSet(flagSeeds) {
		if cmd.IsSet(cliutil.FlagSeed) {
			return cliutil.Usagef("--seeds and --seed: give one")
		}
		var err error
		if seeds, err = ParseSeeds(cmd.String(flagSeeds)); err != nil {
			return cliutil.Usagef("--seeds: %v", err)
		}
	}
	// Every scenario and its BOINC figures are read before any run, so that a bad one
	// costs nothing.
	var scenarios []string
	var boinc []*BOINCRun
	var cfgs []sim.Config
	for _, path := range cmd.Args().Slice() {
		if isScenarioCollection(path) {
			// scenarios/* names scenarios/corpus too: a shell glob cannot tell a
			// scenario directory from one that holds scenario directories.
			fmt.Fprintf(cmd.Root().ErrWriter, "bsim: %s: left out: a directory of scenarios, not one (compare them with %s/*)\n", path, strings.TrimSuffix(path, "/"))
			continue
		}
		sc, defaults, err := loadScenario(cmd, path)
		if err != nil {
			return err
		}
		if len(sc.Apps) == 0 && len(sc.Doc.Tasks) == 0 {
			fmt.Fprintf(cmd.Root().ErrWriter, "bsim: %s: left out: it needs a live project server (no project has emulated apps, and it holds no jobs)\n", path)
			continue
		}
		b, err := readBOINCFigures(path)
		if err != nil {
			return cliutil.BadInput(err)
		}
		if b != nil && defaults.Duration == 0 {
			defaults.Duration, defaults.Delta = b.Duration, b.Delta
		}
		cfg, err := runConfig(cmd, defaults)
		if err != nil {
			return err
		}
		scenarios, boinc, cfgs = append(scenarios, path), append(boinc, b), append(cfgs, cfg)
	}
	if len(scenarios) == 0 {
		return cliutil.Usagef("no scenario left to compare")
	}
	limit, err := cliutil.MaxInput(cmd)
	if err != nil {
		return err
	}
	rows, err := CompareSeeds(scenarios, policies, cfgs, seeds, limit, runtime.GOMAXPROCS(0))
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
			out = append(out, b.row(path))
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
		if !cmd.Bool(flagSummary) {
			if err := compareTable(w, seeds, out); err != nil {
				return err
			}
		}
		if err := compareSummary(w, policies, out, cfgs[0].EmulateBOINC); err != nil {
			return err
		}
	}
	if dir := cmd.String(flagPlot); dir != "" {
		prog, err := plotcmd.Find()
		if err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		var figs []*sim.Result
		for _, b := range boinc {
			if b != nil {
				figs = append(figs, b.Figures)
			} else {
				figs = append(figs, nil)
			}
		}
		if err := plotcmd.Draw(prog, &plotcmd.Request{Dir: dir, Comparison: comparison(scenarios, policies, out, figs)}, cmd.Root().ErrWriter); err != nil {
			return err
		}
		_, err = fmt.Fprintf(cmd.Root().ErrWriter, "bsim: pictures of the comparison in %s\n", filepath.Join(dir, "index.html"))
		return err
	}
	return nil
}

// ParseSeeds reads a list of seeds: A-B (A to B), or A,B,C, or a mix (1-5,9).
func ParseSeeds(s string) ([]uint64, error) {
	var seeds []uint64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want seeds as A-B or A,B,C, got %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("want a range A-B with A <= B, got %q", part)
			}
		}
		if b-a >= 10000 || len(seeds)+int(b-a) >= 10000 {
			return nil, fmt.Errorf("at most 10000 seeds, got %q", s)
		}
		for x := a; ; x++ {
			seeds = append(seeds, x)
			if x == b {
				break
			}
		}
	}
	return seeds, nil
}

// Compare runs every policy on every scenario (scenario i with cfgs[i]), workers at a
// time, and returns the rows in scenario-major order. Each run loads its scenario
// afresh (a run takes its document over), so runs share nothing and the rows do not
// depend on the order they finish in.
func Compare(scenarios, policies []string, cfgs []sim.Config, limit int64, workers int) ([]CompareRow, error) {
	seeds := make([]uint64, 0, 1)
	if len(cfgs) > 0 {
		seeds = append(seeds, cfgs[0].Seed)
	}
	return CompareSeeds(scenarios, policies, cfgs, seeds, limit, workers)
}

// CompareSeeds is Compare over several seeds (each cfgs[i].Seed is replaced): a row's
// figures are the means over the seeds, with 95 % confidence intervals when there are
// more than one.
func CompareSeeds(scenarios, policies []string, cfgs []sim.Config, seeds []uint64, limit int64, workers int) ([]CompareRow, error) {
	per := len(policies) * len(seeds)
	n := len(scenarios) * per
	runs := make([]*sim.Result, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				i, k, s := j/per, j%per/len(seeds), j%len(seeds)
				cfg := cfgs[i]
				cfg.Seed = seeds[s]
				runs[j], errs[j] = compareOne(scenarios[i], policies[k], cfg, limit)
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
	rows := make([]CompareRow, 0, len(scenarios)*len(policies))
	for i, path := range scenarios {
		for k, pol := range policies {
			cfg := cfgs[i]
			r := CompareRow{Scenario: path, Policy: pol, Duration: cfg.Duration, Delta: cfg.Delta, Conventions: conventions(cfg), Seeds: len(seeds)}
			res := runs[(i*len(policies)+k)*len(seeds) : (i*len(policies)+k+1)*len(seeds)]
			var ci FiguresCI
			r.WastedFraction, ci.WastedFraction = meanCI(res, func(x *sim.Result) float64 { return x.WastedFraction })
			r.IdleFraction, ci.IdleFraction = meanCI(res, func(x *sim.Result) float64 { return x.IdleFraction })
			r.ShareViolation, ci.ShareViolation = meanCI(res, func(x *sim.Result) float64 { return x.ShareViolation })
			r.Monotony, ci.Monotony = meanCI(res, func(x *sim.Result) float64 { return x.Monotony })
			r.RPCsPerJob, ci.RPCsPerJob = meanCI(res, func(x *sim.Result) float64 { return x.RPCsPerJob })
			if len(seeds) > 1 {
				r.CI = &ci
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func conventions(cfg sim.Config) string {
	if cfg.EmulateBOINC {
		return "boinc"
	}
	return "bsim"
}

// meanCI is the mean of f over runs and the half-width of its 95 % confidence interval
// (Student's t with n−1 degrees of freedom; 0 for one run).
func meanCI(runs []*sim.Result, f func(*sim.Result) float64) (mean, half float64) {
	n := float64(len(runs))
	for _, r := range runs {
		mean += f(r)
	}
	mean /= n
	if len(runs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, r := range runs {
		d := f(r) - mean
		ss += d * d
	}
	sd := math.Sqrt(ss / (n - 1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975)
	return mean, t * sd / math.Sqrt(n)
}

func compareOne(path, policy string, cfg sim.Config, limit int64) (*sim.Result, error) {
	sc, err := readScenario(path, limit)
	if err != nil {
		return nil, err
	}
	cfg.Policy = policy
	res, err := sim.Run(sc, cfg)
	if err != nil {
		return nil, cliutil.BadInput(fmt.Errorf("%s: %w", path, err))
	}
	return res, nil
}

// isScenarioCollection reports whether path is a directory that is not a BOINC
// emulator scenario (no client_state.xml) but holds at least one.
func isScenarioCollection(path string) bool {
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return false
	}
	if _, err := os.Stat(filepath.Join(path, "client_state.xml")); err == nil {
		return false
	}
	inner, _ := filepath.Glob(filepath.Join(path, "*", "client_state.xml"))
	return len(inner) > 0
}
