package localitysim

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// maxPoints bounds the points of one picture: beyond it, every k-th job sent is drawn.
const maxPoints = 60000

// Plot draws, for each run, which host worked where in the file sequence over time:
// a point per job sent (day, first file of the job), coloured by host, so a team
// working its own region shows as bands and in-order dispatch as one sweeping front.
// It writes DIR/POLICY.svg and DIR/POLICY.png and returns their paths.
func Plot(dir string, runs []*Figures) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, f := range runs {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: jobs sent (%d cursors; copies per file ÷ redundancy %.2f)", f.Policy, f.Cursors, f.CopiesPerRed)
		p.X.Label.Text = "day"
		p.Y.Label.Text = "file number (first file of the job)"
		step := max(1, len(f.Trace)/maxPoints)
		byColor := map[int]plotter.XYs{}
		for i := 0; i < len(f.Trace); i += step {
			s := f.Trace[i]
			byColor[s.Host%len(palette)] = append(byColor[s.Host%len(palette)], plotter.XY{X: s.Time, Y: float64(s.File)})
		}
		for k := range palette {
			if len(byColor[k]) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(byColor[k])
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: palette[k], Radius: vg.Points(0.8), Shape: draw.CircleGlyph{}}
			p.Add(sc)
		}
		for _, ext := range []string{"svg", "png"} {
			path := filepath.Join(dir, f.Policy+"."+ext)
			if err := p.Save(10*vg.Inch, 6*vg.Inch, path); err != nil {
				return nil, err
			}
			out = append(out, path)
		}
	}
	return out, nil
}

var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}
