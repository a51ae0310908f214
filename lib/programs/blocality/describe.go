package blocality

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/state"
	"github.com/bkit/bkit/lib/store"
)

// duration is a duration in a batch description: seconds, or a string with a unit
// ("36h", "7d").
type duration float64

func (d *duration) UnmarshalText(b []byte) error {
	v, err := cliutil.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

func (d *duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(s)
	}
	return d.UnmarshalText(b)
}

// description is a batch description file (YAML or JSON).
type description struct {
	Name     string       `json:"name" yaml:"name"`
	URLBase  string       `json:"url_base,omitempty" yaml:"url_base,omitempty"`
	Files    []descFile   `json:"files,omitempty" yaml:"files,omitempty"`
	FilesCSV string       `json:"files_csv,omitempty" yaml:"files_csv,omitempty"`
	Jobs     []descJob    `json:"jobs,omitempty" yaml:"jobs,omitempty"`
	JobsCSV  string       `json:"jobs_csv,omitempty" yaml:"jobs_csv,omitempty"`
	Cursors  []descCursor `json:"cursors,omitempty" yaml:"cursors,omitempty"`
	FpopsEst float64      `json:"fpops_est,omitempty" yaml:"fpops_est,omitempty" min:"0"`

	DelayBound        duration `json:"delay_bound,omitempty" yaml:"delay_bound,omitempty"`
	MinQuorum         int      `json:"min_quorum,omitempty" yaml:"min_quorum,omitempty" min:"1"`
	TargetNResults    int      `json:"target_nresults,omitempty" yaml:"target_nresults,omitempty" min:"1"`
	MaxErrorResults   int      `json:"max_error_results,omitempty" yaml:"max_error_results,omitempty" min:"1"`
	MaxTotalResults   int      `json:"max_total_results,omitempty" yaml:"max_total_results,omitempty" min:"1"`
	MaxSuccessResults int      `json:"max_success_results,omitempty" yaml:"max_success_results,omitempty" min:"1"`
}

type descFile struct {
	Name string  `json:"name" yaml:"name"`
	Size float64 `json:"size" yaml:"size" min:"0"`
	URL  string  `json:"url,omitempty" yaml:"url,omitempty"`
}

// fileRef names a file by name or by its number (0-based) in the file sequence.
type fileRef string

func (f *fileRef) UnmarshalText(b []byte) error { *f = fileRef(b); return nil }

func (f *fileRef) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(s)
	}
	return f.UnmarshalText(b)
}

// descJob names its run of files.
type descJob struct {
	First    fileRef `json:"first" yaml:"first"`
	Last     fileRef `json:"last,omitempty" yaml:"last,omitempty"`
	FpopsEst float64 `json:"fpops_est,omitempty" yaml:"fpops_est,omitempty" min:"0"`
}

type descCursor struct {
	FirstJob int `json:"first_job" yaml:"first_job"`
	LastJob  int `json:"last_job" yaml:"last_job"`
}

// maxName is the longest batch or file name: they become workunit, result and file
// names.
const maxName = 200

func validName(s string) bool { return store.ValidName(s, maxName) }

// problems collects what is wrong with a description, each naming its field.
type problems struct {
	file string
	list []string
}

func (p *problems) add(format string, args ...any) {
	if len(p.list) < 20 {
		p.list = append(p.list, fmt.Sprintf(format, args...))
	}
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &state.Error{File: p.file, Problems: p.list}
}

// parseDescription reads a batch description (file names it in messages; CSV files
// it names are read relative to dir through readFile) and returns the batch it
// describes, without cursors unless the description gives them. Every problem names
// its field; nothing is written anywhere.
func parseDescription(data []byte, file, dir string, readFile func(string) ([]byte, error)) (store.BatchSpec, error) {
	d := description{DelayBound: 7 * 86400, MinQuorum: 1, TargetNResults: 1, MaxErrorResults: 3, MaxTotalResults: 10, MaxSuccessResults: 6}
	if _, err := state.DecodeStrict(data, &d); err != nil {
		var se *state.Error
		if errors.As(err, &se) {
			se.File = file
			return store.BatchSpec{}, se
		}
		return store.BatchSpec{}, &state.Error{File: file, Problems: []string{err.Error()}}
	}
	p := &problems{file: file}
	if err := state.ValidateFields(&d); err != nil {
		var se *state.Error
		if !errors.As(err, &se) {
			return store.BatchSpec{}, err
		}
		p.list = append(p.list, se.Problems...)
	}
	spec := store.BatchSpec{Name: d.Name, DelayBound: float64(d.DelayBound), MinQuorum: d.MinQuorum, TargetNResults: d.TargetNResults,
		MaxErrorResults: d.MaxErrorResults, MaxTotalResults: d.MaxTotalResults, MaxSuccessResults: d.MaxSuccessResults}
	if !validName(d.Name) {
		p.add("name: want letters, digits, '_', '.' or '-' (at most 200, not starting with a punctuation mark), got %q", d.Name)
	}
	if d.DelayBound <= 0 {
		p.add("delay_bound: must be > 0, got %v", float64(d.DelayBound))
	}
	if d.TargetNResults < d.MinQuorum {
		p.add("target_nresults: must be >= min_quorum (%d), got %d", d.MinQuorum, d.TargetNResults)
	}
	if d.MaxTotalResults < d.TargetNResults {
		p.add("max_total_results: must be >= target_nresults (%d), got %d", d.TargetNResults, d.MaxTotalResults)
	}
	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"min_quorum", d.MinQuorum, limits.Redundancy}, {"target_nresults", d.TargetNResults, limits.Redundancy},
		{"max_error_results", d.MaxErrorResults, limits.WorkunitResults}, {"max_total_results", d.MaxTotalResults, limits.WorkunitResults},
		{"max_success_results", d.MaxSuccessResults, limits.WorkunitResults},
	} {
		if f.v > f.max {
			p.add("%s: must be at most %d, got %d", f.name, f.max, f.v)
		}
	}

	// Files.
	files := d.Files
	switch {
	case d.FilesCSV != "" && len(d.Files) > 0:
		p.add("files_csv: give the files either in files or in files_csv, not both")
	case d.FilesCSV != "":
		fs, err := readFilesCSV(d.FilesCSV, dir, readFile)
		if err != nil {
			p.add("files_csv: %v", err)
		}
		files = fs
	case len(d.Files) == 0:
		p.add("files: missing: the batch's file sequence (files, or files_csv naming a CSV file of name,size[,url])")
	}
	index := map[string]int64{}
	for i, f := range files {
		at := fmt.Sprintf("files[%d]", i)
		if d.FilesCSV != "" {
			at = fmt.Sprintf("%s[%d]", d.FilesCSV, i)
		}
		if _, dup := index[f.Name]; dup {
			p.add("%s.name: %q is named twice", at, f.Name)
		} else if !validName(f.Name) {
			p.add("%s.name: want letters, digits, '_', '.' or '-' (at most 200), got %q", at, f.Name)
		}
		if d.FilesCSV != "" && (!(f.Size >= 0) || math.IsInf(f.Size, 0)) { // the tags checked files[]
			p.add("%s.size: must be >= 0, got %v", at, f.Size)
		}
		if _, dup := index[f.Name]; !dup {
			index[f.Name] = int64(i)
		}
		url := f.URL
		if url == "" {
			url = d.URLBase + f.Name
		}
		// Checked here, not by the database: MariaDB's column refuses more than 254
		// bytes with an SQL error where SQLite stores any length.
		if f.URL == "" && d.URLBase == "" {
			p.add("%s.url: missing: give the file a url, or the batch a url_base", at)
		} else if prob := limits.URLProblem(url, limits.NameBytes); prob != "" {
			if f.URL == "" {
				prob += " (url_base + name)"
			}
			p.add("%s.url: %s", at, prob)
		}
		spec.Files = append(spec.Files, store.BatchFile{FileNum: int64(i), Name: f.Name, URL: url, NBytes: f.Size})
	}
	fileNum := func(r fileRef) (int64, bool) {
		ref := string(r)
		if n, ok := index[ref]; ok {
			return n, true
		}
		if n, err := strconv.ParseInt(ref, 10, 64); err == nil && n >= 0 && n < int64(len(files)) {
			return n, true
		}
		return 0, false
	}

	// Jobs.
	jobs := d.Jobs
	switch {
	case d.JobsCSV != "" && len(d.Jobs) > 0:
		p.add("jobs_csv: give the jobs either in jobs or in jobs_csv, not both")
	case d.JobsCSV != "":
		js, err := readJobsCSV(d.JobsCSV, dir, readFile)
		if err != nil {
			p.add("jobs_csv: %v", err)
		}
		jobs = js
	case len(d.Jobs) == 0:
		p.add("jobs: missing: the batch's jobs, each a contiguous run of files (first, last)")
	}
	prevFirst := int64(-1)
	for i, j := range jobs {
		at := fmt.Sprintf("jobs[%d]", i)
		if d.JobsCSV != "" {
			at = fmt.Sprintf("%s[%d]", d.JobsCSV, i)
		}
		if j.Last == "" {
			j.Last = j.First
		}
		first, ok1 := fileNum(j.First)
		if !ok1 {
			p.add("%s.first: unknown file %q", at, j.First)
		}
		last, ok2 := fileNum(j.Last)
		if !ok2 {
			p.add("%s.last: unknown file %q", at, j.Last)
		}
		if ok1 && ok2 && last < first {
			p.add("%s: not a contiguous run of files: last (%s, file %d) comes before first (%s, file %d)", at, j.Last, last, j.First, first)
		}
		if ok1 && first < prevFirst {
			p.add("%s.first: out of order: file %d is before the previous job's first file %d (jobs follow the file sequence)", at, first, prevFirst)
		}
		if ok1 {
			prevFirst = first
		}
		fpops := j.FpopsEst
		if fpops == 0 {
			fpops = d.FpopsEst
		}
		if !(fpops > 0) || math.IsInf(fpops, 0) {
			p.add("%s.fpops_est: must be > 0 (or give fpops_est for the batch), got %v", at, fpops)
		}
		spec.Jobs = append(spec.Jobs, store.BatchJob{JobNum: int64(i), FirstFileNum: first, LastFileNum: last, FpopsEst: fpops})
	}

	// Cursors, when given: contiguous job ranges covering every job once.
	next := 0
	for i, c := range d.Cursors {
		at := fmt.Sprintf("cursors[%d]", i)
		switch {
		case c.LastJob < c.FirstJob:
			p.add("%s: last_job %d is before first_job %d", at, c.LastJob, c.FirstJob)
		case c.FirstJob < next:
			p.add("%s.first_job: overlaps cursors[%d] (jobs up to %d), got %d", at, i-1, next-1, c.FirstJob)
		case c.FirstJob > next:
			p.add("%s.first_job: not contiguous: jobs %d..%d are in no cursor", at, next, c.FirstJob-1)
		}
		if c.LastJob >= len(jobs) {
			p.add("%s.last_job: no job %d (the batch has %d jobs)", at, c.LastJob, len(jobs))
		}
		spec.Cursors = append(spec.Cursors, locality.Range{First: int64(c.FirstJob), Last: int64(c.LastJob)})
		next = max(next, c.LastJob+1)
	}
	if len(d.Cursors) > 0 && next < len(jobs) && len(p.list) == 0 {
		p.add("cursors: not contiguous: jobs %d..%d are in no cursor", next, len(jobs)-1)
	}
	return spec, p.err()
}

// readCSV reads a CSV file named in a description, relative to the description's
// directory, dropping a header line whose first field is the given header.
func readCSV(name, dir, header string, readFile func(string) ([]byte, error)) ([][]string, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, name)
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	var out [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(out) == 0 && len(rec) > 0 && strings.EqualFold(strings.TrimSpace(rec[0]), header) {
			out = append(out, nil) // keep line numbers
			continue
		}
		out = append(out, rec)
	}
	if len(out) > 0 && out[0] == nil {
		out = out[1:]
	}
	return out, nil
}

func readFilesCSV(name, dir string, readFile func(string) ([]byte, error)) ([]descFile, error) {
	recs, err := readCSV(name, dir, "name", readFile)
	if err != nil {
		return nil, err
	}
	var out []descFile
	for i, rec := range recs {
		if len(rec) < 2 || len(rec) > 3 {
			return nil, fmt.Errorf("%s: record %d: want name,size[,url], got %d fields", name, i+1, len(rec))
		}
		size, err := strconv.ParseFloat(strings.TrimSpace(rec[1]), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: record %d: size: want a number of bytes, got %q", name, i+1, rec[1])
		}
		f := descFile{Name: strings.TrimSpace(rec[0]), Size: size}
		if len(rec) == 3 {
			f.URL = strings.TrimSpace(rec[2])
		}
		out = append(out, f)
	}
	return out, nil
}

func readJobsCSV(name, dir string, readFile func(string) ([]byte, error)) ([]descJob, error) {
	recs, err := readCSV(name, dir, "first", readFile)
	if err != nil {
		return nil, err
	}
	var out []descJob
	for i, rec := range recs {
		if len(rec) < 1 || len(rec) > 3 {
			return nil, fmt.Errorf("%s: record %d: want first[,last[,fpops_est]], got %d fields", name, i+1, len(rec))
		}
		j := descJob{First: fileRef(strings.TrimSpace(rec[0]))}
		if len(rec) >= 2 {
			j.Last = fileRef(strings.TrimSpace(rec[1]))
		}
		if len(rec) == 3 && strings.TrimSpace(rec[2]) != "" {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[2]), 64)
			if err != nil {
				return nil, fmt.Errorf("%s: record %d: fpops_est: want a number, got %q", name, i+1, rec[2])
			}
			j.FpopsEst = v
		}
		out = append(out, j)
	}
	return out, nil
}

// readDescription reads a description file from disk.
func readDescription(path string) (store.BatchSpec, error) {
	readFile := func(p string) ([]byte, error) { return limits.ReadFile(p, limits.DocumentBytes) }
	data, err := readFile(path)
	if err != nil {
		return store.BatchSpec{}, err
	}
	return parseDescription(data, path, filepath.Dir(path), readFile)
}
