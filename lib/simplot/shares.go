package simplot

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/bkit/bkit/lib/sim"
)

// series is the trace's buckets as cumulative sums, for shares since the start and
// over a moving window.
type series struct {
	x      []float64   // each bucket's end on the time axis
	used   [][]float64 // [project] cumulative FLOPs used after each bucket
	total  []float64   // cumulative FLOPs used by all projects
	avail  []float64   // cumulative FLOPs available
	window int         // buckets in the moving window
}

// newSeries sums the buckets' use of the resources for which keep is true.
func newSeries(tr *sim.Trace, ax timeAxis, keep func(r int) bool) *series {
	s := &series{used: make([][]float64, len(tr.Projects)), window: window(tr)}
	var tot, av float64
	cum := make([]float64, len(tr.Projects))
	for _, b := range tr.Buckets {
		for r := range tr.Resources {
			if !keep(r) {
				continue
			}
			for p := range tr.Projects {
				cum[p] += b.Used[p][r]
				tot += b.Used[p][r]
			}
			av += b.Available[r]
		}
		s.x = append(s.x, ax.x(min(b.Start+tr.BucketWidth, tr.End)))
		for p := range cum {
			s.used[p] = append(s.used[p], cum[p])
		}
		s.total = append(s.total, tot)
		s.avail = append(s.avail, av)
	}
	return s
}

// window is the moving window in buckets: a twentieth of the run, at least one.
func window(tr *sim.Trace) int {
	if !(tr.BucketWidth > 0) {
		return 1
	}
	n := math.Ceil((tr.End - tr.Start) / tr.BucketWidth)
	return max(1, int(math.Round(n/20)))
}

// since is the sum of c over the window ending at bucket k, or over all buckets up
// to k when all is set.
func (s *series) since(c []float64, k int, all bool) float64 {
	if all || k < s.window {
		return c[k]
	}
	return c[k] - c[k-s.window]
}

// share is project p's share of the use after each bucket (NaN where nothing was
// used).
func (s *series) share(p int, all bool) []float64 {
	ys := make([]float64, len(s.x))
	for k := range ys {
		ys[k] = math.NaN()
		if t := s.since(s.total, k, all); t > 0 {
			ys[k] = s.since(s.used[p], k, all) / t
		}
	}
	return ys
}

// idle is the idle fraction of the available FLOPs after each bucket (NaN where
// nothing was available).
func (s *series) idle(all bool) []float64 {
	ys := make([]float64, len(s.x))
	for k := range ys {
		ys[k] = math.NaN()
		if a := s.since(s.avail, k, all); a > 0 {
			ys[k] = max(0, 1-s.since(s.total, k, all)/a)
		}
	}
	return ys
}

// lines are the stretches of ys without NaN, as lines of style sty.
func lines(xs, ys []float64, c color.Color, width vg.Length, dashed bool) []*plotter.Line {
	var out []*plotter.Line
	var cur plotter.XYs
	flush := func() {
		if len(cur) == 0 {
			return
		}
		l, err := plotter.NewLine(cur)
		if err == nil {
			l.Color, l.Width = c, width
			if dashed {
				l.Dashes = []vg.Length{6, 4}
			}
			out = append(out, l)
		}
		cur = nil
	}
	for k, y := range ys {
		if math.IsNaN(y) {
			flush()
			continue
		}
		cur = append(cur, plotter.XY{X: xs[k], Y: y})
	}
	flush()
	return out
}

// styleLine is a legend thumbnail of a line style alone.
func styleLine(c color.Color, width vg.Length, dashed bool) *plotter.Line {
	l := lines([]float64{0, 1}, []float64{0, 0}, c, width, dashed)[0]
	return l
}

const (
	thick = vg.Length(2)
	thin  = vg.Length(1)
	light = 0.6 // how much lighter the windowed lines are
)

// shareFigure draws the shares of the projects in projs (with their targets) over
// series s.
func shareFigure(tr *sim.Trace, s *series, ax timeAxis, name string, projs []int, targets []float64) *figure {
	f := newFigure(name, 11*vg.Inch, 4.5*vg.Inch)
	p := f.p
	ax.setX(p, tr)
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = niceTicks{n: 5, percent: true}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = color.Gray{0xDD}, color.Gray{0xDD}
	p.Add(grid)
	// Windowed lines first (below), then targets, then cumulative lines on top.
	for _, pr := range projs {
		for _, l := range lines(s.x, s.share(pr, false), lighter(projectColor(pr), light), thin, false) {
			p.Add(l)
		}
	}
	for i, pr := range projs {
		if math.IsNaN(targets[i]) {
			continue
		}
		l := lines([]float64{p.X.Min, p.X.Max}, []float64{targets[i], targets[i]}, projectColor(pr), thin, true)
		p.Add(l[0])
	}
	for _, pr := range projs {
		for _, l := range lines(s.x, s.share(pr, true), projectColor(pr), thick, false) {
			p.Add(l)
		}
	}
	for i, pr := range projs {
		label := tr.Projects[pr].Name
		if !math.IsNaN(targets[i]) {
			label += fmt.Sprintf(" (target %.3g%%)", 100*targets[i])
		}
		f.legend.Add(label, styleLine(projectColor(pr), thick, false))
	}
	return f
}

// legendKey adds the entries that say which line style is which.
func legendKey(f *figure, s *series, tr *sim.Trace, target string) {
	f.legend.Add("")
	f.legend.Add("share since the start", styleLine(black, thick, false))
	f.legend.Add("share over the last "+duration(float64(s.window)*tr.BucketWidth), styleLine(lighter(black, light), thin, false))
	f.legend.Add(target, styleLine(black, thin, true))
}

// overall draws each project's share of all FLOPs used against its target, and the
// idle fraction.
func overall(tr *sim.Trace, title string) *figure {
	ax := newTimeAxis(tr)
	s := newSeries(tr, ax, func(int) bool { return true })
	projs := make([]int, len(tr.Projects))
	targets := make([]float64, len(tr.Projects))
	for p, pr := range tr.Projects {
		projs[p], targets[p] = p, pr.Share
	}
	f := shareFigure(tr, s, ax, "shares-all", projs, targets)
	p := f.p
	p.Title.Text = titled(title, "share of all FLOPs used (all resources), and idle fraction")
	p.Y.Label.Text = "share of FLOPs used (idle: of available)"
	for _, l := range lines(s.x, s.idle(false), lighter(idleColor, light), thin, false) {
		p.Add(l)
	}
	for _, l := range lines(s.x, s.idle(true), idleColor, thick, false) {
		p.Add(l)
	}
	f.legend.Add("idle (of FLOPs available)", styleLine(idleColor, thick, false))
	legendKey(f, s, tr, "target: resource share")
	f.fitLegend()
	f.alt = "Each project's share of all FLOPs used over time against its target, and the idle fraction"
	f.caption = "Each project's share of all the FLOPs used (all resources together) over time. " +
		"The thick line is the share since the start, which is what the share violation figure measures; " +
		"the light thin line is the share over the last " + duration(float64(s.window)*tr.BucketWidth) + " only, showing how the schedule swings; " +
		"the dashed line of the same colour is the project's target, its resource share as a fraction of all shares. " +
		"The fairer the schedule, the closer each thick line comes to its dashed line. " +
		"The grey lines are the idle fraction: the part of the FLOPs the host could give (when allowed to compute) that no task used, since the start (thick) and over the window (thin)."
	return f
}

// resourceTargets are the projects that used resource r at all in the trace and the
// target share of each on it: its share among theirs (NaN when all their shares are
// zero).
func resourceTargets(tr *sim.Trace, r int) (projs []int, targets []float64) {
	usedBy := make([]bool, len(tr.Projects))
	for _, b := range tr.Buckets {
		for p := range tr.Projects {
			if b.Used[p][r] > 0 {
				usedBy[p] = true
			}
		}
	}
	var shareSum float64
	for p, u := range usedBy {
		if u {
			projs = append(projs, p)
			shareSum += tr.Projects[p].Share
		}
	}
	for _, p := range projs {
		t := math.NaN()
		if shareSum > 0 {
			t = tr.Projects[p].Share / shareSum
		}
		targets = append(targets, t)
	}
	return projs, targets
}

// perResource draws, for each resource with any use, each project's share of it.
func perResource(tr *sim.Trace, title string) []*figure {
	ax := newTimeAxis(tr)
	var figs []*figure
	seen := map[string]bool{}
	for r, res := range tr.Resources {
		projs, targets := resourceTargets(tr, r)
		if len(projs) == 0 {
			continue
		}
		name := "shares-" + fileType(res.Type)
		if seen[name] {
			name = fmt.Sprintf("%s-%d", name, r)
		}
		seen[name] = true
		s := newSeries(tr, ax, func(q int) bool { return q == r })
		f := shareFigure(tr, s, ax, name, projs, targets)
		label := resourceLabel(res.Type)
		f.p.Title.Text = titled(title, "share of "+label+" use")
		f.p.Y.Label.Text = "share of " + label + " FLOPs used"
		legendKey(f, s, tr, "target among "+label+" users")
		f.fitLegend()
		f.alt = "Each project's share of the " + label + " FLOPs used over time"
		f.caption = "Each project's share of the FLOPs used on the " + label + " over time (a coprocessor task's CPU part counts as CPU use). " +
			"The thick line is the share since the start, the light thin line the share over the last " + duration(float64(s.window)*tr.BucketWidth) + ". " +
			"Only the projects that used the " + label + " at all are drawn, and the dashed line is a project's resource share among theirs " +
			"(a project that cannot use the " + label + " must not count in its targets, and the trace does not tell which can): " +
			"a guide, not what the share violation figure measures, which is on the all-resources picture."
		figs = append(figs, f)
	}
	return figs
}
