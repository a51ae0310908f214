package boincxml

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const sampleRequest = `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scheduler_request>
  <authenticator>abc123</authenticator>
  <hostid>7</hostid>
  <rpc_seqno>12</rpc_seqno>
  <platform_name>x86_64-pc-linux-gnu</platform_name>
  <core_client_major_version>7</core_client_major_version>
  <work_req_seconds>3600</work_req_seconds>
  <cpu_req_secs>1800</cpu_req_secs>
  <cpu_req_instances>1</cpu_req_instances>
  <some_future_tag><nested>1</nested></some_future_tag>
  <coprocs>
    <coproc_cuda><count>1</count><peak_flops>5e12</peak_flops><req_secs>3600</req_secs><req_instances>1</req_instances></coproc_cuda>
    <coproc><type>apple_gpu</type><count>2</count></coproc>
    <not_a_coproc>x</not_a_coproc>
  </coprocs>
  <host_info>
    <p_ncpus>4</p_ncpus>
    <p_fpops>3e9</p_fpops>
    <p_vendor>ignored</p_vendor>
    <coprocs><coproc_ati><count>1</count></coproc_ati></coprocs>
  </host_info>
  <time_stats><on_frac>0.9</on_frac><connected_frac>1</connected_frac><active_frac>0.8</active_frac></time_stats>
  <result>
    <name>wu_1_0</name>
    <final_cpu_time>123.5</final_cpu_time>
    <final_elapsed_time>130</final_elapsed_time>
    <exit_status>0</exit_status>
    <state>5</state>
    <stderr_out>lots of text</stderr_out>
  </result>
  <other_results><other_result><name>wu_2_0</name></other_result></other_results>
  <file_info><name>batch1_file3</name></file_info>
</scheduler_request>
`

func TestParseSchedulerRequest(t *testing.T) {
	got, err := ParseSchedulerRequest(strings.NewReader(sampleRequest))
	if err != nil {
		t.Fatal(err)
	}
	want := &SchedulerRequest{
		Authenticator: "abc123", HostID: 7, RPCSeqno: 12, PlatformName: "x86_64-pc-linux-gnu",
		CoreClientMajorVersion: 7, WorkReqSeconds: 3600, CPUReqSecs: 1800, CPUReqInstances: 1,
		Coprocs: Coprocs{
			{Type: "NVIDIA", Count: 1, PeakFlops: 5e12, ReqSecs: 3600, ReqInstances: 1},
			{Type: "apple_gpu", Count: 2},
		},
		HostInfo:     HostInfo{PNCPUs: 4, PFpops: 3e9, Coprocs: Coprocs{{Type: "ATI", Count: 1}}},
		TimeStats:    &TimeStats{OnFrac: 0.9, ConnectedFrac: 1, ActiveFrac: 0.8},
		Results:      []ReportedResult{{Name: "wu_1_0", FinalCPUTime: 123.5, FinalElapsedTime: 130, State: 5, StderrOut: &InnerXML{Text: "lots of text"}}},
		OtherResults: []NameRef{{"wu_2_0"}},
		FileInfos:    []NameRef{{"batch1_file3"}},
	}
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(SchedulerRequest{}, "XMLName")); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	wantReq := []ResourceRequest{{"NVIDIA", 3600, 1}, {"cpu", 1800, 1}}
	if d := cmp.Diff(wantReq, got.ResourceRequests()); d != "" {
		t.Errorf("ResourceRequests (-want +got)\n%s", d)
	}
}

func TestResourceRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  SchedulerRequest
		want []ResourceRequest
	}{
		{"nothing", SchedulerRequest{}, nil},
		{"old client: only work_req_seconds, any resource", SchedulerRequest{WorkReqSeconds: 500}, []ResourceRequest{{AnyResource, 500, 0}}},
		{"GPU only: no CPU jobs", SchedulerRequest{WorkReqSeconds: 100, Coprocs: Coprocs{{Type: "NVIDIA", ReqSecs: 100}}}, []ResourceRequest{{"NVIDIA", 100, 0}}},
		{"CPU instances only", SchedulerRequest{CPUReqInstances: 2}, []ResourceRequest{{"cpu", 0, 2}}},
		{"zero coproc request ignored", SchedulerRequest{CPUReqSecs: 10, WorkReqSeconds: 10, Coprocs: Coprocs{{Type: "ATI", Count: 1}}}, []ResourceRequest{{"cpu", 10, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.req.ResourceRequests()); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

func TestParseSchedulerRequestErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty request: want <scheduler_request>"},
		{"<scheduler_request><hostid>1</hostid>", "malformed XML at line 1: unexpected EOF"},
		{"<scheduler_reply></scheduler_reply>", "scheduler_request: expected element type <scheduler_request> but have <scheduler_reply>"},
		{"<scheduler_request><cpu_req_secs>lots</cpu_req_secs></scheduler_request>", `scheduler_request: cpu_req_secs: want a number, got "lots"`},
		{"<scheduler_request><cpu_req_secs>-5</cpu_req_secs></scheduler_request>", "scheduler_request: cpu_req_secs: must be a number in [0, 1e+10], got -5"},
		{"<scheduler_request><work_req_seconds>NaN</work_req_seconds></scheduler_request>", "scheduler_request: work_req_seconds: must be a number in [0, 1e+10], got NaN"},
		{"<scheduler_request><coprocs><coproc_cuda><req_secs>-1</req_secs></coproc_cuda></coprocs></scheduler_request>", "scheduler_request: coprocs[0](NVIDIA).req_secs: must be a number in [0, 1e+10], got -1"},
		{"<scheduler_request><coprocs><coproc><count>1</count></coproc></coprocs></scheduler_request>", "scheduler_request: coproc: missing <type>"},
		{"<scheduler_request><result><exit_status>0</exit_status></result></scheduler_request>", "scheduler_request: result[0].name: missing"},
		{"<scheduler_request><hostid>x</hostid></scheduler_request>", `scheduler_request: hostid: want a whole number, got "x"`},
		// Issue 18: every numeric field finite and in BOINC's range, every string within its
		// column, nothing after the root element.
		{"<scheduler_request><time_stats><on_frac>NaN</on_frac></time_stats></scheduler_request>", "scheduler_request: time_stats.on_frac: must be a number in [0, 1], got NaN"},
		{"<scheduler_request><time_stats><active_frac>Inf</active_frac></time_stats></scheduler_request>", "scheduler_request: time_stats.active_frac: must be a number in [0, 1], got +Inf"},
		{"<scheduler_request><time_stats><connected_frac>-5</connected_frac></time_stats></scheduler_request>", "scheduler_request: time_stats.connected_frac: must be a number in [-1, 1], got -5"},
		{"<scheduler_request><time_stats><gpu_active_frac>1e308</gpu_active_frac></time_stats></scheduler_request>", "scheduler_request: time_stats.gpu_active_frac: must be a number in [0, 1], got 1e+308"},
		{"<scheduler_request><resource_share_fraction>2</resource_share_fraction></scheduler_request>", "scheduler_request: resource_share_fraction: must be a number in [0, 1], got 2"},
		{"<scheduler_request><host_info><p_fpops>-Inf</p_fpops></host_info></scheduler_request>", "scheduler_request: host_info.p_fpops: must be a number in [0, 1e+17], got -Inf"},
		{"<scheduler_request><result><name>r</name><state>-7</state></result></scheduler_request>", "scheduler_request: result[0].state: must be a whole number in [0, 7], got -7"},
		{"<scheduler_request><result><name>r</name><exit_status>9223372036854775807</exit_status></result></scheduler_request>", "scheduler_request: result[0].exit_status: must be a whole number in [-2147483648, 2147483647], got 9223372036854775807"},
		{"<scheduler_request><result><name>r</name><final_cpu_time>1e308</final_cpu_time></result></scheduler_request>", "scheduler_request: result[0].final_cpu_time: must be a number in [0, 1e+10], got 1e+308"},
		{"<scheduler_request><platform_name>" + strings.Repeat("x", 255) + "</platform_name></scheduler_request>", "scheduler_request: platform_name: longer than 254 bytes (255)"},
		{"<scheduler_request><authenticator>" + strings.Repeat("a", 3<<20) + "</authenticator></scheduler_request>", "scheduler_request: authenticator: longer than 254 bytes (3145728)"},
		{"<scheduler_request><result><name>" + strings.Repeat("r", 300) + "</name></result></scheduler_request>", "scheduler_request: result[0].name: longer than 254 bytes (300)"},
		{"<scheduler_request><coprocs><coproc><type>" + strings.Repeat("g", 65) + "</type><count>1</count></coproc></coprocs></scheduler_request>", "scheduler_request: coprocs[0].type: longer than 64 bytes (65)"},
		{"<scheduler_request><host_info><coprocs>" + strings.Repeat("<coproc><type>"+strings.Repeat("g", 60)+"</type><count>1</count></coproc>", 5) + "</coprocs></host_info></scheduler_request>", "scheduler_request: coprocs: longer than 254 bytes (324)"},
		{"<scheduler_request><host_info><p_ncpus>-1</p_ncpus></host_info></scheduler_request>", "scheduler_request: host_info.p_ncpus: must be a whole number in [0, 65536], got -1"},
		{"<scheduler_request><rpc_seqno>-3</rpc_seqno></scheduler_request>", "scheduler_request: rpc_seqno: must be a whole number in [0, 9223372036854775807], got -3"},
		{"<scheduler_request></scheduler_request><scheduler_request></scheduler_request>", "data after </scheduler_request>"},
		{"<scheduler_request></scheduler_request>trailing", "data after </scheduler_request>"},
		{"<scheduler_request>" + strings.Repeat("<alt_platform><name>p</name></alt_platform>", 17) + "</scheduler_request>", "scheduler_request: alt_platform: more than 16 (17)"},
		{"<scheduler_request><alt_platform><name>" + strings.Repeat("p", 255) + "</name></alt_platform></scheduler_request>", "scheduler_request: alt_platform[0].name: longer than 254 bytes (255)"},
	} {
		_, err := ParseSchedulerRequest(strings.NewReader(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseSchedulerRequest(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestRequestRoundTrip(t *testing.T) {
	in, err := ParseSchedulerRequest(strings.NewReader(sampleRequest))
	if err != nil {
		t.Fatal(err)
	}
	b, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseSchedulerRequest(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("round trip (-in +out)\n%s\n%s", d, b)
	}
}

func TestReplyRoundTrip(t *testing.T) {
	rep := &SchedulerReply{
		SchedulerVersion: SchedulerVersion, ProjectName: "test", HostID: 3, Authenticator: "k",
		Messages: []Message{{PriorityLow, "hello"}}, RequestDelay: 60,
		ResultAcks:  []NameRef{{"r1"}},
		Apps:        []ReplyApp{{"a"}},
		AppVersions: []ReplyAppVersion{{AppName: "a", VersionNum: 1, AvgNCPUs: 0.5, Coproc: &ReplyCoproc{"NVIDIA", 0.5}}},
		Workunits:   []ReplyWorkunit{{Name: "w", AppName: "a", RscFpopsEst: 1e12, RscFpopsBound: 1e13}},
		ResultsSent: []ReplyResult{{Name: "w_0", WUName: "w", ReportDeadline: 1.7e9, VersionNum: 1}},
		NoRscApps:   []string{"ATI"},
	}
	b, err := rep.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSchedulerReply(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(rep, got, cmpopts.IgnoreFields(SchedulerReply{}, "XMLName")); d != "" {
		t.Errorf("(-want +got)\n%s\n%s", d, b)
	}
}

// FuzzParseSchedulerRequest checks that no input crashes the parser and that whatever
// it accepts survives a marshal/parse round trip unchanged.
func FuzzParseSchedulerRequest(f *testing.F) {
	for _, s := range []string{
		sampleRequest, "", "<scheduler_request/>",
		"<scheduler_request><work_req_seconds>1e300</work_req_seconds></scheduler_request>",
		"<scheduler_request><coprocs><coproc><type>x</type></coproc></coprocs></scheduler_request>",
		"<scheduler_request><result><name>a</name></result><result><name>b</name></result></scheduler_request>",
		"<scheduler_request><hostid>-1</hostid></scheduler_request>",
		"<scheduler_request><hostid>99999999999999999999</hostid></scheduler_request>",
		"<scheduler_request><cpu_req_secs>1e400</cpu_req_secs></scheduler_request>",
		"<?xml version=\"1.0\"?><scheduler_request><authenticator>&amp;&lt;</authenticator></scheduler_request>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		req, err := ParseSchedulerRequest(strings.NewReader(s))
		if err != nil {
			if strings.Contains(err.Error(), "strconv.") {
				t.Fatalf("a refusal that does not name its element: %v", err)
			}
			return
		}
		_ = req.ResourceRequests()
		b, err := req.Marshal()
		if err != nil {
			// Strings with characters XML cannot carry are accepted on input
			// (encoding/xml is lenient) but not written; that is not a parser crash.
			return
		}
		again, err := ParseSchedulerRequest(strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("re-parse of marshalled request failed: %v\n%s", err, b)
		}
		_ = again
	})
}

// TestBOINCClientIdentity: what a BOINC client says about its platforms and the
// project's code-signing key it holds (its own tags: <alt_platform>, <code_sign_key>).
func TestBOINCClientIdentity(t *testing.T) {
	req, err := ParseSchedulerRequest(strings.NewReader(`<scheduler_request>
    <authenticator>0123</authenticator>
    <hostid>0</hostid>
    <platform_name>x86_64-pc-linux-gnu</platform_name>
    <alt_platform>
        <name>i686-pc-linux-gnu</name>
    </alt_platform>
    <code_sign_key>
1024
abcd
.
</code_sign_key>
</scheduler_request>`))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"x86_64-pc-linux-gnu", "i686-pc-linux-gnu"}, req.Platforms()); d != "" {
		t.Error(d)
	}
	if strings.Join(strings.Fields(req.CodeSignKey), " ") != "1024 abcd ." {
		t.Errorf("code_sign_key %q", req.CodeSignKey)
	}
}

// TestReplyFlags: boolean elements are written <tag>1</tag>, which BOINC clients
// read (they reject the <tag></tag> an empty struct would make), and read back.
func TestReplyFlags(t *testing.T) {
	rep := &SchedulerReply{FileInfos: []ReplyFileInfo{{Name: "f", Executable: true}}, CodeSignKey: &RawText{Text: "\n1024\nab\n.\n"}}
	b, err := rep.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<executable>1</executable>", "<code_sign_key>\n1024\nab\n.\n</code_sign_key>"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("reply lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "sticky") || strings.Contains(string(b), "project_is_down") {
		t.Errorf("false flags written:\n%s", b)
	}
	back, err := ParseSchedulerReply(strings.NewReader(string(b) + ""))
	if err != nil || !back.FileInfos[0].Executable || back.FileInfos[0].Sticky {
		t.Fatalf("read back: %+v, %v", back, err)
	}
}

// FuzzParseSchedulerReply: a client (brpc) parses replies from any server; no reply may
// crash the parser, and what it accepts marshals and parses again.
func FuzzParseSchedulerReply(f *testing.F) {
	rep := &SchedulerReply{SchedulerVersion: SchedulerVersion, ProjectName: "p", HostID: 3, Authenticator: "k",
		Messages: []Message{{PriorityLow, "hi"}}, RequestDelay: 60, ResultAcks: []NameRef{{"r1"}},
		Workunits: []ReplyWorkunit{{Name: "w", AppName: "a", RscFpopsEst: 1e12}}, ResultsSent: []ReplyResult{{Name: "w_0", WUName: "w"}}}
	if b, err := rep.Marshal(); err == nil {
		f.Add(string(b))
	}
	for _, s := range []string{"", "<scheduler_reply/>", "<scheduler_reply><request_delay>NaN</request_delay></scheduler_reply>", "<scheduler_reply><result_ack><name>x</name></result_ack>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rep, err := ParseSchedulerReply(strings.NewReader(s))
		if err != nil {
			return
		}
		b, err := rep.Marshal()
		if err != nil {
			return // characters XML cannot carry, accepted leniently on input
		}
		if _, err := ParseSchedulerReply(strings.NewReader(string(b))); err != nil {
			t.Fatalf("re-parse of a marshalled reply failed: %v\n%s", err, b)
		}
	})
}

// The output digest is a bkit extension inside <result>: read when present, empty
// when absent, written back only when set, and bounded.
func TestOutputDigest(t *testing.T) {
	in := `<scheduler_request><result><name>a</name><bkit_output_digest>sha256:00ff</bkit_output_digest></result>` +
		`<result><name>b</name></result></scheduler_request>`
	req, err := ParseSchedulerRequest(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if req.Results[0].OutputDigest != "sha256:00ff" || req.Results[1].OutputDigest != "" {
		t.Errorf("digests %q, %q", req.Results[0].OutputDigest, req.Results[1].OutputDigest)
	}
	b, _ := req.Marshal()
	if n := strings.Count(string(b), "<bkit_output_digest>"); n != 1 {
		t.Errorf("%d digests written, want 1:\n%s", n, b)
	}
	long := `<scheduler_request><result><name>a</name><bkit_output_digest>` + strings.Repeat("x", 255) + `</bkit_output_digest></result></scheduler_request>`
	if _, err := ParseSchedulerRequest(strings.NewReader(long)); err == nil || !strings.Contains(err.Error(), "result[0].bkit_output_digest: longer than 254 bytes") {
		t.Errorf("long digest: %v", err)
	}
}

// TestParseStderrControlCharacters: a BOINC client copies a task's stderr into
// <stderr_out> unescaped, so an app printing a colour escape (ESC, as in this report
// Debian's BOINC client 7.20.5 sent for an app writing "\x1b[31merror:\x1b[0m ..."), or
// a byte of another charset, would make the request malformed XML: the host could then
// never report again. Those characters become U+FFFD there, and only there.
func TestParseStderrControlCharacters(t *testing.T) {
	body := "<scheduler_request>\n<result>\n    <name>esc_4_0</name>\n    <exit_status>1</exit_status>\n    <state>3</state>\n" +
		"<stderr_out>\n<core_client_version>7.20.5</core_client_version>\n<![CDATA[\n<message>\nprocess exited with code 1 (0x1, -255)</message>\n" +
		"<stderr_txt>\n\x1b[31merror:\x1b[0m something failed \xe9t\xe9\n\n</stderr_txt>\n]]>\n</stderr_out>\n</result>\n" +
		"<platform_name>x86_64-pc-linux-gnu</platform_name>\n</scheduler_request>\n"
	req, err := ParseSchedulerRequest(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Results) != 1 || req.Results[0].StderrOut == nil ||
		!strings.Contains(req.Results[0].StderrOut.Text, "\uFFFD[31merror:\uFFFD[0m something failed \uFFFDt\uFFFD") {
		t.Errorf("results: %+v", req.Results)
	}
	// Outside <stderr_out> nothing is mended: a control character is still an error.
	if _, err := ParseSchedulerRequest(strings.NewReader("<scheduler_request><platform_name>x\x1by</platform_name></scheduler_request>")); err == nil {
		t.Error("a control character in platform_name was accepted")
	}
}

// TestNumbersOutOfRange: a number that does not parse, or is out of its type's range,
// is refused with a message that names its element, not strconv's (issue 28 item 13).
func TestNumbersOutOfRange(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"<hostid>99999999999999999999</hostid>", "scheduler_request: hostid: want a whole number in range, got \"99999999999999999999\""},
		{"<rpc_seqno>-99999999999999999999</rpc_seqno>", "scheduler_request: rpc_seqno: want a whole number in range"},
		{"<cpu_req_secs>1e400</cpu_req_secs>", "scheduler_request: cpu_req_secs: want a number in range, got \"1e400\""},
		{"<result><name>a</name><state>5</state></result><result><name>b</name><state>99999999999999999999</state></result>",
			"scheduler_request: result[1].state: want a whole number in range"},
		{"<result><name>a</name><state>x</state></result>", "scheduler_request: result.state: want a whole number, got \"x\""},
		{"<host_info><p_fpops>1e999</p_fpops></host_info>", "scheduler_request: host_info.p_fpops: want a number in range"},
	} {
		_, err := ParseSchedulerRequest(strings.NewReader("<scheduler_request>" + c.body + "</scheduler_request>"))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "strconv") {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
}
