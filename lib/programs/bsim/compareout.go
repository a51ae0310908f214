package bsim

// The forms bsim compare prints its rows in: the table, the corpus summary, CSV and
// the plot's comparison.

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/plotcmd"
	"github.com/bkit/bkit/lib/sim"
)

func f6(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }

// fig is a row's figure: the mean, ± the confidence interval's half-width over several
// seeds.
func fig(mean float64, ci *FiguresCI, half func(FiguresCI) float64) string {
	if ci == nil {
		return f6(mean)
	}
	return f6(mean) + " ± " + strconv.FormatFloat(half(*ci), 'f', 6, 64)
}

func runLength(duration, delta float64) string {
	if duration == 0 {
		return "?"
	}
	return span(duration) + " / " + cliutil.Num(delta) + " s"
}

// span is a simulated time as people say it: days, else hours, else seconds.
func span(s float64) string {
	if s < 86400 && s >= 3600 {
		return cliutil.Num(s/3600) + " h"
	}
	return days(s)
}

func compareTable(w io.Writer, seeds []uint64, rows []CompareRow) error {
	if len(seeds) == 1 {
		fmt.Fprintf(w, "Seed %d", seeds[0])
	} else {
		fmt.Fprintf(w, "Seeds %d to %d (%d runs a row): means ± the half-widths of their 95 %% confidence intervals", seeds[0], seeds[len(seeds)-1], len(seeds))
	}
	fmt.Fprintf(w, "; 'run' is each row's simulated time / step; 'conventions' those it ran under (bsim's, or BOINC's emulator's: --emulate boinc)\n")
	if ref := boincReference(rows); ref != "" {
		fmt.Fprintf(w, "%s (± the half-width of its 95 %% confidence interval over them); 'vs BOINC' weighs each policy against that mean\n", ref)
	}
	fmt.Fprintln(w)
	t := cliutil.NewTable(w, "scenario", "policy", "run", "conventions", "wf", "if", "sv", "m", "r", "vs BOINC")
	for _, r := range rows {
		if err := t.Append([]string{r.Scenario, r.Policy, runLength(r.Duration, r.Delta), r.Conventions,
			fig(r.WastedFraction, r.CI, func(c FiguresCI) float64 { return c.WastedFraction }),
			fig(r.IdleFraction, r.CI, func(c FiguresCI) float64 { return c.IdleFraction }),
			fig(r.ShareViolation, r.CI, func(c FiguresCI) float64 { return c.ShareViolation }),
			fig(r.Monotony, r.CI, func(c FiguresCI) float64 { return c.Monotony }),
			fig(r.RPCsPerJob, r.CI, func(c FiguresCI) float64 { return c.RPCsPerJob }), r.VsBOINC}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// compareSummary prints, per policy, on how many of the scenarios with a verdict it is
// at least as good as BOINC on each of wf, if and sv (its mean within +margin) and on
// all three, and its worst cases. Without a verdict anywhere it says why.
func compareSummary(w io.Writer, policies []string, rows []CompareRow, emulate bool) error {
	boinc := map[string]*CompareRow{}
	withFigures := 0
	for i := range rows {
		if rows[i].Policy == "BOINC" {
			boinc[rows[i].Scenario] = &rows[i]
			withFigures++
		}
	}
	if withFigures == 0 {
		return nil
	}
	type worst struct {
		scenario, figure string
		by               float64
	}
	compared := 0
	for i := range rows {
		if rows[i].Policy != "BOINC" && rows[i].VsBOINC != "" && !strings.HasPrefix(rows[i].VsBOINC, "not compared") {
			compared++
		}
	}
	if compared == 0 {
		why := "they ran under bsim's conventions: add --emulate boinc"
		if emulate {
			why = "their simulated time or step is not that of BOINC's figures (see 'vs BOINC')"
		}
		_, err := fmt.Fprintf(w, "No summary against BOINC's figures (%d scenarios carry them): %s.\n", withFigures, why)
		return err
	}
	against := "Against BOINC's emulator"
	if ref := boincReference(rows); ref != "" {
		against += " (" + ref + ")"
	}
	fmt.Fprintf(w, "%s: on how many scenarios each policy is at least as good as BOINC (its mean within +%g of BOINC's figure); worst cases: scenario, figure, policy's minus BOINC's\n\n", against, margin)
	t := cliutil.NewTable(w, "policy", "scenarios", "wf", "if", "sv", "all three", "in band", "worst cases")
	for _, pol := range policies {
		var n, all, band int
		good := make([]int, len(verdictFigures))
		var worsts []worst
		for i := range rows {
			r := &rows[i]
			b := boinc[r.Scenario]
			if r.Policy != pol || b == nil || r.VsBOINC == "" || strings.HasPrefix(r.VsBOINC, "not compared") {
				continue
			}
			n++
			ok := true
			bf := &sim.Result{WastedFraction: b.WastedFraction, IdleFraction: b.IdleFraction, ShareViolation: b.ShareViolation}
			for k, f := range verdictFigures {
				mean, _ := f.get(r)
				d := mean - f.boinc(bf)
				if d <= margin {
					good[k]++
				} else {
					ok = false
					worsts = append(worsts, worst{r.Scenario, f.name, d})
				}
			}
			if ok {
				all++
			}
			if inBand(r, b) {
				band++
			}
		}
		sort.SliceStable(worsts, func(i, j int) bool { return worsts[i].by > worsts[j].by })
		var ws []string
		for _, x := range worsts[:min(3, len(worsts))] {
			ws = append(ws, fmt.Sprintf("%s %s +%.3f", filepath.Base(filepath.Clean(x.scenario)), x.figure, x.by))
		}
		cell := func(k int) string { return fmt.Sprintf("%d (%.0f%%)", k, 100*float64(k)/float64(max(n, 1))) }
		if err := t.Append([]string{pol, fmt.Sprint(n), cell(good[0]), cell(good[1]), cell(good[2]), cell(all), cell(band), strings.Join(ws, ", ")}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// bandR is how far a policy's RPCs per job may be from BOINC's, as a fraction of
// BOINC's, in issue 30's band.
const bandR = 0.2

// inBand reports whether row r is in issue 30's band around BOINC's figures b: its
// wf, if and sv each within margin of BOINC's either way (not only "at least as
// good"), and its RPCs per job within bandR of BOINC's.
func inBand(r, b *CompareRow) bool {
	for _, d := range []float64{r.WastedFraction - b.WastedFraction, r.IdleFraction - b.IdleFraction, r.ShareViolation - b.ShareViolation} {
		if math.Abs(d) > margin {
			return false
		}
	}
	return math.Abs(r.RPCsPerJob-b.RPCsPerJob) <= bandR*b.RPCsPerJob
}

// boincReference says what BOINC's rows are where some are the means of several runs
// of its emulator ("BOINC: mean of seeds 1-5"), or "" where each is one run (the line
// BOINC's emulator writes), so that output without seeds' files reads as it always did.
func boincReference(rows []CompareRow) string {
	count := map[string]int{}
	var lists []string
	single := 0
	for _, r := range rows {
		if r.Policy != "BOINC" {
			continue
		}
		if len(r.BOINCSeeds) == 0 {
			single++
			continue
		}
		l := seedList(r.BOINCSeeds)
		if count[l] == 0 {
			lists = append(lists, l)
		}
		count[l]++
	}
	if len(lists) == 0 {
		return ""
	}
	if len(lists) == 1 && single == 0 {
		return "BOINC: mean of seeds " + lists[0]
	}
	var parts []string
	for _, l := range lists {
		parts = append(parts, fmt.Sprintf("mean of seeds %s on %d scenarios", l, count[l]))
	}
	if single > 0 {
		parts = append(parts, fmt.Sprintf("one run on %d", single))
	}
	return "BOINC: " + strings.Join(parts, ", ")
}

// compareCSV writes the rows with a header. Where some BOINC row is the mean of several
// seeds, columns follow the usual ones (which keep their order): BOINC's seeds and each
// figure's least and greatest over them, empty in the policies' rows.
func compareCSV(w io.Writer, rows []CompareRow) error {
	cw := csv.NewWriter(w)
	header := []string{"scenario", "policy", "duration", "delta", "conventions", "seeds", "wasted_fraction", "idle_fraction", "share_violation", "monotony", "rpcs_per_job",
		"ci95_wasted_fraction", "ci95_idle_fraction", "ci95_share_violation", "ci95_monotony", "ci95_rpcs_per_job", "vs_boinc"}
	spread := boincReference(rows) != ""
	names := []string{"wasted_fraction", "idle_fraction", "share_violation", "monotony", "rpcs_per_job"}
	if spread {
		header = append(header, "boinc_seeds")
		for _, p := range []string{"min_", "max_"} {
			for _, n := range names {
				header = append(header, p+n)
			}
		}
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, r := range rows {
		ci := r.ci()
		rec := []string{r.Scenario, r.Policy, cliutil.Num(r.Duration), cliutil.Num(r.Delta), r.Conventions, fmt.Sprint(r.Seeds),
			f6(r.WastedFraction), f6(r.IdleFraction), f6(r.ShareViolation), f6(r.Monotony), f6(r.RPCsPerJob),
			f6(ci.WastedFraction), f6(ci.IdleFraction), f6(ci.ShareViolation), f6(ci.Monotony), f6(ci.RPCsPerJob), r.VsBOINC}
		if spread {
			if r.Min == nil || r.Max == nil {
				rec = append(rec, make([]string, 1+2*len(names))...)
			} else {
				rec = append(rec, seedList(r.BOINCSeeds))
				for _, x := range []*Figures{r.Min, r.Max} {
					rec = append(rec, f6(x.WastedFraction), f6(x.IdleFraction), f6(x.ShareViolation), f6(x.Monotony), f6(x.RPCsPerJob))
				}
			}
		}
		if err := cw.Write(rec); err != nil {
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
