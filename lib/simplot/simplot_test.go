package simplot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/sim"
)

// publicExample is the public example scenario (BOINC's emulator's, shipped in
// scenarios/), relative to this package.
const publicExample = "../../scenarios/example-2cpu-2to1"

// handTrace is a small trace: projects A (2/3) and B (1/3), 2 CPUs and a GPU, half an
// hour in buckets of 600 s. B runs on the GPU only; A and B share the CPUs, with a
// half-CPU pair of B on CPU 1 from 900 to 1500.
func handTrace() *sim.Trace {
	const t0 = 1_700_000_000
	tr := &sim.Trace{
		Start: t0, End: t0 + 1800,
		Resources:   []sim.TraceResource{{Type: "cpu", Instances: 2, Flops: 1e9}, {Type: "NVIDIA", Instances: 1, Flops: 1e10}},
		Projects:    []sim.TraceProject{{Name: "A", Share: 2.0 / 3}, {Name: "B", Share: 1.0 / 3}},
		BucketWidth: 600,
	}
	run := func(task string, p, r int, inst, start, end float64) sim.TaskRun {
		return sim.TaskRun{Task: task, Project: p, Resource: r, Instances: inst, Start: t0 + start, End: t0 + end}
	}
	tr.Runs = []sim.TaskRun{
		run("a1", 0, 0, 1, 0, 1200),     // CPU 0
		run("b1", 1, 0, 1, 0, 900),      // CPU 1
		run("g1", 1, 1, 1, 0, 1800),     // NVIDIA 0
		run("b2", 1, 0, 0.5, 900, 1500), // CPU 1, top half
		run("b3", 1, 0, 0.5, 900, 1500), // CPU 1, bottom half
		run("a2", 0, 0, 1, 1200, 1800),  // CPU 0
	}
	// Used and available per bucket, FLOPs: CPU 1e9 per instance-second, GPU 1e10.
	bucket := func(start, aCPU, bCPU, bGPU, avCPU, avGPU float64) sim.Bucket {
		return sim.Bucket{Start: t0 + start, Used: [][]float64{{aCPU, 0}, {bCPU, bGPU}}, Available: []float64{avCPU, avGPU}}
	}
	tr.Buckets = []sim.Bucket{
		bucket(0, 600e9, 600e9, 6000e9, 1200e9, 6000e9),
		bucket(600, 600e9, 600e9, 6000e9, 1200e9, 6000e9),
		bucket(1200, 600e9, 300e9, 6000e9, 1200e9, 6000e9),
	}
	return tr
}

var handFiles = []string{
	"timeline.svg", "timeline.png",
	"shares-all.svg", "shares-all.png",
	"shares-cpu.svg", "shares-cpu.png",
	"shares-nvidia.svg", "shares-nvidia.png",
	"index.html",
}

func TestWrite(t *testing.T) {
	tr := handTrace()
	idle := func(tr *sim.Trace) *sim.Trace { // no use of the GPU at all
		for i := range tr.Buckets {
			tr.Buckets[i].Used[1][1] = 0
		}
		tr.Runs = tr.Runs[:2]
		return tr
	}(handTrace())
	for _, tc := range []struct {
		name  string
		tr    *sim.Trace
		files []string
		runs  []int // runs drawn per project
	}{
		{name: "hand-made", tr: tr, files: handFiles, runs: []int{2, 4}},
		{name: "GPU unused: no GPU share picture", tr: idle, runs: []int{1, 1},
			files: []string{"timeline.svg", "timeline.png", "shares-all.svg", "shares-all.png", "shares-cpu.svg", "shares-cpu.png", "index.html"}},
		{name: "empty", tr: &sim.Trace{Start: 100, End: 100}, runs: []int{},
			files: []string{"timeline.svg", "timeline.png", "shares-all.svg", "shares-all.png", "index.html"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new", "dir")
			names, err := Write(dir, tc.tr, "test <run>")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.files, names); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != len(tc.files) {
				t.Errorf("%d files in dir, want %d", len(entries), len(tc.files))
			}
			html := string(read(t, dir, "index.html"))
			for _, n := range names {
				data := read(t, dir, n)
				if len(data) == 0 {
					t.Errorf("%s is empty", n)
				}
				switch filepath.Ext(n) {
				case ".svg":
					if err := parseXML(data); err != nil {
						t.Errorf("%s: %v", n, err)
					}
					if !strings.Contains(html, `<img src="`+n+`"`) {
						t.Errorf("index.html does not show %s", n)
					}
				case ".png":
					if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
						t.Errorf("%s is not a PNG", n)
					}
				}
			}
			for _, want := range []string{"<title>test &lt;run&gt;</title>", "<figcaption>"} {
				if !strings.Contains(html, want) {
					t.Errorf("index.html lacks %q", want)
				}
			}
			for _, bad := range []string{"<script", "http://", "https://"} {
				if strings.Contains(html, bad) {
					t.Errorf("index.html contains %q", bad)
				}
			}
			// One bar per run, in its project's colour (each colour once more in the legend).
			svg := read(t, dir, "timeline.svg")
			for p, want := range tc.runs {
				if got := countFills(t, svg, projectColor(p)) - 1; got != want {
					t.Errorf("timeline: %d bars of project %d, want %d", got, p, want)
				}
			}
		})
	}
}

// countFills counts the SVG's paths filled with colour c.
func countFills(t *testing.T, svg []byte, c interface{ RGBA() (r, g, b, a uint32) }) int {
	t.Helper()
	r, g, b, _ := c.RGBA()
	fill := fmt.Sprintf("fill:#%02X%02X%02X", r>>8, g>>8, b>>8)
	d := xml.NewDecoder(bytes.NewReader(svg))
	n := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
			for _, a := range se.Attr {
				if a.Name.Local == "style" && strings.Contains(a.Value, fill) && !strings.Contains(a.Value, "stroke") {
					n++
				}
			}
		}
	}
}

func read(t *testing.T, dir, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// parseXML checks that data is one well-formed XML document.
func parseXML(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func TestWriteDeterministic(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   func(testing.TB) *sim.Trace
	}{
		{"hand-made", func(testing.TB) *sim.Trace { return handTrace() }},
		{"many runs (by columns)", func(testing.TB) *sim.Trace { return manyRuns(MaxRuns + 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.tr(t)
			a, b := t.TempDir(), t.TempDir()
			names, err := Write(a, tr, "same")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Write(b, tr, "same"); err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if !bytes.Equal(read(t, a, n), read(t, b, n)) {
					t.Errorf("%s differs between two writes", n)
				}
			}
		})
	}
}

// manyRuns is a trace of n half-hour runs alternating between two projects on two
// CPUs, with use buckets to match.
func manyRuns(n int) *sim.Trace {
	tr := handTrace()
	tr.Runs = nil
	tr.Resources = tr.Resources[:1]
	for i := range n {
		start := tr.Start + float64(i/2)*1800
		tr.Runs = append(tr.Runs, sim.TaskRun{Task: fmt.Sprint(i), Project: (i / 2 % 3) % 2, Resource: 0, Instances: 1, Start: start, End: start + 1800})
	}
	tr.End = tr.Start + float64((n+1)/2)*1800
	tr.BucketWidth = (tr.End - tr.Start) / sim.MaxBuckets
	tr.Buckets = nil
	for k := range sim.MaxBuckets {
		b := sim.Bucket{Start: tr.Start + float64(k)*tr.BucketWidth, Used: [][]float64{{0}, {0}}, Available: []float64{2e9 * tr.BucketWidth}}
		b.Used[k%3%2][0] = 2e9 * tr.BucketWidth
		tr.Buckets = append(tr.Buckets, b)
	}
	return tr
}

func TestTimelineColumns(t *testing.T) {
	for _, tc := range []struct {
		runs    int
		maxBars int
	}{
		{MaxRuns, MaxRuns},                  // one by one
		{MaxRuns + 1, 4 * TimelineColumns},  // by columns: at most one bar per lane and column
		{10 * MaxRuns, 4 * TimelineColumns}, // however long the run
	} {
		t.Run(fmt.Sprint(tc.runs), func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Write(dir, manyRuns(tc.runs), ""); err != nil {
				t.Fatal(err)
			}
			svg := read(t, dir, "timeline.svg")
			bars := countFills(t, svg, projectColor(0)) + countFills(t, svg, projectColor(1)) - 2
			if bars > tc.maxBars || bars < 2 {
				t.Errorf("%d bars, want 2 to %d", bars, tc.maxBars)
			}
			if tc.runs <= MaxRuns && bars != tc.runs {
				t.Errorf("%d bars, want one per run: %d", bars, tc.runs)
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := handTrace()
	bad.Runs[3].Project = 7
	for _, tc := range []struct {
		name, dir string
		tr        *sim.Trace
		want      string
	}{
		{"unwritable dir (under a file)", filepath.Join(file, "plots"), handTrace(), "not a directory"},
		{"no trace", t.TempDir(), nil, "simplot: no trace"},
		{"bad project index", t.TempDir(), bad, "simplot: runs[3].project: 7 is not a project index (2 projects)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names, err := Write(tc.dir, tc.tr, "x")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if len(names) != 0 {
				t.Errorf("files %v written", names)
			}
		})
	}
	// A file in the way of one of the pictures.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "shares-all.svg"), 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := Write(dir, handTrace(), "x")
	if err == nil || !errors.Is(err, os.ErrExist) && !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("error %v, want one about shares-all.svg", err)
	}
	if diff := cmp.Diff([]string{"timeline.svg", "timeline.png"}, names); diff != "" {
		t.Errorf("files written (-want +got):\n%s", diff)
	}
}

// realTrace runs the public example for days with a trace.
func realTrace(tb testing.TB, days float64) *sim.Trace {
	tb.Helper()
	sc, err := boincxml.LoadScenario(publicExample)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := sim.New(sc, sim.Config{Duration: days * 86400, Delta: 60, Policy: "seed", Seed: 1, Trace: true})
	if err != nil {
		tb.Fatal(err)
	}
	for s.Step() {
	}
	return s.Trace()
}

// TestRealTrace draws the public example's 10 days; set BKIT_SIMPLOT_DIR to keep the
// pictures there and look at them.
func TestRealTrace(t *testing.T) {
	tr := realTrace(t, 10)
	dir := os.Getenv("BKIT_SIMPLOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	names, err := Write(dir, tr, "example-2cpu-2to1, seed policy, 10 days")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs, %d buckets of %g s: %v in %s", len(tr.Runs), len(tr.Buckets), tr.BucketWidth, names, dir)
	want := []string{"timeline.svg", "timeline.png", "shares-all.svg", "shares-all.png", "shares-cpu.svg", "shares-cpu.png", "index.html"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	svg := read(t, dir, "timeline.svg")
	if err := parseXML(svg); err != nil {
		t.Fatal(err)
	}
	if len(tr.Runs) <= MaxRuns {
		bars := countFills(t, svg, projectColor(0)) + countFills(t, svg, projectColor(1)) - 2
		if bars != len(tr.Runs) {
			t.Errorf("%d bars, want %d", bars, len(tr.Runs))
		}
	}
}

// BenchmarkWrite draws the public example's 1,000-day trace (the run itself is not
// measured).
func BenchmarkWrite(b *testing.B) {
	tr := realTrace(b, 1000)
	b.Logf("%d runs", len(tr.Runs))
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Write(dir, tr, "example-2cpu-2to1, 1000 days"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteMaxRuns draws the largest timeline drawn run by run.
func BenchmarkWriteMaxRuns(b *testing.B) {
	tr := manyRuns(MaxRuns)
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Write(dir, tr, "many runs"); err != nil {
			b.Fatal(err)
		}
	}
}
