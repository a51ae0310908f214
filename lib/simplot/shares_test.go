package simplot

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gonum.org/v1/plot"

	"github.com/bkit/bkit/lib/sim"
)

func TestResourceTargets(t *testing.T) {
	// Shares 1/2, 1/3, 1/6; CPU used by projects 0 and 2, the GPU by 1 only, the
	// third resource by none.
	tr := &sim.Trace{
		Resources: []sim.TraceResource{{Type: "cpu"}, {Type: "NVIDIA"}, {Type: "ATI"}},
		Projects:  []sim.TraceProject{{Name: "a", Share: 0.5}, {Name: "b", Share: 1.0 / 3}, {Name: "c", Share: 1.0 / 6}},
		Buckets: []sim.Bucket{
			{Used: [][]float64{{5, 0, 0}, {0, 0, 0}, {0, 0, 0}}},
			{Used: [][]float64{{0, 0, 0}, {0, 7, 0}, {1, 0, 0}}},
		},
	}
	zero := &sim.Trace{Resources: tr.Resources[:1], Projects: []sim.TraceProject{{Name: "z"}},
		Buckets: []sim.Bucket{{Used: [][]float64{{1}}}}}
	for _, tc := range []struct {
		name    string
		tr      *sim.Trace
		r       int
		projs   []int
		targets []float64
	}{
		{"CPU: a and c, in ratio 3:1", tr, 0, []int{0, 2}, []float64{0.75, 0.25}},
		{"GPU: b alone, all of it", tr, 1, []int{1}, []float64{1}},
		{"unused resource: no picture", tr, 2, nil, nil},
		{"zero shares: no target", zero, 0, []int{0}, []float64{math.NaN()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			projs, targets := resourceTargets(tc.tr, tc.r)
			if diff := cmp.Diff(tc.projs, projs); diff != "" {
				t.Errorf("projects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.targets, targets, cmpopts.EquateApprox(0, 1e-12), cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeriesShares(t *testing.T) {
	// Two projects on one resource, four buckets of 100 s; a window of one bucket (a
	// twentieth of four, at least one). Nothing is used in bucket 2.
	tr := &sim.Trace{Start: 0, End: 400, BucketWidth: 100,
		Resources: []sim.TraceResource{{Type: "cpu"}},
		Projects:  []sim.TraceProject{{Name: "a"}, {Name: "b"}},
		Buckets: []sim.Bucket{
			{Start: 0, Used: [][]float64{{3}, {1}}, Available: []float64{8}},
			{Start: 100, Used: [][]float64{{0}, {4}}, Available: []float64{8}},
			{Start: 200, Used: [][]float64{{0}, {0}}, Available: []float64{8}},
			{Start: 300, Used: [][]float64{{1}, {1}}, Available: []float64{0}},
		},
	}
	s := newSeries(tr, timeAxis{unit: 100}, func(int) bool { return true })
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		got  []float64
		want []float64
	}{
		{"x: bucket ends", s.x, []float64{1, 2, 3, 4}},
		{"a since the start", s.share(0, true), []float64{0.75, 3.0 / 8, 3.0 / 8, 0.4}},
		{"b since the start", s.share(1, true), []float64{0.25, 5.0 / 8, 5.0 / 8, 0.6}},
		{"a over the window", s.share(0, false), []float64{0.75, 0, nan, 0.5}},
		{"idle since the start", s.idle(true), []float64{0.5, 0.5, 2.0 / 3, 7.0 / 12}},
		{"idle over the window", s.idle(false), []float64{0.5, 0.5, 1, nan}},
	} {
		if diff := cmp.Diff(tc.want, tc.got, cmpopts.EquateApprox(0, 1e-12), cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	// A gap in the window's line splits it in two.
	if n := len(lines(s.x, s.share(0, false), black, thin, false)); n != 2 {
		t.Errorf("window line of a in %d pieces, want 2", n)
	}
}

func TestNiceTicks(t *testing.T) {
	labels := func(ts []plot.Tick) []string {
		var out []string
		for _, t := range ts {
			if t.Label != "" {
				out = append(out, t.Label)
			}
		}
		return out
	}
	for _, tc := range []struct {
		t      niceTicks
		lo, hi float64
		want   []string
		ticks  int
	}{
		{niceTicks{n: 12}, 0, 10, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, 51},
		{niceTicks{n: 12}, 0, 1000, []string{"0", "100", "200", "300", "400", "500", "600", "700", "800", "900", "1000"}, 51},
		{niceTicks{n: 12}, 0, 3, []string{"0.0", "0.5", "1.0", "1.5", "2.0", "2.5", "3.0"}, 31},
		{niceTicks{n: 12}, 0, 30, []string{"0", "5", "10", "15", "20", "25", "30"}, 31},
		{niceTicks{n: 12}, 0, 24, []string{"0", "2", "4", "6", "8", "10", "12", "14", "16", "18", "20", "22", "24"}, 49},
		{niceTicks{n: 5, percent: true}, 0, 1, []string{"0%", "20%", "40%", "60%", "80%", "100%"}, 21},
		{niceTicks{n: 12}, 5, 5, nil, 0},
	} {
		t.Run(fmt.Sprintf("%v %g-%g", tc.t, tc.lo, tc.hi), func(t *testing.T) {
			ts := tc.t.Ticks(tc.lo, tc.hi)
			if diff := cmp.Diff(tc.want, labels(ts)); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if len(ts) != tc.ticks {
				t.Errorf("%d ticks, want %d", len(ts), tc.ticks)
			}
		})
	}
}
