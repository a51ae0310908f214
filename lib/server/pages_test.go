package server_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
)

// hostileNames are names volunteers could choose: markup, quotes, right-to-left text
// and a right-to-left override that would turn the rest of a line around.
var hostileNames = []string{
	`<script>alert("pwned")</script>`,
	`O'Brien "Bob" & <b>co</b>`,
	"\u202Egnp.exe\u202C mallory",
	"مستخدم عربي",
}

// CheckHTML fails t unless body is well-formed HTML: every element closed, in order
// (void elements such as <meta> need no end tag), attributes quoted and entities
// known. It is strict about what bkit's templates write; a browser forgives more.
func CheckHTML(t testing.TB, what, body string) {
	t.Helper()
	if err := checkHTML(body); err != nil {
		t.Errorf("%s: HTML does not validate: %v", what, err)
	}
}

// voidElements need no end tag (HTML's void elements).
var voidElements = map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true}

func checkHTML(body string) error {
	d := xml.NewDecoder(strings.NewReader(body))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	var stack []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A void element's start tag without "/>" is the one thing HTML allows and
			// XML does not: the decoder reports it as an end tag that does not match.
			line, _ := d.InputPos()
			return fmt.Errorf("line %d: %v (open: %v)", line, err, stack)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok.Name.Local)
		case xml.EndElement:
			if len(stack) == 0 || stack[len(stack)-1] != tok.Name.Local {
				return fmt.Errorf("</%s> closes %v", tok.Name.Local, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed at the end: %v", stack)
	}
	return nil
}

// voidFix makes a page's void elements self-closing so that checkHTML's XML decoder
// reads them: <meta charset="utf-8"> becomes <meta charset="utf-8"/>.
func voidFix(body string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(body, '<')
		if i < 0 {
			b.WriteString(body)
			return b.String()
		}
		b.WriteString(body[:i])
		body = body[i:]
		end := strings.IndexByte(body, '>')
		if end < 0 {
			b.WriteString(body)
			return b.String()
		}
		tag := body[:end]
		name := strings.ToLower(strings.FieldsFunc(tag[1:], func(r rune) bool { return r == ' ' || r == '/' || r == '\n' })[0])
		if voidElements[name] && !strings.HasSuffix(tag, "/") {
			tag += "/"
		}
		b.WriteString(tag + ">")
		body = body[end+1:]
	}
}

func TestCheckHTML(t *testing.T) {
	for _, c := range []struct {
		html string
		ok   bool
	}{
		{`<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><p>a &amp; b</p></body></html>`, true},
		{`<html><body><p>unclosed</body></html>`, false},
		{`<html><body><table><tr><td>x</tr></table></body></html>`, false},
		{`<html><body><div></div>`, false},
		{`<html><body><p class=x>unquoted</p></body></html>`, false},
	} {
		err := checkHTML(voidFix(c.html))
		if (err == nil) != c.ok {
			t.Errorf("%s: error %v, want ok %v", c.html, err, c.ok)
		}
	}
}

// get fetches url and returns its status and body.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// volunteers makes users with hostile names, each with hosts of known credit and last
// contact (set as the validator and scheduler would have), and returns the users'
// ids.
func volunteers(t testing.TB, st *store.Store) []int64 {
	t.Helper()
	ctx := context.Background()
	now := float64(testNow.Unix())
	var ids []int64
	for i, name := range hostileNames {
		u, err := st.AddUser(ctx, name, fmt.Sprintf("u%d@example.org", i), 1)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
		total, avg := 1000.0*float64(i+1)+0.125, 10.0*float64(len(hostileNames)-i)
		if _, err := st.DB.Exec(`UPDATE user SET total_credit=?, expavg_credit=?, expavg_time=? WHERE id=?`, total, avg, now-86400, u.ID); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 2; k++ {
			if _, err := st.DB.Exec(`INSERT INTO host (create_time, userid, authenticator, rpc_time, platform_name, p_ncpus, total_credit, expavg_credit, expavg_time)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, 1, u.ID, fmt.Sprintf("auth_%d_%d", i, k), now-3600*float64(k+1), name+" platform", 4, total/2, avg/2, now-86400); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ids
}

// formatCredit is the pages' credit format, for the expected values: two decimals,
// thousands separators.
func formatCredit(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	whole, frac, _ := strings.Cut(s, ".")
	var out []byte
	for i := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, whole[i])
	}
	return string(out) + "." + frac
}

// TestVolunteerPages: a user's page, top users and top hosts show what the database
// holds (names, credit, decayed recent average, hosts and their last contact), escape
// every hostile name, and validate.
func TestVolunteerPages(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := start(t, dsn, server.Config{ProjectName: `Proj <"x">`}, 0)
		ids := volunteers(t, e.st)
		now := float64(testNow.Unix())
		for i, id := range ids {
			status, body := get(t, fmt.Sprintf("%sshow_user.php?userid=%d", e.url, id))
			if status != 200 {
				t.Fatalf("user %d: status %d: %s", id, status, body)
			}
			CheckHTML(t, "user page", voidFix(body))
			u, err := e.st.VolunteerUser(context.Background(), id, server.UserPageHosts)
			if err != nil {
				t.Fatal(err)
			}
			escaped := xmlEscape(hostileNames[i])
			avg, _ := credit.UpdateAverage(now, 0, 0, u.ExpavgCredit, u.ExpavgTime)
			for _, want := range []string{
				`<td id="user-name"><bdi>` + escaped + `</bdi></td>`,
				`<td class="n" id="user-total">` + formatCredit(u.TotalCredit) + `</td>`,
				`<td class="n" id="user-expavg">` + formatCredit(avg) + `</td>`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("user %d's page lacks %s", id, want)
				}
			}
			if len(u.Hosts) != 2 {
				t.Fatalf("user %d: %d hosts", id, len(u.Hosts))
			}
			for _, h := range u.Hosts {
				if !strings.Contains(body, fmt.Sprintf(`<tr><td class="n">%d</td><td class="n">%s</td>`, h.ID, formatCredit(h.TotalCredit))) {
					t.Errorf("user %d's page lacks host %d with total credit %s", id, h.ID, formatCredit(h.TotalCredit))
				}
			}
			if strings.Contains(body, "<script>") || strings.Contains(body, "<b>co") || strings.Contains(body, "\u202E") && !strings.Contains(body, "<bdi>\u202E") {
				t.Errorf("user %d's page has a name unescaped or unisolated", id)
			}
		}
		for _, path := range []string{"top_users.php", "top_users.php?sort_by=total_credit", "top_hosts.php", "top_hosts.php?sort_by=total_credit&offset=1"} {
			status, body := get(t, e.url+path)
			if status != 200 {
				t.Fatalf("%s: status %d", path, status)
			}
			CheckHTML(t, path, voidFix(body))
			if strings.Contains(body, "<script>") {
				t.Errorf("%s: a name unescaped", path)
			}
		}
		// Top users by recent average: the users in the database's order.
		_, body := get(t, e.url+"top_users.php")
		last := -1
		for i := range hostileNames { // expavg falls with i
			at := strings.Index(body, "<bdi>"+xmlEscape(hostileNames[i])+"</bdi>")
			if at < 0 || at < last {
				t.Errorf("top users: %q at %d, after %d", hostileNames[i], at, last)
			}
			last = at
		}
		for _, c := range []struct {
			path   string
			status int
		}{
			{"show_user.php?userid=999", 404}, {"show_user.php?userid=x", 400}, {"show_user.php", 400},
			{"top_users.php?sort_by=name", 400}, {"top_hosts.php?offset=-1", 400},
		} {
			if status, _ := get(t, e.url+c.path); status != c.status {
				t.Errorf("%s: status %d, want %d", c.path, status, c.status)
			}
		}
	})
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	// html/template writes quotes as &#34; and &#39;, as xml.EscapeText does.
	return b.String()
}

// TestStatusPage: after a scripted run (hosts fetch and report jobs, the validator
// judges some, cron jobs record runs, one fails), /status, /status.json and
// ?xml=1 show what the database holds, counted here with queries of the test's own.
func TestStatusPage(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := start(t, dsn, server.Config{}, 5)
		ctx := context.Background()
		now := float64(testNow.Unix())
		var sent []string
		for range 3 {
			id, auth := e.newHost(t, 2, 0)
			rep, _ := e.post(t, &boincxml.SchedulerRequest{HostID: id, Authenticator: auth, CPUReqSecs: 2000, CPUReqInstances: 2})
			if len(rep.ResultsSent) == 0 {
				t.Fatalf("host %d got no job: %s", id, messages(rep))
			}
			var reports []boincxml.ReportedResult
			for _, r := range rep.ResultsSent[:1] {
				reports = append(reports, boincxml.ReportedResult{Name: r.Name, FinalCPUTime: 1, State: boincxml.ResultFilesUploaded})
				sent = append(sent, r.Name)
			}
			e.post(t, &boincxml.SchedulerRequest{HostID: id, Authenticator: auth, Results: reports})
		}
		// The validator judged two of the reported results valid.
		if err := e.st.InTx(ctx, func(tx *store.Tx) error {
			var ids []int64
			for _, name := range sent[:2] {
				var id int64
				if err := tx.QueryRow(`SELECT id FROM result WHERE name=?`, name).Scan(&id); err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return tx.SetValidateState(store.ValidateValid, ids, now-10)
		}); err != nil {
			t.Fatal(err)
		}
		if err := e.st.EndCronRun(ctx, 0, store.CronRun{Job: "bretry", App: "cpuapp", Start: now - 60}, 1.5, 12, nil); err != nil {
			t.Fatal(err)
		}
		if err := e.st.EndCronRun(ctx, 0, store.CronRun{Job: "bserver assimilate", Start: now - 30}, 0.5, 0, fmt.Errorf(`exec <"cmd">: exit status 1`)); err != nil {
			t.Fatal(err)
		}

		q := func(query string, args ...any) int64 {
			var n int64
			if err := e.st.DB.QueryRow(query, args...).Scan(&n); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			return n
		}
		unsent := q(`SELECT COUNT(*) FROM result r JOIN app a ON a.id=r.appid WHERE a.name='cpuapp' AND r.server_state=2`)
		inProgress := q(`SELECT COUNT(*) FROM result r JOIN app a ON a.id=r.appid WHERE a.name='cpuapp' AND r.server_state=4`)
		waitValidate := q(`SELECT COUNT(*) FROM workunit w JOIN app a ON a.id=w.appid WHERE a.name='cpuapp' AND w.need_validate=1`)
		reported := q(`SELECT COUNT(*) FROM result WHERE received_time>?`, now-3600)
		validated := q(`SELECT COUNT(*) FROM result WHERE validate_state=1 AND validate_time>?`, now-3600)
		hosts := q(`SELECT COUNT(*) FROM host WHERE rpc_time>?`, now-86400)
		if reported != 3 || validated != 2 || hosts != 3 || inProgress == 0 || waitValidate != 3 {
			t.Fatalf("the scripted run left reported %d, validated %d, hosts %d, in progress %d, waiting for validation %d",
				reported, validated, hosts, inProgress, waitValidate)
		}

		// JSON.
		status, body := get(t, e.url+"status.json")
		if status != 200 {
			t.Fatalf("status.json: %d %s", status, body)
		}
		var doc struct {
			store.ProjectStatus
			Scheduler server.RPCRate `json:"scheduler"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		var cpu store.AppBacklog
		for _, a := range doc.Apps {
			if a.App == "cpuapp" {
				cpu = a
			}
		}
		if cpu.Unsent != unsent || cpu.InProgress != inProgress || cpu.WaitValidate != waitValidate || doc.ReportedHour != reported ||
			doc.ValidatedHour != validated || doc.ValidatedDay != validated || doc.HostsActiveDay != hosts {
			t.Errorf("status.json = %+v (cpuapp %+v); want unsent %d, in progress %d, waiting %d, reported %d, validated %d, hosts %d",
				doc.ProjectStatus, cpu, unsent, inProgress, waitValidate, reported, validated, hosts)
		}
		// The scheduler's own figures: every request above, in this server's window.
		if !doc.Scheduler.Measured || doc.Scheduler.PerMinute <= 0 || doc.Scheduler.P99ms < doc.Scheduler.P50ms {
			t.Errorf("scheduler figures %+v", doc.Scheduler)
		}
		if len(doc.CronJobs) != 2 {
			t.Errorf("cron jobs %+v", doc.CronJobs)
		}

		// HTML, under both names.
		for _, path := range []string{"status", "server_status.php"} {
			status, body := get(t, e.url+path)
			if status != 200 {
				t.Fatalf("%s: %d", path, status)
			}
			CheckHTML(t, path, voidFix(body))
			for _, want := range []string{
				fmt.Sprintf(`<tr><td class="name">cpuapp</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td>`, unsent, inProgress, waitValidate),
				fmt.Sprintf(`<tr><td>Results reported</td><td class="n">%d</td>`, reported),
				fmt.Sprintf(`<tr><td>Results validated</td><td class="n">%d</td>`, validated),
				`<td class="ok">ok</td><td class="n">12</td>`,
				`<td class="bad">failed: exec &lt;&#34;cmd&#34;&gt;: exit status 1</td>`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("%s lacks %s", path, want)
				}
			}
		}

		// BOINC's XML form.
		status, body = get(t, e.url+"server_status.php?xml=1")
		var x struct {
			States struct {
				Unsent     int64 `xml:"results_ready_to_send"`
				InProgress int64 `xml:"results_in_progress"`
				Validation int64 `xml:"workunits_waiting_for_validation"`
			} `xml:"database_file_states"`
			Daemons []struct {
				Command string `xml:"command"`
				Status  string `xml:"status"`
			} `xml:"daemon_status>daemon"`
			Apps []struct {
				Name   string `xml:"name"`
				Unsent int64  `xml:"unsent"`
			} `xml:"tasks_by_app>app"`
		}
		if err := xml.Unmarshal([]byte(body), &x); err != nil || status != 200 {
			t.Fatalf("?xml=1: status %d, %v\n%s", status, err, body)
		}
		allUnsent := q(`SELECT COUNT(*) FROM result WHERE server_state=2`)
		if x.States.Unsent != allUnsent || x.States.InProgress != q(`SELECT COUNT(*) FROM result WHERE server_state=4`) ||
			x.States.Validation != q(`SELECT COUNT(*) FROM workunit WHERE need_validate=1`) || len(x.Apps) != 2 || len(x.Daemons) != 2 ||
			x.Daemons[0].Command != "bretry --app cpuapp" && x.Daemons[1].Command != "bretry --app cpuapp" {
			t.Errorf("?xml=1: %+v\n%s", x, body)
		}
		if status, _ := get(t, e.url+"status.json?x"); status != 200 {
			t.Errorf("status.json with a query: %d", status)
		}
		resp, err := http.Post(e.url+"status", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 {
			t.Errorf("POST /status: %d, want 405", resp.StatusCode)
		}
	})
}

// TestNoPages: with Config.NoPages the pages are not there.
func TestNoPages(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite:"+t.TempDir()+"/p.db", server.Config{NoPages: true}, 0)
	for _, p := range []string{"status", "status.json", "server_status.php", "show_user.php?userid=1", "top_users.php"} {
		if status, _ := get(t, e.url+p); status != 404 {
			t.Errorf("%s with NoPages: %d, want 404", p, status)
		}
	}
}
