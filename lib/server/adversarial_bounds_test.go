package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store/storetest"
)

// TestAdversarialBounds holds what one account's requests may cost the server to the
// request's own size: a request listing tens of thousands of result names it made up
// (or copied from other hosts) is answered in full (every report acknowledged, every
// unknown task aborted) but with a bounded number of messages and log lines, and a user
// who made hosts without end has a user's page of bounded length. Each case failed
// before its bound: 20,000 names made 20,000 messages and log lines; 105 hosts, a page
// of 105 rows.
func TestAdversarialBounds(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := start(t, dsn, server.Config{}, 4)
		a, authA := e.newHost(t, 1, 0)
		b, authB := e.newHost(t, 1, 0)
		rep, _ := e.post(t, &boincxml.SchedulerRequest{HostID: b, Authenticator: authB, CPUReqSecs: 1, CPUReqInstances: 1})
		if len(rep.ResultsSent) != 1 {
			t.Fatalf("setup: B got %d jobs", len(rep.ResultsSent))
		}
		foreign := rep.ResultsSent[0].Name
		const n = 20000
		// bounded checks one request's reply and the log lines it added.
		bounded := func(t *testing.T, req *boincxml.SchedulerRequest, logMsg string, replied func(*boincxml.SchedulerReply) int) {
			before := strings.Count(e.logs.String(), logMsg)
			rep, st := e.post(t, req)
			if st != 200 {
				t.Fatalf("status %d: %s", st, messages(rep))
			}
			if got := replied(rep); got != n {
				t.Errorf("the reply answers %d of the %d names", got, n)
			}
			if len(rep.Messages) > 11 {
				t.Errorf("%d messages in the reply for %d names; want at most 11", len(rep.Messages), n)
			}
			if lines := strings.Count(e.logs.String(), logMsg) - before; lines != 1 {
				t.Errorf("%d log lines %q for %d names; want 1", lines, logMsg, n)
			}
		}
		many := func(name func(i int) string) []boincxml.ReportedResult {
			out := make([]boincxml.ReportedResult, n)
			for i := range out {
				out[i] = boincxml.ReportedResult{Name: name(i), State: boincxml.ResultFilesUploaded}
			}
			return out
		}
		for _, c := range []struct {
			name string
			run  func(t *testing.T)
		}{
			{"made-up result names reported", func(t *testing.T) {
				req := &boincxml.SchedulerRequest{HostID: a, Authenticator: authA, Results: many(func(i int) string { return fmt.Sprintf("nope_%d", i) })}
				bounded(t, req, "report of an unknown result", func(r *boincxml.SchedulerReply) int { return len(r.ResultAcks) })
			}},
			{"another host's result reported again and again", func(t *testing.T) {
				req := &boincxml.SchedulerRequest{HostID: a, Authenticator: authA, Results: many(func(int) string { return foreign })}
				bounded(t, req, "report of a result not sent to this host", func(r *boincxml.SchedulerReply) int { return len(r.ResultAcks) })
			}},
			{"made-up names among the tasks held", func(t *testing.T) {
				req := &boincxml.SchedulerRequest{HostID: a, Authenticator: authA}
				for i := range n {
					req.OtherResults = append(req.OtherResults, boincxml.NameRef{Name: fmt.Sprintf("nope_%d", i)})
				}
				bounded(t, req, "telling the client to abort a task", func(r *boincxml.SchedulerReply) int { return len(r.ResultAborts) })
			}},
			{"a user with more hosts than the page lists", func(t *testing.T) {
				u := e.newUser(t)
				var last int64
				for range server.UserPageHosts + 5 {
					rep, st := e.post(t, &boincxml.SchedulerRequest{Authenticator: u.Authenticator})
					if st != 200 || rep.HostID == 0 {
						t.Fatalf("new host: status %d, %s", st, messages(rep))
					}
					last = rep.HostID
				}
				// The newest host has the most credit: the page lists the best, not the first.
				if _, err := e.st.DB.ExecContext(context.Background(), "UPDATE host SET expavg_credit=100 WHERE id=?", last); err != nil {
					t.Fatal(err)
				}
				st, body := get(t, fmt.Sprintf("%sshow_user.php?userid=%d", e.url, u.ID))
				if st != 200 {
					t.Fatalf("status %d: %s", st, body)
				}
				rows := regexp.MustCompile(`<tr><td class="n">(\d+)</td>`).FindAllStringSubmatch(body, -1)
				if len(rows) != server.UserPageHosts {
					t.Errorf("the page lists %d hosts; want %d", len(rows), server.UserPageHosts)
				}
				if len(rows) > 0 && rows[0][1] != fmt.Sprint(last) {
					t.Errorf("first host listed %s; want %d, the one with credit", rows[0][1], last)
				}
				if !strings.Contains(body, `id="more-hosts"`) {
					t.Errorf("the page does not say that it lists only some hosts")
				}
			}},
		} {
			t.Run(c.name, c.run)
		}
	})
}

// countingBody is an endless request body of one form field that counts what the
// server reads of it.
type countingBody struct {
	head []byte
	read int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n := copy(p, b.head)
	b.head = b.head[n:]
	for i := n; i < len(p); i++ {
		p[i] = 'a'
	}
	b.read += int64(len(p))
	return len(p), nil
}

func (b *countingBody) Close() error { return nil }

// TestAccountFormBounded posts account requests whose bodies never end and checks
// that the server reads a bounded part of them and answers in BOINC's error form:
// without a bound, Go's form parsing read 32 MiB of each into memory (and a file
// part's rest to disk), so a few networks' worth of requests at once, within the
// account rate limit, held gigabytes.
func TestAccountFormBounded(t *testing.T) {
	t.Parallel()
	const maxRead = 1 << 20
	forEngine(t, func(t *testing.T, dsn string) {
		srv := &server.Server{Store: storetest.Open(t, dsn), Config: server.Config{AccountCreation: true}}
		h := srv.Handler()
		for _, path := range []string{"/lookup_account.php", "/create_account.php"} {
			for _, c := range []struct {
				name, contentType, head string
			}{
				{"urlencoded", "application/x-www-form-urlencoded", "email_addr="},
				{"multipart field", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"email_addr\"\r\n\r\n"},
				{"multipart file", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f\"\r\n\r\n"},
			} {
				t.Run(path+" "+c.name, func(t *testing.T) {
					body := &countingBody{head: []byte(c.head)}
					req := httptest.NewRequest(http.MethodPost, path, nil)
					req.Body = body
					req.ContentLength = -1
					req.Header.Set("Content-Type", c.contentType)
					rec := httptest.NewRecorder()
					done := make(chan struct{})
					go func() {
						defer close(done)
						h.ServeHTTP(rec, req)
					}()
					select {
					case <-done:
					case <-time.After(20 * time.Second):
						t.Fatalf("no answer after reading %d bytes of an endless body", body.read)
					}
					if body.read > maxRead {
						t.Errorf("the server read %d bytes of the body; want at most %d", body.read, maxRead)
					}
					if got := rec.Body.String(); !strings.Contains(got, "<error_num>-1</error_num>") {
						t.Errorf("answer %q; want BOINC's error -1", got)
					}
				})
			}
		}
	})
}

// TestRPCTurns holds the scheduler requests parsed and handled at once to
// Config.MaxRPCsInFlight: with both turns taken by requests waiting for the database
// (the test holds SQLite's one pooled connection), a malformed request, which needs
// no database, is not even parsed until a turn frees; without the bound it was
// answered at once, as every request of every client was parsed at once.
func TestRPCTurns(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		if strings.HasPrefix(dsn, "mysql") {
			t.Skip("holds SQLite's one connection")
		}
		e := start(t, dsn, server.Config{MaxRPCsInFlight: 2}, 4)
		a, authA := e.newHost(t, 1, 0)
		ctx := context.Background()
		conn, err := e.st.DB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held := true
		defer func() {
			if held {
				conn.Close()
			}
		}()
		statuses := make(chan int, 2)
		for range 2 {
			go func() {
				b, _ := (&boincxml.SchedulerRequest{HostID: a, Authenticator: authA}).Marshal()
				resp, err := http.Post(e.url+"scheduler", "text/xml", strings.NewReader(string(b)))
				if err != nil {
					statuses <- 0
					return
				}
				resp.Body.Close()
				statuses <- resp.StatusCode
			}()
		}
		// A malformed request with a short patience, until one finds no turn free (the
		// two above may take a moment to take theirs).
		bad := func(timeout time.Duration) (int, error) {
			c := &http.Client{Timeout: timeout}
			resp, err := c.Post(e.url+"scheduler", "text/xml", strings.NewReader("<scheduler_request><hostid>x</hostid></scheduler_request>"))
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		}
		waited := false
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			if _, err := bad(300 * time.Millisecond); err != nil {
				waited = true
				break
			}
		}
		if !waited {
			t.Errorf("with both turns held, malformed requests were still answered at once for 10 s")
		}
		conn.Close()
		held = false
		for range 2 {
			if st := <-statuses; st != 200 {
				t.Errorf("a request that waited for the database: status %d", st)
			}
		}
		if st, err := bad(30 * time.Second); err != nil || st != 400 {
			t.Errorf("a malformed request once the turns are free: status %d, %v; want 400", st, err)
		}
	})
}

// TestRPCTurnNotHeldByReader: a client that sends a request with a large reply (here
// 100,000 made-up reports, 5.5 MB of acknowledgements, more than the socket buffers
// take) and never reads it must not hold
// a turn while the server waits to write (up to the write time-out): with one turn, a
// second client's request is answered meanwhile.
func TestRPCTurnNotHeldByReader(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := start(t, dsn, server.Config{MaxRPCsInFlight: 1, WriteTimeout: time.Minute}, 4)
		a, authA := e.newHost(t, 1, 0)
		var b strings.Builder
		fmt.Fprintf(&b, "<scheduler_request><hostid>%d</hostid><authenticator>%s</authenticator>", a, authA)
		for i := range 100000 {
			fmt.Fprintf(&b, "<result><name>nope_%d</name></result>", i)
		}
		b.WriteString("</scheduler_request>")
		body := b.String()
		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			// A small receive window, so the reply cannot vanish into buffers.
			return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		conn, err := d.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(e.url, "http://"), "/"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /scheduler HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body))
		if _, err := io.WriteString(conn, body); err != nil {
			t.Fatal(err)
		}
		// Wait until the reply has started (its first bytes are readable), without
		// reading on: the server is then blocked writing it.
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		first := make([]byte, 1)
		if _, err := conn.Read(first); err != nil {
			t.Fatalf("no reply to the large request: %v", err)
		}
		c := &http.Client{Timeout: 20 * time.Second}
		resp, err := c.Post(e.url+"scheduler", "text/xml", strings.NewReader("<scheduler_request><hostid>x</hostid></scheduler_request>"))
		if err != nil {
			t.Fatalf("another client's request while a reply waits to be read: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("another client's malformed request: status %d; want 400", resp.StatusCode)
		}
	})
}
