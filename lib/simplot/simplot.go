// Package simplot owns the pictures of an emulator run (bsim run --plot DIR): from the
// sim.Trace a run records it draws, with gonum.org/v1/plot, SVG and PNG figures and a
// plain index.html that shows them. Write is the whole API.
//
// The figures:
//
//   - timeline: one lane per processor instance ("CPU 0", "CPU 1", "NVIDIA 0"), a bar
//     for each stretch a task ran, coloured by project. Runs are put on lanes greedily
//     in order of start time (see assignLanes): a run keeps one lane, the
//     lowest-numbered one with room when it starts; a fractional run (0.5 CPU) is
//     drawn that fraction of the lane high, so two of them share a lane; a run of
//     several instances spans as many lanes; runs beyond a resource's instance count
//     (overcommitment) go on extra lanes marked "(extra)". A trace of more than
//     MaxRuns runs would make pictures of megabytes whose bars are thinner than a
//     pixel, so then each lane is cut into TimelineColumns equal time columns and a
//     column shows, stacked from the lane's top, the fraction of the lane each project
//     used in it (adjacent columns that show the same are merged): the picture stays
//     the same size however long the run, and its title says so.
//   - shares-all: each project's share of all FLOPs used (all resources summed) over
//     time against its target (Trace.Projects[].Share), and the idle fraction
//     (1 − used/available) in grey.
//   - shares-<type>, one per resource type with any use: each project's share of that
//     resource's use. A project that cannot use a resource (a GPU-only project on the
//     CPU) must not count in that resource's targets, and the trace does not say
//     which projects can use what, so the dashed target on these pictures is the
//     project's resource share among the projects that used the resource at all in
//     the run (so a project starved of a resource it could use neither shows nor
//     counts there). Only the shares-all target is the one the share violation
//     figure measures against.
//
// On the share pictures a thick line is the cumulative share since the start (what
// the figures of merit measure), a light thin line the share over a moving window of
// the last twentieth of the run (at least one trace bucket, 12 hours of a 10-day run,
// 50 days of a 1,000-day one), and the dashed line the target. The time axis is days
// since Trace.Start, hours when the trace is shorter than two days, minutes when
// shorter than two hours. Colours are the Okabe–Ito palette, readable with the
// common colour-vision deficiencies, cycling after eight projects.
//
// Output is deterministic: one trace and title give byte-identical files.
package simplot

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/bkit/bkit/lib/sim"
	"github.com/bkit/bkit/lib/state"
)

// MaxRuns is the most runs a timeline draws one by one; a longer trace's timeline
// shows each project's part of each lane per time column instead.
const MaxRuns = 20000

// TimelineColumns is the number of time columns of a timeline drawn by columns.
const TimelineColumns = 1000

// dpi is the PNG resolution: the pictures are 11 inches wide, about 1,000 pixels.
const dpi = 96

// Write draws tr's pictures into dir (made if need be) and returns the names of the
// files written, relative to dir, in the order index.html shows them: timeline.svg,
// timeline.png, shares-all.svg, shares-all.png, shares-<type>.svg and .png for each
// resource type with any use (type lowercased: shares-cpu.svg), and index.html, titled
// title. Existing files of those names are replaced. On an error it returns the files
// written before it.
func Write(dir string, tr *sim.Trace, title string) ([]string, error) {
	if err := Check(tr); err != nil {
		return nil, err
	}
	figs := []*figure{timeline(tr, title), overall(tr, title)}
	figs = append(figs, perResource(tr, title)...)
	if title == "" {
		title = "bsim run"
	}
	return writeFigures(dir, title, summary(tr), figs)
}

// Check rejects a trace whose indices or times would not draw.
func Check(tr *sim.Trace) error {
	if tr == nil {
		return errors.New("simplot: no trace (was the run made with Config.Trace?)")
	}
	if !finite(tr.Start) || !finite(tr.End) || tr.End < tr.Start {
		return fmt.Errorf("simplot: trace interval [%g, %g) is not a time interval", tr.Start, tr.End)
	}
	for i, r := range tr.Runs {
		switch {
		case r.Project < 0 || r.Project >= len(tr.Projects):
			return fmt.Errorf("simplot: runs[%d].project: %d is not a project index (%d projects)", i, r.Project, len(tr.Projects))
		case r.Resource < 0 || r.Resource >= len(tr.Resources):
			return fmt.Errorf("simplot: runs[%d].resource: %d is not a resource index (%d resources)", i, r.Resource, len(tr.Resources))
		case !finite(r.Start) || !finite(r.End) || r.End < r.Start:
			return fmt.Errorf("simplot: runs[%d]: [%g, %g) is not a time interval", i, r.Start, r.End)
		}
	}
	for i, b := range tr.Buckets {
		if len(b.Used) != len(tr.Projects) || len(b.Available) != len(tr.Resources) {
			return fmt.Errorf("simplot: buckets[%d]: %d projects and %d resources, want %d and %d", i, len(b.Used), len(b.Available), len(tr.Projects), len(tr.Resources))
		}
		for p, u := range b.Used {
			if len(u) != len(tr.Resources) {
				return fmt.Errorf("simplot: buckets[%d].used[%d]: %d resources, want %d", i, p, len(u), len(tr.Resources))
			}
		}
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// palette is Okabe and Ito's colour-blind-safe palette, in an order that puts the
// colours that read best as thin lines on white first.
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xFF}, // blue
	{0xE6, 0x9F, 0x00, 0xFF}, // orange
	{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	{0xF0, 0xE4, 0x42, 0xFF}, // yellow
	{0x00, 0x00, 0x00, 0xFF}, // black
}

func projectColor(p int) color.RGBA { return palette[p%len(palette)] }

// lighter mixes c with white, f of the way.
func lighter(c color.RGBA, f float64) color.RGBA {
	mix := func(v uint8) uint8 { return uint8(math.Round(float64(v) + (255-float64(v))*f)) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 0xFF}
}

var (
	black     = color.RGBA{0x00, 0x00, 0x00, 0xFF}
	idleColor = color.RGBA{0x77, 0x77, 0x77, 0xFF}
)

// timeAxis is how the x axis counts time: days, or hours or minutes for a short trace.
type timeAxis struct {
	start, unit float64
	name        string
}

func newTimeAxis(tr *sim.Trace) timeAxis {
	if tr.End-tr.Start < 2*3600 {
		return timeAxis{start: tr.Start, unit: 60, name: "minutes"}
	}
	if tr.End-tr.Start < 2*86400 {
		return timeAxis{start: tr.Start, unit: 3600, name: "hours"}
	}
	return timeAxis{start: tr.Start, unit: 86400, name: "days"}
}

func (a timeAxis) x(t float64) float64 { return (t - a.start) / a.unit }

func (a timeAxis) label() string {
	at := time.Unix(int64(math.Floor(a.start)), 0).UTC().Format("2006-01-02 15:04 UTC")
	return fmt.Sprintf("%s since the start (%s)", a.name, at)
}

// setX sets the plot's x axis to the trace's interval.
func (a timeAxis) setX(p *plot.Plot, tr *sim.Trace) {
	p.X.Min, p.X.Max = 0, a.x(tr.End)
	if p.X.Max <= 0 {
		p.X.Max = 1
	}
	p.X.Label.Text = a.label()
	p.X.Tick.Marker = niceTicks{n: 12}
}

// niceTicks marks about n labelled ticks at round values (steps of 1, 2 or 5 times a
// power of ten), with minor ticks between them; percent labels fractions as percents.
type niceTicks struct {
	n       int
	percent bool
}

func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || !finite(lo) || !finite(hi) {
		return nil
	}
	raw := (hi - lo) / float64(max(1, t.n))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step, minors := 10*mag, 5
	switch {
	case raw <= mag:
		step = mag
	case raw <= 2*mag:
		step, minors = 2*mag, 4
	case raw <= 5*mag:
		step = 5 * mag
	}
	minor := step / float64(minors)
	decimals := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	if t.percent {
		decimals = max(0, decimals-2)
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo/minor - 1e-9); i*minor <= hi+minor*1e-9; i++ {
		tk := plot.Tick{Value: i * minor}
		if tk.Value == 0 {
			tk.Value = 0 // not -0, which would be labelled "-0"
		}
		if math.Mod(i, float64(minors)) == 0 {
			if t.percent {
				tk.Label = fmt.Sprintf("%.*f%%", decimals, 100*tk.Value)
			} else {
				tk.Label = fmt.Sprintf("%.*f", decimals, tk.Value)
			}
		}
		ticks = append(ticks, tk)
	}
	return ticks
}

// duration formats a length of time for a legend: minutes under two hours, hours
// under two days, else days.
func duration(sec float64) string {
	if sec < 2*3600 {
		return trimFloat(sec/60) + " min"
	}
	if sec < 2*86400 {
		return trimFloat(sec/3600) + " h"
	}
	return trimFloat(sec/86400) + " days"
}

func trimFloat(x float64) string { return fmt.Sprintf("%.3g", x) }

// resourceLabel names a resource type on a picture: CPU, or the coprocessor's type.
func resourceLabel(typ string) string {
	if typ == state.ResourceCPU {
		return "CPU"
	}
	return typ
}

// fileType is a resource type as it goes in a file name: lowercase letters, digits,
// '-' and '_'.
func fileType(typ string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(typ) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// titled puts the run's title before a picture's own.
func titled(title, what string) string {
	if title == "" {
		return what
	}
	return title + ": " + what
}

// figure is one picture: a plot with its legend to the right of it.
type figure struct {
	name    string // file name without extension
	alt     string // the <img> alt text
	caption string // how to read it
	p       *plot.Plot
	legend  plot.Legend
	w, h    vg.Length
}

// sans is the typeface of all text: Liberation Sans, which gonum embeds.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func newFigure(name string, w, h vg.Length) *figure {
	f := &figure{name: name, p: plot.New(), legend: plot.NewLegend(), w: w, h: h}
	f.legend.Top, f.legend.Left = true, true
	f.legend.TextStyle.Font = font.From(sans, 10)
	f.legend.TextStyle.Color = black
	f.legend.Padding = 2
	p := f.p
	p.Title.Padding = 8
	p.Title.TextStyle.Font = font.From(sans, 13)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 11)
		a.Tick.Label.Font = font.From(sans, 10)
	}
	return f
}

const margin = vg.Length(8)

// fitLegend makes the figure tall enough for its legend.
func (f *figure) fitLegend() {
	if h := f.legend.Rectangle(draw.Canvas{}).Size().Y + 2*margin + f.titleHeight() + 50; h > f.h {
		f.h = h
	}
}

func (f *figure) titleHeight() vg.Length {
	if f.p.Title.Text == "" {
		return 0
	}
	return f.p.Title.TextStyle.Rectangle(f.p.Title.Text).Size().Y + f.p.Title.Padding
}

// draw draws the figure on c: the plot on the left, the legend on the right, level
// with the top of the plot's data area.
func (f *figure) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	c = draw.Crop(c, margin, -margin, margin, -margin)
	lw := f.legend.Rectangle(c).Size().X
	f.p.Draw(draw.Crop(c, 0, -(lw + 2*margin), 0, 0))
	f.legend.Draw(draw.Crop(c, c.Size().X-lw, 0, 0, -f.titleHeight()))
}

// render draws the figure as SVG and as PNG.
func (f *figure) render() (svg, png []byte, err error) {
	var sb, pb bytes.Buffer
	sc := vgsvg.New(f.w, f.h)
	f.draw(draw.New(sc))
	if _, err := sc.WriteTo(&sb); err != nil {
		return nil, nil, err
	}
	ic := vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(dpi))
	f.draw(draw.New(ic))
	if _, err := (vgimg.PngCanvas{Canvas: ic}).WriteTo(&pb); err != nil {
		return nil, nil, err
	}
	// gonum names the font alone; a browser without it would fall back to its default
	// (often a serif). Arial has Liberation Sans's metrics, so the layout holds.
	svg = bytes.ReplaceAll(sb.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
	return svg, pb.Bytes(), nil
}

var page = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; max-width: 70em; margin: 1em auto; padding: 0 1em; color: #222; }
figure { margin: 2em 0; }
img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { margin-top: 0.5em; line-height: 1.4; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Summary}}</p>
{{range .Figures}}<figure id="{{.Name}}">
<img src="{{.Name}}.svg" alt="{{.Alt}}">
<figcaption>{{.Caption}} (<a href="{{.Name}}.png">PNG</a>)</figcaption>
</figure>
{{end}}</body>
</html>
`))

// summary is the page's line about the run.
func summary(tr *sim.Trace) string {
	var res []string
	for _, r := range tr.Resources {
		unit := resourceLabel(r.Type) + " device"
		if r.Type == state.ResourceCPU {
			unit = "CPU"
		}
		if r.Instances != 1 {
			unit += "s"
		}
		res = append(res, fmt.Sprintf("%d %s", r.Instances, unit))
	}
	var projs []string
	for _, p := range tr.Projects {
		projs = append(projs, fmt.Sprintf("%s (share %.3g%%)", p.Name, 100*p.Share))
	}
	start := time.Unix(int64(math.Floor(tr.Start)), 0).UTC().Format("2006-01-02 15:04 UTC")
	return fmt.Sprintf("%s simulated from %s on a host with %s; projects %s; %d task runs.",
		duration(tr.End-tr.Start), start, strings.Join(res, ", "), strings.Join(projs, ", "), len(tr.Runs))
}
