package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
)

// TestShutdownDrains starts a request, shuts the server down while the request body is
// still arriving, and checks that the request is still answered in full and that
// Serve returns once it is.
func TestShutdownDrains(t *testing.T) {
	e := start(t, "sqlite:"+t.TempDir()+"/p.db", server.Config{}, 1)
	conn := dialServer(t, e.url)
	body := "<scheduler_request><authenticator>" + e.newUser(t).Authenticator + "</authenticator><cpu_req_secs>1</cpu_req_secs></scheduler_request>"
	io.WriteString(conn, "POST /scheduler HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body[:10])
	time.Sleep(100 * time.Millisecond) // the handler is now reading the body
	e.cancel()
	time.Sleep(100 * time.Millisecond)
	select {
	case <-e.done:
		t.Fatal("Serve returned with a request in flight")
	default:
	}
	if _, err := http.Get(e.url); err == nil {
		t.Error("a new connection was accepted after shutdown began")
	}
	io.WriteString(conn, body[10:])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := boincxml.ParseSchedulerReply(resp.Body)
	if err != nil || resp.StatusCode != 200 || rep.HostID == 0 || len(rep.ResultsSent) != 1 {
		t.Fatalf("in-flight request: status %d, %+v, %v", resp.StatusCode, rep, err)
	}
	select {
	case <-e.done:
		if e.err != nil {
			t.Errorf("Serve: %v", e.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the last request")
	}
}

// TestSlowClientTimeout checks that a client that never sends its request is dropped.
func TestSlowClientTimeout(t *testing.T) {
	e := start(t, "sqlite:"+t.TempDir()+"/p.db", server.Config{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond}, 0)
	conn := dialServer(t, e.url)
	io.WriteString(conn, "POST /scheduler HTTP/1.1\r\n") // and then nothing
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	b, _ := io.ReadAll(conn)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("connection open for %v; want it closed after the header time-out", d)
	}
	if len(b) > 0 && !strings.Contains(string(b), "408") && !strings.Contains(string(b), "400") {
		t.Errorf("unexpected response %q", b)
	}
}

// TestShutdownSkipsSilentConnections checks that a connection that has sent nothing
// (an HTTP client's spare) does not hold up a shutdown: net/http alone would wait five
// seconds for it, though no request is in flight.
func TestShutdownSkipsSilentConnections(t *testing.T) {
	e := start(t, "sqlite:"+t.TempDir()+"/p.db", server.Config{}, 0)
	conn := dialServer(t, e.url)
	time.Sleep(100 * time.Millisecond) // the server has accepted it
	began := time.Now()
	e.cancel()
	select {
	case <-e.done:
		if e.err != nil {
			t.Errorf("Serve: %v", e.err)
		}
		if d := time.Since(began); d > 3*time.Second {
			t.Errorf("Serve returned %v after the shutdown began, want before net/http's five seconds for a silent connection", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	conn.SetReadDeadline(time.Now().Add(time.Second))
	if n, err := conn.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("the silent connection is still open: read %d, %v", n, err)
	}
}

// dialServer opens a raw connection to the server at url, closed at the test's end.
func dialServer(t *testing.T, url string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
