package plotcmd

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bkit/bkit/lib/sim"
)

// TestRoundTrip: what bsim writes, bsim-plot reads back exactly, to the last bit of
// every number (the pictures must be those of the run).
func TestRoundTrip(t *testing.T) {
	tr := &sim.Trace{Start: 1.7e9, End: 1.7e9 + 86400, BucketWidth: 86400 / 7.0,
		Resources: []sim.TraceResource{{Type: "cpu", Instances: 2, Flops: 1e9 / 3}},
		Projects:  []sim.TraceProject{{Name: "A", Share: 2.0 / 3}, {Name: "B", Share: 1.0 / 3}},
		Runs:      []sim.TaskRun{{Task: "A_1", Project: 0, Resource: 0, Instances: 0.5, Start: 1.7e9 + 0.1, End: 1.7e9 + math.Pi}},
		Buckets:   []sim.Bucket{{Start: 1.7e9, Used: [][]float64{{math.SmallestNonzeroFloat64}, {1e308}}, Available: []float64{math.Nextafter(1, 2)}}},
	}
	for _, req := range []*Request{
		{Dir: "d", Title: "t", Trace: tr},
		{Dir: "d", Comparison: &Comparison{Title: "c", Figures: []string{"f"}, Scenarios: []string{"s"}, Series: []string{"a", "b"},
			Values: [][][]float64{{{0.1, 1.0 / 3}}}, Known: [][][]bool{{{true, false}}}}},
	} {
		data, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(req, got); diff != "" {
			t.Errorf("round trip (-sent +read):\n%s", diff)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{``, "EOF"},
		{`{"dir": "d"}`, "want one of trace, comparison and counts"},
		{`{"dir": "d", "trace": {}, "comparison": {}}`, "want one of trace, comparison and counts"},
		{`{"trace": {}}`, "dir: empty"},
		{`{"dir": "d", "trace": {}} {}`, "data after the request"},
		{`{"dir": "d", "x": 1}`, `unknown field "x"`},
		{`{"dir": "d", "comparison": {"Figures": ["f"]}}`, "comparison.values: 0 figures, want 1"},
		{`{"dir": "d", "comparison": {"Figures": ["f"], "Values": [[]], "Known": [[]]}}`, ""},
		{`{"dir": "d", "comparison": {"Figures": ["f"], "Scenarios": ["s"], "Values": [[]], "Known": [[[]]]}}`, "comparison.values[0]: 0 scenarios, want 1"},
		{`{"dir": "d", "comparison": {"Figures": ["f"], "Scenarios": ["s"], "Series": ["p"], "Values": [[[1]]], "Known": [[[]]]}}`, "comparison.known[0][0]: 0 series, want 1"},
		{`{"dir": "d", "trace": {}, "counts": {}}`, "want one of trace, comparison and counts"},
		{`{"dir": "d", "counts": {"Times": [0, 1], "Series": [{"Name": "a", "Values": [1, 2]}]}}`, ""},
		{`{"dir": "d", "counts": {"Times": [0, 1], "Series": [{"Name": "a", "Values": [1]}]}}`, "counts.series[0]: 1 values for 2 times"},
	} {
		_, err := Decode(strings.NewReader(c.in))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.in, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.in, err, c.want)
		}
	}
	c := &Comparison{Figures: []string{"f"}, Scenarios: []string{"s"}, Series: []string{"p"}, Values: [][][]float64{{{math.NaN()}}}, Known: [][][]bool{{{true}}}}
	if err := (&Request{Dir: "d", Comparison: c}).Check(); err == nil || !strings.Contains(err.Error(), "comparison.values[0][0][0]: not a finite number") {
		t.Errorf("NaN value: %v", err)
	}
}

// FuzzDecode: any input is decoded or refused without a panic, and a comparison that
// is accepted can be indexed as its lists promise (bsim-plot draws it without checks).
func FuzzDecode(f *testing.F) {
	f.Add(`{"dir": "d", "comparison": {"Figures": ["f"], "Scenarios": ["s"], "Series": ["p"], "Values": [[[1]]], "Known": [[[true]]]}}`)
	f.Add(`{"dir": "d", "title": "t", "trace": {"Start": 0, "End": 60, "Runs": [{"Project": 0}]}}`)
	f.Add(`{"dir": "d", "comparison": {"Figures": ["f"], "Values": [[[1]]]}}`)
	f.Fuzz(func(t *testing.T, in string) {
		req, err := Decode(strings.NewReader(in))
		if err != nil || req.Comparison == nil {
			return
		}
		c := req.Comparison
		for f := range c.Figures {
			for s := range c.Scenarios {
				for p := range c.Series {
					_, _ = c.Values[f][s][p], c.Known[f][s][p]
				}
			}
		}
	})
}
