package rpc

import (
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/state"
)

func wireDoc(t testing.TB) *state.Document {
	d := doc(t, 2, []state.Project{proj("A", 75, 1000), proj("B", 25, 0)},
		task("a1", "A", state.TaskDone, cpuDay, cpuDay, t0+3600, t0-60),
		task("a2", "A", state.TaskRunning, cpuDay, 1, t0+86400, 0),
		task("a3", "A", state.TaskReported, cpuDay, cpuDay, t0+86400, 0),
		task("b1", "B", state.TaskDone, cpuDay, cpuDay, t0+86400, 0))
	d.Host.Resources = append(d.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 1, Flops: 1e11})
	d.Projects[0].Authenticator, d.Projects[0].HostID, d.Projects[0].RPCSeqno = "key", 7, 3
	d.Tasks[0].CPUTime, d.Tasks[0].ElapsedTime = 86000, 86400
	return d
}

// BuildRequest: A's done task reported, its running one in other_results, the reported
// one not at all; identity; the request's fields per resource; shares 75/100.
func TestBuildRequest(t *testing.T) {
	d := wireDoc(t)
	d.Tasks[0].OutputDigest = "sha256:00ff" // a1: carried to the server for its validator
	req := BuildRequest(d, 0, &state.WorkRequest{WorkReqSeconds: 500, CPUReqSecs: 100, CPUReqInstances: 1,
		Coprocs: []state.CoprocRequest{{Type: "NVIDIA", ReqSecs: 500, ReqInstances: 1}}})
	if req.Authenticator != "key" || req.HostID != 7 || req.RPCSeqno != 4 || req.PlatformName != PlatformName {
		t.Errorf("identity: %+v", req)
	}
	if len(req.Results) != 1 || req.Results[0].Name != "a1" || req.Results[0].FinalCPUTime != 86000 || req.Results[0].FinalElapsedTime != 86400 ||
		req.Results[0].State != boincxml.ResultFilesUploaded || req.Results[0].OutputDigest != "sha256:00ff" {
		t.Errorf("results: %+v", req.Results)
	}
	if len(req.OtherResults) != 1 || req.OtherResults[0].Name != "a2" {
		t.Errorf("other results: %+v", req.OtherResults)
	}
	if req.CPUReqSecs != 100 || req.CPUReqInstances != 1 || req.WorkReqSeconds != 500 || len(req.Coprocs) != 1 ||
		req.Coprocs[0].ReqSecs != 500 || req.Coprocs[0].Count != 1 || req.HostInfo.PNCPUs != 2 || len(req.HostInfo.Coprocs) != 1 ||
		req.HostInfo.Coprocs[0].ReqSecs != 0 {
		t.Errorf("work request: %+v", req)
	}
	if req.ResourceShareFraction != 0.75 {
		t.Errorf("resource_share_fraction %g", req.ResourceShareFraction)
	}
	// The request is valid on the wire: what a server parses back.
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := boincxml.ParseSchedulerRequest(strings.NewReader(string(b))); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
}

// ApplyReply: acks turn done into reported (only the project's own), jobs are added
// with their app versions, jobs the host cannot run are skipped.
func TestApplyReply(t *testing.T) {
	d := wireDoc(t)
	rep := &boincxml.SchedulerReply{HostID: 9, Authenticator: "new",
		ResultAcks:  []boincxml.NameRef{{Name: "a1"}, {Name: "b1"}, {Name: "zz"}},
		Apps:        []boincxml.ReplyApp{{Name: "x"}},
		AppVersions: []boincxml.ReplyAppVersion{{AppName: "x", VersionNum: 2, AvgNCPUs: 1}, {AppName: "x", VersionNum: 2, PlanClass: "cuda", AvgNCPUs: 0.5, Coproc: &boincxml.ReplyCoproc{Type: "CUDA", Count: 1}}, {AppName: "x", VersionNum: 3, AvgNCPUs: 1, Coproc: &boincxml.ReplyCoproc{Type: "ATI", Count: 1}}},
		Workunits:   []boincxml.ReplyWorkunit{{Name: "w1", AppName: "x", RscFpopsEst: 1e12}, {Name: "w2", AppName: "x", RscFpopsEst: 2e12}},
		ResultsSent: []boincxml.ReplyResult{{Name: "n1", WUName: "w1", VersionNum: 2, ReportDeadline: t0 + 1000},
			{Name: "n2", WUName: "w2", VersionNum: 2, PlanClass: "cuda", ReportDeadline: t0 + 2000},
			{Name: "n3", WUName: "w2", VersionNum: 3, ReportDeadline: t0 + 2000},
			{Name: "a2", WUName: "w1", VersionNum: 2, ReportDeadline: t0 + 2000}},
	}
	out := ApplyReply(d, 0, rep, t0)
	if out.Acked != 1 || d.Tasks[0].State != state.TaskReported || d.Tasks[3].State != state.TaskDone {
		t.Errorf("acks: %+v, tasks %+v", out, d.Tasks)
	}
	if out.Jobs[state.ResourceCPU] != 1 || out.Jobs["NVIDIA"] != 1 || len(out.Skipped) != 3 {
		t.Errorf("jobs %v, skipped %q", out.Jobs, out.Skipped)
	}
	if p := d.Projects[0]; p.HostID != 9 || p.Authenticator != "new" || p.RPCSeqno != 4 {
		t.Errorf("identity: %+v", p)
	}
	if err := state.Validate(d); err != nil {
		t.Fatal(err)
	}
	n := len(d.Tasks)
	if d.Tasks[n-1].AppVersion != "A/x/2/cuda" || d.Tasks[n-2].AppVersion != "A/x/2" || d.Tasks[n-1].ReceivedTime != t0 {
		t.Errorf("new tasks: %+v", d.Tasks[n-2:])
	}
}

// FuzzApplyReply: whatever a server answers, the document stays valid.
func FuzzApplyReply(f *testing.F) {
	f.Add(`<scheduler_reply><hostid>3</hostid><app_version><app_name>a</app_name><version_num>1</version_num><avg_ncpus>1</avg_ncpus></app_version>` +
		`<workunit><name>w</name><app_name>a</app_name><rsc_fpops_est>1e12</rsc_fpops_est></workunit>` +
		`<result><name>r</name><wu_name>w</wu_name><version_num>1</version_num><report_deadline>1700001000</report_deadline></result>` +
		`<result_ack><name>a1</name></result_ack></scheduler_reply>`)
	f.Add(`<scheduler_reply><app_version><app_name>a</app_name><avg_ncpus>-1</avg_ncpus><coproc><type>NVIDIA</type><count>5</count></coproc></app_version></scheduler_reply>`)
	f.Add(`<scheduler_reply><hostid>99999999999</hostid><result><name>a2</name></result></scheduler_reply>`)
	f.Fuzz(func(t *testing.T, s string) {
		rep, err := boincxml.ParseSchedulerReply(strings.NewReader(s))
		if err != nil {
			return
		}
		d := wireDoc(t)
		ApplyReply(d, 1, rep, t0)
		if err := state.Validate(d); err != nil {
			t.Fatalf("reply made the document invalid: %v\n%s", err, s)
		}
	})
}

// TestBuildRequestListsNoOtherResults: B holds no task but its done one, and its
// request still carries an empty <other_results>, as a BOINC client's does, so the
// scheduler knows the client holds nothing else (and resends what it lost); a nil
// list, a request not built here, writes no element.
func TestBuildRequestListsNoOtherResults(t *testing.T) {
	req := BuildRequest(wireDoc(t), 1, nil)
	if req.OtherResults == nil || len(req.OtherResults) != 0 {
		t.Fatalf("other results: %#v, want an empty list", req.OtherResults)
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<other_results></other_results>") {
		t.Errorf("no empty <other_results> in\n%s", b)
	}
	back, err := boincxml.ParseSchedulerRequest(strings.NewReader(string(b)))
	if err != nil || back.OtherResults == nil {
		t.Errorf("read back: %#v, %v; want an empty, non-nil list", back.OtherResults, err)
	}
	req.OtherResults = nil
	if b, _ := req.Marshal(); strings.Contains(string(b), "other_results") {
		t.Errorf("a nil list written:\n%s", b)
	}
}
