package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
)

// The tables a case may change: a refused request changes none; a request the server
// answers (a duplicate or foreign report) updates the host's row but no result.
var (
	allTables    = []string{"host", "result", "workunit", "app", "app_version"}
	resultTables = []string{"result", "workunit"}
)

// advHosts is the state every adversarial case starts from: host A holds two jobs and
// has reported the first; host B holds one.
type advHosts struct {
	a, b         int64
	authA, authB string
	jobsA, jobsB []string
}

// TestAdversarial is the adversarial probe of issue 18 kept as a test: a hostile
// client's and a flaky network's requests, each answered with the right HTTP status,
// the database unchanged where it must be, and the server still answering afterwards,
// on SQLite and on MariaDB.
func TestAdversarial(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		const maxBody = 64 << 10
		e := start(t, dsn, server.Config{MaxBodyBytes: maxBody, ReadTimeout: 400 * time.Millisecond}, 4)
		var h advHosts
		h.a, h.authA = e.newHost(t, 1, 0)
		h.b, h.authB = e.newHost(t, 1, 0)
		rep, _ := e.post(t, &boincxml.SchedulerRequest{HostID: h.a, Authenticator: h.authA, CPUReqSecs: 2000, CPUReqInstances: 1})
		h.jobsA = names(rep.ResultsSent)
		rep, _ = e.post(t, &boincxml.SchedulerRequest{HostID: h.b, Authenticator: h.authB, CPUReqSecs: 1, CPUReqInstances: 1})
		h.jobsB = names(rep.ResultsSent)
		if len(h.jobsA) != 2 || len(h.jobsB) != 1 {
			t.Fatalf("setup: A holds %v, B %v", h.jobsA, h.jobsB)
		}
		if _, st := e.post(t, &boincxml.SchedulerRequest{HostID: h.a, Authenticator: h.authA,
			Results: []boincxml.ReportedResult{{Name: h.jobsA[0], FinalCPUTime: 100, State: boincxml.ResultFilesUploaded}}}); st != 200 {
			t.Fatalf("setup report: status %d", st)
		}
		authed := func(inner string) string {
			return fmt.Sprintf("<scheduler_request><hostid>%d</hostid><authenticator>%s</authenticator>%s</scheduler_request>", h.a, h.authA, inner)
		}
		report := func(fields string) string {
			return authed("<result><name>" + h.jobsA[1] + "</name>" + fields + "</result>")
		}
		for _, c := range []struct {
			name      string
			body      string                           // POSTed to /scheduler, unless send is set
			send      func(t *testing.T) (int, string) // the case's own exchange
			status    int
			want      string   // in the reply's message
			unchanged []string // tables that must not change
		}{
			// Identity.
			{name: "hostid without authenticator", body: fmt.Sprintf("<scheduler_request><hostid>%d</hostid></scheduler_request>", h.a),
				status: 200, want: "the request has no authenticator", unchanged: allTables},
			{name: "foreign authenticator", body: "<scheduler_request><authenticator>0123456789abcdef0123456789abcdef</authenticator></scheduler_request>",
				status: 200, want: "unknown authenticator", unchanged: allTables},
			{name: "another host's authenticator", body: fmt.Sprintf("<scheduler_request><hostid>%d</hostid><authenticator>%s</authenticator></scheduler_request>", h.a, h.authB),
				status: 200, want: "wrong authenticator", unchanged: allTables},
			{name: "SQL in the authenticator", body: "<scheduler_request><authenticator>' OR '1'='1</authenticator></scheduler_request>",
				status: 200, want: "unknown authenticator", unchanged: allTables},
			{name: "no account key", body: "<scheduler_request/>",
				status: 200, want: "Invalid or missing account key", unchanged: allTables},
			{name: "no account key, the whole queue on 65,536 CPUs", body: "<scheduler_request><work_req_seconds>100000</work_req_seconds><host_info><p_ncpus>65536</p_ncpus></host_info></scheduler_request>",
				status: 200, want: "Invalid or missing account key", unchanged: allTables},
			// XML attacks and garbage.
			{name: "XXE", body: `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><scheduler_request><platform_name>&x;</platform_name></scheduler_request>`,
				status: 400, want: "bad scheduler request", unchanged: allTables},
			{name: "entity bomb", body: `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><scheduler_request><platform_name>&c;</platform_name></scheduler_request>`,
				status: 400, want: "bad scheduler request", unchanged: allTables},
			{name: "garbage", body: "\x00\x01\x02garbage\xff\xfe", status: 400, want: "bad scheduler request", unchanged: allTables},
			{name: "empty body", body: "", status: 400, want: "empty request", unchanged: allTables},
			{name: "wrong root", body: "<scheduler_reply/>", status: 400, want: "bad scheduler request", unchanged: allTables},
			{name: "trailing data", body: "<scheduler_request/><scheduler_request/>", status: 400, want: "data after </scheduler_request>", unchanged: allTables},
			{name: "oversized body", body: "<scheduler_request>" + strings.Repeat("<x/>", maxBody/4) + "</scheduler_request>",
				status: 413, want: "request body larger than", unchanged: allTables},
			{name: "oversized chunked body", send: func(t *testing.T) (int, string) {
				body := io.MultiReader(strings.NewReader("<scheduler_request>"), strings.NewReader(strings.Repeat("<x/>", maxBody)))
				return e.postReader(t, struct{ io.Reader }{body}) // no length: sent chunked
			}, status: 413, want: "request body larger than", unchanged: allTables},
			{name: "slow body", send: func(t *testing.T) (int, string) {
				return slowBody(t, e.url)
			}, status: 0, unchanged: allTables},
			// Numbers and strings the engines would store differently (issue 18, items 4, 5).
			{name: "NaN on_frac", body: "<scheduler_request><time_stats><on_frac>NaN</on_frac></time_stats></scheduler_request>",
				status: 400, want: "time_stats.on_frac: must be a number in [0, 1], got NaN", unchanged: allTables},
			{name: "Inf active_frac", body: authed("<time_stats><active_frac>Inf</active_frac></time_stats>"),
				status: 400, want: "time_stats.active_frac", unchanged: allTables},
			{name: "negative connected_frac", body: authed("<time_stats><connected_frac>-5</connected_frac></time_stats>"),
				status: 400, want: "time_stats.connected_frac", unchanged: allTables},
			{name: "huge on_frac", body: authed("<time_stats><on_frac>1e308</on_frac></time_stats>"),
				status: 400, want: "time_stats.on_frac", unchanged: allTables},
			{name: "long platform_name", body: "<scheduler_request><platform_name>" + strings.Repeat("p", 255) + "</platform_name></scheduler_request>",
				status: 400, want: "platform_name: longer than 254 bytes", unchanged: allTables},
			{name: "long coprocs", body: "<scheduler_request><host_info><coprocs>" + strings.Repeat("<coproc><type>"+strings.Repeat("g", 60)+"</type><count>1</count></coproc>", 5) + "</coprocs></host_info></scheduler_request>",
				status: 400, want: "coprocs: longer than 254 bytes", unchanged: allTables},
			{name: "invalid UTF-8 name", body: "<scheduler_request><platform_name>\xc3\x28</platform_name></scheduler_request>",
				status: 400, want: "bad scheduler request", unchanged: allTables},
			{name: "client_state -7", body: report("<state>-7</state>"), status: 400, want: "result[0].state", unchanged: allTables},
			{name: "exit_status 2^63-1", body: report("<exit_status>9223372036854775807</exit_status>"), status: 400, want: "result[0].exit_status", unchanged: allTables},
			{name: "cpu_time 1e308", body: report("<final_cpu_time>1e308</final_cpu_time>"), status: 400, want: "result[0].final_cpu_time", unchanged: allTables},
			{name: "long result name", body: authed("<result><name>" + strings.Repeat("r", 300) + "</name></result>"), status: 400, want: "result[0].name", unchanged: allTables},
			// Reports the server answers but must not record.
			{name: "duplicate report", body: authed("<result><name>" + h.jobsA[0] + "</name><final_cpu_time>1</final_cpu_time></result>"),
				status: 200, unchanged: resultTables},
			{name: "foreign report", body: authed("<result><name>" + h.jobsB[0] + "</name><final_cpu_time>1</final_cpu_time></result>"),
				status: 200, want: "was not sent to this host", unchanged: resultTables},
			{name: "SQL in a result name", body: authed("<result><name>x'; DROP TABLE result; --</name></result>"),
				status: 200, want: "no result named", unchanged: resultTables},
			{name: "upload header without end", send: func(t *testing.T) (int, string) {
				body := "<data_server_request>\n<file_upload>" + strings.Repeat("x", 4<<20)
				resp, err := http.Post(e.url+server.UploadPath, "text/plain", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}, status: 200, want: "request header longer than", unchanged: allTables},
			{name: "GET", send: func(t *testing.T) (int, string) {
				resp, err := http.Get(e.url + "scheduler")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode, ""
			}, status: 405, unchanged: allTables},
		} {
			t.Run(c.name, func(t *testing.T) {
				before := snapshot(t, e.st, c.unchanged)
				var status int
				var msg string
				if c.send != nil {
					status, msg = c.send(t)
				} else {
					status, msg = e.postReader(t, strings.NewReader(c.body))
				}
				if status != c.status || !strings.Contains(msg, c.want) {
					t.Errorf("status %d, message %q; want %d, %q", status, msg, c.status, c.want)
				}
				if after := snapshot(t, e.st, c.unchanged); after != before {
					t.Errorf("the database changed:\nbefore %s\nafter  %s", before, after)
				}
				// The server still answers.
				if _, st := e.post(t, &boincxml.SchedulerRequest{HostID: h.b, Authenticator: h.authB}); st != 200 {
					t.Errorf("after the case, a good request gets status %d", st)
				}
			})
		}
	})
}

// postReader posts body to /scheduler and returns the status and the reply's messages;
// a reply that is not XML is returned as text.
func (e *env) postReader(t *testing.T, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+"scheduler", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/xml")
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	rep, err := boincxml.ParseSchedulerReply(bytes.NewReader(b))
	if err != nil {
		return resp.StatusCode, string(b)
	}
	return resp.StatusCode, messages(rep)
}

// slowBody sends a request whose body never arrives in full and waits for the server
// to drop the connection at its read time-out; status 0 means dropped without an answer.
func slowBody(t *testing.T, url string) (int, string) {
	conn := dialServer(t, url)
	fmt.Fprintf(conn, "POST /scheduler HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n<scheduler_request>")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Errorf("the server kept a stalled body open: %v", err)
	}
	if s := string(b); strings.HasPrefix(s, "HTTP/1.1 ") && len(s) >= 12 {
		var code int
		fmt.Sscanf(s[9:12], "%d", &code)
		if code == 200 {
			t.Errorf("a cut-off body was answered 200")
		}
		return 0, s // an error status for a body that never came is as good as silence
	}
	return 0, ""
}

// snapshot renders every row of the tables, in id order, as one string.
func snapshot(t *testing.T, st *store.Store, tables []string) string {
	t.Helper()
	var b strings.Builder
	for _, table := range tables {
		order := "id"
		rows, err := st.DB.QueryContext(context.Background(), "SELECT * FROM "+table+" ORDER BY "+order)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		for i := range vals {
			vals[i] = new([]byte)
		}
		fmt.Fprintf(&b, "%s:", table)
		for rows.Next() {
			if err := rows.Scan(vals...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				fmt.Fprintf(&b, " %q", *v.(*[]byte))
			}
			b.WriteString(";")
		}
		rows.Close()
		b.WriteString("\n")
	}
	return b.String()
}
