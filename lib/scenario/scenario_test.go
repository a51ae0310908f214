package scenario_test

import (
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/sim"
	"github.com/bkit/bkit/lib/state"
)

var update = flag.Bool("update", false, "rewrite the schema file from the Go types")

const (
	repo        = "../.."
	seed002File = "../../scenarios/seed002-gpu.yaml"
	seed002Dir  = "../../scenarios/seed002-gpu"
)

// directories are the BOINC emulator scenario directories the round trip is tried on:
// the repository's scenarios/ (the public example among them) and lib/sim's noisy
// one (availability processes, several apps, weights, estimate spread).
func directories(t *testing.T) []string {
	dirs := []string{"../sim/testdata/noisy"}
	found, _ := filepath.Glob(filepath.Join(repo, "scenarios", "*", "client_state.xml"))
	if len(found) == 0 {
		t.Fatal("no scenario directories in scenarios/")
	}
	for _, f := range found {
		dirs = append(dirs, filepath.Dir(f))
	}
	return dirs
}

// emulation compares two scenarios as lib/sim sees them: their canonical forms (the
// defaults spelt out), whatever their sources, without the run defaults (bsim's).
var emulation = cmp.Options{
	cmp.Transformer("Canonical", func(sc *scenario.Scenario) *scenario.Scenario {
		c := sc.Canonical()
		c.Dir, c.Run = "", nil
		return c
	}),
	cmpopts.EquateEmpty(),
}

func runFor(t *testing.T, sc *scenario.Scenario, days float64) *sim.Result {
	t.Helper()
	res, err := sim.Run(sc, sim.Config{Duration: days * 86400, Delta: 60, Policy: "seed", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRoundTrip: a BOINC directory loaded, encoded and decoded is the same scenario and
// runs to identical figures over 2 simulated days, in both formats.
func TestRoundTrip(t *testing.T) {
	for _, dir := range directories(t) {
		want := runFor(t, mustLoad(t, dir), 2)
		for _, format := range []state.Format{state.YAML, state.JSON} {
			orig := mustLoad(t, dir)
			data, err := scenario.Encode(orig, format)
			if err != nil {
				t.Fatalf("%s: encode %s: %v", dir, format, err)
			}
			back, err := scenario.Decode(data, "x."+string(format))
			if err != nil {
				t.Fatalf("%s: decode %s: %v\n%s", dir, format, err, data)
			}
			// Encode writes what the directory gave, no more: the very same model.
			if diff := cmp.Diff(orig, back, cmpopts.IgnoreFields(scenario.Scenario{}, "Dir"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s %s round trip (-dir +file):\n%s", dir, format, diff)
			}
			if diff := cmp.Diff(want, runFor(t, back, 2)); diff != "" {
				t.Errorf("%s %s: the file runs differently (-dir +file):\n%s", dir, format, diff)
			}
		}
	}
}

// mustLoad reads a scenario directory or file as bsim does.
func mustLoad(t *testing.T, path string) *scenario.Scenario {
	t.Helper()
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		sc, err := boincxml.LoadScenario(path)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Decode(data, path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func fraction(t *testing.T, res *sim.Result, resource, project string) float64 {
	t.Helper()
	f, ok := res.ResourceFraction(resource, project)
	if !ok {
		t.Fatalf("no %s/%s in the result", resource, project)
	}
	return f
}

// TestSeed002File runs scenarios/seed002-gpu.yaml for its default 30 days: the CPU
// (nearly) all to B, the GPU 75 % to A and 25 % to B, as lib/sim checks the directory.
// The file is the directory's scenario.
func TestSeed002File(t *testing.T) {
	sc := mustLoad(t, seed002File)
	duration, delta := sc.RunDefaults()
	if duration != 30*86400 || delta != 0 {
		t.Fatalf("run defaults %g, %g; want 30 days and none", duration, delta)
	}
	if diff := cmp.Diff(mustLoad(t, seed002Dir), sc, emulation); diff != "" {
		t.Errorf("the file is not the directory's scenario (-dir +file):\n%s", diff)
	}
	res, err := sim.Run(sc, sim.Config{Duration: duration, Delta: 60, Policy: "seed", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; GPU A %.4f B %.4f", res.OneLine(), fraction(t, res, "NVIDIA", "A"), fraction(t, res, "NVIDIA", "B"))
	if b := fraction(t, res, "cpu", "B"); b < 0.97 {
		t.Errorf("CPU to B %.4f, want >= 0.97", b)
	}
	if a := fraction(t, res, "NVIDIA", "A"); math.Abs(a-0.75) > 0.03 {
		t.Errorf("GPU to A %.4f, want 0.75 ± 0.03", a)
	}
	if b := fraction(t, res, "NVIDIA", "B"); math.Abs(b-0.25) > 0.03 {
		t.Errorf("GPU to B %.4f, want 0.25 ± 0.03", b)
	}
}

// TestDocExample: the complete example of docs/scenario-file.md (its first yaml block)
// is a valid scenario file, and the package comment's sketch is too.
func TestDocExample(t *testing.T) {
	md, err := os.ReadFile(filepath.Join(repo, "docs", "scenario-file.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(md)
	if m == nil {
		t.Fatal("docs/scenario-file.md has no yaml block")
	}
	sc, err := scenario.Decode(m[1], "docs/scenario-file.md")
	if err != nil {
		t.Fatal(err)
	}
	if duration, _ := sc.RunDefaults(); len(sc.Apps) == 0 || duration == 0 {
		t.Errorf("the example sets no apps or run defaults: %+v", sc)
	}
	if _, err := sim.Run(sc, sim.Config{Duration: 86400, Delta: 60, Policy: "seed", Seed: 1}); err != nil {
		t.Fatal(err)
	}

	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var sketch strings.Builder
	in := false
	for _, l := range strings.Split(string(src), "\n") {
		switch {
		case strings.HasPrefix(l, "//\tversion: 1"):
			in = true
		case !strings.HasPrefix(l, "//\t"):
			in = false
		}
		if in {
			sketch.WriteString(strings.TrimPrefix(l, "//\t") + "\n")
		}
	}
	if _, err := scenario.Decode([]byte(sketch.String()), "doc.go"); err != nil {
		t.Errorf("the package comment's example: %v\n%s", err, sketch.String())
	}
}

// base is a valid file the error cases change.
const base = `version: 1
state:
  version: 1
  host: {resources: [{type: cpu, instances: 1, flops: 1e9}]}
  projects: [{name: A, resource_share: 1}, {name: B, resource_share: 1}]
  apps: [{name: a, project: A}, {name: b, project: B}]
  app_versions: [{name: a1, project: A, app: a, avg_ncpus: 1}, {name: b1, project: B, app: b, avg_ncpus: 1}]
`

const apps = "apps:\n  - {project: A, name: a, latency_bound: 86400, fpops_est: 3.6e12}\n"

func TestDecode(t *testing.T) {
	f, err := scenario.Decode([]byte(base+apps+`lambdas: {on: 7200}
servers: [{project: B, available: {frac: 0.5}}]
run: {duration: 36h, delta: 30}
`), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// What the file leaves out stays nil; the methods give the defaults.
	dur, delta := scenario.Seconds(36*3600), scenario.Seconds(30)
	want := &scenario.Scenario{
		Dir:     "s.yaml",
		Version: 1,
		Lambdas: &scenario.Lambdas{On: ptr(7200.0)},
		Servers: []scenario.Server{{Project: "B", Available: scenario.Availability{Frac: ptr(0.5)}}},
		Apps:    []scenario.App{{Project: "A", Name: "a", LatencyBound: 86400, FpopsEst: 3.6e12}},
		Run:     &scenario.Run{Duration: &dur, Delta: &delta},
	}
	if diff := cmp.Diff(want, f, cmpopts.IgnoreFields(scenario.Scenario{}, "Doc")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	on, active, gpuActive, connected := f.Lambdas.Means()
	frac, lambda := f.ServerAvailability("B")
	fracA, _ := f.ServerAvailability("A")
	a := &f.Apps[0]
	if on != 7200 || active != 3600 || gpuActive != 3600 || connected != 3600 || frac != 0.5 || lambda != 3600 || fracA != 1 ||
		a.EstimateMean() != 3.6e12 || a.EstimateStdDev() != 0 || a.JobWeight() != 1 {
		t.Errorf("in force: lambdas %g %g %g %g, B's server %g %g, A's %g, app: mean %g sd %g weight %g",
			on, active, gpuActive, connected, frac, lambda, fracA, a.EstimateMean(), a.EstimateStdDev(), a.JobWeight())
	}
	if f.Doc == nil || len(f.Doc.Projects) != 2 || f.Doc.Host.TimeStats.OnFrac != 1 {
		t.Errorf("state %+v", f.Doc)
	}

	// The same file in JSON, through the fast path: the same scenario, defaults included.
	js := `{"version": 1,
  "state": {"version": 1, "host": {"resources": [{"type": "cpu", "instances": 1, "flops": 1e9}]},
    "projects": [{"name": "A", "resource_share": 1}, {"name": "B", "resource_share": 1}],
    "apps": [{"name": "a", "project": "A"}, {"name": "b", "project": "B"}],
    "app_versions": [{"name": "a1", "project": "A", "app": "a", "avg_ncpus": 1}, {"name": "b1", "project": "B", "app": "b", "avg_ncpus": 1}]},
  "apps": [{"project": "A", "name": "a", "latency_bound": 86400, "fpops_est": 3.6e12}],
  "lambdas": {"on": 7200}, "servers": [{"project": "B", "available": {"frac": 0.5}}],
  "run": {"duration": "36h", "delta": 30}}`
	fj, err := scenario.Decode([]byte(js), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, fj); diff != "" {
		t.Errorf("YAML and JSON differ (-yaml +json):\n%s", diff)
	}
}

// TestDecodeErrors: each class of problem, with its exact message.
func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct{ name, file, want string }{
		{"empty", "", "s.yaml: empty document"},
		{"not a mapping", "- 1\n", "s.yaml: (document): want a mapping, got a list (line 1)"},
		{"xml", "<client_state/>\n", "s.yaml: XML, not a bkit scenario file: a BOINC emulator scenario is a directory holding client_state.xml; name the directory"},
		{"yaml syntax", "version: [1\n", "s.yaml: line 1: did not find expected ',' or ']'"},
		{"json syntax", `{"version": 1,}`, "s.yaml: line 1: invalid JSON: "},
		{"unknown field", base + apps + "colour: red\n", "s.yaml: colour: unknown field (line 10)"},
		{"unknown app field", base + "apps:\n  - {project: A, name: a, latency_bound: 1, fpops_est: 1, max_concurrent: 2}\n",
			"s.yaml: apps[0].max_concurrent: unknown field (line 9)"},
		{"unknown state field", strings.Replace(base, "  version: 1\n", "  version: 1\n  colour: red\n", 1),
			"s.yaml: state.colour: unknown field (line 4)"},
		{"field twice", base + apps + "apps: []\n", "s.yaml: apps: field given twice (line 10)"},
		{"wrong type", base + "apps:\n  - {project: A, name: a, latency_bound: soon, fpops_est: 1}\n",
			`s.yaml: apps[0].latency_bound: want a number, got "soon" (line 9)`},
		{"bad duration", base + apps + "run: {duration: 30x}\n",
			`s.yaml: run.duration: want seconds or a number with a unit s, m, h, d or w (e.g. 36h, 10d), got "30x" (line 10)`},
		{"duration list", base + apps + "run: {duration: [1]}\n", "s.yaml: run.duration: want a number or a string, got a list (line 10)"},
		{"json wrong type", `{"version": 1, "state": {"version": "1"}}`, `s.yaml: state.version: want a whole number, got "1" (line 1)`},
		{"json bad duration", `{"version": 1, "run": {"duration": "-5"}}`, `s.yaml: run.duration: want a duration >= 0, got "-5" (line 1)`},
		{"version", strings.Replace(base, "version: 1\nstate", "version: 2\nstate", 1) + apps, "s.yaml: version: must be <= 1, got 2"},
		{"no version", strings.Replace(base, "version: 1\nstate", "state", 1) + apps, "s.yaml: version: must be >= 1, got 0"},
		{"no state", "version: 1\n", "s.yaml: state: missing: the client state document the run starts from (lib/state, version 1)"},
		{"null state", "version: 1\nstate: null\n", "s.yaml: state: missing: the client state document the run starts from (lib/state, version 1)"},
		{"invalid state", strings.Replace(base, "resource_share: 1}, {name: B", "resource_share: -5}, {name: B", 1) + apps,
			"s.yaml: state.projects[0].resource_share: must be >= 0, got -5"},
		{"fpops_est", base + apps + "  - {project: B, name: b, latency_bound: 86400, fpops_est: 0}\n",
			"s.yaml: apps[1].fpops_est: must be > 0, got 0"},
		{"no fpops_est", base + "apps: [{project: A, name: a, latency_bound: 86400}]\n",
			"s.yaml: apps[0].fpops_est: must be > 0, got 0"},
		{"latency_bound", base + "apps: [{project: A, name: a, latency_bound: -1, fpops_est: 1}]\n",
			"s.yaml: apps[0].latency_bound: must be > 0, got -1"},
		{"std_dev", base + "apps: [{project: A, name: a, latency_bound: 1, fpops_est: 1, fpops: {std_dev: -1}}]\n",
			"s.yaml: apps[0].fpops.std_dev: must be >= 0, got -1"},
		{"mean", base + "apps: [{project: A, name: a, latency_bound: 1, fpops_est: 1, fpops: {mean: -1}}]\n",
			"s.yaml: apps[0].fpops.mean: must be >= 0, got -1"},
		{"weight", base + "apps: [{project: A, name: a, latency_bound: 1, fpops_est: 1, weight: -2}]\n",
			"s.yaml: apps[0].weight: must be >= 0, got -2"},
		{"app project", base + "apps: [{project: C, name: a, latency_bound: 1, fpops_est: 1}]\n",
			`s.yaml: apps[0].project: unknown project "C" (the state has A, B)`},
		{"app no project", base + "apps: [{name: a, latency_bound: 1, fpops_est: 1}]\n",
			"s.yaml: apps[0].project: must not be empty"},
		{"app no name", base + "apps: [{project: A, latency_bound: 1, fpops_est: 1}]\n",
			"s.yaml: apps[0].name: must not be empty"},
		{"app twice", base + apps + "  - {project: A, name: a, latency_bound: 1, fpops_est: 1}\n",
			`s.yaml: apps[1].name: duplicate app "a" in project "A" (apps[0])`},
		{"app without version", base + "apps: [{project: B, name: a, latency_bound: 1, fpops_est: 1}]\n",
			`s.yaml: apps[0].name: no app version of app "a" in project "B" in state.app_versions`},
		{"frac", base + apps + "servers: [{project: A, available: {frac: 1.5}}]\n",
			"s.yaml: servers[0].available.frac: must be <= 1, got 1.5"},
		{"lambda", base + apps + "servers: [{project: A, available: {frac: 0.5, lambda: 0}}]\n",
			"s.yaml: servers[0].available.lambda: must be > 0, got 0"},
		{"server project", base + apps + "servers: [{project: Z, available: {frac: 0.5}}]\n",
			`s.yaml: servers[0].project: unknown project "Z" (the state has A, B)`},
		{"server twice", base + apps + "servers: [{project: A, available: {frac: 0.5}}, {project: A}]\n",
			`s.yaml: servers[1].project: project "A" has a server already (servers[0])`},
		{"parse order twice", base + apps + "servers: [{project: A, available: {frac: 0.5}}]\nboinc_parse_order: [A, \"\", A]\n",
			`s.yaml: boinc_parse_order[2]: "A" is made already (boinc_parse_order[0])`},
		{"parse order unserved", base + apps + "boinc_parse_order: [\"\", B]\n",
			`s.yaml: boinc_parse_order[1]: project "B" has no server in servers`},
		{"parse order host", base + apps + "no_time_stats: true\nboinc_parse_order: [\"\"]\n",
			`s.yaml: boinc_parse_order[0]: the host's processes with no_time_stats`},
		{"host lambda", base + apps + "lambdas: {gpu_active: -1}\n", "s.yaml: lambdas.gpu_active: must be > 0, got -1"},
		{"duration", base + apps + "run: {duration: 0}\n", "s.yaml: run.duration: must be > 0, got 0"},
		{"delta", base + apps + "run: {delta: 0s}\n", "s.yaml: run.delta: must be > 0, got 0"},
		{"several", strings.Replace(base, "version: 1\nstate", "version: 0\nstate", 1) + "apps: [{project: A, name: a, latency_bound: 0, fpops_est: 1}]\n",
			"s.yaml: version: must be >= 1, got 0\ns.yaml: apps[0].latency_bound: must be > 0, got 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := scenario.Decode([]byte(c.file), "s.yaml")
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			var se *state.Error
			if !errors.As(err, &se) {
				t.Errorf("%T is not a *state.Error", err)
			}
			if got := err.Error(); got != c.want && !(strings.HasSuffix(c.want, ": ") && strings.HasPrefix(got, c.want)) {
				t.Errorf("error\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// TestSchemaFile keeps the shipped JSON Schema equal to the one generated from the types.
func TestSchemaFile(t *testing.T) {
	want, err := scenario.Schema()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(repo, scenario.SchemaPath)
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./lib/scenario -run Schema -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is out of date with the Go types (go test ./lib/scenario -run Schema -update):\n%s", scenario.SchemaPath, diff)
	}
}

// FuzzDecode: no input makes the decoder panic, and whatever it accepts survives an
// encode/decode round trip unchanged, in both formats.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		base + apps,
		base + apps + "lambdas: {on: 7200}\nservers: [{project: B, available: {frac: 0.5, lambda: 100}}]\nrun: {duration: 36h, delta: 30}\n",
		base + apps + "run: {duration: 30x}\n",
		base + "apps: [{project: C, name: a, latency_bound: 1, fpops_est: 0}]\n",
		`{"version": 1, "state": {"version": 1, "host": {"resources": [{"type": "cpu", "instances": 1, "flops": 1}]}}, "run": {"duration": "2d", "delta": 60}}`,
		`{"version": 1, "run": {"duration": "-5"}}`,
		"version: 1\nstate: null\n",
		"a: &x [*x]\n",
		"<client_state/>",
		"{",
		"",
	} {
		f.Add([]byte(s))
	}
	for _, p := range []string{seed002File, filepath.Join(seed002Dir, "client_state.xml")} {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	if sc, err := boincxml.LoadScenario("../sim/testdata/noisy"); err == nil {
		if data, err := scenario.Encode(sc.Canonical(), state.JSON); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := scenario.Decode(data, "fuzz")
		if err != nil {
			var se *state.Error
			if !errors.As(err, &se) {
				t.Fatalf("%T is not a *state.Error: %v", err, err)
			}
			return
		}
		for _, format := range []state.Format{state.JSON, state.YAML} {
			out, err := scenario.Encode(file, format)
			if err != nil {
				t.Fatalf("encode %s: %v", format, err)
			}
			back, err := scenario.Decode(out, "fuzz")
			if err != nil {
				t.Fatalf("re-decode %s: %v\n%s", format, err, out)
			}
			if diff := cmp.Diff(file, back, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s round trip changed the scenario:\n%s", format, diff)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }
