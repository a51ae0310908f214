package server_test

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
)

// chromium finds Debian's headless browser, or skips t loudly: on standard error as
// well as in the test log, since a skipped browser test is easy to miss.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "BROWSER TEST SKIPPED: no chromium on $PATH (Debian: apt-get install -y chromium; .ci/run installs it)"
	fmt.Fprintln(os.Stderr, "=== "+msg)
	t.Skip(msg)
	return ""
}

// visit is one run of chromium: a URL and its arguments.
type visit struct {
	url  string
	args []string
}

// browseAll runs headless chromium on each visit at once, each run with a new empty
// profile and nothing of its own on the network, and returns their standard outputs
// in order. A headless chromium's run is mostly waiting (about 1 CPU second of
// 1.5-4 s wall), so the test's five runs overlap rather than follow one another.
func browseAll(t *testing.T, bin string, visits []visit) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	outs := make([]string, len(visits))
	errs := make([]error, len(visits))
	var wg sync.WaitGroup
	for i, v := range visits {
		profile := t.TempDir()
		all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
			"--user-data-dir=" + profile}, v.args...)
		cmd := exec.CommandContext(ctx, bin, append(all, v.url)...)
		wg.Go(func() {
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				errs[i] = fmt.Errorf("chromium %v %s: %v\n%s", v.args, v.url, err, stderr.String())
			}
			outs[i] = string(out)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return outs
}

// elementText returns the text of the element with id in a DOM chromium dumped, with
// entities decoded: what a person sees there.
func elementText(t *testing.T, dom, id string) string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(voidFix(dom)))
	d.Strict, d.Entity = true, xml.HTMLEntity
	depth := 0
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("element #%s: %v", id, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth > 0 {
				depth++
				continue
			}
			for _, a := range tok.Attr {
				if a.Name.Local == "id" && a.Value == id {
					depth = 1
				}
			}
		case xml.EndElement:
			if depth > 0 {
				if depth--; depth == 0 {
					return text.String()
				}
			}
		case xml.CharData:
			if depth > 0 {
				text.Write(tok)
			}
		}
	}
}

// rowCells returns the texts of the cells of the table row whose first cell is
// first, in the table with id.
func rowCells(t *testing.T, dom, table, first string) []string {
	t.Helper()
	tbl := regexp.MustCompile(`(?s)<table id="` + table + `">.*?</table>`).FindString(dom)
	for _, row := range regexp.MustCompile(`(?s)<tr>(.*?)</tr>`).FindAllStringSubmatch(tbl, -1) {
		var cells []string
		for _, c := range regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`).FindAllStringSubmatch(row[1], -1) {
			cells = append(cells, html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(c[1], "")))
		}
		if len(cells) > 0 && cells[0] == first {
			return cells
		}
	}
	t.Fatalf("table #%s has no row %q:\n%s", table, first, tbl)
	return nil
}

// TestBrowser loads the status page and a user's page in a real headless browser
// (Debian's chromium), checks what it shows against the database, and saves
// phone-sized screenshots under the test's artifact directory (go test -artifacts
// -outputdir DIR keeps them). The same pages' HTML validates.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	t.Parallel()
	e := start(t, "sqlite:"+filepath.Join(t.TempDir(), "p.db"), server.Config{ProjectName: "bkit test project"}, 6)
	ids := volunteers(t, e.st)
	ctx := context.Background()
	now := float64(testNow.Unix())
	// A little traffic for the scheduler's figures and the counts.
	id, auth := e.newHost(t, 2, 0)
	rep, _ := e.post(t, &boincxml.SchedulerRequest{HostID: id, Authenticator: auth, CPUReqSecs: 3000, CPUReqInstances: 2})
	if len(rep.ResultsSent) == 0 {
		t.Fatalf("no job sent: %s", messages(rep))
	}
	e.post(t, &boincxml.SchedulerRequest{HostID: id, Authenticator: auth,
		Results: []boincxml.ReportedResult{{Name: rep.ResultsSent[0].Name, FinalCPUTime: 1, State: boincxml.ResultFilesUploaded}}})
	if err := e.st.EndCronRun(ctx, 0, store.CronRun{Job: "bretry", App: "cpuapp", Start: now - 120}, 2.5, 7, nil); err != nil {
		t.Fatal(err)
	}
	out := t.ArtifactDir()
	// Every page the test looks at, in one go (browseAll): the status page, the users'
	// pages, and the phone-sized screenshots (chromium takes seconds to start, so one
	// size only). Nothing below writes to the project.
	users := []int{0, 2}
	userURL := func(i int) string { return fmt.Sprintf("%sshow_user.php?userid=%d", e.url, ids[i]) }
	visits := []visit{{e.url + "status", []string{"--dump-dom"}},
		{e.url + "status", []string{"--screenshot=" + filepath.Join(out, "status-phone.png"), "--window-size=412,915", "--hide-scrollbars"}},
		{userURL(0), []string{"--screenshot=" + filepath.Join(out, "user-phone.png"), "--window-size=412,915", "--hide-scrollbars"}}}
	for _, i := range users {
		visits = append(visits, visit{userURL(i), []string{"--dump-dom"}})
	}
	doms := browseAll(t, bin, visits)

	// The status page.
	dom := doms[0]
	CheckHTML(t, "status page as the browser has it", voidFix(dom))
	status, body := get(t, e.url+"status")
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	CheckHTML(t, "status page", voidFix(body))
	st, err := e.st.ProjectStatus(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	var n struct{ unsent, inProgress, waiting, reported int64 }
	e.st.DB.QueryRow(`SELECT COUNT(*) FROM result r JOIN app a ON a.id=r.appid WHERE a.name='cpuapp' AND server_state=2`).Scan(&n.unsent)
	e.st.DB.QueryRow(`SELECT COUNT(*) FROM result r JOIN app a ON a.id=r.appid WHERE a.name='cpuapp' AND server_state=4`).Scan(&n.inProgress)
	e.st.DB.QueryRow(`SELECT COUNT(*) FROM workunit w JOIN app a ON a.id=w.appid WHERE a.name='cpuapp' AND need_validate=1`).Scan(&n.waiting)
	e.st.DB.QueryRow(`SELECT COUNT(*) FROM result WHERE received_time>?`, now-3600).Scan(&n.reported)
	if got, want := rowCells(t, dom, "apps", "cpuapp"), []string{"cpuapp", fmt.Sprint(n.unsent), fmt.Sprint(n.inProgress), fmt.Sprint(n.waiting), "0", "0"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the browser shows cpuapp as %q, the database %q", got, want)
	}
	if got := rowCells(t, dom, "activity", "Results reported"); got[1] != fmt.Sprint(n.reported) || n.reported != st.ReportedHour {
		t.Errorf("the browser shows %q results reported in the last hour, the database %d", got[1], n.reported)
	}
	if got := rowCells(t, dom, "cron", "bretry"); got[1] != "cpuapp" || got[3] != "2.50 s" || got[4] != "ok" || got[5] != "7" {
		t.Errorf("the browser shows the bretry run as %q", got)
	}
	// A user's page: the hostile name shown as text, the credit as the database has it
	// (markup and a right-to-left override).
	for k, i := range users {
		uid := ids[i]
		dom := doms[3+k]
		CheckHTML(t, "user page as the browser has it", voidFix(dom))
		if strings.Count(dom, "<script") > 0 {
			t.Errorf("user %d: the browser made a <script> element of a name:\n%s", uid, dom)
		}
		u, err := e.st.VolunteerUser(ctx, uid, server.UserPageHosts)
		if err != nil {
			t.Fatal(err)
		}
		if got := elementText(t, dom, "user-name"); got != hostileNames[i] {
			t.Errorf("user %d: the browser shows the name %q, the database has %q", uid, got, hostileNames[i])
		}
		avg, _ := credit.UpdateAverage(now, 0, 0, u.ExpavgCredit, u.ExpavgTime)
		if got := elementText(t, dom, "user-total"); got != formatCredit(u.TotalCredit) {
			t.Errorf("user %d: total credit shown %q, database %v", uid, got, u.TotalCredit)
		}
		if got := elementText(t, dom, "user-expavg"); got != formatCredit(avg) {
			t.Errorf("user %d: recent average credit shown %q, database %v decayed to %v", uid, got, u.ExpavgCredit, avg)
		}
		for _, h := range u.Hosts {
			if got := rowCells(t, dom, "hosts", fmt.Sprint(h.ID)); got[1] != formatCredit(h.TotalCredit) || got[4] != hostileNames[i]+" platform" {
				t.Errorf("user %d: host %d shown as %q", uid, h.ID, got)
			}
		}
	}
	shots, _ := filepath.Glob(filepath.Join(out, "*.png"))
	for _, s := range shots {
		if fi, err := os.Stat(s); err != nil || fi.Size() < 1000 {
			t.Errorf("screenshot %s: %v (size %d)", s, err, fi.Size())
		}
	}
	if len(shots) != 2 {
		t.Errorf("%d screenshots, want 2", len(shots))
	}
	t.Logf("screenshots in %s", out)
}
