package rpc

import (
	"fmt"
	"math"
	"slices"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/state"
)

// PlatformName is the platform_name brpc sends.
const PlatformName = "bkit"

// BuildRequest is the scheduler request of an RPC to project p (index in doc.Projects)
// asking for req (zero: report only): the project's identity (authenticator, host id,
// the next rpc_seqno), the host description, the per-resource request fields, every
// done task of the project as a reported result (ReportTasks) and the project's other
// tasks in <other_results>. It does not change doc.
func BuildRequest(doc *state.Document, p int, req *state.WorkRequest) *boincxml.SchedulerRequest {
	pr := &doc.Projects[p]
	out := &boincxml.SchedulerRequest{
		Authenticator: pr.Authenticator, HostID: int64(pr.HostID), RPCSeqno: int64(pr.RPCSeqno) + 1,
		PlatformName: PlatformName,
	}
	if req != nil {
		out.WorkReqSeconds, out.CPUReqSecs, out.CPUReqInstances = req.WorkReqSeconds, req.CPUReqSecs, req.CPUReqInstances
	}
	var total float64
	for i := range doc.Projects {
		total += doc.Projects[i].ResourceShare
	}
	if total > 0 {
		out.ResourceShareFraction = pr.ResourceShare / total
	}
	ts := doc.Host.TimeStats
	out.TimeStats = &boincxml.TimeStats{OnFrac: ts.OnFrac, ConnectedFrac: ts.ConnectedFrac, ActiveFrac: ts.ActiveFrac, GPUActiveFrac: ts.GPUActiveFrac}
	for _, r := range doc.Host.Resources {
		if r.Type == state.ResourceCPU {
			out.HostInfo.PNCPUs, out.HostInfo.PFpops = r.Instances, r.Flops
			continue
		}
		cp := boincxml.Coproc{Type: r.Type, Count: r.Instances, PeakFlops: r.Flops}
		out.HostInfo.Coprocs = append(out.HostInfo.Coprocs, cp)
		if req != nil {
			if i := slices.IndexFunc(req.Coprocs, func(c state.CoprocRequest) bool { return c.Type == r.Type }); i >= 0 {
				cp.ReqSecs, cp.ReqInstances = req.Coprocs[i].ReqSecs, req.Coprocs[i].ReqInstances
			}
		}
		out.Coprocs = append(out.Coprocs, cp)
	}
	avNum := make(map[string]*state.AppVersion, len(doc.AppVersions))
	for i := range doc.AppVersions {
		avNum[doc.AppVersions[i].Name] = &doc.AppVersions[i]
	}
	// Always listed, if empty, as a BOINC client lists them: the scheduler resends
	// the tasks in progress it does not see here (lost replies, a lost state).
	out.OtherResults = boincxml.OtherResultList{}
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.Project != pr.Name {
			continue
		}
		switch t.State {
		case state.TaskDone:
			r := boincxml.ReportedResult{Name: t.Name, FinalCPUTime: t.CPUTime, FinalElapsedTime: t.ElapsedTime,
				State: boincxml.ResultFilesUploaded, OutputDigest: t.OutputDigest}
			if av := avNum[t.AppVersion]; av != nil {
				r.AppVersionNum, r.PlanClass = av.VersionNum, av.PlanClass
			}
			out.Results = append(out.Results, r)
		case state.TaskReported:
		default:
			out.OtherResults = append(out.OtherResults, boincxml.NameRef{Name: t.Name})
		}
	}
	return out
}

// ReplyOutcome is what a scheduler reply changed in the document.
type ReplyOutcome struct {
	Acked    int            // reports acknowledged: those tasks are now reported
	Jobs     map[string]int // new tasks per resource type
	Skipped  []string       // jobs not taken, with the reason
	Messages []string       // the scheduler's messages
}

// ApplyReply takes a successful scheduler reply from project p into doc at now: the
// host id and authenticator the project gave, rpc_seqno, acknowledged reports (done →
// reported: a report is never dropped before the server has it), and the jobs: apps, app
// versions (named project/app/version[/plan_class], as bsim import names them) and
// tasks (ready, received now). A job the host cannot run (a coprocessor it lacks, more
// CPUs or instances than it has), one that is already held, or one with numbers out of
// range is skipped and said so: a reply never makes the document invalid. Timing
// (request_delay) and backoff are RPCSucceeded's.
func ApplyReply(doc *state.Document, p int, rep *boincxml.SchedulerReply, now float64) ReplyOutcome {
	pr := &doc.Projects[p]
	out := ReplyOutcome{Jobs: map[string]int{}}
	pr.RPCSeqno++
	if rep.HostID > 0 && rep.HostID <= math.MaxInt32 {
		pr.HostID = int(rep.HostID)
	}
	if rep.Authenticator != "" {
		pr.Authenticator = rep.Authenticator
	}
	for _, m := range rep.Messages {
		out.Messages = append(out.Messages, m.Text)
	}
	acked := make(map[string]bool, len(rep.ResultAcks))
	for _, a := range rep.ResultAcks {
		acked[a.Name] = true
	}
	for i := range doc.Tasks {
		if t := &doc.Tasks[i]; t.Project == pr.Name && t.State == state.TaskDone && acked[t.Name] {
			t.State = state.TaskReported
			out.Acked++
		}
	}

	for _, a := range rep.Apps {
		if a.Name != "" && !slices.ContainsFunc(doc.Apps, func(x state.App) bool { return x.Project == pr.Name && x.Name == a.Name }) {
			doc.Apps = append(doc.Apps, state.App{Name: a.Name, Project: pr.Name})
		}
	}
	avByKey := map[string]string{} // app/version/plan → app version name
	for _, v := range rep.AppVersions {
		av, why := appVersion(doc, pr.Name, &v)
		key := fmt.Sprintf("%s/%d/%s", v.AppName, v.VersionNum, v.PlanClass)
		if why != "" {
			out.Skipped = append(out.Skipped, fmt.Sprintf("app version %s: %s", key, why))
			continue
		}
		if i := slices.IndexFunc(doc.AppVersions, func(x state.AppVersion) bool { return x.Name == av.Name }); i < 0 {
			doc.AppVersions = append(doc.AppVersions, av)
		} else if doc.AppVersions[i].Project != pr.Name {
			out.Skipped = append(out.Skipped, fmt.Sprintf("app version %s: the name %s belongs to project %s", key, av.Name, doc.AppVersions[i].Project))
			continue
		}
		avByKey[key] = av.Name
	}
	wus := make(map[string]*boincxml.ReplyWorkunit, len(rep.Workunits))
	for i := range rep.Workunits {
		wus[rep.Workunits[i].Name] = &rep.Workunits[i]
	}
	held := make(map[string]bool, len(doc.Tasks))
	for i := range doc.Tasks {
		held[doc.Tasks[i].Name] = true
	}
	for _, r := range rep.ResultsSent {
		skip := func(why string) { out.Skipped = append(out.Skipped, fmt.Sprintf("result %s: %s", r.Name, why)) }
		wu := wus[r.WUName]
		switch {
		case r.Name == "":
			skip("no name")
			continue
		case held[r.Name]:
			skip("already held")
			continue
		case wu == nil:
			skip(fmt.Sprintf("no workunit %q in the reply", r.WUName))
			continue
		case !finite(wu.RscFpopsEst) || wu.RscFpopsEst < 0:
			skip(fmt.Sprintf("rsc_fpops_est %g", wu.RscFpopsEst))
			continue
		case !finite(float64(r.ReportDeadline)) || r.ReportDeadline < 0:
			skip(fmt.Sprintf("report_deadline %g", float64(r.ReportDeadline)))
			continue
		}
		avName, ok := avByKey[fmt.Sprintf("%s/%d/%s", wu.AppName, r.VersionNum, r.PlanClass)]
		if !ok {
			skip(fmt.Sprintf("no usable app version %s %d %s in the reply", wu.AppName, r.VersionNum, r.PlanClass))
			continue
		}
		held[r.Name] = true
		doc.Tasks = append(doc.Tasks, state.Task{Name: r.Name, Project: pr.Name, AppVersion: avName, State: state.TaskReady,
			EstimatedFlops: wu.RscFpopsEst, ReportDeadline: float64(r.ReportDeadline), ReceivedTime: now})
		av := &doc.AppVersions[slices.IndexFunc(doc.AppVersions, func(x state.AppVersion) bool { return x.Name == avName })]
		out.Jobs[av.ResourceType()]++
	}
	return out
}

// appVersion converts a reply's app version for project, or says why the host cannot
// use it.
func appVersion(doc *state.Document, project string, v *boincxml.ReplyAppVersion) (state.AppVersion, string) {
	av := state.AppVersion{Project: project, App: v.AppName, VersionNum: v.VersionNum, PlanClass: v.PlanClass,
		AvgNCPUs: v.AvgNCPUs, Flops: v.Flops}
	switch {
	case v.AppName == "":
		return av, "no app_name"
	case v.VersionNum < 0:
		return av, "negative version_num"
	case !finite(v.AvgNCPUs) || v.AvgNCPUs < 0 || !finite(v.Flops) || v.Flops < 0:
		return av, "avg_ncpus or flops out of range"
	case float64(doc.Host.CPU().Instances) < v.AvgNCPUs:
		return av, fmt.Sprintf("uses %g CPUs, the host has %d", v.AvgNCPUs, doc.Host.CPU().Instances)
	}
	if !slices.ContainsFunc(doc.Apps, func(a state.App) bool { return a.Project == project && a.Name == v.AppName }) {
		av.App = "" // the reply named no such <app>: the version still runs
	}
	if c := v.Coproc; c != nil && c.Count > 0 {
		typ := boincxml.CanonicalType(c.Type)
		r, ok := doc.Host.Resource(typ)
		switch {
		case !ok || typ == state.ResourceCPU:
			return av, fmt.Sprintf("uses coprocessor %q, which the host does not have", c.Type)
		case !finite(c.Count) || c.Count > float64(r.Instances):
			return av, fmt.Sprintf("uses %g %s, the host has %d", c.Count, typ, r.Instances)
		}
		av.Coproc = &state.CoprocUsage{Type: typ, Count: c.Count}
	} else if v.AvgNCPUs <= 0 {
		return av, "avg_ncpus must be > 0 for a CPU version"
	}
	av.Name = fmt.Sprintf("%s/%s/%d", project, v.AppName, v.VersionNum)
	if v.PlanClass != "" {
		av.Name += "/" + v.PlanClass
	}
	return av, ""
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
