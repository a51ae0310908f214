package boincxml

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
)

// GPUEfficiency is how BOINC's client values a GPU: one instance counts as
// GPUEfficiency × peak_flops × count FLOPS (an assumed efficiency of 20 %). Scenarios
// are read the same way, so that bsim's figures compare with BOINC's emulator.
const GPUEfficiency = 0.2

// GlobalPrefs are the global_prefs.xml values bkit uses.
type GlobalPrefs struct {
	WorkBufMinDays             float64 `json:"work_buf_min_days" yaml:"work_buf_min_days"`
	WorkBufAdditionalDays      float64 `json:"work_buf_additional_days" yaml:"work_buf_additional_days"`
	CPUSchedulingPeriodMinutes float64 `json:"cpu_scheduling_period_minutes" yaml:"cpu_scheduling_period_minutes"`
	MaxNCPUsPct                float64 `json:"max_ncpus_pct" yaml:"max_ncpus_pct"`
	CPUUsageLimit              float64 `json:"cpu_usage_limit" yaml:"cpu_usage_limit"`
}

// DefaultGlobalPrefs are BOINC's defaults for the preferences bkit reads.
var DefaultGlobalPrefs = GlobalPrefs{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5,
	CPUSchedulingPeriodMinutes: 60, MaxNCPUsPct: 100, CPUUsageLimit: 100}

// LoadScenario reads the scenario directory dir (ReadScenario), each file at most
// limits.DocumentBytes.
func LoadScenario(dir string) (*scenario.Scenario, error) {
	return LoadScenarioLimit(dir, limits.DocumentBytes)
}

// LoadScenarioLimit is LoadScenario refusing a file of more than limit bytes.
func LoadScenarioLimit(dir string, limit int64) (*scenario.Scenario, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a directory (a BOINC scenario is a directory holding client_state.xml)", dir)
	}
	return readScenario(os.DirFS(dir), dir, limit)
}

// ReadScenario reads a BOINC client emulator scenario from the root of fsys, exactly
// as ../shared/boinc-emulator.md describes, into lib/scenario's model (what the XML
// leaves out stays nil there: the model's defaults are the emulator's); dir names the
// directory in messages.
//
//   - client_state.xml (required), read as ImportClientState reads a client's state,
//     with the emulator's additions and stricter rules: an <app> carries latency_bound
//     and fpops_est (> 0; when absent or 0, from its first explicit result and workunit,
//     else BOINC's emulator's defaults: fillAppParams), <fpops><mean><std_dev> (default:
//     fpops_est, 0), weight (default 1; 0 is the default, as in BOINC's emulator),
//     max_concurrent and checkpoint_period (ignored); an <app_version> needs avg_ncpus and
//     flops (> 0) and an <app> of its project declared before it; a GPU app version
//     needs <host_info> before it; a <project> may hold
//     <available><frac><lambda>; <time_stats> may hold on_, active_, gpu_active_ and
//     connected_lambda (default scenario.DefaultLambda), and its fractions are read as
//     a real client's are, each one changed with a note; an explicit <workunit> needs
//     rsc_fpops_est and a <result> report_deadline (each result keeps its latency,
//     report_deadline − received_time, from the run's start: rebaseJobs). What BOINC's emulator leaves out,
//     the reader leaves out too, with a line in sc.Notes (cull): an app version for a
//     GPU the host lacks, an app with no usable version or marked non_cpu_intensive,
//     a project with no app left or marked non_cpu_intensive. A GPU's FLOPS per instance are
//     GPUEfficiency × peak_flops × count (BOINC's quirk), and host_info's coprocessors
//     need peak_flops. Unknown elements inside <app>, <fpops>, <available> and an app
//     version's <coproc>, and in <time_stats> (but for a real client's other fields), are
//     errors (misspelt fields the emulation depends on); unknown elements elsewhere
//     are skipped.
//   - global_prefs.xml (optional): ReadGlobalPrefs; max_ncpus_pct reduces the CPUs. An
//     app version that uses more CPUs than the host has then runs on them all at their
//     share of its speed (fitCPUs), as in BOINC's emulator.
//   - cc_config.xml (optional): must be well-formed XML; <options><ncpus> (N > 0)
//     makes the host's CPUs N before max_ncpus_pct, as in BOINC's client; the rest (log
//     flags) is ignored.
//
// Projects have no scheduler URLs (the emulated server answers at the master URL). A
// file of more than limits.DocumentBytes is refused (*limits.TooLargeError).
func ReadScenario(fsys fs.FS, dir string) (*scenario.Scenario, error) {
	return readScenario(fsys, dir, limits.DocumentBytes)
}

func readScenario(fsys fs.FS, dir string, limit int64) (*scenario.Scenario, error) {
	name := func(f string) string {
		if dir == "" {
			return f
		}
		return filepath.Join(dir, f)
	}
	sc := &scenario.Scenario{Dir: dir, Version: scenario.Version}
	f, err := fsys.Open("client_state.xml")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name("client_state.xml"), unwrapPath(err))
	}
	f.Close()
	// The preferences first: the reader applies them (the host's CPUs) before it
	// fits the app versions to the CPUs and checks the document.
	prefs := DefaultGlobalPrefs
	if f, err := fsys.Open("global_prefs.xml"); err == nil {
		prefs, err = ReadGlobalPrefs(limits.NewReader(f, name("global_prefs.xml"), limit), name("global_prefs.xml"))
		f.Close()
		if err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", name("global_prefs.xml"), unwrapPath(err))
	}
	ncpus := 0 // cc_config.xml's <options><ncpus>; 0: not set
	if f, err := fsys.Open("cc_config.xml"); err == nil {
		root, err := readTree(limits.NewReader(f, name("cc_config.xml"), limit))
		f.Close()
		if limits.IsTooLarge(err) {
			return nil, err
		}
		if err == nil && root.name != "cc_config" {
			err = fmt.Errorf("the root element is <%s>, not <cc_config>", root.name)
		}
		if err == nil {
			ncpus, err = ccNCPUs(root)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name("cc_config.xml"), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", name("cc_config.xml"), unwrapPath(err))
	}
	if f, err = fsys.Open("client_state.xml"); err != nil {
		return nil, fmt.Errorf("%s: %w", name("client_state.xml"), unwrapPath(err))
	}
	cr := newReader(name("client_state.xml"), sc)
	cr.prefs, cr.ncpus = &prefs, ncpus
	err = cr.readAll(limits.NewReader(f, name("client_state.xml"), limit))
	f.Close()
	if err != nil {
		return nil, err
	}
	sc.Doc = cr.doc
	sc.Notes = cr.notes
	cull(sc, cr.nonCPU)
	// The order is written only where it is not the one a scenario without it implies.
	if order := sc.ParseOrder; order != nil {
		sc.ParseOrder = nil
		if !slices.Equal(order, sc.BOINCParseOrder()) {
			sc.ParseOrder = order
		}
	}
	fillAppParams(sc)
	rebaseJobs(sc.Doc)
	if err := state.Validate(sc.Doc); err != nil {
		var se *state.Error
		if errors.As(err, &se) {
			se.File = name("client_state.xml") + " with " + name("global_prefs.xml")
		}
		return nil, err
	}
	return sc, nil
}

// ccNCPUs is cc_config.xml's <options><ncpus>, with which BOINC's client acts as if
// the host had that many CPUs; 0 when not set (BOINC's -1, or 0).
func ccNCPUs(root *elem) (int, error) {
	opts := root.child("options")
	if opts == nil {
		return 0, nil
	}
	k := opts.child("ncpus")
	if k == nil {
		return 0, nil
	}
	x, err := k.number()
	if err == nil && x != math.Trunc(x) {
		err = fmt.Errorf("<ncpus>: must be a whole number, got %s", k.text)
	}
	if err != nil {
		return 0, fmt.Errorf("<options>: %w", err)
	}
	if x <= 0 {
		return 0, nil
	}
	return int(min(x, 1<<20)), nil
}

// unwrapPath drops the *fs.PathError wrapper, whose path the caller already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ReadGlobalPrefs reads global_prefs.xml: work_buf_min_days, work_buf_additional_days,
// cpu_scheduling_period_minutes, max_ncpus_pct and cpu_usage_limit, directly inside
// <global_preferences> (venue sections and other elements are skipped). Absent values
// keep DefaultGlobalPrefs; as in BOINC, 0 for the period, max_ncpus_pct or
// cpu_usage_limit means the default.
func ReadGlobalPrefs(r io.Reader, file string) (GlobalPrefs, error) {
	g := DefaultGlobalPrefs
	root, err := readTree(limits.Wrap(r, file, limits.DocumentBytes))
	if limits.IsTooLarge(err) {
		return g, err
	}
	if err != nil {
		return g, fmt.Errorf("%s: %w", file, err)
	}
	if root.name != "global_preferences" {
		return g, fmt.Errorf("%s: the root element is <%s>, not <global_preferences>", file, root.name)
	}
	fields := map[string]*float64{
		"work_buf_min_days":             &g.WorkBufMinDays,
		"work_buf_additional_days":      &g.WorkBufAdditionalDays,
		"cpu_scheduling_period_minutes": &g.CPUSchedulingPeriodMinutes,
		"max_ncpus_pct":                 &g.MaxNCPUsPct,
		"cpu_usage_limit":               &g.CPUUsageLimit,
	}
	for _, k := range root.kids {
		p, ok := fields[k.name]
		if !ok {
			continue
		}
		x, err := k.nonNeg()
		if err == nil && (k.name == "max_ncpus_pct" || k.name == "cpu_usage_limit") && x > 100 {
			err = fmt.Errorf("<%s>: must be at most 100, got %g", k.name, x)
		}
		if err != nil {
			return g, fmt.Errorf("%s: %w", file, err)
		}
		if x == 0 && p != &g.WorkBufMinDays && p != &g.WorkBufAdditionalDays {
			x = *p // 0: the default
		}
		*p = x
	}
	return g, nil
}

// MinWorkBufSeconds is the least minimum work buffer BOINC's client works with
// (work_buf_min(): WF_EST_FETCH_TIME), whatever work_buf_min_days says: it starts
// fetching work a little before a processor goes idle.
const MinWorkBufSeconds = 180

// Apply writes the preferences into doc (once: max_ncpus_pct scales the CPU instances
// doc has): work buffer low and high water, the CPU scheduling period in seconds, the
// connection period T = work_buf_min_days ("connect about every X days", as BOINC
// named it when seed 001 was written) and CPUs = max(1, floor(CPUs × max_ncpus_pct /
// 100)). As in BOINC's client, the minimum buffer (so T) is at least
// MinWorkBufSeconds: with T = 0 seed 001 would never find work needed. cpu_usage_limit
// stays with the emulator.
func (g GlobalPrefs) Apply(doc *state.Document) {
	low := max(g.WorkBufMinDays, MinWorkBufSeconds/86400.0)
	doc.Preferences.WorkBufMinDays = low
	doc.Preferences.WorkBufAdditionalDays = g.WorkBufAdditionalDays
	doc.Preferences.ConnectionPeriodDays = low
	doc.Preferences.CPUSchedulingPeriod = g.CPUSchedulingPeriodMinutes * 60
	for i := range doc.Host.Resources {
		if r := &doc.Host.Resources[i]; r.Type == state.ResourceCPU && g.MaxNCPUsPct < 100 {
			r.Instances = max(1, int(math.Floor(float64(r.Instances)*g.MaxNCPUsPct/100)))
		}
	}
}

// appElems are the children an emulator <app> may hold (the emulator's fields and
// those of a real client's <app>, which are ignored; so is the emulator's
// <checkpoint_period>, a distribution of checkpoint intervals bsim does not model).
var appElems = map[string]bool{"name": true, "latency_bound": true, "fpops_est": true, "fpops": true,
	"weight": true, "max_concurrent": true, "working_set": true, "user_friendly_name": true,
	"non_cpu_intensive": true, "fraction_done_exact": true, "sporadic": true, "checkpoint_period": true}

// readScenarioApp reads the emulator's fields of an <app>: what it leaves out stays
// nil (weight 1, estimates at fpops_est). As in BOINC's emulator (get_app_params), 0
// is "not given" for latency_bound, fpops_est, <fpops><mean> and weight.
func readScenarioApp(e *elem, a state.App) (scenario.App, error) {
	sa := scenario.App{Project: a.Project, Name: a.Name}
	for _, k := range e.kids {
		if !appElems[k.name] {
			return sa, fmt.Errorf("unknown element <%s>", k.name)
		}
	}
	positive := func(name string) (float64, error) {
		k := e.child(name)
		if k == nil {
			return 0, nil // filled in by fillAppParams, as BOINC's emulator does
		}
		x, err := k.number()
		if err == nil && x < 0 {
			err = fmt.Errorf("<%s>: must be > 0, got %g", name, x)
		}
		return x, err // 0 is filled in too
	}
	var err error
	if sa.LatencyBound, err = positive("latency_bound"); err != nil {
		return sa, err
	}
	if sa.FpopsEst, err = positive("fpops_est"); err != nil {
		return sa, err
	}
	if f := e.child("fpops"); f != nil {
		sa.Fpops = &scenario.NormalDist{}
		for _, k := range f.kids {
			var x float64
			switch k.name {
			case "mean":
				if x, err = k.nonNeg(); err == nil && x > 0 {
					sa.Fpops.Mean = &x
				}
			case "std_dev":
				sa.Fpops.StdDev, err = k.nonNeg()
			default:
				err = fmt.Errorf("unknown element <%s>", k.name)
			}
			if err != nil {
				return sa, fmt.Errorf("<fpops>: %w", err)
			}
		}
		if f.child("mean") == nil {
			return sa, errors.New("<fpops>: missing <mean>")
		}
	}
	if k := e.child("weight"); k != nil {
		w, err := k.nonNeg()
		if err != nil {
			return sa, err
		}
		if w > 0 {
			sa.Weight = &w
		}
	}
	return sa, nil
}

// cull leaves out what BOINC's emulator leaves out (client/sim.cpp, get_app_params and
// cull_projects): an app with no usable app version (none, or only versions for GPUs
// the host lacks, which the reader left out already) or marked non_cpu_intensive, then
// a project with no app left or marked non_cpu_intensive, with its apps, app versions,
// explicit jobs and server. Such a project never gets work, so BOINC's figures do not
// count it: its share would weigh in the share violation, its idle time in the
// monotony. nonCPU holds the project names and "project\x00app" keys marked
// non_cpu_intensive. Each omission is a line of sc.Notes.
func cull(sc *scenario.Scenario, nonCPU map[string]bool) {
	doc := sc.Doc
	key := func(project, app string) string { return project + "\x00" + app }
	versions := map[string]bool{}
	for _, av := range doc.AppVersions {
		versions[key(av.Project, av.App)] = true
	}
	keptApp := map[string]bool{}
	keptProject := map[string]bool{}
	apps := sc.Apps[:0]
	for _, a := range sc.Apps {
		k := key(a.Project, a.Name)
		switch {
		case !versions[k]:
			sc.Notes = append(sc.Notes, fmt.Sprintf("project %q: app %q left out: no usable app version", a.Project, a.Name))
		case nonCPU[k]:
			sc.Notes = append(sc.Notes, fmt.Sprintf("project %q: app %q left out: non CPU intensive", a.Project, a.Name))
		default:
			apps = append(apps, a)
			keptApp[k] = true
			keptProject[a.Project] = true
		}
	}
	sc.Apps = apps
	projects := doc.Projects[:0]
	for _, p := range doc.Projects {
		switch {
		case nonCPU[p.Name]:
			sc.Notes = append(sc.Notes, fmt.Sprintf("project %q: left out of the emulation: non CPU intensive", p.Name))
			keptProject[p.Name] = false
		case !keptProject[p.Name]:
			sc.Notes = append(sc.Notes, fmt.Sprintf("project %q: left out of the emulation: no app left", p.Name))
		default:
			projects = append(projects, p)
		}
	}
	doc.Projects = projects
	apps = sc.Apps[:0]
	for _, a := range sc.Apps {
		if keptProject[a.Project] {
			apps = append(apps, a)
		}
	}
	sc.Apps = apps
	docApps := doc.Apps[:0]
	for _, a := range doc.Apps {
		if keptApp[key(a.Project, a.Name)] && keptProject[a.Project] {
			docApps = append(docApps, a)
		}
	}
	doc.Apps = docApps
	keptVersion := map[string]bool{}
	avs := doc.AppVersions[:0]
	for _, av := range doc.AppVersions {
		if keptApp[key(av.Project, av.App)] && keptProject[av.Project] {
			avs = append(avs, av)
			keptVersion[av.Name] = true
		}
	}
	doc.AppVersions = avs
	tasks := doc.Tasks[:0]
	for _, t := range doc.Tasks {
		if keptVersion[t.AppVersion] {
			tasks = append(tasks, t)
		}
	}
	doc.Tasks = tasks
	servers := sc.Servers[:0]
	for _, s := range sc.Servers {
		if keptProject[s.Project] {
			servers = append(servers, s)
		}
	}
	sc.Servers = servers
}

// fitCPUs gives an app version that uses more CPUs than the host has (after
// max_ncpus_pct) the host's CPUs and, for a CPU version, that share of its speed: BOINC's
// emulator runs such a job with the CPUs overcommitted and scales the speed of CPU jobs
// by CPUs ÷ CPUs used (cpu_scale in ACTIVE_TASK_SET::poll), alone on the CPUs as its
// scheduler lets it be. (When max_ncpus_pct lowered the CPUs, BOINC's scheduler never
// runs it: bsim does, so that its project is not starved by a preference.)
func (r *csReader) fitCPUs() {
	cpu := r.doc.Host.CPU()
	n := float64(cpu.Instances)
	for i := range r.doc.AppVersions {
		av := &r.doc.AppVersions[i]
		if av.AvgNCPUs <= n {
			continue
		}
		if av.Coproc == nil {
			r.notes = append(r.notes, fmt.Sprintf("app version %q uses %g CPUs, the host has %d: it runs on %d at %g/%g of its speed",
				av.Name, av.AvgNCPUs, cpu.Instances, cpu.Instances, n, av.AvgNCPUs))
			av.Flops *= n / av.AvgNCPUs
		} else {
			r.notes = append(r.notes, fmt.Sprintf("app version %q uses %g CPUs, the host has %d: it runs on %d",
				av.Name, av.AvgNCPUs, cpu.Instances, cpu.Instances))
		}
		av.AvgNCPUs = n
	}
}

// Defaults of BOINC's emulator (client/sim.cpp, get_app_params) for an app whose job
// parameters neither its <app> nor an explicit job gives.
const (
	DefaultFpopsEst     = 3600e11
	DefaultLatencyBound = 864000
)

// fillAppParams gives each app without <latency_bound> or <fpops_est> what BOINC's
// emulator gives it (get_app_params): the latency of its first explicit result
// (report_deadline − received_time) and the rsc_fpops_est of its first explicit
// workunit, else DefaultLatencyBound and DefaultFpopsEst.
func fillAppParams(sc *scenario.Scenario) {
	doc := sc.Doc
	appOf := func(t *state.Task) (project, app string) {
		for _, av := range doc.AppVersions {
			if av.Name == t.AppVersion {
				return av.Project, av.App
			}
		}
		return "", ""
	}
	for i := range sc.Apps {
		a := &sc.Apps[i]
		for k := range doc.Tasks {
			t := &doc.Tasks[k]
			if p, app := appOf(t); p != a.Project || app != a.Name {
				continue
			}
			if a.LatencyBound == 0 && t.ReportDeadline > t.ReceivedTime {
				a.LatencyBound = t.ReportDeadline - t.ReceivedTime
			}
			if a.FpopsEst == 0 && t.EstimatedFlops > 0 {
				a.FpopsEst = t.EstimatedFlops
			}
		}
		if a.LatencyBound == 0 {
			a.LatencyBound = DefaultLatencyBound
		}
		if a.FpopsEst == 0 {
			a.FpopsEst = DefaultFpopsEst
		}
	}
}

// rebaseJobs gives each explicit result its own latency (report_deadline −
// received_time) from the latest received_time, where the run starts: BOINC's emulator
// sets every result's received_time to its start and its deadline that latency later
// (get_app_params), however long ago it was received.
func rebaseJobs(doc *state.Document) {
	var start float64
	for _, t := range doc.Tasks {
		start = max(start, t.ReceivedTime)
	}
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		t.ReportDeadline += start - t.ReceivedTime
		t.ReceivedTime = start
	}
}

// readAvailability reads a project's <available><frac><lambda>.
func readAvailability(e *elem) (scenario.Availability, error) {
	var av scenario.Availability
	for _, k := range e.kids {
		var x float64
		var err error
		switch k.name {
		case "frac":
			if x, err = k.fraction(); err == nil {
				av.Frac = &x
			}
		case "lambda":
			x, err = k.number()
			if err == nil && x <= 0 {
				err = fmt.Errorf("<lambda>: must be > 0 seconds, got %g", x)
			}
			av.Lambda = &x
		default:
			err = fmt.Errorf("unknown element <%s>", k.name)
		}
		if err != nil {
			return av, fmt.Errorf("<available>: %w", err)
		}
	}
	return av, nil
}
