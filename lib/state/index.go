package state

import "unsafe"

// Index gives the lookups every stage needs, built once per document: projects and app
// versions by name, and each project's per-resource state.
type Index struct {
	Project    map[string]int // project name -> index in Projects
	AppVersion map[string]int // app version name -> index in AppVersions
}

// NewIndex indexes a validated document.
func NewIndex(doc *Document) *Index {
	ix := &Index{
		Project:    make(map[string]int, len(doc.Projects)),
		AppVersion: make(map[string]int, len(doc.AppVersions)),
	}
	for i, p := range doc.Projects {
		ix.Project[p.Name] = i
	}
	for i, av := range doc.AppVersions {
		ix.AppVersion[av.Name] = i
	}
	return ix
}

// Resource returns the host's resource of type t.
func (h *Host) Resource(t string) (Resource, bool) {
	for _, r := range h.Resources {
		if r.Type == t {
			return r, true
		}
	}
	return Resource{}, false
}

// CPU returns the host's CPU resource.
func (h *Host) CPU() Resource {
	r, _ := h.Resource(ResourceCPU)
	return r
}

// ResourceState returns the project's state for resource type t, adding a zero entry
// when there is none yet.
func (p *Project) ResourceState(t string) *ProjectResource {
	for i := range p.Resources {
		if p.Resources[i].Type == t {
			return &p.Resources[i]
		}
	}
	p.Resources = append(p.Resources, ProjectResource{Type: t})
	return &p.Resources[len(p.Resources)-1]
}

// ResourceType is the processing resource a version's tasks are scheduled on: its
// coprocessor type if it uses one, else the CPU.
func (av *AppVersion) ResourceType() string {
	if av.Coproc != nil {
		return av.Coproc.Type
	}
	return ResourceCPU
}

// Instances is how many instances of its resource type a task of this version occupies.
func (av *AppVersion) Instances() float64 {
	if av.Coproc != nil {
		return av.Coproc.Count
	}
	return av.AvgNCPUs
}

// Speed is the FLOPS a task of this version achieves on host h: the version's flops,
// or when it has none, what the CPUs and coprocessor instances it uses give at peak.
func (av *AppVersion) Speed(h *Host) float64 {
	if av.Flops > 0 {
		return av.Flops
	}
	s := av.AvgNCPUs * h.CPU().Flops
	if av.Coproc != nil {
		if r, ok := h.Resource(av.Coproc.Type); ok {
			s += av.Coproc.Count * r.Flops
		}
	}
	return s
}

// CPUsFit reports whether a task that takes cpus CPUs may start beside the tasks chosen
// so far, which leave free of the host's CPUs uncommitted (below 0 when they overcommit
// them). The rule is BOINC's client's (client/cpu_sched.cpp, enforce_run_list): any task
// starts while fewer than all CPUs are committed, even one that then overcommits them;
// once all are, only a coprocessor task does, and only while the CPUs committed stay
// within one more than the host has. A GPU task that takes a fifth of a CPU would
// otherwise leave most of a CPU idle beside whole-CPU tasks for as long as it runs;
// the overcommitted CPU tasks share the CPUs and run slower (bsim's emulator, as BOINC's).
func CPUsFit(free, cpus float64, coproc bool) bool {
	const slack = 1e-9 // rounding of fractional CPUs summed
	return free > slack || coproc && cpus <= free+1+slack
}

// IndexName is the index of the first name in names equal to name (SameName), or -1.
func IndexName(names []string, name string) int {
	for i, n := range names {
		if SameName(n, name) {
			return i
		}
	}
	return -1
}

// SameName is a == b, comparing where the strings are stored before their bytes: the
// emulator's tasks hold the very strings of their projects and app versions, so a
// look-up by name is a pointer check, without the call a string comparison makes.
func SameName(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// Names finds names' indices as a map built from them in order would: of two alike,
// the later; 0 for a name that is not there (a valid document names only known ones).
// It keeps its storage from one Set to the next, for a caller that looks names up at
// every step (the emulator's policies): up to linearMax names it compares them one by
// one, and a task holding the very string of its project or app version (as the
// emulator's do) is then found by a pointer check, faster than hashing.
type Names struct {
	names []string
	m     map[string]int // when there are more than linearMax
	// distinct: no two names alike (up to linearMax). A name stored where one of them
	// is stored is then that one, and no later one is alike: Index returns it at once.
	distinct bool
}

const linearMax = 8

// SetProjects makes n the index of the projects' names.
func (n *Names) SetProjects(ps []Project) {
	n.names = n.names[:0]
	for i := range ps {
		n.names = append(n.names, ps[i].Name)
	}
	n.fill()
}

// SetAppVersions makes n the index of the app versions' names.
func (n *Names) SetAppVersions(avs []AppVersion) {
	n.names = n.names[:0]
	for i := range avs {
		n.names = append(n.names, avs[i].Name)
	}
	n.fill()
}

func (n *Names) fill() {
	n.distinct = false // (more than linearMax: the map answers)
	if len(n.names) <= linearMax {
		n.distinct = true
		for i := range n.names {
			for _, b := range n.names[i+1:] {
				if n.names[i] == b {
					n.distinct = false
				}
			}
		}
		return
	}
	if n.m == nil {
		n.m = map[string]int{}
	}
	clear(n.m)
	for i, name := range n.names {
		n.m[name] = i
	}
}

// Index is name's index (see Names).
func (n *Names) Index(name string) int {
	if len(n.names) > linearMax {
		return n.m[name]
	}
	if n.distinct {
		// The pointers first: a task holds the very string of its project or app
		// version, and two names of the same length would otherwise be compared by
		// their bytes on the way to it.
		for i, s := range n.names {
			if len(s) == len(name) && unsafe.StringData(s) == unsafe.StringData(name) {
				return i
			}
		}
	}
	for i := len(n.names) - 1; i >= 0; i-- { // the last, as a map built in order keeps
		if SameName(n.names[i], name) {
			return i
		}
	}
	return 0
}
