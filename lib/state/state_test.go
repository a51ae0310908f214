package state

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite the schema file from the Go types")

func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestSchemaFile keeps the shipped JSON Schema equal to the one generated from the types.
func TestSchemaFile(t *testing.T) {
	want, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(repoRoot(t), SchemaPath)
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./lib/state -run Schema -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is out of date with the Go types (go test ./lib/state -run Schema -update):\n%s", SchemaPath, diff)
	}
}

// TestExamplesValid: every document shipped in examples/ decodes and validates.
func TestExamplesValid(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(repoRoot(t), "examples", "*"))
	n := 0
	for _, f := range files {
		if !strings.HasSuffix(f, ".yaml") && !strings.HasSuffix(f, ".json") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("\nhost:")) || bytes.HasPrefix(data, []byte("version:")) || bytes.Contains(data, []byte("\nversion:")) {
			n++
			if _, _, err := Decode(data, filepath.Base(f)); err != nil {
				t.Errorf("%v", err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no example state documents found")
	}
}

// TestRoundTrip: what Encode writes, Decode reads back to the same document, in both
// formats and across them.
func TestRoundTrip(t *testing.T) {
	doc := Synthetic(5, 40, 4)
	for _, f := range []Format{JSON, YAML} {
		data, err := Encode(doc, f)
		if err != nil {
			t.Fatal(err)
		}
		back, format, err := Decode(data, "x")
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if format != f {
			t.Errorf("detected %s, want %s", format, f)
		}
		if diff := cmp.Diff(doc, back, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", f, diff)
		}
	}
}

// TestOldSchedDebt: sched_debt, the coprocessor scheduling debt older bsched versions
// kept, is no longer used, but a document that carries it still reads, is valid, and
// keeps it when written back; a document without it is not given one.
func TestOldSchedDebt(t *testing.T) {
	const old = "version: 1\nhost: {resources: [{type: cpu, instances: 1, flops: 1e9}, {type: NVIDIA, instances: 1, flops: 2e9}]}\n" +
		"projects: [{name: A, resource_share: 1, resources: [{type: NVIDIA, sched_debt: -300, long_term_debt: 40}]}]\n"
	for _, f := range []Format{JSON, YAML} {
		doc, _, err := Decode([]byte(old), "old.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := Validate(doc); err != nil {
			t.Fatalf("an old document with sched_debt is invalid: %v", err)
		}
		if got := doc.Projects[0].Resources[0]; got.SchedDebt != -300 || got.LongTermDebt != 40 {
			t.Errorf("read %+v, want sched_debt -300, long_term_debt 40", got)
		}
		data, err := Encode(doc, f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "sched_debt") {
			t.Errorf("%s: sched_debt -300 not written back:\n%s", f, data)
		}
		doc.Projects[0].Resources[0].SchedDebt = 0
		if data, _ = Encode(doc, f); strings.Contains(string(data), "sched_debt") {
			t.Errorf("%s: sched_debt 0 written:\n%s", f, data)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	const base = "version: 1\nhost: {resources: [{type: cpu, instances: 2, flops: 1e9}]}\n"
	for _, c := range []struct{ name, doc, want string }{
		{"unknown top-level field", base + "colour: red\n", "f: colour: unknown field (line 3)"},
		{"field twice", base + "projects: []\nprojects: []\n", "f: "},
		{"nan", base + "projects: [{name: A, resource_share: .nan}]\n", "f: projects[0].resource_share: want a finite number, got .nan (line 3)"},
		{"no cpu", "version: 1\nhost: {resources: [{type: NVIDIA, instances: 1, flops: 1e9}]}\n", "f: host.resources: no resource of type cpu"},
		{"gpu version before gpu", base + "projects: [{name: A, resource_share: 1}]\napp_versions: [{name: g, project: A, avg_ncpus: 0.1, coproc: {type: NVIDIA, count: 1}}]\n",
			`f: app_versions[0].coproc.type: unknown resource type "NVIDIA" (the host has cpu)`},
		{"too many cpus", base + "projects: [{name: A, resource_share: 1}]\napp_versions: [{name: a, project: A, avg_ncpus: 3}]\n",
			"f: app_versions[0].avg_ncpus: uses 3 CPUs but the host has 2"},
		{"foreign version", base + "projects: [{name: A, resource_share: 1}, {name: B, resource_share: 1}]\napp_versions: [{name: a, project: A, avg_ncpus: 1}]\ntasks: [{name: t, project: B, app_version: a, state: ready}]\n",
			`f: tasks[0].app_version: app version "a" belongs to project "A", not "B"`},
		{"two documents", base + "---\nversion: 1\n", "f: more than one document in the input"},
		{"trailing json", `{"version": 1, "host": {"resources": [{"type": "cpu", "instances": 1, "flops": 1}]}} {}`, "f: unexpected data after the document"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Decode([]byte(c.doc), "f")
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error\n%s\nwant prefix\n%s", err, c.want)
			}
		})
	}
}

// FuzzDecode: no input makes the decoder panic, and whatever it accepts survives an
// encode/decode round trip unchanged.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"version: 1\nhost: {resources: [{type: cpu, instances: 2, flops: 1e9}]}\n",
		`{"version": 1, "host": {"resources": [{"type": "cpu", "instances": 1, "flops": 1}]}, "projects": [{"name": "A", "resource_share": 1}]}`,
		"a: &x [*x]\n",
		"{",
		`{"version": 1, "host": {"resources": [{"type": "cpu", "instances": 1, "flops": 1}], "time_stats": {"on_frac": null}}}`,
		"{\"version\": 1, \"projects\": [{\"name\": \"\xff\"}]}",
		`{"version": 1, "host": {"resources": [{"type": "cpu", "instances": 1, "flops": 1}]}, "projects": [{"name": "A", "resource_share": 1, "rec": 12.5, "rec_time": 1700000000}]}`,
		"version: 1\nhost: {resources: [{type: cpu, instances: 1, flops: 1}]}\nprojects: [{name: A, resource_share: 1, rec: -1, rec_time: .nan}]\n",
		// bsim --emulate boinc's fields (issue 30): the document's flag and a task's
		// true remaining work.
		`{"version": 1, "boinc_emulator": true, "host": {"resources": [{"type": "cpu", "instances": 1, "flops": 1}]}, "projects": [{"name": "A", "resource_share": 1}], "app_versions": [{"name": "a", "project": "A", "app": "a", "avg_ncpus": 1, "flops": 1}], "tasks": [{"name": "t", "project": "A", "app_version": "a", "state": "running", "estimated_flops": 10, "flops_done": 2, "emulator_flops_left": 7.5, "report_deadline": 100, "cpu_time": 2, "cpu_time_at_last_sched": 0}]}`,
		"version: 1\nboinc_emulator: yes\nhost: {resources: [{type: cpu, instances: 1, flops: 1}]}\ntasks: [{name: t, project: A, app_version: a, state: ready, estimated_flops: 1, emulator_flops_left: -3, report_deadline: 1, cpu_time: 0, cpu_time_at_last_sched: 0}]\n",
		"",
	} {
		f.Add([]byte(s))
	}
	if data, err := Encode(Synthetic(3, 10, 2), YAML); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, format, err := Decode(data, "fuzz")
		if err != nil {
			return
		}
		// What the JSON fast path accepts, the strict walker accepts too.
		if format == JSON {
			if err := decodeYAML(data, NewDocument()); err != nil {
				t.Fatalf("JSON accepted by the fast path, refused by the walker: %v", err)
			}
		}
		for _, format := range []Format{JSON, YAML} {
			out, err := Encode(doc, format)
			if err != nil {
				t.Fatalf("encode %s: %v", format, err)
			}
			back, _, err := Decode(out, "again")
			if err != nil {
				t.Fatalf("re-decode %s: %v\n%s", format, err, out)
			}
			if diff := cmp.Diff(doc, back, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s round trip changed the document:\n%s", format, diff)
			}
		}
	})
}

// TestJSONStrictKeys: a JSON document is as strict as a YAML one: a key given twice, or
// in another case than the field's, is refused with the field's path (issue 18, item 1;
// encoding/json keeps the last duplicate and matches keys case-insensitively).
func TestJSONStrictKeys(t *testing.T) {
	const host = `"host": {"resources": [{"type": "cpu", "instances": 1, "flops": 1}]}`
	for _, c := range []struct{ name, doc, want string }{
		{"duplicate", `{"version": 1, ` + host + `, "projects": [{"name": "A", "resource_share": 75, "resource_share": 10}]}`,
			"f: projects[0].resource_share: field given twice"},
		{"wrong case", `{"version": 1, ` + host + `, "projects": [{"name": "A", "RESOURCE_SHARE": 10}]}`,
			"f: projects[0].RESOURCE_SHARE: unknown field"},
		{"wrong case top", `{"Version": 1, ` + host + `}`, "f: Version: unknown field"},
		{"duplicate top", `{"version": 1, "version": 1, ` + host + `}`, "f: version: field given twice"},
		{"escaped duplicate", `{"version": 1, ` + host + `, "projects": [{"name": "A", "resource_share": 1, "resource_sh\u0061re": 2}]}`,
			"f: projects[0].resource_share: field given twice"},
		{"nested duplicate", `{"version": 1, "host": {"resources": [{"type": "cpu", "instances": 1, "flops": 1, "flops": 2}]}}`,
			"f: host.resources[0].flops: field given twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Decode([]byte(c.doc), "f")
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error\n%s\nwant prefix\n%s", err, c.want)
			}
		})
	}
	// The same document without the fault decodes, and large ones are unaffected.
	if _, _, err := Decode([]byte(`{"version": 1, `+host+`, "projects": [{"name": "A", "resource_share": 75}]}`), "f"); err != nil {
		t.Fatal(err)
	}
	data, err := Encode(Synthetic(5, 40, 4), JSON)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonKeysExact(data, reflect.TypeFor[*Document]()) {
		t.Error("an encoded document fails the key check")
	}
}

// BenchmarkJSONKeysExact is the strict-key scan of a 10,000-task JSON document, beside
// BenchmarkDecodeJSON, the whole decode it is part of.
func BenchmarkJSONKeysExact(b *testing.B) {
	data, err := Encode(Synthetic(10, 10000, 4), JSON)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if !jsonKeysExact(data, reflect.TypeFor[*Document]()) {
			b.Fatal("refused")
		}
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	data, err := Encode(Synthetic(10, 10000, 4), JSON)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := Decode(data, "b"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSameName: SameName is ==, whether the strings share their storage or not.
func TestSameName(t *testing.T) {
	a := "project"
	b := string([]byte("project")) // equal bytes, other storage
	for _, tt := range []struct {
		x, y string
		want bool
	}{{a, a, true}, {a, b, true}, {a, "projecT", false}, {a, a[:6], false}, {"", "", true}, {a[:0], "", true}} {
		if got := SameName(tt.x, tt.y); got != tt.want || got != (tt.x == tt.y) {
			t.Errorf("SameName(%q, %q) = %v, want %v", tt.x, tt.y, got, tt.want)
		}
	}
	if i := IndexName([]string{"a", b, a}, a); i != 1 {
		t.Errorf("IndexName = %d, want 1", i)
	}
	if i := IndexName([]string{"a"}, a); i != -1 {
		t.Errorf("IndexName of a missing name = %d, want -1", i)
	}
}

// TestNamesIsAMap: Names answers as a map built from the names in order, few or many,
// one Names set again and again: the later of two alike, 0 for a name not there.
func TestNamesIsAMap(t *testing.T) {
	var n Names
	for _, count := range []int{0, 1, 3, linearMax, linearMax + 1, 20, 2} {
		var ps []Project
		for i := range count {
			ps = append(ps, Project{Name: fmt.Sprint("p", i%(count/2+1))}) // some alike
		}
		m := map[string]int{}
		for i, p := range ps {
			m[p.Name] = i
		}
		n.SetProjects(ps)
		for i := range count + 2 {
			name := fmt.Sprint("p", i)
			if got := n.Index(name); got != m[name] {
				t.Errorf("%d names: Index(%q) = %d, a map says %d", count, name, got, m[name])
			}
		}
		for k, p := range ps { // the very strings stored, as the emulator's tasks hold
			if got := n.Index(p.Name); got != m[p.Name] {
				t.Errorf("%d names: Index(name %d, %q) = %d, a map says %d", count, k, p.Name, got, m[p.Name])
			}
		}
		avs := make([]AppVersion, len(ps))
		for i := range ps {
			avs[i].Name = ps[i].Name
		}
		n.SetAppVersions(avs)
		for name, i := range m {
			if got := n.Index(name); got != i {
				t.Errorf("%d app versions: Index(%q) = %d, a map says %d", count, name, got, i)
			}
		}
	}
}

// CPUsFit is BOINC's enforce_run_list rule: any task while a CPU is uncommitted, a
// coprocessor task also while the CPUs stay within one over.
func TestCPUsFit(t *testing.T) {
	for _, c := range []struct {
		free, cpus float64
		coproc     bool
		want       bool
	}{
		{2, 1, false, true},
		{0.8, 1, false, true}, // overcommits by 0.2
		{0.8, 1.5, false, true},
		{0, 1, false, false},
		{-0.2, 0.2, false, false},
		{0, 0.2, true, true},
		{-0.2, 0.5, true, true},  // 0.7 over
		{-0.2, 0.8, true, true},  // exactly one over
		{-0.2, 0.9, true, false}, // 1.1 over
		{1e-12, 1, false, false}, // rounding: all committed
		{-0.6, 0.5, true, false},
	} {
		if got := CPUsFit(c.free, c.cpus, c.coproc); got != c.want {
			t.Errorf("CPUsFit(%g, %g, %v) = %v, want %v", c.free, c.cpus, c.coproc, got, c.want)
		}
	}
}

// TestJSONAsStrictAsYAML: what YAML refuses, JSON refuses with the same path (issue 28
// item 14): null for a number (encoding/json leaves the field as it was), invalid
// UTF-8 in a string (encoding/json writes U+FFFD); and a request or session naming a
// project the document does not have, or URLs that are not http(s), in either format.
func TestJSONAsStrictAsYAML(t *testing.T) {
	const host = `"host": {"resources": [{"type": "cpu", "instances": 1, "flops": 1}]`
	for _, c := range []struct{ name, doc, want string }{
		{"null number", `{"version": 1, ` + host + `, "time_stats": {"on_frac": null}}}`, "f: host.time_stats.on_frac: want a number, got null"},
		{"null number, YAML", "version: 1\nhost: {resources: [{type: cpu, instances: 1, flops: 1}], time_stats: {on_frac: null}}\n", "f: host.time_stats.on_frac: want a number, got null"},
		{"null string", `{"version": 1, ` + host + `}, "projects": [{"name": null}]}`, "f: projects[0].name: want a string, got null"},
		{"invalid UTF-8", "{\"version\": 1,\n " + host + "}, \"projects\": [{\"name\": \"A\xff\"}]}", "f: line 2: invalid UTF-8"},
		{"request names no project", `{"version": 1, ` + host + `}, "projects": [{"name": "A"}], "request": {"project": "B"}}`, `f: request.project: unknown project "B"`},
		{"session names no project", "version: 1\nhost: {resources: [{type: cpu, instances: 1, flops: 1}]}\nprojects: [{name: A}]\nrpc_session: {kind: report, project: B}\n", `f: rpc_session.project: unknown project "B"`},
		{"master URL", `{"version": 1, ` + host + `}, "projects": [{"name": "A", "master_url": "javascript:alert(1)"}]}`, "f: projects[0].master_url: want an http:// or https:// URL"},
		{"scheduler URL", `{"version": 1, ` + host + `}, "projects": [{"name": "A", "scheduler_urls": ["http://a/cgi", "ftp://a/"]}]}`, "f: projects[0].scheduler_urls[1]: want an http:// or https:// URL"},
	} {
		_, _, err := Decode([]byte(c.doc), "f")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// null stays allowed where YAML allows it: an optional object, a list.
	for _, doc := range []string{
		`{"version": 1, ` + host + `}, "request": null, "projects": null}`,
		`{"version": 1, ` + host + `}, "projects": [{"name": "A", "master_url": "https://a.example/"}], "request": {"project": "A"}}`,
	} {
		if _, _, err := Decode([]byte(doc), "f"); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}
