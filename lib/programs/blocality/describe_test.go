package blocality

import (
	"os"
	"testing"
)

// FuzzParseDescription: any input is either refused or gives a batch whose jobs name
// existing files in order and whose cursors cover every job once.
func FuzzParseDescription(f *testing.F) {
	f.Add([]byte("name: b\nfpops_est: 1\nfiles: [{name: a, size: 1}, {name: b, size: 2}]\njobs: [{first: a, last: b}, {first: 1}]\n"))
	f.Add([]byte(`{"name": "b", "files": [{"name": "a", "size": 1}], "jobs": [{"first": "a", "fpops_est": 1}], "cursors": [{"first_job": 0, "last_job": 0}]}`))
	f.Add([]byte("name: b\nfiles_csv: x.csv\njobs_csv: y.csv\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := parseDescription(data, "f.yaml", ".", func(string) ([]byte, error) { return nil, os.ErrNotExist })
		if err != nil {
			return
		}
		prev := int64(0)
		for i, j := range spec.Jobs {
			if j.FirstFileNum < prev || j.LastFileNum < j.FirstFileNum || j.LastFileNum >= int64(len(spec.Files)) || !(j.FpopsEst > 0) {
				t.Fatalf("job %d: %+v", i, j)
			}
			prev = j.FirstFileNum
		}
		next := int64(0)
		for _, c := range spec.Cursors {
			if c.First != next || c.Last < c.First {
				t.Fatalf("cursors %v", spec.Cursors)
			}
			next = c.Last + 1
		}
		if len(spec.Cursors) > 0 && next != int64(len(spec.Jobs)) {
			t.Fatalf("cursors %v do not cover %d jobs", spec.Cursors, len(spec.Jobs))
		}
	})
}
