package boincxml

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
)

// ImportClientState reads a real BOINC client's client_state.xml into a state document,
// so that bsched, bfetch and bdevices can run on a user's own client. file names the
// input in error messages. The document gets the default preferences; apply a
// global_prefs.xml with ReadGlobalPrefs.
//
// What is read (everything else is skipped, as BOINC's own parser does):
//
//   - <host_info>: p_ncpus and p_fpops (the CPU resource); <coprocs> children
//     <coproc_cuda>, <coproc_ati>, <coproc_intel_gpu> or <coproc><type>, each with count
//     and peak_flops (taken as the FLOPS of one device).
//   - <time_stats>: on_frac, active_frac, gpu_active_frac, connected_frac; a value
//     outside [0, 1] (BOINC writes −1 for "not known yet"), and an on, active or GPU
//     active fraction of 0 (BOINC's client ignores it), counts as 1.
//   - <project>: master_url, project_name (the document's name; when absent, the URL
//     without its scheme and trailing slash, as a person would name it),
//     resource_share (default 100), every scheduler_url, nrpc_failures, min_rpc_time,
//     master_url_fetch_pending, exp_avg_cpu, exp_avg_mod_time and
//     duration_correction_factor (0 to 100; BOINC keeps it within 0.01 to 100, and 0
//     reads as none learned), rec and rec_time (policy boinc's recent estimated
//     credit) when present; debts of
//     any client version: short_term_debt / cpu_short_term_debt (seed 001's debt),
//     long_term_debt / cpu_long_term_debt / cuda_debt / ati_debt (seed 002 long-term
//     debts), *_backoff_interval, *_backoff_time and
//     <rsc_backoff_time|interval><name><value>. Per-resource entries for a type the host
//     lacks are dropped. cuda_ and ati_short_term_debt are read and dropped (bsched
//     schedules a coprocessor by its long-term debt).
//   - <app> (name), <app_version> (app_name, version_num, plan_class, avg_ncpus
//     (default 1), flops, <coproc><type><count>), <workunit> (name, app_name,
//     rsc_fpops_est) and <result> belong to the most recent <project>, as in BOINC.
//   - <result>: wu_name, report_deadline, received_time, completed_time, final_cpu_time,
//     final_elapsed_time, state, ready_to_report, got_server_ack, version_num and
//     plan_class (which app version ran it; the app's highest version when none
//     matches). got_server_ack → reported; ready_to_report or a state of 3 (compute
//     error) or more → done, its work counted as finished; otherwise ready.
//   - <active_task_set>: each <active_task>'s result becomes running (scheduler_state 2,
//     or active_task_state 1 when scheduler_state is absent) or preempted, with its CPU
//     time (current_cpu_time, else checkpoint_cpu_time), elapsed time
//     (checkpoint_elapsed_time), its progress (fraction_done) and work done
//     (fraction_done × rsc_fpops_est).
//
// App versions are named "PROJECT/APP/VERSION[/PLAN_CLASS]" (with "#2", "#3" for the
// versions of other platforms). The result is a validated document; a problem is an
// error naming the file and the element.
func ImportClientState(r io.Reader, file string) (*state.Document, error) {
	cr := newReader(file, nil)
	if err := cr.readAll(r); err != nil {
		return nil, err
	}
	// A client has an app version for a resource only because the project sent it a
	// job for it: seed 002's D(P,R), which no client_state.xml records.
	prsc.SetDFromAppVersions(cr.doc, false)
	return cr.doc, nil
}

// csReader turns the client_state.xml tree into a document; with sc non-nil it reads
// a BOINC emulator scenario (scenario.go) and applies its stricter rules.
type csReader struct {
	file     string
	sc       *scenario.Scenario
	doc      *state.Document
	hostSeen bool
	cur      *projBuild
	projects []*projBuild
	urls     map[string]bool
	names    map[string]bool
	avNames  map[string]bool
	tasks    map[string]int // result name → index in doc.Tasks
	active   []*elem
	// A scenario's reader keeps what BOINC's emulator leaves out (scenario.go, cull).
	notes  []string
	nonCPU map[string]bool // "project" or "project\x00app" marked non_cpu_intensive
	prefs  *GlobalPrefs    // a scenario's global_prefs.xml, applied before the check
	ncpus  int             // a scenario's cc_config.xml <ncpus> (0: not set), before prefs
}

// projBuild is what the reader keeps about a project while its elements arrive.
type projBuild struct {
	idx      int
	label    string // `project "X"` for messages
	nAV      int
	apps     map[string]bool
	versions []avRef
	wus      map[string]wuInfo
	res      map[string]*state.ProjectResource
	leftOut  map[string]bool // apps of which a scenario's reader left a version out
}

type avRef struct {
	app, plan, name, label string
	vnum, idx              int // version number; index in doc.AppVersions
}

type wuInfo struct {
	app string
	est float64
}

func newReader(file string, sc *scenario.Scenario) *csReader {
	return &csReader{
		file: file, sc: sc,
		doc: &state.Document{
			Version: state.Version,
			Host:    state.Host{TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1}},
			Preferences: state.Preferences{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5,
				ConnectionPeriodDays: 0.1, CPUSchedulingPeriod: 3600},
			Projects: []state.Project{}, AppVersions: []state.AppVersion{}, Tasks: []state.Task{},
		},
		urls: map[string]bool{}, names: map[string]bool{}, avNames: map[string]bool{}, tasks: map[string]int{},
		nonCPU: map[string]bool{},
	}
}

func (r *csReader) readAll(in io.Reader) error {
	root, err := readTree(limits.Wrap(in, r.file, limits.DocumentBytes))
	if limits.IsTooLarge(err) {
		return err // names the file already
	}
	if err != nil {
		return fmt.Errorf("%s: %w", r.file, err)
	}
	if root.name != "client_state" {
		return fmt.Errorf("%s: the root element is <%s>, not <client_state>", r.file, root.name)
	}
	if r.sc != nil {
		r.sc.ParseOrder, r.sc.NoTimeStats = []string{}, true
	}
	for _, e := range root.kids {
		switch e.name {
		case "host_info":
			err = r.hostInfo(e)
		case "time_stats":
			err = r.timeStats(e)
			if err == nil && r.sc != nil {
				r.sc.ParseOrder, r.sc.NoTimeStats = append(r.sc.ParseOrder, ""), false
			}
		case "project":
			err = r.project(e)
		case "app", "app_version", "workunit", "result":
			if r.cur == nil {
				err = fmt.Errorf("<%s> (line %d) comes before any <project>", e.name, e.line)
				break
			}
			switch e.name {
			case "app":
				err = r.app(e)
			case "app_version":
				err = r.appVersion(e)
			case "workunit":
				err = r.workunit(e)
			default:
				err = r.result(e)
			}
		case "active_task_set":
			r.active = append(r.active, e.kids...)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", r.file, err)
		}
	}
	if err := r.finish(); err != nil {
		var se *state.Error
		if errors.As(err, &se) {
			return se // already names the file on every line
		}
		return fmt.Errorf("%s: %w", r.file, err)
	}
	return nil
}

func (r *csReader) hostInfo(e *elem) error {
	if r.hostSeen {
		return errors.New("host_info: more than one <host_info>")
	}
	r.hostSeen = true
	n, f := e.child("p_ncpus"), e.child("p_fpops")
	if n == nil {
		return errors.New("host_info: missing <p_ncpus>")
	}
	if f == nil {
		return errors.New("host_info: missing <p_fpops>")
	}
	ncpus, err := n.integer(1 << 20)
	if err == nil && ncpus < 1 {
		err = fmt.Errorf("<p_ncpus>: must be at least 1, got %d", ncpus)
	}
	if err != nil {
		return fmt.Errorf("host_info: %w", err)
	}
	fpops, err := f.number()
	if err == nil && fpops <= 0 {
		err = fmt.Errorf("<p_fpops>: must be > 0, got %g", fpops)
	}
	if err != nil {
		return fmt.Errorf("host_info: %w", err)
	}
	r.doc.Host.Resources = []state.Resource{{Type: state.ResourceCPU, Instances: ncpus, Flops: fpops}}
	cps := e.child("coprocs")
	if cps == nil {
		return nil
	}
	for i, c := range cps.kids {
		typ, known := hostCoprocElem[c.name]
		if !known && c.name != "coproc" {
			continue
		}
		label := fmt.Sprintf("host_info: coprocs: <%s> %d", c.name, i+1)
		if !known {
			typ = CanonicalType(c.childText("type"))
		}
		switch {
		case typ == "":
			return fmt.Errorf("%s: missing <type>", label)
		case typ == state.ResourceCPU:
			return fmt.Errorf("%s: cpu is not a coprocessor", label)
		}
		if _, dup := r.doc.Host.Resource(typ); dup {
			return fmt.Errorf("%s: a second %s coprocessor entry", label, typ)
		}
		cnt := c.child("count")
		if cnt == nil {
			return fmt.Errorf("%s: missing <count>", label)
		}
		count, err := cnt.integer(1 << 16)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		var peak float64
		if p := c.child("peak_flops"); p != nil {
			if peak, err = p.nonNeg(); err != nil {
				return fmt.Errorf("%s: %w", label, err)
			}
		} else if r.sc != nil {
			return fmt.Errorf("%s: missing <peak_flops>", label)
		}
		if count == 0 {
			continue
		}
		flops := peak
		if r.sc != nil {
			flops = GPUEfficiency * peak * float64(count) // the emulator's quirk, see GPUEfficiency
		}
		r.doc.Host.Resources = append(r.doc.Host.Resources, state.Resource{Type: typ, Instances: count, Flops: flops})
	}
	return nil
}

// hostCoprocElem maps host_info's per-type coprocessor elements to bkit's type names.
var hostCoprocElem = map[string]string{"coproc_cuda": "NVIDIA", "coproc_ati": "ATI", "coproc_intel_gpu": "intel_gpu"}

// Real clients write time_stats elements bkit does not use; these are skipped in
// scenarios too, where any other unknown element is taken for a misspelt field and is
// an error.
var ignoredTimeStats = map[string]bool{"cpu_and_network_available_frac": true, "last_update": true,
	"client_start_time": true, "previous_uptime": true, "session_active_duration": true,
	"session_gpu_active_duration": true, "total_start_time": true, "total_duration": true,
	"total_active_duration": true, "total_gpu_active_duration": true, "now": true}

func (r *csReader) timeStats(e *elem) error {
	ts := &r.doc.Host.TimeStats
	fracs := map[string]*float64{"on_frac": &ts.OnFrac, "active_frac": &ts.ActiveFrac,
		"gpu_active_frac": &ts.GPUActiveFrac, "connected_frac": &ts.ConnectedFrac}
	var lambdas map[string]**float64
	if r.sc != nil {
		if r.sc.Lambdas == nil {
			r.sc.Lambdas = &scenario.Lambdas{}
		}
		l := r.sc.Lambdas
		lambdas = map[string]**float64{"on_lambda": &l.On, "active_lambda": &l.Active,
			"gpu_active_lambda": &l.GPUActive, "connected_lambda": &l.Connected}
	}
	for _, k := range e.kids {
		if p, ok := fracs[k.name]; ok {
			x, err := k.number()
			if err != nil {
				return fmt.Errorf("time_stats: %w", err)
			}
			// A real client writes -1 for "not measured yet". BOINC's emulator ignores
			// an on, active or GPU active fraction of 0 or less or above 1, and its
			// process for a connected_frac of -1 is connected all but a step of each
			// period: 1 either way.
			bad := x < 0 || x > 1 || (x == 0 && k.name != "connected_frac")
			if bad && r.sc != nil {
				r.notes = append(r.notes, fmt.Sprintf("time_stats: <%s> %s read as 1", k.name, k.text))
			}
			if bad {
				x = 1
			}
			*p = x
		} else if p, ok := lambdas[k.name]; ok {
			x, err := k.number()
			if err == nil && x <= 0 {
				err = fmt.Errorf("<%s>: must be > 0 seconds, got %g", k.name, x)
			}
			if err != nil {
				return fmt.Errorf("time_stats: %w", err)
			}
			*p = &x
		} else if r.sc != nil && !ignoredTimeStats[k.name] {
			return fmt.Errorf("time_stats: unknown element <%s>", k.name)
		}
	}
	return nil
}

// rsrcPrefix maps the resource prefixes of old clients' per-resource project fields
// (cpu_backoff_time, cuda_debt, …) to bkit's type names.
var rsrcPrefix = map[string]string{"cpu": state.ResourceCPU, "cuda": "NVIDIA", "nvidia": "NVIDIA", "ati": "ATI", "intel_gpu": "intel_gpu"}

func (r *csReader) project(e *elem) error {
	label := fmt.Sprintf("project %d", len(r.projects)+1)
	url := e.childText("master_url")
	if url == "" {
		return fmt.Errorf("%s: missing <master_url>", label)
	}
	name := e.childText("project_name")
	if name == "" {
		name = nameFromURL(url)
		if r.names[name] {
			name = url
		}
	}
	label = fmt.Sprintf("project %q", name)
	if r.urls[url] {
		return fmt.Errorf("%s: a second project with <master_url> %q", label, url)
	}
	if r.names[name] {
		return fmt.Errorf("%s: a second project named %q", label, name)
	}
	r.urls[url], r.names[name] = true, true
	pb := &projBuild{idx: len(r.doc.Projects), label: label, apps: map[string]bool{},
		wus: map[string]wuInfo{}, res: map[string]*state.ProjectResource{}, leftOut: map[string]bool{}}
	p := state.Project{Name: name, MasterURL: url, ResourceShare: 100}
	var avail *scenario.Availability // the emulation's server process, when the XML gives one
	resource := func(t string) *state.ProjectResource {
		if pb.res[t] == nil {
			pb.res[t] = &state.ProjectResource{Type: t}
		}
		return pb.res[t]
	}
	for _, k := range e.kids {
		var err error
		switch k.name {
		case "resource_share":
			p.ResourceShare, err = k.nonNeg()
		case "scheduler_url":
			if k.text != "" {
				p.SchedulerURLs = append(p.SchedulerURLs, k.text)
			}
		case "nrpc_failures":
			p.NRPCFailures, err = k.integer(1 << 30)
		case "min_rpc_time":
			p.MinRPCTime, err = k.nonNeg()
		case "master_url_fetch_pending":
			p.MasterFetchPending = k.flag()
		case "exp_avg_cpu":
			p.ExpAvgCPU, err = k.nonNeg()
		case "exp_avg_mod_time":
			p.ExpAvgTime, err = k.nonNeg()
		case "duration_correction_factor":
			p.DurationCorrectionFactor, err = k.dcf()
		case "rec":
			p.REC, err = k.nonNeg()
		case "rec_time":
			p.RECTime, err = k.nonNeg()
		case "short_term_debt":
			p.Debt, err = k.number()
		case "long_term_debt":
			resource(state.ResourceCPU).LongTermDebt, err = k.number()
		case "rsc_backoff_time", "rsc_backoff_interval":
			t := CanonicalType(k.childText("name"))
			v := k.child("value")
			if t == "" || v == nil {
				break
			}
			var x float64
			if x, err = v.nonNeg(); err == nil {
				if k.name == "rsc_backoff_time" {
					resource(t).BackoffUntil = x
				} else {
					resource(t).BackoffInterval = x
				}
			}
		case "non_cpu_intensive":
			if r.sc != nil && k.flag() {
				r.nonCPU[name] = true
			}
		case "available":
			if r.sc != nil {
				var a scenario.Availability
				a, err = readAvailability(k)
				avail = &a
			}
		default:
			err = perResourceField(k, &p, resource)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
	}
	r.doc.Projects = append(r.doc.Projects, p)
	r.projects = append(r.projects, pb)
	r.cur = pb
	if avail != nil {
		r.sc.Servers = append(r.sc.Servers, scenario.Server{Project: name, Available: *avail})
		r.sc.ParseOrder = append(r.sc.ParseOrder, name)
	}
	return nil
}

// perResourceField reads the per-resource debt and backoff fields of 6.x clients:
// PREFIX_short_term_debt, PREFIX_long_term_debt, PREFIX_debt, PREFIX_backoff_interval,
// PREFIX_backoff_time. Other elements are skipped.
func perResourceField(k *elem, p *state.Project, resource func(string) *state.ProjectResource) error {
	for _, suffix := range []string{"_short_term_debt", "_long_term_debt", "_backoff_interval", "_backoff_time", "_debt"} {
		t, ok := rsrcPrefix[strings.TrimSuffix(k.name, suffix)]
		if !strings.HasSuffix(k.name, suffix) || !ok {
			continue
		}
		var x float64
		var err error
		if strings.HasPrefix(suffix, "_backoff") {
			x, err = k.nonNeg()
		} else {
			x, err = k.number()
		}
		if err != nil {
			return err
		}
		switch suffix {
		case "_short_term_debt":
			// A coprocessor's short-term debt has no place in the document: bsched
			// schedules a coprocessor by its long-term debt (DESIGN section 5).
			if t == state.ResourceCPU {
				p.Debt = x
			}
		case "_long_term_debt", "_debt":
			resource(t).LongTermDebt = x
		case "_backoff_interval":
			resource(t).BackoffInterval = x
		case "_backoff_time":
			resource(t).BackoffUntil = x
		}
		return nil
	}
	return nil
}

// nameFromURL names a project whose client_state.xml gives no <project_name> (a client
// that has not yet read its master file) as a person would: its master URL without the
// scheme and trailing slashes ("https://einstein.phys.uwm.edu/" → "einstein.phys.uwm.edu").
func nameFromURL(url string) string {
	name := url
	if i := strings.Index(name, "://"); i >= 0 {
		name = name[i+3:]
	}
	name = strings.TrimRight(name, "/")
	if name == "" {
		return url
	}
	return name
}
