package boincxml

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

// publicExample is BOINC's emulator's public example scenario, shipped in scenarios/.
var publicExample = filepath.Join("..", "..", "scenarios", "example-2cpu-2to1")

// TestPublicExample reads the public example scenario and checks what it says: 2 CPUs
// at 2 GFLOPS, shares 200:100, 30- and 90-minute jobs (3.6e12 and 1.08e13 FLOPs at
// 2e9 FLOPS: 1800 s and 5400 s) with a 2-day latency bound (172800 s).
func TestPublicExample(t *testing.T) {
	sc, err := LoadScenario(publicExample)
	if err != nil {
		t.Fatal(err)
	}
	doc := sc.Doc
	if diff := cmp.Diff([]state.Resource{{Type: "cpu", Instances: 2, Flops: 2e9}}, doc.Host.Resources); diff != "" {
		t.Errorf("host (-want +got)\n%s", diff)
	}
	var shares []float64
	for _, p := range doc.Projects {
		shares = append(shares, p.ResourceShare)
	}
	if diff := cmp.Diff([]float64{200, 100}, shares); diff != "" {
		t.Errorf("shares (-want +got)\n%s", diff)
	}
	wantApps := []scenario.App{
		{Project: "X", Name: "x_app", LatencyBound: 172800, FpopsEst: 3.6e12, Fpops: &scenario.NormalDist{Mean: ptr(3.6e12)}},
		{Project: "Y", Name: "y_app", LatencyBound: 172800, FpopsEst: 1.08e13, Fpops: &scenario.NormalDist{Mean: ptr(1.08e13)}},
	}
	if diff := cmp.Diff(wantApps, sc.Apps); diff != "" {
		t.Errorf("apps (-want +got)\n%s", diff)
	}
	for i, a := range sc.Apps {
		if secs := a.FpopsEst / doc.AppVersions[i].Flops; secs != []float64{1800, 5400}[i] {
			t.Errorf("%s: a job takes %g s, want %g", a.Name, secs, []float64{1800, 5400}[i])
		}
	}
	if on, _, _, _ := sc.Lambdas.Means(); doc.Preferences.CPUSchedulingPeriod != 3600 || on != scenario.DefaultLambda {
		t.Errorf("period %g, on_lambda %g", doc.Preferences.CPUSchedulingPeriod, on)
	}
}

// gpuScenario: a one-GPU host, a GPU-only project A and a project B with CPU and GPU
// versions, availability processes and explicit jobs.
const gpuScenario = `<client_state>
<host_info>
  <p_ncpus>4</p_ncpus><p_fpops>1e9</p_fpops>
  <coprocs><coproc_cuda><count>1</count><peak_flops>1e10</peak_flops></coproc_cuda></coprocs>
</host_info>
<time_stats>
  <on_frac>0.9</on_frac><on_lambda>7200</on_lambda>
  <active_frac>0.5</active_frac><gpu_active_frac>0.25</gpu_active_frac><connected_frac>1</connected_frac>
  <connected_lambda>100</connected_lambda><last_update>5</last_update>
</time_stats>
<project>
  <master_url>http://a/</master_url><project_name>A</project_name><resource_share>100</resource_share>
  <available><frac>0.8</frac><lambda>600</lambda></available>
</project>
<app><name>a_gpu</name><latency_bound>86400</latency_bound><fpops_est>1e13</fpops_est>
  <fpops><mean>2e13</mean><std_dev>1e12</std_dev></fpops><weight>3</weight><max_concurrent>2</max_concurrent></app>
<app_version><app_name>a_gpu</app_name><version_num>2</version_num><plan_class>cuda</plan_class>
  <avg_ncpus>0.5</avg_ncpus><flops>2e9</flops><coproc><type>NVIDIA</type><count>0.5</count></coproc></app_version>
<workunit><name>w1</name><app_name>a_gpu</app_name><rsc_fpops_est>4e12</rsc_fpops_est></workunit>
<result><name>w1_0</name><wu_name>w1</wu_name><report_deadline>90000</report_deadline><received_time>100</received_time></result>
<project>
  <master_url>http://b/</master_url><project_name>B</project_name><resource_share>100</resource_share>
</project>
<app><name>b</name><latency_bound>3600</latency_bound><fpops_est>1e12</fpops_est></app>
<app_version><app_name>b</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
<app_version><app_name>b</app_name><avg_ncpus>1</avg_ncpus><flops>2e9</flops><coproc><type>cuda</type><count>1</count></coproc></app_version>
</client_state>`

func TestReadScenario(t *testing.T) {
	fsys := fstest.MapFS{
		"client_state.xml": {Data: []byte(gpuScenario)},
		"global_prefs.xml": {Data: []byte(`<global_preferences><work_buf_min_days>0.25</work_buf_min_days>
			<cpu_scheduling_period_minutes>30</cpu_scheduling_period_minutes><max_ncpus_pct>60</max_ncpus_pct>
			<cpu_usage_limit>0</cpu_usage_limit><venue name="home"><max_ncpus_pct>10</max_ncpus_pct></venue></global_preferences>`)},
		"cc_config.xml": {Data: []byte(`<cc_config><log_flags><task>1</task></log_flags></cc_config>`)},
	}
	sc, err := ReadScenario(fsys, "")
	if err != nil {
		t.Fatal(err)
	}
	// What the XML leaves out stays nil: B's server, the lambdas not given, b's
	// estimates and weight. The venue's max_ncpus_pct is not read.
	want := &scenario.Scenario{
		Version: scenario.Version,
		Lambdas: &scenario.Lambdas{On: ptr(7200.0), Connected: ptr(100.0)},
		Servers: []scenario.Server{{Project: "A", Available: scenario.Availability{Frac: ptr(0.8), Lambda: ptr(600.0)}}},
		Apps: []scenario.App{
			{Project: "A", Name: "a_gpu", LatencyBound: 86400, FpopsEst: 1e13, Fpops: &scenario.NormalDist{Mean: ptr(2e13), StdDev: 1e12}, Weight: ptr(3.0)},
			{Project: "B", Name: "b", LatencyBound: 3600, FpopsEst: 1e12},
		},
		Doc: &state.Document{
			Version: 1,
			Host: state.Host{
				// floor(4 × 60 / 100) = 2 CPUs; the GPU at 0.2 × 1e10 × 1 = 2e9 per instance
				Resources: []state.Resource{{Type: "cpu", Instances: 2, Flops: 1e9}, {Type: "NVIDIA", Instances: 1, Flops: 2e9}},
				TimeStats: state.TimeStats{OnFrac: 0.9, ActiveFrac: 0.5, GPUActiveFrac: 0.25, ConnectedFrac: 1},
			},
			// T = work_buf_min_days; 30 minutes = 1800 s
			Preferences: state.Preferences{WorkBufMinDays: 0.25, WorkBufAdditionalDays: 0.5, ConnectionPeriodDays: 0.25, CPUSchedulingPeriod: 1800},
			Projects:    []state.Project{{Name: "A", MasterURL: "http://a/", ResourceShare: 100}, {Name: "B", MasterURL: "http://b/", ResourceShare: 100}},
			Apps:        []state.App{{Name: "a_gpu", Project: "A", MaxConcurrent: 2}, {Name: "b", Project: "B"}},
			AppVersions: []state.AppVersion{
				{Name: "A/a_gpu/2/cuda", Project: "A", App: "a_gpu", VersionNum: 2, PlanClass: "cuda", AvgNCPUs: 0.5, Flops: 2e9,
					Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 0.5}},
				{Name: "B/b/0", Project: "B", App: "b", AvgNCPUs: 1, Flops: 1e9},
				{Name: "B/b/0#2", Project: "B", App: "b", AvgNCPUs: 1, Flops: 2e9, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}},
			},
			Tasks: []state.Task{{Name: "w1_0", Project: "A", AppVersion: "A/a_gpu/2/cuda", State: state.TaskReady,
				EstimatedFlops: 4e12, ReportDeadline: 90000, ReceivedTime: 100}},
		},
	}
	if diff := cmp.Diff(want, sc); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestReadScenarioErrors(t *testing.T) {
	host := `<host_info><p_ncpus>2</p_ncpus><p_fpops>1e9</p_fpops></host_info>`
	gpuHost := `<host_info><p_ncpus>2</p_ncpus><p_fpops>1e9</p_fpops><coprocs><coproc_ati><count>1</count><peak_flops>1e10</peak_flops></coproc_ati></coprocs></host_info>`
	projX := `<project><master_url>http://x/</master_url><project_name>X</project_name><resource_share>1</resource_share></project>`
	app := `<app><name>a</name><latency_bound>100</latency_bound><fpops_est>1e9</fpops_est></app>`
	av := `<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>`
	cs := func(body string) string { return "<client_state>" + body + "</client_state>" }
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no client_state.xml", map[string]string{}, "sc/client_state.xml: file does not exist"},
		{"missing flops", map[string]string{"client_state.xml": cs(host + projX + app + av +
			`<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus></app_version>`)},
			`sc/client_state.xml: project "X": app_version 2: missing <flops>`},
		{"missing avg_ncpus", map[string]string{"client_state.xml": cs(host + projX + app +
			`<app_version><app_name>a</app_name><flops>1e9</flops></app_version>`)},
			`sc/client_state.xml: project "X": app_version 1: missing <avg_ncpus>`},
		{"zero flops", map[string]string{"client_state.xml": cs(host + projX + app +
			`<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>0</flops></app_version>`)},
			`sc/client_state.xml: project "X": app_version 1: <flops>: must be > 0`},
		{"GPU version before host_info", map[string]string{"client_state.xml": cs(projX + app +
			`<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops><coproc><type>ATI</type><count>1</count></coproc></app_version>` + gpuHost)},
			`sc/client_state.xml: project "X": app_version 1: <coproc> ATI comes before <host_info> (put host_info, with the host's GPUs, first)`},
		{"unknown element in coproc", map[string]string{"client_state.xml": cs(gpuHost + projX + app +
			`<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops><coproc><type>ATI</type><cnt>1</cnt></coproc></app_version>`)},
			`sc/client_state.xml: project "X": app_version 1: <coproc>: unknown element <cnt>`},
		{"host GPU without peak_flops", map[string]string{"client_state.xml": cs(
			`<host_info><p_ncpus>2</p_ncpus><p_fpops>1e9</p_fpops><coprocs><coproc_ati><count>1</count></coproc_ati></coprocs></host_info>`)},
			`sc/client_state.xml: host_info: coprocs: <coproc_ati> 1: missing <peak_flops>`},
		{"misspelt app field", map[string]string{"client_state.xml": cs(host + projX +
			`<app><name>a</name><latency_bond>100</latency_bond><fpops_est>1e9</fpops_est></app>`)},
			`sc/client_state.xml: project "X": app "a": unknown element <latency_bond>`},
		{"app with a negative latency_bound", map[string]string{"client_state.xml": cs(host + projX +
			`<app><name>a</name><latency_bound>-1</latency_bound><fpops_est>1e9</fpops_est></app>`)},
			`sc/client_state.xml: project "X": app "a": <latency_bound>: must be > 0, got -1`},
		{"bad fpops", map[string]string{"client_state.xml": cs(host + projX +
			`<app><name>a</name><latency_bound>100</latency_bound><fpops_est>1e9</fpops_est><fpops><mean>1</mean><sd>2</sd></fpops></app>`)},
			`sc/client_state.xml: project "X": app "a": <fpops>: unknown element <sd>`},
		{"version of an undeclared app", map[string]string{"client_state.xml": cs(host + projX + av)},
			`sc/client_state.xml: project "X": app_version 1: <app_name> "a" is not an <app> of this project (an <app> must come before its versions)`},
		{"bad availability", map[string]string{"client_state.xml": cs(host +
			`<project><master_url>http://x/</master_url><project_name>X</project_name><available><frac>2</frac></available></project>`)},
			`sc/client_state.xml: project "X": <available>: <frac>: must be between 0 and 1, got 2`},
		{"misspelt lambda", map[string]string{"client_state.xml": cs(host + `<time_stats><on_lamda>5</on_lamda></time_stats>`)},
			`sc/client_state.xml: time_stats: unknown element <on_lamda>`},
		{"frac not a number", map[string]string{"client_state.xml": cs(host + `<time_stats><on_frac>x</on_frac></time_stats>`)},
			`sc/client_state.xml: time_stats: <on_frac>: "x" is not a number`},
		{"result without deadline", map[string]string{"client_state.xml": cs(host + projX + app + av +
			`<workunit><name>w</name><app_name>a</app_name><rsc_fpops_est>1</rsc_fpops_est></workunit><result><name>r</name><wu_name>w</wu_name></result>`)},
			`sc/client_state.xml: project "X": result "r": missing <report_deadline>`},
		{"bad prefs", map[string]string{"client_state.xml": cs(host), "global_prefs.xml": `<global_preferences><max_ncpus_pct>150</max_ncpus_pct></global_preferences>`},
			`sc/global_prefs.xml: <max_ncpus_pct>: must be at most 100, got 150`},
		{"prefs not a number", map[string]string{"client_state.xml": cs(host), "global_prefs.xml": `<global_preferences><work_buf_min_days>x</work_buf_min_days></global_preferences>`},
			`sc/global_prefs.xml: <work_buf_min_days>: "x" is not a number`},
		{"bad cc_config", map[string]string{"client_state.xml": cs(host), "cc_config.xml": `<cc_config><log_flags>`},
			`sc/cc_config.xml: XML syntax error on line 1: unexpected EOF`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for n, s := range tt.files {
				fsys[n] = &fstest.MapFile{Data: []byte(s)}
			}
			_, err := ReadScenario(fsys, "sc")
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %q\nwant %q", err.Error(), tt.want)
			}
		})
	}
}

// TestScenarioAsBOINCReadsIt: scenarios BOINC's emulator runs and Go's strict XML
// would refuse or bsim's stricter rules did: "--" inside a comment of cc_config.xml
// (or any file), and an app without <latency_bound> and <fpops_est> whose explicit jobs
// give them (the first result's deadline − received time, the first workunit's
// estimate), else BOINC's defaults.
func TestScenarioAsBOINCReadsIt(t *testing.T) {
	cs := `<client_state><!-- a -- comment --><host_info><p_ncpus>1</p_ncpus><p_fpops>1e9</p_fpops></host_info>
<project><master_url>http://x/</master_url><project_name>X</project_name></project>
<app><name>a</name></app><app><name>b</name></app>
<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
<app_version><app_name>b</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
<workunit><name>w1</name><app_name>a</app_name><rsc_fpops_est>5e12</rsc_fpops_est></workunit>
<result><name>r1</name><wu_name>w1</wu_name><received_time>1000</received_time><report_deadline>8200</report_deadline></result>
</client_state>`
	fsys := fstest.MapFS{
		"client_state.xml": {Data: []byte(cs)},
		"cc_config.xml":    {Data: []byte("<cc_config>\n<!-- <max_file_xfers>-1</max_file_xfers> -- off -->\n</cc_config>")},
	}
	sc, err := ReadScenario(fsys, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []scenario.App{
		{Project: "X", Name: "a", LatencyBound: 7200, FpopsEst: 5e12},
		{Project: "X", Name: "b", LatencyBound: DefaultLatencyBound, FpopsEst: DefaultFpopsEst},
	}
	if diff := cmp.Diff(want, sc.Apps); diff != "" {
		t.Errorf("apps (-want +got):\n%s", diff)
	}
	// An unclosed comment is still an error.
	fsys["cc_config.xml"] = &fstest.MapFile{Data: []byte("<cc_config><!-- open </cc_config>")}
	if _, err := ReadScenario(fsys, ""); err == nil {
		t.Error("unclosed comment: no error")
	}
}

// TestScenarioZeroMeansAbsent: BOINC's emulator (get_app_params in client/sim.cpp)
// takes an <app>'s latency_bound, fpops_est, <fpops><mean> and weight of 0 as not
// given: the first two come from the app's explicit jobs or its defaults, the mean is
// fpops_est and the weight 1. <checkpoint_period> is one of the emulator's <app>
// fields (a distribution bsim does not use), not a misspelling.
func TestScenarioZeroMeansAbsent(t *testing.T) {
	cs := `<client_state><host_info><p_ncpus>1</p_ncpus><p_fpops>1e9</p_fpops></host_info>
<project><master_url>http://x/</master_url><project_name>X</project_name></project>
<app><name>a</name><latency_bound>0</latency_bound><fpops_est>0</fpops_est><weight>0</weight>
  <fpops><mean>0</mean><std_dev>0</std_dev></fpops><checkpoint_period><mean>600</mean><std_dev>60</std_dev></checkpoint_period></app>
<app><name>b</name><latency_bound>0</latency_bound><fpops_est>0</fpops_est><weight>2</weight></app>
<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
<app_version><app_name>b</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
<workunit><name>w1</name><app_name>a</app_name><rsc_fpops_est>5e12</rsc_fpops_est></workunit>
<result><name>r1</name><wu_name>w1</wu_name><received_time>1000</received_time><report_deadline>8200</report_deadline></result>
</client_state>`
	sc, err := ReadScenario(fstest.MapFS{"client_state.xml": {Data: []byte(cs)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []scenario.App{
		{Project: "X", Name: "a", LatencyBound: 7200, FpopsEst: 5e12, Fpops: &scenario.NormalDist{}},
		{Project: "X", Name: "b", LatencyBound: DefaultLatencyBound, FpopsEst: DefaultFpopsEst, Weight: ptr(2.0)},
	}
	if diff := cmp.Diff(want, sc.Apps); diff != "" {
		t.Errorf("apps (-want +got):\n%s", diff)
	}
	if w, m := sc.Apps[0].JobWeight(), sc.Apps[0].EstimateMean(); w != 1 || m != 5e12 {
		t.Errorf("app a: weight %g, estimate mean %g; want 1 and 5e12", w, m)
	}
}

// TestScenarioCull: BOINC's emulator leaves out an app version for a GPU the host does
// not have (missing_coproc), an app with no usable version or marked
// non_cpu_intensive, and then every project with no app left or marked
// non_cpu_intensive (cull_projects in client/sim.cpp), with its explicit jobs: such a
// project has no place in the figures (its share would count in the share violation
// and its idle time in the monotony). Each omission is a note.
func TestScenarioCull(t *testing.T) {
	cs := `<client_state><host_info><p_ncpus>2</p_ncpus><p_fpops>1e9</p_fpops></host_info>
<project><master_url>http://x/</master_url><project_name>X</project_name></project>
<app><name>a</name></app>
<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
<app_version><app_name>a</app_name><avg_ncpus>0.1</avg_ncpus><flops>5e9</flops><coproc><type>NVIDIA</type><count>1</count></coproc></app_version>
<project><master_url>http://y/</master_url><project_name>Y</project_name></project>
<app><name>b</name></app>
<project><master_url>http://z/</master_url><project_name>Z</project_name></project>
<app><name>c</name></app>
<app_version><app_name>c</app_name><avg_ncpus>0.1</avg_ncpus><flops>5e9</flops><coproc><type>ATI</type><count>1</count></coproc></app_version>
<workunit><name>wc</name><app_name>c</app_name><rsc_fpops_est>5e12</rsc_fpops_est></workunit>
<result><name>rc</name><wu_name>wc</wu_name><report_deadline>8200</report_deadline></result>
<project><master_url>http://w/</master_url><project_name>W</project_name><non_cpu_intensive/></project>
<app><name>d</name></app>
<app_version><app_name>d</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
<workunit><name>w1</name><app_name>d</app_name><rsc_fpops_est>5e12</rsc_fpops_est></workunit>
<result><name>r1</name><wu_name>w1</wu_name><report_deadline>8200</report_deadline></result>
<project><master_url>http://v/</master_url><project_name>V</project_name><available><frac>0.5</frac></available></project>
<app><name>e</name><non_cpu_intensive>1</non_cpu_intensive></app>
<app_version><app_name>e</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
<app><name>f</name></app>
<app_version><app_name>f</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
</client_state>`
	sc, err := ReadScenario(fstest.MapFS{"client_state.xml": {Data: []byte(cs)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	doc := sc.Doc
	var projects, apps, versions []string
	for _, p := range doc.Projects {
		projects = append(projects, p.Name)
	}
	for _, a := range sc.Apps {
		apps = append(apps, a.Project+"/"+a.Name)
	}
	for _, av := range doc.AppVersions {
		versions = append(versions, av.Name)
	}
	if diff := cmp.Diff([]string{"X", "V"}, projects); diff != "" {
		t.Errorf("projects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"X/a", "V/f"}, apps); diff != "" {
		t.Errorf("apps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"X/a/0", "V/f/0"}, versions); diff != "" {
		t.Errorf("app versions (-want +got):\n%s", diff)
	}
	if len(doc.Tasks) != 0 || len(doc.Apps) != 2 || len(sc.Servers) != 1 || sc.Servers[0].Project != "V" {
		t.Errorf("tasks %v, apps %v, servers %v: want W's task gone, 2 apps, V's server", doc.Tasks, doc.Apps, sc.Servers)
	}
	wantNotes := []string{
		`project "X": app_version 2 left out: <host_info> has no NVIDIA coprocessor`,
		`project "Z": app_version 1 left out: <host_info> has no ATI coprocessor`,
		`project "Z": result "rc" left out: app "c" has no usable app version`,
		`project "Y": app "b" left out: no usable app version`,
		`project "Z": app "c" left out: no usable app version`,
		`project "V": app "e" left out: non CPU intensive`,
		`project "Y": left out of the emulation: no app left`,
		`project "Z": left out of the emulation: no app left`,
		`project "W": left out of the emulation: non CPU intensive`,
	}
	if diff := cmp.Diff(wantNotes, sc.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// TestScenarioMoreCPUsThanTheHost: an app version that uses more CPUs than the host
// has (or than max_ncpus_pct leaves) runs in BOINC's emulator with the CPUs
// overcommitted, its speed scaled by CPUs ÷ avg_ncpus (cpu_scale in
// ACTIVE_TASK_SET::poll): the reader gives it the host's CPUs and that share of its
// speed (a GPU version keeps its speed: BOINC never scales a GPU job's). It was an
// error.
func TestScenarioMoreCPUsThanTheHost(t *testing.T) {
	cs := `<client_state><host_info><p_ncpus>2</p_ncpus><p_fpops>1e9</p_fpops>
<coprocs><coproc_ati><count>1</count><peak_flops>1e10</peak_flops></coproc_ati></coprocs></host_info>
<project><master_url>http://x/</master_url><project_name>X</project_name></project>
<app><name>a</name></app>
<app_version><app_name>a</app_name><plan_class>mt</plan_class><avg_ncpus>4</avg_ncpus><flops>4e9</flops></app_version>
<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
<app_version><app_name>a</app_name><avg_ncpus>3</avg_ncpus><flops>8e9</flops><coproc><type>ATI</type><count>1</count></coproc></app_version>
</client_state>`
	sc, err := ReadScenario(fstest.MapFS{"client_state.xml": {Data: []byte(cs)},
		"global_prefs.xml": {Data: []byte(`<global_preferences><max_ncpus_pct>50</max_ncpus_pct></global_preferences>`)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]float64
	for _, av := range sc.Doc.AppVersions {
		got = append(got, [2]float64{av.AvgNCPUs, av.Flops})
	}
	// One CPU left (50 % of 2): the mt version runs on it at 1/4 of 4e9.
	if diff := cmp.Diff([][2]float64{{1, 1e9}, {1, 1e9}, {1, 8e9}}, got); diff != "" {
		t.Errorf("avg_ncpus, flops (-want +got):\n%s", diff)
	}
	wantNotes := []string{
		`app version "X/a/0/mt" uses 4 CPUs, the host has 1: it runs on 1 at 1/4 of its speed`,
		`app version "X/a/0#2" uses 3 CPUs, the host has 1: it runs on 1`,
	}
	if diff := cmp.Diff(wantNotes, sc.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// TestScenarioExplicitDeadlines: BOINC's emulator gives every explicit result its own
// latency (report_deadline − received_time) from the start of the run (get_app_params:
// received_time = START_TIME, report_deadline = START_TIME + latency), however long ago
// it was received. The reader does the same from the latest received_time, where the
// run starts.
func TestScenarioExplicitDeadlines(t *testing.T) {
	cs := `<client_state><host_info><p_ncpus>1</p_ncpus><p_fpops>1e9</p_fpops></host_info>
<project><master_url>http://x/</master_url><project_name>X</project_name></project>
<app><name>a</name></app>
<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
<workunit><name>w1</name><app_name>a</app_name><rsc_fpops_est>5e12</rsc_fpops_est></workunit>
<workunit><name>w2</name><app_name>a</app_name><rsc_fpops_est>5e12</rsc_fpops_est></workunit>
<result><name>r1</name><wu_name>w1</wu_name><received_time>1000</received_time><report_deadline>8200</report_deadline></result>
<result><name>r2</name><wu_name>w2</wu_name><received_time>5000</received_time><report_deadline>6000</report_deadline></result>
</client_state>`
	sc, err := ReadScenario(fstest.MapFS{"client_state.xml": {Data: []byte(cs)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]float64
	for _, task := range sc.Doc.Tasks {
		got = append(got, [2]float64{task.ReceivedTime, task.ReportDeadline})
	}
	if diff := cmp.Diff([][2]float64{{5000, 12200}, {5000, 6000}}, got); diff != "" {
		t.Errorf("received, deadline (-want +got):\n%s", diff)
	}
	if sc.Apps[0].LatencyBound != 7200 {
		t.Errorf("latency bound %g, want the first result's 7200", sc.Apps[0].LatencyBound)
	}
}

// TestScenarioTimeStatsAsBOINC: BOINC's emulator ignores an on_frac, active_frac or
// gpu_active_frac of 0 or less or above 1 (CLIENT_TIME_STATS::parse: "bad value ...;
// ignoring", so 1), and a real client writes connected_frac -1 when it does not know;
// the emulator's process with -1 is connected all but one step of each period. Each
// reads as 1, with a note; they were errors. A connected_frac of 0 stays 0.
func TestScenarioTimeStatsAsBOINC(t *testing.T) {
	cs := `<client_state><host_info><p_ncpus>1</p_ncpus><p_fpops>1e9</p_fpops></host_info>
<time_stats><on_frac>0</on_frac><active_frac>1.5</active_frac><gpu_active_frac>0.5</gpu_active_frac><connected_frac>-1</connected_frac></time_stats>
<project><master_url>http://x/</master_url><project_name>X</project_name></project>
<app><name>a</name></app>
<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
</client_state>`
	sc, err := ReadScenario(fstest.MapFS{"client_state.xml": {Data: []byte(cs)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 0.5, ConnectedFrac: 1}, sc.Doc.Host.TimeStats); diff != "" {
		t.Errorf("time stats (-want +got):\n%s", diff)
	}
	wantNotes := []string{
		"time_stats: <on_frac> 0 read as 1",
		"time_stats: <active_frac> 1.5 read as 1",
		"time_stats: <connected_frac> -1 read as 1",
	}
	if diff := cmp.Diff(wantNotes, sc.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// TestScenarioParseOrder: the random processes BOINC's emulator makes while it reads
// client_state.xml, in the file's order: "" for <time_stats>, a project's name for its
// <available>, a project culled afterwards included; none of the host's without
// <time_stats>. ParseOrder itself is kept only where it is not the order implied
// without it (the host's first, then the servers in the state's order).
func TestScenarioParseOrder(t *testing.T) {
	head := `<client_state><host_info><p_ncpus>1</p_ncpus><p_fpops>1e9</p_fpops></host_info>
`
	x := `<project><master_url>http://x/</master_url><project_name>X</project_name><available><frac>0.5</frac></available></project>
<app><name>a</name></app>
<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
`
	culled := `<project><master_url>http://z/</master_url><project_name>Z</project_name><available><frac>0.7</frac></available></project>
`
	y := `<project><master_url>http://y/</master_url><project_name>Y</project_name></project>
<app><name>b</name></app>
<app_version><app_name>b</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
`
	ts := "<time_stats><on_frac>0.5</on_frac></time_stats>\n"
	for _, c := range []struct {
		name, body string
		want       []string
		kept, none bool // ParseOrder kept; NoTimeStats
	}{
		{"time_stats first", ts + x + y, []string{"", "X"}, false, false},
		{"a culled project's server", ts + x + culled + y, []string{"", "X", "Z"}, true, false},
		{"time_stats among the projects", x + ts + y, []string{"X", ""}, true, false},
		{"no time_stats", y + x, []string{"X"}, false, true},
		{"no process at all", y, []string{}, false, true},
	} {
		sc, err := ReadScenario(fstest.MapFS{"client_state.xml": {Data: []byte(head + c.body + "</client_state>")}}, "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if diff := cmp.Diff(c.want, sc.BOINCParseOrder()); diff != "" {
			t.Errorf("%s: parse order (-want +got):\n%s", c.name, diff)
		}
		if (sc.ParseOrder != nil) != c.kept || sc.NoTimeStats != c.none {
			t.Errorf("%s: ParseOrder %q, NoTimeStats %v; want it kept %v, NoTimeStats %v", c.name, sc.ParseOrder, sc.NoTimeStats, c.kept, c.none)
		}
	}
}

// TestScenarioCCConfigNCPUs: cc_config.xml's <options><ncpus> makes BOINC's client (and
// emulator) act as if the host had that many CPUs (set_n_usable_cpus), before
// max_ncpus_pct; the rest of cc_config.xml stays ignored.
func TestScenarioCCConfigNCPUs(t *testing.T) {
	cs := `<client_state><host_info><p_ncpus>2</p_ncpus><p_fpops>1e9</p_fpops></host_info>
<project><master_url>http://x/</master_url><project_name>X</project_name></project>
<app><name>a</name></app>
<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
</client_state>`
	for _, c := range []struct {
		cc, prefs string
		want      int
	}{
		{`<cc_config><log_flags><task/></log_flags><options><ncpus>8</ncpus></options></cc_config>`, "", 8},
		{`<cc_config><options><ncpus>8</ncpus></options></cc_config>`, `<global_preferences><max_ncpus_pct>50</max_ncpus_pct></global_preferences>`, 4},
		{`<cc_config><options><ncpus>-1</ncpus></options></cc_config>`, "", 2}, // BOINC's "not set"
		{`<cc_config><options><ncpus>0</ncpus></options></cc_config>`, "", 2},
	} {
		fsys := fstest.MapFS{"client_state.xml": {Data: []byte(cs)}, "cc_config.xml": {Data: []byte(c.cc)}}
		if c.prefs != "" {
			fsys["global_prefs.xml"] = &fstest.MapFile{Data: []byte(c.prefs)}
		}
		sc, err := ReadScenario(fsys, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Doc.Host.CPU().Instances; got != c.want {
			t.Errorf("%s %s: %d CPUs, want %d", c.cc, c.prefs, got, c.want)
		}
	}
	_, err := ReadScenario(fstest.MapFS{"client_state.xml": {Data: []byte(cs)},
		"cc_config.xml": {Data: []byte(`<cc_config><options><ncpus>two</ncpus></options></cc_config>`)}}, "sc")
	if want := `sc/cc_config.xml: <options>: <ncpus>: "two" is not a number`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestLoadScenarioNotADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "client_state.xml")
	if err := os.WriteFile(f, []byte("<client_state/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScenario(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("got %v, want a not-a-directory error", err)
	}
	if _, err := LoadScenario(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Errorf("a missing directory loaded")
	}
}

func FuzzScenario(f *testing.F) {
	f.Add([]byte(gpuScenario), []byte(`<global_preferences><max_ncpus_pct>50</max_ncpus_pct></global_preferences>`))
	data, err := os.ReadFile(filepath.Join(publicExample, "client_state.xml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, []byte(`<global_preferences/>`))
	f.Fuzz(func(t *testing.T, cs, prefs []byte) {
		fsys := fstest.MapFS{"client_state.xml": {Data: cs}, "global_prefs.xml": {Data: prefs}}
		sc, err := ReadScenario(fsys, "fz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fz/") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		if err := state.Validate(sc.Doc); err != nil {
			t.Errorf("scenario document is invalid: %v", err)
		}
		projects := map[string]bool{}
		for _, p := range sc.Doc.Projects {
			projects[p.Name] = true
		}
		for _, s := range sc.Servers {
			if !projects[s.Project] {
				t.Errorf("a server for %q, not a project of the document", s.Project)
			}
			projects[s.Project] = false // one server each
		}
	})
}
