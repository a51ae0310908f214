package boincxml

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
)

func TestImportClientState(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "clientstate", "client_state.xml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ImportClientState(f, "client_state.xml")
	if err != nil {
		t.Fatal(err)
	}
	// No <project_name>: the name is the URL without its scheme and trailing slash.
	beta, betaURL := "beta.example.org", "http://beta.example.org/"
	want := &state.Document{
		Version: 1,
		Host: state.Host{
			Resources: []state.Resource{
				{Type: "cpu", Instances: 4, Flops: 3e9},
				{Type: "NVIDIA", Instances: 1, Flops: 6e11}, // peak_flops as is; <coproc_opencl> skipped
			},
			// connected_frac −1 (not measured yet) counts as 1
			TimeStats: state.TimeStats{OnFrac: 0.95, ActiveFrac: 0.9, GPUActiveFrac: 0.8, ConnectedFrac: 1},
		},
		Preferences: state.Preferences{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5, ConnectionPeriodDays: 0.1, CPUSchedulingPeriod: 3600},
		Projects: []state.Project{
			{
				Name: "Alpha", MasterURL: "http://alpha.example.org/",
				SchedulerURLs: []string{"http://alpha.example.org/cgi-bin/cgi", "http://alpha2.example.org/cgi-bin/cgi"},
				ResourceShare: 150, Debt: -120.5,
				MinRPCTime: 1700003600, NRPCFailures: 3, MasterFetchPending: true, REC: 123.4,
				// host order; ati_debt dropped (no ATI GPU); D(P,R) from the app versions
				Resources: []state.ProjectResource{
					{Type: "cpu", LongTermDebt: 3600, BackoffInterval: 600, BackoffUntil: 1700000600, AccumulateDebt: true},
					{Type: "NVIDIA", LongTermDebt: -50, BackoffUntil: 1700001200, AccumulateDebt: true}, // cuda_short_term_debt dropped
				},
			},
			{Name: beta, MasterURL: betaURL, ResourceShare: 50, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}}},
		},
		Apps: []state.App{{Name: "alpha_app", Project: "Alpha"}, {Name: "beta_app", Project: beta}},
		AppVersions: []state.AppVersion{
			{Name: "Alpha/alpha_app/601", Project: "Alpha", App: "alpha_app", VersionNum: 601, AvgNCPUs: 1, Flops: 2.8e9},
			{Name: "Alpha/alpha_app/601/cuda", Project: "Alpha", App: "alpha_app", VersionNum: 601, PlanClass: "cuda",
				AvgNCPUs: 0.05, Flops: 9e10, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
			{Name: "Alpha/alpha_app/600", Project: "Alpha", App: "alpha_app", VersionNum: 600, AvgNCPUs: 1, Flops: 2e9},
			{Name: beta + "/beta_app/1", Project: beta, App: "beta_app", VersionNum: 1, AvgNCPUs: 1},
		},
		Tasks: []state.Task{
			// running (scheduler_state 2): current_cpu_time, 0.25 × 3e13 done
			{Name: "wu_a1_0", Project: "Alpha", AppVersion: "Alpha/alpha_app/601/cuda", State: state.TaskRunning,
				EstimatedFlops: 3e13, FlopsDone: 7.5e12, FractionDone: 0.25, ReportDeadline: 1700600000, ReceivedTime: 1699990000,
				CPUTime: 110, CPUTimeAtLastSched: 110, ElapsedTime: 2000, ElapsedTimeAtLastSched: 2000},
			// ready_to_report: done, all its work counted
			{Name: "wu_a2_1", Project: "Alpha", AppVersion: "Alpha/alpha_app/600", State: state.TaskDone,
				EstimatedFlops: 2e13, FlopsDone: 2e13, ReportDeadline: 1700500000, CompletedTime: 1699999000,
				CPUTime: 5000, CPUTimeAtLastSched: 5000, ElapsedTime: 5100, ElapsedTimeAtLastSched: 5100},
			// active but suspended (active_task_state 9): preempted, 0.1 × 1e13 done
			{Name: "wu_b_0", Project: beta, AppVersion: beta + "/beta_app/1", State: state.TaskPreempted,
				EstimatedFlops: 1e13, FlopsDone: 1e12, FractionDone: 0.1, ReportDeadline: 1700400000,
				CPUTime: 300, CPUTimeAtLastSched: 300, ElapsedTime: 320, ElapsedTimeAtLastSched: 320},
			{Name: "wu_b_acked", Project: beta, AppVersion: beta + "/beta_app/1", State: state.TaskReported,
				EstimatedFlops: 1e13, FlopsDone: 1e13, ReportDeadline: 1700400000},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	// The document survives the state package's own encode and decode.
	data, err := state.Encode(got, state.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := state.Decode(data, "imported.json"); err != nil {
		t.Errorf("imported document does not decode: %v", err)
	}
}

// minimal is a valid client_state.xml body around which the error cases vary.
const minimalHost = `<host_info><p_ncpus>2</p_ncpus><p_fpops>1e9</p_fpops></host_info>`

func TestImportClientStateErrors(t *testing.T) {
	proj := `<project><master_url>http://p/</master_url><project_name>P</project_name></project>`
	tests := []struct {
		name, xml, want string
	}{
		{"not XML", `hello`, "cs.xml: no root element"},
		{"broken XML", `<client_state><host_info>`, "cs.xml: XML syntax error on line 1: unexpected EOF"},
		{"wrong root", `<global_preferences/>`, "cs.xml: the root element is <global_preferences>, not <client_state>"},
		{"no host_info", `<client_state>` + proj + `</client_state>`, "cs.xml: missing <host_info>"},
		{"no p_ncpus", `<client_state><host_info><p_fpops>1e9</p_fpops></host_info></client_state>`,
			"cs.xml: host_info: missing <p_ncpus>"},
		{"bad p_fpops", `<client_state><host_info><p_ncpus>2</p_ncpus><p_fpops>fast</p_fpops></host_info></client_state>`,
			`cs.xml: host_info: <p_fpops>: "fast" is not a number`},
		{"zero CPUs", `<client_state><host_info><p_ncpus>0</p_ncpus><p_fpops>1e9</p_fpops></host_info></client_state>`,
			"cs.xml: host_info: <p_ncpus>: must be at least 1, got 0"},
		{"fractional CPUs", `<client_state><host_info><p_ncpus>1.5</p_ncpus><p_fpops>1e9</p_fpops></host_info></client_state>`,
			"cs.xml: host_info: <p_ncpus>: must be a whole number from 0 to 1048576, got 1.5"},
		{"two host_info", `<client_state>` + minimalHost + minimalHost + `</client_state>`,
			"cs.xml: host_info: more than one <host_info>"},
		{"app before project", `<client_state>` + minimalHost + `<app><name>a</name></app></client_state>`,
			"cs.xml: <app> (line 1) comes before any <project>"},
		{"project without URL", `<client_state>` + minimalHost + `<project><project_name>P</project_name></project></client_state>`,
			"cs.xml: project 1: missing <master_url>"},
		{"duplicate project", `<client_state>` + minimalHost + proj + proj + `</client_state>`,
			`cs.xml: project "P": a second project with <master_url> "http://p/"`},
		{"negative share", `<client_state>` + minimalHost + `<project><master_url>u</master_url><resource_share>-1</resource_share></project></client_state>`,
			`cs.xml: project "u": <resource_share>: must be >= 0, got -1`},
		{"DCF not a number", `<client_state>` + minimalHost + `<project><master_url>u</master_url><duration_correction_factor>x</duration_correction_factor></project></client_state>`,
			`cs.xml: project "u": <duration_correction_factor>: "x" is not a number`},
		{"DCF negative", `<client_state>` + minimalHost + `<project><master_url>u</master_url><duration_correction_factor>-0.5</duration_correction_factor></project></client_state>`,
			`cs.xml: project "u": <duration_correction_factor>: must be between 0 and 100, got -0.5`},
		{"DCF too large", `<client_state>` + minimalHost + `<project><master_url>u</master_url><duration_correction_factor>1e3</duration_correction_factor></project></client_state>`,
			`cs.xml: project "u": <duration_correction_factor>: must be between 0 and 100, got 1000`},
		{"REC not a number", `<client_state>` + minimalHost + `<project><master_url>u</master_url><rec>lots</rec></project></client_state>`,
			`cs.xml: project "u": <rec>: "lots" is not a number`},
		{"REC negative", `<client_state>` + minimalHost + `<project><master_url>u</master_url><rec>-3</rec></project></client_state>`,
			`cs.xml: project "u": <rec>: must be >= 0, got -3`},
		{"REC time negative", `<client_state>` + minimalHost + `<project><master_url>u</master_url><rec_time>-1</rec_time></project></client_state>`,
			`cs.xml: project "u": <rec_time>: must be >= 0, got -1`},
		{"GPU version on a host without GPUs", `<client_state>` + minimalHost + proj +
			`<app_version><app_name>a</app_name><coproc><type>ATI</type><count>1</count></coproc></app_version></client_state>`,
			`cs.xml: project "P": app_version 1: uses a ATI coprocessor, which <host_info> does not list`},
		{"two coprocs", `<client_state>` + minimalHost + proj +
			`<app_version><app_name>a</app_name><coproc><type>ATI</type><count>1</count></coproc><coproc><type>ATI</type><count>1</count></coproc></app_version></client_state>`,
			`cs.xml: project "P": app_version 1: more than one <coproc>`},
		{"result without workunit", `<client_state>` + minimalHost + proj +
			`<result><name>r</name><wu_name>w</wu_name></result></client_state>`,
			`cs.xml: project "P": result "r": <wu_name> "w" is not a <workunit> of this project (workunits come before their results)`},
		{"result without app version", `<client_state>` + minimalHost + proj +
			`<workunit><name>w</name><app_name>a</app_name></workunit><result><name>r</name><wu_name>w</wu_name></result></client_state>`,
			`cs.xml: project "P": result "r": no <app_version> of app "a" in this project`},
		{"active task of no result", `<client_state>` + minimalHost +
			`<active_task_set><active_task><result_name>x</result_name></active_task></active_task_set></client_state>`,
			`cs.xml: active_task_set: active_task 1: <result_name> "x" is not a <result>`},
		{"too many CPUs for the host", `<client_state>` + minimalHost + proj +
			`<app_version><app_name>a</app_name><avg_ncpus>4</avg_ncpus></app_version></client_state>`,
			"cs.xml (as a state document): app_versions[0].avg_ncpus: uses 4 CPUs but the host has 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ImportClientState(strings.NewReader(tt.xml), "cs.xml")
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %q\nwant %q", err.Error(), tt.want)
			}
		})
	}
}

func FuzzClientState(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "clientstate", "client_state.xml")); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`<client_state>` + minimalHost + `<project><master_url>u</master_url></project>` +
		`<app><name>a</name></app><app_version><app_name>a</app_name></app_version>` +
		`<workunit><name>w</name><app_name>a</app_name><rsc_fpops_est>1e12</rsc_fpops_est></workunit>` +
		`<result><name>r</name><wu_name>w</wu_name></result></client_state>`))
	for _, dcf := range []string{"1.25", "0", "0.01", "100", "100.5", "-1", "nan", "inf", "1e-300", ""} {
		f.Add([]byte(`<client_state>` + minimalHost + `<project><master_url>u</master_url><duration_correction_factor>` + dcf +
			`</duration_correction_factor></project></client_state>`))
	}
	for _, rec := range []string{"12.5", "0", "-1", "nan", "inf", "1e308", ""} {
		f.Add([]byte(`<client_state>` + minimalHost + `<project><master_url>u</master_url><rec>` + rec +
			`</rec><rec_time>` + rec + `</rec_time></project></client_state>`))
	}
	f.Add([]byte(`<client_state><host_info><p_ncpus>1</p_ncpus><p_fpops>1</p_fpops><coprocs><coproc><type>x</type><count>2</count></coproc></coprocs></host_info></client_state>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := ImportClientState(strings.NewReader(string(data)), "fuzz.xml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.xml") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		if err := state.Validate(doc); err != nil {
			t.Errorf("imported document is invalid: %v", err)
		}
	})
}

// TestImportDCF: a project's duration_correction_factor is taken as it is (0 reads as
// none learned, so 1), and an active task's fraction_done is its progress, from which
// its remaining time is estimated.
func TestImportDCF(t *testing.T) {
	cs := `<client_state>` + minimalHost + `
<project><master_url>http://p/</master_url><project_name>P</project_name><duration_correction_factor>1.750000</duration_correction_factor></project>
<app><name>a</name></app><app_version><app_name>a</app_name><version_num>1</version_num><flops>1e9</flops></app_version>
<workunit><name>w</name><app_name>a</app_name><rsc_fpops_est>1e12</rsc_fpops_est></workunit>
<result><name>r</name><wu_name>w</wu_name><report_deadline>1700100000</report_deadline></result>
<project><master_url>http://q/</master_url><project_name>Q</project_name><duration_correction_factor>0</duration_correction_factor></project>
<active_task_set><active_task><result_name>r</result_name><scheduler_state>2</scheduler_state>
<checkpoint_elapsed_time>1400</checkpoint_elapsed_time><fraction_done>0.400000</fraction_done></active_task></active_task_set>
</client_state>`
	doc, err := ImportClientState(strings.NewReader(cs), "cs.xml")
	if err != nil {
		t.Fatal(err)
	}
	if p, q := doc.Projects[0], doc.Projects[1]; p.DurationCorrectionFactor != 1.75 || q.DurationCorrectionFactor != 0 || q.DCF() != 1 {
		t.Errorf("DCFs %g, %g (reads %g), want 1.75, 0 (reads 1)", p.DurationCorrectionFactor, q.DurationCorrectionFactor, q.DCF())
	}
	task := doc.Tasks[0]
	if task.FractionDone != 0.4 || task.FlopsDone != 0.4e12 {
		t.Errorf("fraction_done %g, flops_done %g, want 0.4, 4e11", task.FractionDone, task.FlopsDone)
	}
	// 60 % of the corrected estimate to go: 0.6 × 1e12 × 1.75.
	if got, want := task.RemainingWork(doc.ProjectDCF(task.Project)), 0.6*1e12*1.75; math.Abs(got-want) > 1 {
		t.Errorf("remaining work %g, want %g", got, want)
	}
}

// TestImportREC: a project's recent estimated credit and its time (BOINC's <rec> and
// <rec_time>, project.cpp PROJECT::parse_state) are taken as they are, for policy boinc.
func TestImportREC(t *testing.T) {
	cs := `<client_state>` + minimalHost + `
<project><master_url>http://p/</master_url><project_name>P</project_name><rec>1234.500000</rec><rec_time>1700000000.250000</rec_time></project>
<project><master_url>http://q/</master_url><project_name>Q</project_name></project>
</client_state>`
	doc, err := ImportClientState(strings.NewReader(cs), "cs.xml")
	if err != nil {
		t.Fatal(err)
	}
	if p, q := doc.Projects[0], doc.Projects[1]; p.REC != 1234.5 || p.RECTime != 1700000000.25 || q.REC != 0 || q.RECTime != 0 {
		t.Errorf("REC %g at %g and %g at %g, want 1234.5 at 1700000000.25 and 0 at 0", p.REC, p.RECTime, q.REC, q.RECTime)
	}
}

// TestNameFromURL: a project without <project_name> is named by its URL as a person
// would name it; two such projects on one host keep apart (the second keeps its URL).
func TestNameFromURL(t *testing.T) {
	for url, want := range map[string]string{
		"https://einstein.phys.uwm.edu/":     "einstein.phys.uwm.edu",
		"http://boinc.bakerlab.org/rosetta/": "boinc.bakerlab.org/rosetta",
		"http://p":                           "p",
		"einstein":                           "einstein",
		"http:///":                           "http:///",
	} {
		if got := nameFromURL(url); got != want {
			t.Errorf("nameFromURL(%q) = %q, want %q", url, got, want)
		}
	}
	cs := `<client_state><host_info><p_ncpus>1</p_ncpus><p_fpops>1e9</p_fpops></host_info>
<project><master_url>http://p/</master_url></project>
<project><master_url>https://p/</master_url></project>
</client_state>`
	doc, err := ImportClientState(strings.NewReader(cs), "cs.xml")
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{doc.Projects[0].Name, doc.Projects[1].Name}; got[0] != "p" || got[1] != "https://p/" {
		t.Errorf("names %q, want [p https://p/]", got)
	}
}
