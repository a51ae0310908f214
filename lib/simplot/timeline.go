package simplot

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bkit/bkit/lib/sim"
)

// rect is a filled rectangle in data coordinates.
type rect struct {
	x0, x1, y0, y1 float64
	c              color.Color
	sep            bool // leave a hairline gap at its right end when there is room
}

// rects is a plot.Plotter of filled rectangles.
type rects []rect

func (rs rects) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, r := range rs {
		x0, x1 := trX(r.x0), trX(r.x1)
		y0, y1 := trY(r.y0), trY(r.y1)
		// A run's edges show even against the next run of its project, beside or
		// below it.
		if r.sep && x1-x0 >= 3 {
			x1 -= 0.5
		}
		if r.sep && y1-y0 >= 3 {
			y0 += 0.5
		}
		if x1-x0 < 0.05 {
			x1 = x0 + 0.05 // a very short run is still a mark
		}
		var path vg.Path
		path.Move(vg.Point{X: x0, Y: y0})
		path.Line(vg.Point{X: x1, Y: y0})
		path.Line(vg.Point{X: x1, Y: y1})
		path.Line(vg.Point{X: x0, Y: y1})
		path.Close()
		c.SetColor(r.c)
		c.Fill(path)
	}
}

// box is a legend thumbnail: a filled square.
type box struct{ c color.Color }

func (b box) Thumbnail(c *draw.Canvas) {
	w := c.Max.Y - c.Min.Y
	x := (c.Min.X + c.Max.X - w) / 2
	c.FillPolygon(b.c, []vg.Point{{X: x, Y: c.Min.Y}, {X: x + w, Y: c.Min.Y}, {X: x + w, Y: c.Max.Y}, {X: x, Y: c.Max.Y}})
}

// lanePad is the blank kept at the top and bottom of each lane, in lane heights.
const lanePad = 0.08

// laneGeometry maps a resource's lane positions (lane units from the top of its
// first lane) to the timeline's y axis, where all lanes stack from the top down.
type laneGeometry struct {
	base  []int // first global lane of each resource
	total int
}

// y is the y coordinate of position pos of resource r; bottom says the position is a
// lower edge (so that an edge on a lane boundary stays in the lane above).
func (g laneGeometry) y(r int, pos float64, bottom bool) float64 {
	l := math.Floor(pos)
	u := pos - l
	if bottom && u < eps && l > 0 {
		l, u = l-1, 1
	}
	lane := float64(g.base[r]) + l
	return float64(g.total) - lane - (lanePad + u*(1-2*lanePad))
}

// timeline draws which task ran on which processor instance over time.
func timeline(tr *sim.Trace, title string) *figure {
	slots, lanes := assignLanes(tr)
	g := laneGeometry{base: make([]int, len(lanes))}
	for r, n := range lanes {
		g.base[r] = g.total
		g.total += n
	}
	ax := newTimeAxis(tr)

	laneH := vg.Length(0.3) * vg.Inch
	area := min(max(vg.Length(g.total)*laneH, 1.2*vg.Inch), 9*vg.Inch)
	f := newFigure("timeline", 11*vg.Inch, area+1.4*vg.Inch)
	f.alt = "Timeline of the task runs on each processor instance, coloured by project"
	f.caption = "Which task ran where: one row per processor instance, time running left to right. " +
		"Each bar is a stretch of time one task ran on that instance, coloured by its project (legend); " +
		"a thin gap separates consecutive tasks when there is room for it. " +
		"A task using part of an instance (0.5 CPU, say) is drawn that part of the row high, so two such tasks share a row; " +
		"a row marked (extra) holds tasks beyond the instance count. Grey is time the instance was unused."
	p := f.p
	p.Title.Text = titled(title, "task runs on each processor instance")
	if len(tr.Runs) > MaxRuns {
		p.Title.Text += fmt.Sprintf("\n%d runs, too many to draw one by one: each row shows, per 1/%d of the time, the part of it each project used",
			len(tr.Runs), TimelineColumns)
		f.caption += fmt.Sprintf(" This run has %d task runs, more than the %d drawn one by one: "+
			"each row is cut into %d time columns, and a column shows, stacked from the top, the fraction of the instance each project used in it.",
			len(tr.Runs), MaxRuns, TimelineColumns)
		f.h += 0.25 * vg.Inch
	}
	ax.setX(p, tr)
	p.Y.Min, p.Y.Max = 0, float64(max(g.total, 1))

	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	grid.Vertical.Color = color.Gray{0xC8}
	p.Add(grid)

	bg := color.Gray{0xEE}
	var rs rects
	for gl := 0; gl < g.total; gl++ {
		top := float64(g.total - gl)
		rs = append(rs, rect{x0: p.X.Min, x1: p.X.Max, y0: top - 1 + lanePad/2, y1: top - lanePad/2, c: bg})
	}
	if len(tr.Runs) <= MaxRuns {
		for i, run := range tr.Runs {
			y0 := float64(slots[i].Lane) + slots[i].Off
			y1 := y0 + runSize(run)
			rs = append(rs, rect{
				x0: ax.x(run.Start), x1: ax.x(run.End),
				y0: g.y(run.Resource, y1, true), y1: g.y(run.Resource, y0, false),
				c: projectColor(run.Project), sep: true,
			})
		}
	} else {
		rs = append(rs, columns(tr, slots, lanes, g, ax)...)
	}
	p.Add(rs)

	// Lane names, thinned out when the rows are too narrow for all of them.
	var ticks plot.ConstantTicks
	step := max(1, int(math.Ceil(float64(g.total)*12/float64(area))))
	for r, res := range tr.Resources {
		for l := 0; l < lanes[r]; l++ {
			if l%step != 0 {
				continue
			}
			name := fmt.Sprintf("%s %d", resourceLabel(res.Type), l)
			if l >= res.Instances {
				name += " (extra)"
			}
			ticks = append(ticks, plot.Tick{Value: float64(g.total-g.base[r]-l) - 0.5, Label: name})
		}
	}
	p.Y.Tick.Marker = ticks
	p.Y.Tick.Length = 0
	// A line between the lanes of different resources.
	for r := 1; r < len(lanes); r++ {
		y := float64(g.total - g.base[r])
		sep, _ := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: y}, {X: p.X.Max, Y: y}})
		sep.Color, sep.Width = color.Gray{0x60}, 0.75
		p.Add(sep)
	}
	for i, pr := range tr.Projects {
		f.legend.Add(pr.Name, box{projectColor(i)})
	}
	f.fitLegend()
	return f
}

// columns draws a long trace's lanes by time column: per lane and column, stacked
// from the lane's top, the fraction of the lane's time each project used.
func columns(tr *sim.Trace, slots []slot, lanes []int, g laneGeometry, ax timeAxis) rects {
	n := TimelineColumns
	np := len(tr.Projects)
	width := (tr.End - tr.Start) / float64(n)
	if !(width > 0) {
		return nil
	}
	// use[globalLane][column*np+project]: lane-seconds.
	use := make([][]float64, g.total)
	for i := range use {
		use[i] = make([]float64, n*np)
	}
	for i, run := range tr.Runs {
		y0 := float64(slots[i].Lane) + slots[i].Off
		y1 := y0 + runSize(run)
		c0 := max(0, int((run.Start-tr.Start)/width))
		for l := int(math.Floor(y0)); float64(l) < y1-eps; l++ {
			part := min(y1, float64(l+1)) - max(y0, float64(l))
			u := use[g.base[run.Resource]+l]
			for c := c0; c < n; c++ {
				cs := tr.Start + float64(c)*width
				if cs >= run.End {
					break
				}
				if d := min(run.End, cs+width) - max(run.Start, cs); d > 0 {
					u[c*np+run.Project] += part * d
				}
			}
		}
	}
	var rs rects
	for gl, u := range use {
		top := float64(g.total - gl)
		h := 1 - 2*lanePad
		same := func(a, b int) bool {
			for p := 0; p < np; p++ {
				if math.Abs(u[a*np+p]-u[b*np+p]) > 1e-6*width {
					return false
				}
			}
			return true
		}
		for c := 0; c < n; {
			e := c + 1
			for e < n && same(c, e) {
				e++
			}
			x0, x1 := ax.x(tr.Start+float64(c)*width), ax.x(tr.Start+float64(e)*width)
			off := 0.0
			for p := 0; p < np; p++ {
				frac := min(u[c*np+p]/width, 1-off)
				if frac < 1e-4 {
					continue
				}
				rs = append(rs, rect{x0: x0, x1: x1,
					y0: top - lanePad - (off+frac)*h, y1: top - lanePad - off*h, c: projectColor(p)})
				off += frac
			}
			c = e
		}
	}
	return rs
}
