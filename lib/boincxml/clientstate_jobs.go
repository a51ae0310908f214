package boincxml

import (
	"errors"
	"fmt"

	"github.com/bkit/bkit/lib/state"
)

// The elements that belong to the most recent <project>: apps, app versions,
// workunits, results, and at the end the active tasks.

func (r *csReader) app(e *elem) error {
	pb := r.cur
	name := e.childText("name")
	if name == "" {
		return fmt.Errorf("%s: app %d: missing <name>", pb.label, len(pb.apps)+1)
	}
	label := fmt.Sprintf("%s: app %q", pb.label, name)
	if pb.apps[name] {
		return fmt.Errorf("%s: a second <app> of that name", label)
	}
	pb.apps[name] = true
	a := state.App{Name: name, Project: r.doc.Projects[pb.idx].Name}
	if k := e.child("max_concurrent"); k != nil {
		var err error
		if a.MaxConcurrent, err = k.integer(1 << 20); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
	}
	if r.sc != nil {
		if k := e.child("non_cpu_intensive"); k != nil && k.flag() {
			r.nonCPU[a.Project+"\x00"+name] = true
		}
		sa, err := readScenarioApp(e, a)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		r.sc.Apps = append(r.sc.Apps, sa)
	}
	r.doc.Apps = append(r.doc.Apps, a)
	return nil
}

func (r *csReader) appVersion(e *elem) error {
	pb := r.cur
	pb.nAV++
	label := fmt.Sprintf("%s: app_version %d", pb.label, pb.nAV)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", label, fmt.Sprintf(format, args...))
	}
	app := e.childText("app_name")
	if app == "" {
		return fail("missing <app_name>")
	}
	if r.sc != nil && !pb.apps[app] {
		return fail("<app_name> %q is not an <app> of this project (an <app> must come before its versions)", app)
	}
	av := state.AppVersion{Project: r.doc.Projects[pb.idx].Name, PlanClass: e.childText("plan_class"), AvgNCPUs: 1}
	if pb.apps[app] {
		av.App = app
	}
	var err error
	if k := e.child("version_num"); k != nil {
		if av.VersionNum, err = k.integer(1 << 30); err != nil {
			return fail("%v", err)
		}
	}
	if k := e.child("avg_ncpus"); k != nil {
		if av.AvgNCPUs, err = k.nonNeg(); err != nil {
			return fail("%v", err)
		}
	} else if r.sc != nil {
		return fail("missing <avg_ncpus>")
	}
	if k := e.child("flops"); k != nil {
		if av.Flops, err = k.nonNeg(); err != nil {
			return fail("%v", err)
		}
		if r.sc != nil && av.Flops == 0 {
			return fail("<flops>: must be > 0")
		}
	} else if r.sc != nil {
		return fail("missing <flops>")
	}
	for _, k := range e.kids {
		if k.name != "coproc" {
			continue
		}
		if av.Coproc != nil {
			return fail("more than one <coproc>")
		}
		cu, err := r.coprocUsage(k)
		var missing missingCoprocError
		if errors.As(err, &missing) {
			// BOINC's client leaves such a version out (missing_coproc), and so does
			// its emulator.
			r.notes = append(r.notes, fmt.Sprintf("%s left out: <host_info> has no %s coprocessor", label, string(missing)))
			pb.leftOut[app] = true
			return nil
		}
		if err != nil {
			return fail("%v", err)
		}
		av.Coproc = cu
	}
	base := fmt.Sprintf("%s/%s/%d", av.Project, app, av.VersionNum)
	if av.PlanClass != "" {
		base += "/" + av.PlanClass
	}
	av.Name = base
	for n := 2; r.avNames[av.Name]; n++ {
		av.Name = fmt.Sprintf("%s#%d", base, n)
	}
	r.avNames[av.Name] = true
	pb.versions = append(pb.versions, avRef{app: app, plan: av.PlanClass, name: av.Name, label: label,
		vnum: av.VersionNum, idx: len(r.doc.AppVersions)})
	r.doc.AppVersions = append(r.doc.AppVersions, av)
	return nil
}

// missingCoprocError is a scenario's app version for a coprocessor type the host does
// not have.
type missingCoprocError string

func (e missingCoprocError) Error() string {
	return fmt.Sprintf("<host_info> has no %s coprocessor", string(e))
}

// coprocUsage reads an app version's <coproc><type><count>. In a scenario the host's
// GPUs must already be known (host_info comes first), a type the host lacks is a
// missingCoprocError and the element may hold nothing else; a real client's state is
// checked at the end instead.
func (r *csReader) coprocUsage(k *elem) (*state.CoprocUsage, error) {
	if r.sc != nil {
		for _, c := range k.kids {
			if c.name != "type" && c.name != "count" {
				return nil, fmt.Errorf("<coproc>: unknown element <%s>", c.name)
			}
		}
	}
	typ := CanonicalType(k.childText("type"))
	switch typ {
	case "":
		return nil, errors.New("<coproc>: missing <type>")
	case state.ResourceCPU:
		return nil, errors.New("<coproc>: cpu is not a coprocessor; use <avg_ncpus>")
	}
	c := k.child("count")
	if c == nil {
		return nil, errors.New("<coproc>: missing <count>")
	}
	n, err := c.number()
	if err == nil && n <= 0 {
		err = fmt.Errorf("<count>: must be > 0, got %g", n)
	}
	if err != nil {
		return nil, fmt.Errorf("<coproc>: %w", err)
	}
	if r.sc != nil {
		if !r.hostSeen {
			return nil, fmt.Errorf("<coproc> %s comes before <host_info> (put host_info, with the host's GPUs, first)", typ)
		}
		if _, ok := r.doc.Host.Resource(typ); !ok {
			return nil, missingCoprocError(typ)
		}
	}
	return &state.CoprocUsage{Type: typ, Count: n}, nil
}

func (r *csReader) workunit(e *elem) error {
	pb := r.cur
	name := e.childText("name")
	if name == "" {
		return fmt.Errorf("%s: workunit %d: missing <name>", pb.label, len(pb.wus)+1)
	}
	label := fmt.Sprintf("%s: workunit %q", pb.label, name)
	if _, dup := pb.wus[name]; dup {
		return fmt.Errorf("%s: a second <workunit> of that name", label)
	}
	wu := wuInfo{app: e.childText("app_name")}
	if wu.app == "" {
		return fmt.Errorf("%s: missing <app_name>", label)
	}
	if r.sc != nil && !pb.apps[wu.app] {
		return fmt.Errorf("%s: <app_name> %q is not an <app> of this project", label, wu.app)
	}
	if k := e.child("rsc_fpops_est"); k != nil {
		var err error
		if wu.est, err = k.nonNeg(); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
	} else if r.sc != nil {
		return fmt.Errorf("%s: missing <rsc_fpops_est>", label)
	}
	pb.wus[name] = wu
	return nil
}

// BOINC's client result states (RESULT_* in common_defs.h) from which on a result is
// no longer computed.
const resultComputeError = 3

func (r *csReader) result(e *elem) error {
	pb := r.cur
	name := e.childText("name")
	if name == "" {
		return fmt.Errorf("%s: result %d: missing <name>", pb.label, len(r.doc.Tasks)+1)
	}
	label := fmt.Sprintf("%s: result %q", pb.label, name)
	if _, dup := r.tasks[name]; dup {
		return fmt.Errorf("%s: a second <result> of that name", label)
	}
	wuName := e.childText("wu_name")
	wu, ok := pb.wus[wuName]
	switch {
	case wuName == "":
		return fmt.Errorf("%s: missing <wu_name>", label)
	case !ok:
		return fmt.Errorf("%s: <wu_name> %q is not a <workunit> of this project (workunits come before their results)", label, wuName)
	}
	t := state.Task{Name: name, Project: r.doc.Projects[pb.idx].Name, State: state.TaskReady, EstimatedFlops: wu.est}
	var st int
	ready, acked := false, false
	vnum := -1
	for _, k := range e.kids {
		var err error
		switch k.name {
		case "report_deadline":
			t.ReportDeadline, err = k.nonNeg()
		case "received_time":
			t.ReceivedTime, err = k.nonNeg()
		case "completed_time":
			t.CompletedTime, err = k.nonNeg()
		case "final_cpu_time":
			t.CPUTime, err = k.nonNeg()
		case "final_elapsed_time":
			t.ElapsedTime, err = k.nonNeg()
		case "state":
			st, err = k.integer(1000)
		case "ready_to_report":
			ready = k.flag()
		case "got_server_ack":
			acked = k.flag()
		case "version_num":
			vnum, err = k.integer(1 << 30)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
	}
	if r.sc != nil && e.child("report_deadline") == nil {
		return fmt.Errorf("%s: missing <report_deadline>", label)
	}
	av := pickVersion(pb.versions, wu.app, vnum, e.childText("plan_class"))
	if av == "" && pb.leftOut[wu.app] {
		// Its app goes, and its jobs with it (cull).
		r.notes = append(r.notes, fmt.Sprintf("%s left out: app %q has no usable app version", label, wu.app))
		return nil
	}
	if av == "" {
		return fmt.Errorf("%s: no <app_version> of app %q in this project", label, wu.app)
	}
	t.AppVersion = av
	switch {
	case acked:
		t.State = state.TaskReported
	case ready || st >= resultComputeError:
		t.State = state.TaskDone
	}
	if t.State == state.TaskReady {
		t.CPUTime, t.ElapsedTime = 0, 0 // final times of a result not yet finished mean nothing
	} else {
		t.FlopsDone = t.EstimatedFlops
	}
	t.CPUTimeAtLastSched, t.ElapsedTimeAtLastSched = t.CPUTime, t.ElapsedTime
	r.tasks[name] = len(r.doc.Tasks)
	r.doc.Tasks = append(r.doc.Tasks, t)
	return nil
}

// pickVersion chooses the app version a result runs: the one of its app with its
// version number and plan class; else the app's highest version number (the first
// of those in file order). vnum < 0 means the result names no version.
func pickVersion(vs []avRef, app string, vnum int, plan string) string {
	best := -1
	for i, v := range vs {
		if v.app != app {
			continue
		}
		if v.vnum == vnum && v.plan == plan {
			return v.name
		}
		if best < 0 || v.vnum > vs[best].vnum {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return vs[best].name
}

// activeTasks applies <active_task_set>: the results being computed.
func (r *csReader) activeTasks() error {
	for i, a := range r.active {
		if a.name != "active_task" {
			continue
		}
		label := fmt.Sprintf("active_task_set: active_task %d", i+1)
		name := a.childText("result_name")
		j, ok := r.tasks[name]
		if !ok {
			return fmt.Errorf("%s: <result_name> %q is not a <result>", label, name)
		}
		t := &r.doc.Tasks[j]
		if t.State != state.TaskReady {
			continue // finished: the active task is about to go away
		}
		get := func(names ...string) (float64, error) {
			for _, n := range names {
				if k := a.child(n); k != nil {
					return k.nonNeg()
				}
			}
			return 0, nil
		}
		cpu, err1 := get("current_cpu_time", "checkpoint_cpu_time")
		elapsed, err2 := get("checkpoint_elapsed_time", "elapsed_time")
		frac, err3 := 0.0, error(nil)
		if k := a.child("fraction_done"); k != nil {
			frac, err3 = k.fraction()
		}
		if err := errors.Join(err1, err2, err3); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		t.State = state.TaskPreempted
		if k := a.child("scheduler_state"); k != nil {
			if k.text == "2" {
				t.State = state.TaskRunning
			}
		} else if a.childText("active_task_state") == "1" {
			t.State = state.TaskRunning
		}
		t.CPUTime, t.CPUTimeAtLastSched = cpu, cpu
		t.ElapsedTime, t.ElapsedTimeAtLastSched = elapsed, elapsed
		t.FlopsDone = frac * t.EstimatedFlops
		t.FractionDone = frac
	}
	return nil
}

// finish checks what needs the whole file and validates the document.
func (r *csReader) finish() error {
	if !r.hostSeen {
		return errors.New("missing <host_info>")
	}
	if err := r.activeTasks(); err != nil {
		return err
	}
	for _, pb := range r.projects {
		for _, v := range pb.versions {
			av := &r.doc.AppVersions[v.idx]
			if av.Coproc == nil {
				continue
			}
			if _, ok := r.doc.Host.Resource(av.Coproc.Type); !ok {
				return fmt.Errorf("%s: uses a %s coprocessor, which <host_info> does not list", v.label, av.Coproc.Type)
			}
		}
		p := &r.doc.Projects[pb.idx]
		for _, res := range r.doc.Host.Resources {
			if pr := pb.res[res.Type]; pr != nil {
				p.Resources = append(p.Resources, *pr)
			}
		}
	}
	if r.ncpus > 0 {
		r.doc.Host.Resources[0].Instances = r.ncpus // hostInfo puts the CPU first
	}
	if r.prefs != nil {
		r.prefs.Apply(r.doc)
		r.fitCPUs()
	}
	if err := state.Validate(r.doc); err != nil {
		var se *state.Error
		if errors.As(err, &se) {
			se.File = r.file + " (as a state document)"
			return se
		}
		return err
	}
	return nil
}
