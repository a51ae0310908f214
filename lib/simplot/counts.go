package simplot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bkit/bkit/lib/plotcmd"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Counts is how many of something were in each state over time (plotcmd.Counts: the
// full loop's driver does not link this package either).
type Counts = plotcmd.Counts

// CountSeries is one state's count at each of Counts.Times.
type CountSeries = plotcmd.CountSeries

// WriteCounts draws c as one line per series into dir (made if need be): counts.svg,
// counts.png and index.html. It returns the files written.
func WriteCounts(dir string, c *Counts) ([]string, error) {
	f := newFigure("counts", 11*vg.Inch, 5*vg.Inch)
	f.alt = c.Title
	f.caption = "The number in each state at each step of the run."
	p := f.p
	p.Title.Text = c.Title
	p.X.Label.Text = "hours since the start"
	p.Y.Label.Text = "count"
	p.Y.Min = 0
	p.X.Tick.Marker = niceTicks{n: 12}
	p.Y.Tick.Marker = niceTicks{n: 8}
	for k, s := range c.Series {
		if len(s.Values) != len(c.Times) {
			return nil, fmt.Errorf("simplot: series %s has %d values for %d times", s.Name, len(s.Values), len(c.Times))
		}
		xys := make(plotter.XYs, len(c.Times))
		for i := range c.Times {
			xys[i].X, xys[i].Y = c.Times[i], s.Values[i]
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("simplot: series %s: %w", s.Name, err)
		}
		line.Color = projectColor(k)
		line.Width = vg.Points(1.5)
		p.Add(line)
		f.legend.Add(s.Name, line)
	}
	f.fitLegend()
	return writeFigures(dir, c.Title, c.Summary, []*figure{f})
}

// writeFigures renders figs into dir as SVG and PNG, with an index.html titled title
// that shows them under summary, and returns the files written.
func writeFigures(dir, title, summary string, figs []*figure) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("simplot: %w", err)
	}
	var names []string
	for _, f := range figs {
		svg, png, err := f.render()
		if err != nil {
			return names, fmt.Errorf("simplot: %s: %w", f.name, err)
		}
		for _, out := range []struct {
			ext  string
			data []byte
		}{{".svg", svg}, {".png", png}} {
			if err := os.WriteFile(filepath.Join(dir, f.name+out.ext), out.data, 0o644); err != nil {
				return names, fmt.Errorf("simplot: %w", err)
			}
			names = append(names, f.name+out.ext)
		}
	}
	type fg struct{ Name, Alt, Caption string }
	data := struct {
		Title, Summary string
		Figures        []fg
	}{Title: title, Summary: summary}
	for _, f := range figs {
		data.Figures = append(data.Figures, fg{f.name, f.alt, f.caption})
	}
	var b bytes.Buffer
	if err := page.Execute(&b, data); err != nil {
		return names, fmt.Errorf("simplot: index.html: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), b.Bytes(), 0o644); err != nil {
		return names, fmt.Errorf("simplot: %w", err)
	}
	return append(names, "index.html"), nil
}
