package store

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// TestArchiveJSONIsEncodingJSON: the archive's own float and string writers write
// what encoding/json writes (the archive was written with it before).
func TestArchiveJSONIsEncodingJSON(t *testing.T) {
	floats := []float64{0, -0.0, 1, -1, 0.5, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.5e300, -2.5e-300, 1e6, 123456789.125,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 1_000_000, 50_000_000, 3.0e-9}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		floats = append(floats, math.Float64frombits(r.Uint64()), r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)))
	}
	for _, f := range floats {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		var buf bytes.Buffer
		if err := appendJSONFloat(&buf, f); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(f)
		if buf.String() != string(want) {
			t.Errorf("%v: wrote %s, encoding/json %s", f, buf.String(), want)
		}
	}
	var buf bytes.Buffer
	if err := appendJSONFloat(&buf, math.NaN()); err == nil {
		t.Error("NaN: no error")
	}
	for _, s := range []string{"", "wu_12_0", "a\"b", "a\\b", "<x>&", "tab\there", "é", "\x7f", "\xff", "line\u2028sep", "d41d8cd98f00b204e9800998ecf8427e"} {
		var buf bytes.Buffer
		appendJSONString(&buf, s)
		want, _ := json.Marshal(s)
		if buf.String() != string(want) {
			t.Errorf("%q: wrote %s, encoding/json %s", s, buf.String(), want)
		}
	}
}
