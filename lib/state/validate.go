package state

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/limits"
)

// Validate checks what the types alone cannot: bounds and enumerations from the struct
// tags, then uniqueness and references. It returns an *Error listing the problems with
// their field paths, or nil.
func Validate(doc *Document) error {
	v := validator{}
	v.bounds(reflect.ValueOf(doc).Elem())
	if doc.Version != Version {
		// A document of another version, or of none ('{}'), follows other rules: its
		// other problems would be noise, so the version is the one reported.
		for _, p := range v.problems {
			if strings.HasPrefix(p, "version: ") {
				return &Error{Problems: []string{p}}
			}
		}
	}
	v.semantics(doc)
	if len(v.problems) > 0 {
		return &Error{Problems: v.problems}
	}
	return nil
}

// ValidateFields checks the bounds and enumerations the struct tags of v's type set (min,
// max, gt, enum), over v (a pointer to a struct) and everything it holds, as Validate
// checks a document's: a problem names the field path ("apps[1].fpops_est: must be >
// 0, got 0"). A pointer field is checked when it is set. It returns an *Error without
// File, or nil.
func ValidateFields(v any) error {
	val := validator{}
	val.bounds(reflect.ValueOf(v))
	if len(val.problems) > 0 {
		return &Error{Problems: val.problems}
	}
	return nil
}

type validator struct {
	problems []string
	stack    []segment
}

// segment is one step of a field path: a field name, or an index when name is "".
// The validator keeps the path as a stack and renders it only when a problem is found,
// so that checking 10,000 tasks allocates nothing.
type segment struct {
	name  string
	index int
}

func (v *validator) path() string {
	var b strings.Builder
	for i, s := range v.stack {
		switch {
		case s.name == "":
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case i > 0:
			b.WriteString("." + s.name)
		default:
			b.WriteString(s.name)
		}
	}
	if b.Len() == 0 {
		return "(document)"
	}
	return b.String()
}

func (v *validator) add(path string, format string, args ...any) {
	if len(v.problems) < maxProblems {
		v.problems = append(v.problems, path+": "+fmt.Sprintf(format, args...))
	}
}

func (v *validator) bounds(val reflect.Value) {
	switch val.Kind() {
	case reflect.Pointer:
		if !val.IsNil() {
			v.bounds(val.Elem())
		}
	case reflect.Slice:
		if val.Type().Elem().Kind() != reflect.Struct {
			return
		}
		si := fieldsOf(val.Type().Elem())
		for i := 0; i < val.Len(); i++ {
			v.stack = append(v.stack, segment{index: i})
			v.structBounds(val.Index(i), si)
			v.stack = v.stack[:len(v.stack)-1]
		}
	case reflect.Struct:
		v.structBounds(val, fieldsOf(val.Type()))
	}
}

// structBounds checks the fields of a struct value that have bounds or hold values that
// may (si.visit, in field order, so that problems are listed in the document's order).
func (v *validator) structBounds(val reflect.Value, si *structInfo) {
	for _, pos := range si.visit {
		f := &si.list[pos]
		fv := val.Field(f.index)
		v.stack = append(v.stack, segment{name: f.name})
		v.field(f, fv)
		v.bounds(fv)
		v.stack = v.stack[:len(v.stack)-1]
	}
}

func (v *validator) field(f *field, fv reflect.Value) {
	if fv.Kind() == reflect.Pointer {
		if fv.IsNil() {
			return
		}
		fv = fv.Elem()
	}
	var x float64
	switch fv.Kind() {
	case reflect.Float64:
		x = fv.Float()
	case reflect.Int:
		x = float64(fv.Int())
	case reflect.String:
		if f.enum != nil && !slices.Contains(f.enum, fv.String()) && (fv.String() != "" || f.required) {
			v.add(v.path(), "must be one of %v, got %q", f.enum, fv.String())
		}
		return
	default:
		return
	}
	switch {
	case f.min != nil && x < *f.min:
		v.add(v.path(), "must be >= %g, got %g", *f.min, x)
	case f.max != nil && x > *f.max:
		v.add(v.path(), "must be <= %g, got %g", *f.max, x)
	case f.gt != nil && x <= *f.gt:
		v.add(v.path(), "must be > %g, got %g", *f.gt, x)
	}
}

// semantics checks what no single field can say, in the order of the document's
// references: the host's resources (each type once, a CPU), the projects (names once,
// resource entries of the host's types), the apps, the app versions (their project,
// app and resource) and the tasks (their project and app version). Each step returns
// the names the next ones look up. The tables are made here and filled by the steps,
// so that the small ones stay off the heap.
func (v *validator) semantics(doc *Document) {
	resources := map[string]Resource{}
	v.hostResources(doc.Host.Resources, resources)
	projects := make(map[string]int, len(doc.Projects))
	v.projects(doc, resources, projects)
	apps := map[[2]string]bool{}
	v.apps(doc.Apps, projects, apps)
	versions := make(map[string]int, len(doc.AppVersions))
	v.appVersions(doc, resources, projects, apps, versions)
	v.tasks(doc, projects, versions)
	if r := doc.Request; r != nil && r.Project != "" {
		if _, ok := projects[r.Project]; !ok {
			v.add("request.project", "unknown project %q", r.Project)
		}
	}
	if r := doc.RPCSession; r != nil && r.Project != "" {
		if _, ok := projects[r.Project]; !ok {
			v.add("rpc_session.project", "unknown project %q", r.Project)
		}
	}
}

// maxURLBytes bounds a master or scheduler URL in a document (BOINC's buffers are 256
// bytes; real URLs are far shorter).
const maxURLBytes = 2048

// hostResources checks the host's resources: a non-empty type each, no type twice, and
// a CPU with at least one instance and FLOPS > 0. It puts the resources by type in
// resources.
func (v *validator) hostResources(rs []Resource, resources map[string]Resource) {
	for i, r := range rs {
		p := fmt.Sprintf("host.resources[%d]", i)
		switch {
		case r.Type == "":
			v.add(p+".type", "must not be empty")
		case hasType(rs[:i], r.Type):
			v.add(p+".type", "duplicate resource type %q", r.Type)
		}
		resources[r.Type] = r
		if r.Type == ResourceCPU {
			if r.Instances < 1 {
				v.add(p+".instances", "the CPU needs at least 1 instance, got %d", r.Instances)
			}
			if r.Flops <= 0 {
				v.add(p+".flops", "the CPU's FLOPS must be > 0, got %g", r.Flops)
			}
		}
	}
	if _, ok := resources[ResourceCPU]; !ok {
		v.add("host.resources", "no resource of type cpu")
	}
}

// projects checks the projects: a name each, no name twice, and resource entries of
// the host's types, each type once, with no scheduling debt for the CPU (its
// scheduling debt is the project's debt). It puts each name's index in projects.
func (v *validator) projects(doc *Document, resources map[string]Resource, projects map[string]int) {
	for i, p := range doc.Projects {
		path := fmt.Sprintf("projects[%d]", i)
		if p.Name == "" {
			v.add(path+".name", "must not be empty")
		} else if _, dup := projects[p.Name]; dup {
			v.add(path+".name", "duplicate project name %q", p.Name)
		}
		projects[p.Name] = i
		if p.MasterURL != "" {
			if prob := limits.URLProblem(p.MasterURL, maxURLBytes); prob != "" {
				v.add(path+".master_url", "%s", prob)
			}
		}
		for j, u := range p.SchedulerURLs {
			if prob := limits.URLProblem(u, maxURLBytes); prob != "" {
				v.add(fmt.Sprintf("%s.scheduler_urls[%d]", path, j), "%s", prob)
			}
		}
		seen := map[string]bool{}
		for j, pr := range p.Resources {
			rp := fmt.Sprintf("%s.resources[%d]", path, j)
			if _, ok := resources[pr.Type]; !ok {
				v.add(rp+".type", "unknown resource type %q (the host has %s)", pr.Type, typeList(doc.Host.Resources))
			} else if seen[pr.Type] {
				v.add(rp+".type", "duplicate resource type %q", pr.Type)
			}
			seen[pr.Type] = true
			if pr.Type == ResourceCPU && pr.SchedDebt != 0 {
				v.add(rp+".sched_debt", "not used for the CPU (its scheduling debt is %s.debt)", path)
			}
		}
	}
}

// apps checks the apps: a name each, of a known project, no (project, app) twice. It
// puts the (project, app) pairs in apps.
func (v *validator) apps(list []App, projects map[string]int, apps map[[2]string]bool) {
	for i, a := range list {
		path := fmt.Sprintf("apps[%d]", i)
		if a.Name == "" {
			v.add(path+".name", "must not be empty")
		}
		if _, ok := projects[a.Project]; !ok {
			v.add(path+".project", "unknown project %q", a.Project)
		}
		key := [2]string{a.Project, a.Name}
		if apps[key] {
			v.add(path+".name", "duplicate app %q in project %q", a.Name, a.Project)
		}
		apps[key] = true
	}
}

// appVersions checks the app versions: a name each, no name twice, a known project and
// app, no more CPUs than the host has, and either CPUs only (avg_ncpus > 0) or a
// coprocessor the host has, in no more instances than it has. It puts each name's index
// in versions.
func (v *validator) appVersions(doc *Document, resources map[string]Resource, projects map[string]int, apps map[[2]string]bool, versions map[string]int) {
	cpu, hasCPU := resources[ResourceCPU]
	for i, av := range doc.AppVersions {
		path := fmt.Sprintf("app_versions[%d]", i)
		if av.Name == "" {
			v.add(path+".name", "must not be empty")
		} else if _, dup := versions[av.Name]; dup {
			v.add(path+".name", "duplicate app version name %q", av.Name)
		}
		versions[av.Name] = i
		if _, ok := projects[av.Project]; !ok {
			v.add(path+".project", "unknown project %q", av.Project)
		}
		if av.App != "" && !apps[[2]string{av.Project, av.App}] {
			v.add(path+".app", "unknown app %q in project %q", av.App, av.Project)
		}
		if hasCPU && av.AvgNCPUs > float64(cpu.Instances) {
			v.add(path+".avg_ncpus", "uses %g CPUs but the host has %d", av.AvgNCPUs, cpu.Instances)
		}
		if av.Coproc == nil {
			if av.AvgNCPUs <= 0 {
				v.add(path+".avg_ncpus", "must be > 0 for a version that uses no coprocessor, got %g", av.AvgNCPUs)
			}
			continue
		}
		r, ok := resources[av.Coproc.Type]
		switch {
		case av.Coproc.Type == ResourceCPU:
			v.add(path+".coproc.type", "cpu is not a coprocessor; use avg_ncpus")
		case !ok:
			v.add(path+".coproc.type", "unknown resource type %q (the host has %s)", av.Coproc.Type, typeList(doc.Host.Resources))
		case av.Coproc.Count > float64(r.Instances):
			v.add(path+".coproc.count", "uses %g instances of %s but the host has %d", av.Coproc.Count, r.Type, r.Instances)
		}
	}
}

// tasks checks the tasks: a name each, no name twice, a known project and an app
// version of that project, and times at the last pass not past the task's times.
func (v *validator) tasks(doc *Document, projects, versions map[string]int) {
	tasks := make(map[string]struct{}, len(doc.Tasks))
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.Name == "" {
			v.add(fmt.Sprintf("tasks[%d].name", i), "must not be empty")
		} else if _, dup := tasks[t.Name]; dup {
			v.add(fmt.Sprintf("tasks[%d].name", i), "duplicate task name %q", t.Name)
		}
		tasks[t.Name] = struct{}{}
		if _, ok := projects[t.Project]; !ok {
			v.add(fmt.Sprintf("tasks[%d].project", i), "unknown project %q", t.Project)
		}
		if j, ok := versions[t.AppVersion]; !ok {
			v.add(fmt.Sprintf("tasks[%d].app_version", i), "unknown app version %q", t.AppVersion)
		} else if p := doc.AppVersions[j].Project; p != t.Project {
			v.add(fmt.Sprintf("tasks[%d].app_version", i), "app version %q belongs to project %q, not %q", t.AppVersion, p, t.Project)
		}
		if t.CPUTimeAtLastSched > t.CPUTime {
			v.add(fmt.Sprintf("tasks[%d].cpu_time_at_last_sched", i), "%g is more than cpu_time %g", t.CPUTimeAtLastSched, t.CPUTime)
		}
		if t.ElapsedTimeAtLastSched > t.ElapsedTime {
			v.add(fmt.Sprintf("tasks[%d].elapsed_time_at_last_sched", i), "%g is more than elapsed_time %g", t.ElapsedTimeAtLastSched, t.ElapsedTime)
		}
	}
}

func hasType(rs []Resource, t string) bool {
	for _, r := range rs {
		if r.Type == t {
			return true
		}
	}
	return false
}

func typeList(rs []Resource) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += r.Type
	}
	if s == "" {
		return "none"
	}
	return s
}
