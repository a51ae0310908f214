package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/bkit/bkit/lib/tempfile"
)

// TestUploadTimeouts: an upload's header has the scheduler's time-outs, and only an
// upload whose permission is checked gets the long ones (issue 28, item 4: the
// handler gave every connection 30 minutes before reading a byte, so trickling
// connections held the server's descriptors).
func TestUploadTimeouts(t *testing.T) {
	t.Parallel()
	fe := startFiles(t, storetest.SQLiteDSN(t), func(c *server.Config) {
		// Time-outs long enough that a handler a loaded machine starts late still extends
		// them (a 400 ms ReadTimeout failed once at load average 17).
		c.ReadHeaderTimeout, c.ReadTimeout, c.WriteTimeout = 500*time.Millisecond, time.Second, time.Second
	})
	// A header trickled a byte at a time: dropped after the read time-out.
	conn := dialServer(t, fe.url)
	io.WriteString(conn, "POST /file_upload_handler HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
	closed := make(chan time.Time, 1)
	began := time.Now()
	go func() {
		io.Copy(io.Discard, conn)
		closed <- time.Now()
	}()
	header := "<data_server_request>\n<file_upload>\n<file_info>\n<name>"
trickle:
	for i := 0; ; i++ {
		select {
		case at := <-closed:
			if d := at.Sub(began); d > 5*time.Second {
				t.Errorf("a trickled upload header held its connection %v, want about the read time-out (1s)", d)
			}
			break trickle
		case <-time.After(50 * time.Millisecond):
			if time.Since(began) > 8*time.Second {
				t.Fatal("a trickled upload header still holds its connection after 8 s; the read time-out is 1s")
			}
			conn.Write([]byte{header[i%len(header)]})
		}
	}

	// A permitted upload whose data takes longer than the scheduler's time-outs.
	j := fe.boincJob(t)
	body := uploadBody(j.out, j.sig, []byte("HELLO"), 0)
	conn = dialServer(t, fe.url)
	fmt.Fprintf(conn, "POST /file_upload_handler HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:len(body)-3])
	time.Sleep(2200 * time.Millisecond)
	io.WriteString(conn, body[len(body)-3:])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a slow permitted upload: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if uploadStatus(string(b)) != "0" {
		t.Errorf("a slow permitted upload: %s", b)
	}
}

// TestConnsPerAddr: an address that holds the most connections it may has further
// ones closed at once, and gets its place back when one closes (issue 28, item 4).
func TestConnsPerAddr(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.SQLiteDSN(t), server.Config{MaxConnsPerAddr: 2, ReadHeaderTimeout: 10 * time.Second}, 0)
	c1, _ := dialServer(t, e.url), dialServer(t, e.url)
	time.Sleep(100 * time.Millisecond) // accepted
	c3 := dialServer(t, e.url)
	c3.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := c3.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a third connection from the address: read %v, want it closed at once", err)
	}
	c1.Close()
	time.Sleep(100 * time.Millisecond)
	resp, err := http.Get(e.url)
	if err != nil {
		t.Fatalf("after one closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("after one closed: status %d", resp.StatusCode)
	}
	if !strings.Contains(e.logs.String(), "too many open from this address") {
		t.Errorf("no log line for the refusal:\n%s", e.logs)
	}
}

// TestSweepUploads: the temporary files of uploads no process is receiving (a server
// killed mid-upload) are removed when the server starts and periodically; those of
// uploads in progress, and output files, stay (issue 28, item 8: they stayed for
// ever).
func TestSweepUploads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orphan := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := orphan(".tmp-1234-wu_1_0_0")
	output := orphan("wu_2_0_0")
	live, err := tempfile.Create(dir, ".tmp-*-wu_3_0_0")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	start(t, storetest.SQLiteDSN(t), server.Config{UploadDir: dir, UploadKey: []byte("k"), UploadSweepInterval: 100 * time.Millisecond}, 0)
	gone := func(p string) bool {
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
				return true
			}
		}
		return false
	}
	if !gone(first) {
		t.Errorf("%s: an orphan left at start", first)
	}
	later := orphan(".tmp-5678-wu_4_0_0")
	if !gone(later) {
		t.Errorf("%s: an orphan left by the periodic sweep", later)
	}
	for _, p := range []string{output, live.Name()} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: removed (%v)", p, err)
		}
	}
}
