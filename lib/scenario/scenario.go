package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/state"
)

// Version is the only scenario file version this package reads and writes.
const Version = 1

// SchemaPath is where the repository keeps the generated JSON Schema of the file.
const SchemaPath = "schema/scenario-v1.schema.json"

// File is a loaded scenario: what lib/sim runs (the embedded *boincxml.Scenario, whose
// Dir names the input) and the file's defaults for the run.
type File struct {
	*boincxml.Scenario
	Run RunDefaults
}

// RunDefaults are a scenario file's defaults for bsim run's --duration and --delta,
// seconds; 0 means the file gives none (a BOINC directory never does).
type RunDefaults struct {
	Duration float64 `json:"duration,omitempty"`
	Delta    float64 `json:"delta,omitempty"`
}

// The file as it is written: the types carry the schema in their tags, as lib/state's
// do (doc, required, min, max, gt). Optional values with a default other than zero are
// pointers, so that absent and zero differ.
type fileDoc struct {
	Version int             `json:"version" yaml:"version" doc:"scenario file format version; must be 1" required:"true" min:"1" max:"1"`
	State   *state.Document `json:"state" yaml:"state" doc:"the client state document the run starts from (lib/state, version 1; schema/state-v1.schema.json)" required:"true"`
	Lambdas *lambdas        `json:"lambdas,omitempty" yaml:"lambdas,omitempty" doc:"mean lengths of the on periods of the host's availability processes, whose fractions are state.host.time_stats; absent fields are 3600"`
	Servers []server        `json:"servers,omitempty" yaml:"servers,omitempty" doc:"the projects' scheduler up/down processes (an RPC to a down server fails); a project not listed is always up"`
	Apps    []app           `json:"apps,omitempty" yaml:"apps,omitempty" doc:"how each project's emulated server makes jobs; a project without an app here gets no work"`
	Run     *runDefaults    `json:"run,omitempty" yaml:"run,omitempty" doc:"defaults for bsim run's --duration and --delta"`
}

type lambdas struct {
	On        *float64 `json:"on,omitempty" yaml:"on,omitempty" doc:"mean length of a period the client runs (state.host.time_stats.on_frac), seconds (default 3600)" gt:"0"`
	Active    *float64 `json:"active,omitempty" yaml:"active,omitempty" doc:"mean length of a period computing is allowed (active_frac), seconds (default 3600)" gt:"0"`
	GPUActive *float64 `json:"gpu_active,omitempty" yaml:"gpu_active,omitempty" doc:"mean length of a period GPU use is allowed (gpu_active_frac), seconds (default 3600)" gt:"0"`
	Connected *float64 `json:"connected,omitempty" yaml:"connected,omitempty" doc:"mean length of a connected period (connected_frac), seconds (default 3600)" gt:"0"`
}

type server struct {
	Project   string       `json:"project" yaml:"project" doc:"a project of the state" required:"true"`
	Available availability `json:"available" yaml:"available" doc:"the server's up/down process: up periods exponential with mean lambda, down periods with mean lambda/frac - lambda"`
}

type availability struct {
	Frac   *float64 `json:"frac,omitempty" yaml:"frac,omitempty" doc:"fraction of the time the server is up (default 1: always)" min:"0" max:"1"`
	Lambda *float64 `json:"lambda,omitempty" yaml:"lambda,omitempty" doc:"mean length of an up period, seconds (default 3600)" gt:"0"`
}

type app struct {
	Project      string      `json:"project" yaml:"project" doc:"a project of the state" required:"true"`
	Name         string      `json:"name" yaml:"name" doc:"the app's name; state.app_versions must hold at least one version of it (app and project)" required:"true"`
	LatencyBound float64     `json:"latency_bound" yaml:"latency_bound" doc:"a job's deadline is its send time plus this, seconds" required:"true" gt:"0"`
	FpopsEst     float64     `json:"fpops_est" yaml:"fpops_est" doc:"the real work of each job, FLOPs" required:"true" gt:"0"`
	Fpops        *normalDist `json:"fpops,omitempty" yaml:"fpops,omitempty" doc:"the distribution of the work estimate the client sees (rsc_fpops_est): normal, samples clamped at 0; absent: always fpops_est"`
	Weight       *float64    `json:"weight,omitempty" yaml:"weight,omitempty" doc:"relative chance of this app when a job is made (default 1)" min:"0"`
}

type normalDist struct {
	Mean   *float64 `json:"mean,omitempty" yaml:"mean,omitempty" doc:"mean, FLOPs (default fpops_est)" min:"0"`
	StdDev float64  `json:"std_dev" yaml:"std_dev" doc:"standard deviation, FLOPs (default 0)" min:"0"`
}

type runDefaults struct {
	Duration *seconds `json:"duration,omitempty" yaml:"duration,omitempty" doc:"default simulated time of bsim run: seconds, or a number with a unit s, m, h, d or w (30d)" gt:"0"`
	Delta    *seconds `json:"delta,omitempty" yaml:"delta,omitempty" doc:"default step of bsim run: seconds, or a number with a unit (60)" gt:"0"`
}

var defaultAvailability = boincxml.Availability{Frac: 1, Lambda: boincxml.DefaultLambda}

var defaultLambdas = boincxml.Lambdas{On: boincxml.DefaultLambda, Active: boincxml.DefaultLambda,
	GPUActive: boincxml.DefaultLambda, Connected: boincxml.DefaultLambda}

// Decode reads a bkit scenario file; file names it in messages and becomes the
// scenario's Dir. The error of an invalid file is a *state.Error listing its problems.
func Decode(data []byte, file string) (*File, error) {
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '<' {
		return nil, &state.Error{File: file, Problems: []string{
			"XML, not a bkit scenario file: a BOINC emulator scenario is a directory holding client_state.xml; name the directory"}}
	}
	fd := fileDoc{State: state.NewDocument()}
	if _, err := state.DecodeStrict(data, &fd); err != nil {
		return nil, named(err, file)
	}
	if problems := fd.check(); len(problems) > 0 {
		return nil, &state.Error{File: file, Problems: problems}
	}
	f := fd.build()
	f.Dir = file
	return f, nil
}

func named(err error, file string) error {
	var se *state.Error
	if errors.As(err, &se) {
		se.File = file
		return se
	}
	return &state.Error{File: file, Problems: []string{err.Error()}}
}

// maxProblems bounds how many problems one error lists, as lib/state's do.
const maxProblems = 20

// check validates a decoded file: the state document (problems prefixed "state."),
// the tags' bounds, then the references between the emulation's parts and the state.
func (fd *fileDoc) check() []string {
	var head, tail []string
	add := func(path, format string, args ...any) {
		tail = append(tail, path+": "+fmt.Sprintf(format, args...))
	}
	doc := fd.State
	fd.State = nil // its bounds are state.Validate's
	err := state.ValidateFields(fd)
	fd.State = doc
	var se *state.Error
	if errors.As(err, &se) {
		for _, p := range se.Problems {
			if strings.HasPrefix(p, "version:") {
				head = append(head, p)
			} else {
				tail = append(tail, p)
			}
		}
	}
	if doc == nil || reflect.DeepEqual(doc, state.NewDocument()) {
		head = append(head, "state: missing: the client state document the run starts from (lib/state, version 1)")
		return append(head, tail...)
	}
	if errors.As(state.Validate(doc), &se) {
		for _, p := range se.Problems {
			head = append(head, "state."+p)
		}
	}

	projects := map[string]bool{}
	var names []string
	for _, p := range doc.Projects {
		if !projects[p.Name] {
			names = append(names, p.Name)
		}
		projects[p.Name] = true
	}
	known := func(path, project string) bool {
		switch {
		case project == "":
			add(path, "must not be empty")
		case !projects[project]:
			list := strings.Join(names, ", ")
			if list == "" {
				list = "none"
			}
			add(path, "unknown project %q (the state has %s)", project, list)
		default:
			return true
		}
		return false
	}
	servers := map[string]int{}
	for i, s := range fd.Servers {
		path := fmt.Sprintf("servers[%d].project", i)
		if !known(path, s.Project) {
			continue
		}
		if j, dup := servers[s.Project]; dup {
			add(path, "project %q has a server already (servers[%d])", s.Project, j)
			continue
		}
		servers[s.Project] = i
	}
	versions := map[[2]string]bool{}
	for _, av := range doc.AppVersions {
		versions[[2]string{av.Project, av.App}] = true
	}
	apps := map[[2]string]int{}
	for i, a := range fd.Apps {
		path := fmt.Sprintf("apps[%d]", i)
		ok := known(path+".project", a.Project)
		if a.Name == "" {
			add(path+".name", "must not be empty")
			continue
		}
		if !ok {
			continue
		}
		key := [2]string{a.Project, a.Name}
		if j, dup := apps[key]; dup {
			add(path+".name", "duplicate app %q in project %q (apps[%d])", a.Name, a.Project, j)
			continue
		}
		apps[key] = i
		if !versions[key] {
			add(path+".name", "no app version of app %q in project %q in state.app_versions", a.Name, a.Project)
		}
	}
	problems := append(head, tail...)
	if len(problems) > maxProblems {
		problems = problems[:maxProblems]
	}
	return problems
}

// build makes the Scenario of a checked file.
func (fd *fileDoc) build() *File {
	doc := fd.State
	sc := &boincxml.Scenario{Doc: doc, Lambdas: defaultLambdas, Prefs: boincxml.GlobalPrefs{
		WorkBufMinDays:             doc.Preferences.WorkBufMinDays,
		WorkBufAdditionalDays:      doc.Preferences.WorkBufAdditionalDays,
		CPUSchedulingPeriodMinutes: doc.Preferences.CPUSchedulingPeriod / 60,
		MaxNCPUsPct:                100,
		CPUUsageLimit:              100,
	}}
	for _, r := range doc.Host.Resources {
		if r.Type == state.ResourceCPU {
			sc.HostNCPUs = r.Instances
		}
	}
	if l := fd.Lambdas; l != nil {
		set(&sc.Lambdas.On, l.On)
		set(&sc.Lambdas.Active, l.Active)
		set(&sc.Lambdas.GPUActive, l.GPUActive)
		set(&sc.Lambdas.Connected, l.Connected)
	}
	for _, p := range doc.Projects {
		sp := boincxml.ScenarioProject{Name: p.Name, MasterURL: p.MasterURL, Available: defaultAvailability}
		for _, s := range fd.Servers {
			if s.Project == p.Name {
				set(&sp.Available.Frac, s.Available.Frac)
				set(&sp.Available.Lambda, s.Available.Lambda)
			}
		}
		sc.Projects = append(sc.Projects, sp)
	}
	for _, a := range fd.Apps {
		sa := boincxml.ScenarioApp{Project: a.Project, Name: a.Name, LatencyBound: a.LatencyBound,
			FpopsEst: a.FpopsEst, Fpops: boincxml.NormalDist{Mean: a.FpopsEst}, Weight: 1}
		if a.Fpops != nil {
			set(&sa.Fpops.Mean, a.Fpops.Mean)
			sa.Fpops.StdDev = a.Fpops.StdDev
		}
		set(&sa.Weight, a.Weight)
		for _, da := range doc.Apps {
			if da.Project == a.Project && da.Name == a.Name {
				sa.MaxConcurrent = da.MaxConcurrent
			}
		}
		sc.Apps = append(sc.Apps, sa)
	}
	f := &File{Scenario: sc}
	if r := fd.Run; r != nil {
		if r.Duration != nil {
			f.Run.Duration = float64(*r.Duration)
		}
		if r.Delta != nil {
			f.Run.Delta = float64(*r.Delta)
		}
	}
	return f
}

func set(dst *float64, src *float64) {
	if src != nil {
		*dst = *src
	}
}

func ptr[T any](v T) *T { return &v }

// Encode writes f as a bkit scenario file in the given format. Values at their defaults
// are left out (lambdas of 3600, servers that are always up, run defaults of 0); an
// app's fpops and weight are always written. f must be valid as Decode checks it (an
// app needs an app version in the state, for instance); the error of one that is not
// is a *state.Error naming f.Dir.
func Encode(f *File, format state.Format) ([]byte, error) {
	if format != state.JSON && format != state.YAML {
		return nil, fmt.Errorf("unknown format %q", format)
	}
	sc := f.Scenario
	if sc == nil || sc.Doc == nil {
		return nil, errors.New("scenario without a state document")
	}
	doc := *sc.Doc // write empty lists as [], as state.Encode does, without changing sc.Doc
	if doc.Projects == nil {
		doc.Projects = []state.Project{}
	}
	if doc.AppVersions == nil {
		doc.AppVersions = []state.AppVersion{}
	}
	if doc.Tasks == nil {
		doc.Tasks = []state.Task{}
	}
	fd := fileDoc{Version: Version, State: &doc}
	if l := sc.Lambdas; l != defaultLambdas {
		fd.Lambdas = &lambdas{On: ptr(l.On), Active: ptr(l.Active), GPUActive: ptr(l.GPUActive), Connected: ptr(l.Connected)}
	}
	for _, p := range sc.Projects {
		if p.Available != defaultAvailability {
			fd.Servers = append(fd.Servers, server{Project: p.Name,
				Available: availability{Frac: ptr(p.Available.Frac), Lambda: ptr(p.Available.Lambda)}})
		}
	}
	for _, a := range sc.Apps {
		fd.Apps = append(fd.Apps, app{Project: a.Project, Name: a.Name, LatencyBound: a.LatencyBound,
			FpopsEst: a.FpopsEst, Fpops: &normalDist{Mean: ptr(a.Fpops.Mean), StdDev: a.Fpops.StdDev}, Weight: ptr(a.Weight)})
	}
	if r := f.Run; r.Duration != 0 || r.Delta != 0 {
		fd.Run = &runDefaults{}
		if r.Duration != 0 {
			fd.Run.Duration = ptr(seconds(r.Duration))
		}
		if r.Delta != 0 {
			fd.Run.Delta = ptr(seconds(r.Delta))
		}
	}
	if problems := fd.check(); len(problems) > 0 {
		name := sc.Dir
		if name == "" {
			name = "scenario"
		}
		return nil, &state.Error{File: name, Problems: problems}
	}
	return state.EncodeValue(&fd, format)
}

// Schema returns the JSON Schema (draft 2020-12) of the scenario file, generated from
// the Go types and their tags as the state document's is. A test keeps the copy at
// SchemaPath equal to it.
func Schema() ([]byte, error) {
	return state.SchemaFor(fileDoc{}, SchemaPath, "bkit scenario file, version 1",
		"A client state document (lib/state) plus what only bsim's emulation needs: availability processes, the projects' servers, how they make jobs, run defaults (lib/scenario). Times are seconds, work FLOPs.")
}
