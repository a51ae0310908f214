package blocality

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/store/storetest"
)

// FuzzParseDescription: any input is either refused or gives a batch whose jobs name
// existing files in order and whose cursors cover every job once.
func FuzzParseDescription(f *testing.F) {
	f.Add([]byte("name: b\nurl_base: http://d/\nfpops_est: 1\nfiles: [{name: a, size: 1}, {name: b, size: 2}]\njobs: [{first: a, last: b}, {first: 1}]\n"))
	f.Add([]byte(`{"name": "b", "files": [{"name": "a", "size": 1, "url": "https://m/a"}], "jobs": [{"first": "a", "fpops_est": 1}], "cursors": [{"first_job": 0, "last_job": 0}], "target_nresults": 3}`))
	f.Add([]byte("name: b\nfiles_csv: x.csv\njobs_csv: y.csv\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := parseDescription(data, "f.yaml", ".", func(string) ([]byte, error) { return nil, os.ErrNotExist })
		if err != nil {
			return
		}
		for i, f := range spec.Files {
			if p := limits.URLProblem(f.URL, limits.NameBytes); p != "" {
				t.Fatalf("files[%d].url accepted: %s", i, p)
			}
		}
		if spec.TargetNResults > limits.Redundancy || spec.MaxTotalResults > limits.WorkunitResults {
			t.Fatalf("redundancy accepted: %+v", spec)
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

// TestDescriptionURLsAndRedundancy: a file's URL is an http(s) URL of at most 254
// bytes and a batch's redundancy is bounded, refused by the parser naming the field;
// what it accepts, both engines store (MariaDB's VARCHAR(254) takes a 254-byte URL).
func TestDescriptionURLsAndRedundancy(t *testing.T) {
	noFiles := func(string) ([]byte, error) { return nil, os.ErrNotExist }
	long := "http://d/" + strings.Repeat("x", limits.NameBytes-len("http://d/"))
	for _, c := range []struct{ name, desc, want string }{
		{"javascript", "files: [{name: a, size: 1, url: 'javascript:alert(1)'}]", "files[0].url: want an http:// or https:// URL"},
		{"too long", "files: [{name: a, size: 1, url: '" + long + "y'}]", "files[0].url: longer than 254 bytes (255)"},
		{"url_base not http", "url_base: 'ftp://d/'\nfiles: [{name: a, size: 1}]", "files[0].url: want an http:// or https:// URL with a host, got \"ftp://d/a\" (url_base + name)"},
		{"url_base too long", "url_base: '" + long + "'\nfiles: [{name: a, size: 1}]", "files[0].url: longer than 254 bytes (255) (url_base + name)"},
		{"no url at all", "files: [{name: a, size: 1}]", "files[0].url: missing"},
		{"target_nresults", "url_base: http://d/\nfiles: [{name: a, size: 1}]\ntarget_nresults: 100000000\nmax_total_results: 100000000", "target_nresults: must be at most 100, got 100000000"},
		{"max_total_results", "url_base: http://d/\nfiles: [{name: a, size: 1}]\nmax_total_results: 1001", "max_total_results: must be at most 1000, got 1001"},
	} {
		_, err := parseDescription([]byte("name: b\nfpops_est: 1\njobs: [{first: 0}]\n"+c.desc+"\n"), "b.yaml", ".", noFiles)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			s := storetest.Open(t, e.DSN)
			ctx := context.Background()
			if _, err := s.AddApp(ctx, "einstein", true, 1); err != nil {
				t.Fatal(err)
			}
			spec, err := parseDescription([]byte("name: b\nfpops_est: 1\njobs: [{first: 0}]\ncursors: [{first_job: 0, last_job: 0}]\ntarget_nresults: 100\nmax_total_results: 1000\n"+
				"files: [{name: a, size: 1, url: '"+long+"'}]\n"), "b.yaml", ".", noFiles)
			if err != nil {
				t.Fatal(err)
			}
			spec.App = "einstein"
			if _, err := s.CreateBatch(ctx, spec, 1); err != nil {
				t.Fatalf("a 254-byte URL: %v", err)
			}
			var got string
			if err := s.DB.QueryRow(`SELECT url FROM batch_file`).Scan(&got); err != nil || got != long {
				t.Errorf("stored %q (%v), want %q", got, err, long)
			}
		})
	}
}
