package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/bkit/bkit/lib/state"
)

// Version is the only scenario file version this package reads and writes.
const Version = 1

// SchemaPath is where the repository keeps the generated JSON Schema of the file.
const SchemaPath = "schema/scenario-v1.schema.json"

// Decode reads a bkit scenario file; file names it in messages and becomes the
// scenario's Dir. The error of an invalid file is a *state.Error listing its problems.
func Decode(data []byte, file string) (*Scenario, error) {
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '<' {
		return nil, &state.Error{File: file, Problems: []string{
			"XML, not a bkit scenario file: a BOINC emulator scenario is a directory holding client_state.xml; name the directory"}}
	}
	sc := &Scenario{Doc: state.NewDocument()}
	if _, err := state.DecodeStrict(data, sc); err != nil {
		return nil, named(err, file)
	}
	if problems := sc.check(); len(problems) > 0 {
		return nil, &state.Error{File: file, Problems: problems}
	}
	sc.Dir = file
	return sc, nil
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

// check validates a scenario as a file must be: the state document (problems prefixed
// "state."), the tags' bounds, then the references between the emulation's parts and
// the state.
func (sc *Scenario) check() []string {
	var head, tail []string
	add := func(path, format string, args ...any) {
		tail = append(tail, path+": "+fmt.Sprintf(format, args...))
	}
	doc := sc.Doc
	bare := *sc
	bare.Doc = nil // its bounds are state.Validate's
	err := state.ValidateFields(&bare)
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
	for i, s := range sc.Servers {
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
	if sc.NoTimeStats && doc.Host.TimeStats != (state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1}) {
		add("no_time_stats", "the host is always on without <time_stats>, but state.host.time_stats has fractions below 1")
	}
	// A project's name may be one the state no longer has (BOINC's emulator drew for a
	// project it culled afterwards); each process is made once.
	made := map[string]int{}
	for i, name := range sc.ParseOrder {
		path := fmt.Sprintf("boinc_parse_order[%d]", i)
		if j, dup := made[name]; dup {
			add(path, "%q is made already (boinc_parse_order[%d])", name, j)
			continue
		}
		made[name] = i
		_, served := servers[name]
		if name == "" && sc.NoTimeStats {
			add(path, "the host's processes with no_time_stats")
		} else if name != "" && projects[name] && !served {
			add(path, "project %q has no server in servers", name)
		}
	}
	versions := map[[2]string]bool{}
	for _, av := range doc.AppVersions {
		versions[[2]string{av.Project, av.App}] = true
	}
	apps := map[[2]string]int{}
	for i, a := range sc.Apps {
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

// Encode writes sc as a bkit scenario file in the given format, as it is: what sc
// leaves out (nil optional values) the file leaves out (Canonical spells out what a
// reader should see). sc must be valid as Decode checks it (an app needs an app version
// in the state, for instance); the error of one that is not is a *state.Error naming
// sc.Dir.
func Encode(sc *Scenario, format state.Format) ([]byte, error) {
	if format != state.JSON && format != state.YAML {
		return nil, fmt.Errorf("unknown format %q", format)
	}
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
	out := *sc
	out.Version, out.Doc = Version, &doc
	if problems := out.check(); len(problems) > 0 {
		name := sc.Dir
		if name == "" {
			name = "scenario"
		}
		return nil, &state.Error{File: name, Problems: problems}
	}
	return state.EncodeValue(&out, format)
}

// Schema returns the JSON Schema (draft 2020-12) of the scenario file, generated from
// the Go types and their tags as the state document's is. A test keeps the copy at
// SchemaPath equal to it.
func Schema() ([]byte, error) {
	return state.SchemaFor(Scenario{}, SchemaPath, "bkit scenario file, version 1",
		"A client state document (lib/state) plus what only bsim's emulation needs: availability processes, the projects' servers, how they make jobs, run defaults (lib/scenario). Times are seconds, work FLOPs.")
}
