package simplot

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/bkit/bkit/lib/plotcmd"
)

// Comparison is what bsim compare measured (plotcmd.Comparison: bsim itself does not
// link this package, see lib/plotcmd).
type Comparison = plotcmd.Comparison

// WriteComparison draws one grouped bar chart per figure of c into dir (made if need
// be): compare-<n>.svg and .png for the n-th figure, one group of bars per scenario,
// one bar per series, and an index.html that shows them. It returns the files written.
func WriteComparison(dir string, c *Comparison) ([]string, error) {
	var figs []*figure
	for f, name := range c.Figures {
		p := plot.New()
		p.Title.Text = c.Title + ": " + name
		p.Y.Label.Text = name
		p.Y.Min = 0
		width := vg.Points(min(18, 300/float64(max(1, len(c.Series)*len(c.Scenarios)))*2))
		fig := &figure{name: fmt.Sprintf("compare-%d", f+1), alt: name + " per scenario and policy",
			caption: name + ": one group of bars per scenario, one bar per policy (and BOINC's emulator's figure where the scenario carries it; a missing bar is a figure not known).",
			p:       p, w: 11 * vg.Inch, h: 5 * vg.Inch}
		for k := range c.Series {
			vals := make(plotter.Values, len(c.Scenarios))
			for s := range c.Scenarios {
				if c.Known[f][s][k] {
					vals[s] = c.Values[f][s][k]
				}
			}
			bars, err := plotter.NewBarChart(vals, width)
			if err != nil {
				return nil, fmt.Errorf("simplot: %s: %w", name, err)
			}
			bars.Color = projectColor(k)
			bars.LineStyle.Width = 0
			bars.Offset = width * vg.Length(float64(k)-float64(len(c.Series)-1)/2)
			p.Add(bars)
		}
		p.NominalX(c.Scenarios...)
		fig.legend = plot.NewLegend()
		for k, series := range c.Series {
			fig.legend.Add(series, &plotter.BarChart{Color: projectColor(k)})
		}
		fig.fitLegend()
		figs = append(figs, fig)
	}
	return writeFigures(dir, c.Title, fmt.Sprintf("%d policies on %d scenarios.", len(c.Series), len(c.Scenarios)), figs)
}
