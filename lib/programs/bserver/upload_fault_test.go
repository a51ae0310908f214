package bserver_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/filetree"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// TestKilledUnderUploads is the probe's load and fault test with output files (issue
// 28): BOINC-style hosts upload their outputs and report them while `bserver serve`
// is SIGKILLed three times, on SQLite and on MariaDB. A third of the hosts upload and
// then report; a third report without uploading (hosts without output); a third race
// an upload whose data arrives slowly against the report. Meanwhile connections from
// another address trickle an upload header a byte at a time. Whatever instant the
// kills came at, afterwards: every success has its output recorded, its recorded
// digest is that of the recorded file, and the file in upload/ is the one recorded
// (never replaced); a result reported without its output is a validate error with no
// file recorded; no temporary file of a killed server is left; the trickling
// connections were dropped after the header time-out, or refused at once beyond the
// per-address cap.
func TestKilledUnderUploads(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			testKilledUnderUploads(t, e.DSN)
		})
	}
}

const linuxPlatform = "x86_64-pc-linux-gnu"

// runOut runs bserver in-process and returns its standard output; t fails unless it
// exits 0.
func runOut(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := bserver.Main(append([]string{"bserver"}, args...), nil, &out, &errb); code != 0 {
		t.Fatalf("bserver %v: status %d: %s", args, code, errb.String())
	}
	return out.String()
}

// Kinds of host behaviour.
const (
	uploadThenReport = iota
	reportOnly
	raceUploadReport
)

func testKilledUnderUploads(t *testing.T, db string) {
	// The hosts hold at most 12 connections from 127.0.0.1 (a report and an upload
	// each), under the cap; the tricklers, from 127.0.0.2, hold more than it.
	const hosts, kills, tricklers, perAddr = 6, 3, 24, 16
	pdir := t.TempDir()
	app := filepath.Join(t.TempDir(), "app.sh")
	os.WriteFile(app, []byte("#!/bin/sh\nexit 0\n"), 0o755)
	// The schema from the template: init then has nothing to migrate.
	storetest.Migrated(t, db)
	run(t, "init", "--db", db, "--project-dir", pdir)
	run(t, "keys", "--db", db, "--project-dir", pdir)
	key := strings.TrimSpace(runOut(t, "user", "add", "--db", db, "--project-dir", pdir, "--name", "alice"))
	run(t, "app", "add", "--db", db, "--project-dir", pdir, "upper")
	run(t, "app-version", "add", "--db", db, "--project-dir", pdir, "--app", "upper", "--version", "1", "--platform", linuxPlatform, "--file", app)
	run(t, "work", "create", "--db", db, "--project-dir", pdir, "--app", "upper", "--count", "600", "--fpops-est", "1e9", "--delay-bound", "1d", "--output", "out:100000")
	serveArgs := []string{"--read-timeout", "1s", "--max-conns-per-addr", fmt.Sprint(perAddr)}

	var base atomic.Value
	proc := startServeProc(t, db, pdir, serveArgs...)
	base.Store(strings.TrimSuffix(proc.url, "scheduler"))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * hosts}, Timeout: 20 * time.Second}
	schedule := func(req *boincxml.SchedulerRequest) (*boincxml.SchedulerReply, error) {
		b, _ := req.Marshal()
		resp, err := client.Post(base.Load().(string)+"scheduler", "text/xml", bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return nil, fmt.Errorf("status %d", resp.StatusCode)
		}
		return boincxml.ParseSchedulerReply(resp.Body)
	}
	// upload sends data as output file name; with slow, the second half comes later.
	upload := func(name, sig string, data []byte, slow bool) (string, error) {
		sum := md5.Sum(data)
		head := fmt.Sprintf("<data_server_request>\n<file_upload>\n<file_info>\n<name>%s</name>\n<xml_signature>\n%s\n</xml_signature>\n"+
			"<max_nbytes>100000</max_nbytes>\n</file_info>\n<nbytes>%d</nbytes>\n<md5_cksum>%s</md5_cksum>\n<offset>0</offset>\n<data>\n",
			name, sig, len(data), hex.EncodeToString(sum[:]))
		pr, pw := io.Pipe()
		go func() {
			pw.Write([]byte(head))
			pw.Write(data[:len(data)/2])
			if slow {
				time.Sleep(30 * time.Millisecond)
			}
			pw.Write(data[len(data)/2:])
			pw.Close()
		}()
		req, _ := http.NewRequest("POST", base.Load().(string)+"file_upload_handler", pr)
		req.ContentLength = int64(len(head) + len(data))
		resp, err := client.Do(req)
		if err != nil {
			pr.CloseWithError(err)
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if m := uploadStatusRE.FindSubmatch(b); m != nil && err == nil {
			return string(m[1]), nil
		}
		return "", fmt.Errorf("upload reply %q: %v", b, err)
	}

	var mu sync.Mutex
	kind := map[string]int{}        // result → how its host handled it
	acked := map[string]bool{}      // reports acknowledged
	uploaded := map[string]string{} // result → status of its last upload answered
	var failures, requests, uploads atomic.Int64
	stop := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	for h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := boincxml.SchedulerRequest{Authenticator: key, PlatformName: linuxPlatform, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9}}
			// retry sends req until a reply comes (the server may be down).
			retry := func() *boincxml.SchedulerReply {
				for !stopped() {
					req.RPCSeqno++
					requests.Add(1)
					rep, err := schedule(&req)
					if err == nil {
						if req.HostID == 0 {
							req.HostID = rep.HostID
						}
						return rep
					}
					failures.Add(1)
					time.Sleep(5 * time.Millisecond)
				}
				return nil
			}
			for n := h; !stopped(); n += hosts {
				req.CPUReqSecs, req.CPUReqInstances, req.WorkReqSeconds, req.Results = 1, 1, 1, nil
				rep := retry()
				if rep == nil || len(rep.ResultsSent) == 0 {
					continue
				}
				name := rep.ResultsSent[0].Name
				var sig string
				for _, f := range rep.FileInfos {
					if f.Name == name+"_0" {
						sig = f.XMLSignature
					}
				}
				k := n % 3
				mu.Lock()
				kind[name] = k
				mu.Unlock()
				req.CPUReqSecs, req.CPUReqInstances, req.WorkReqSeconds = 0, 0, 0
				req.Results = []boincxml.ReportedResult{{Name: name, FinalCPUTime: 1, State: boincxml.ResultFilesUploaded}}
				send := func(attempt int, slow bool) string {
					uploads.Add(1)
					st, err := upload(name+"_0", sig, bytes.Repeat([]byte(fmt.Sprintf("%s attempt %d\n", name, attempt)), 64), slow)
					if err != nil {
						return ""
					}
					mu.Lock()
					uploaded[name] = st
					mu.Unlock()
					return st
				}
				var race sync.WaitGroup
				switch k {
				case uploadThenReport:
					for attempt := 0; !stopped() && send(attempt, false) != "0"; attempt++ {
						time.Sleep(5 * time.Millisecond)
					}
				case raceUploadReport:
					race.Add(1)
					go func() {
						defer race.Done()
						send(0, true)
					}()
				}
				if rep := retry(); rep != nil && len(rep.ResultAcks) == 1 {
					mu.Lock()
					acked[name] = true
					mu.Unlock()
				}
				race.Wait()
			}
		}()
	}

	// Tricklers: from another loopback address (the cap is per address), an upload's
	// header a byte at a time, again whenever the server drops the connection.
	var trickled, refused atomic.Int64
	var longest atomic.Int64 // nanoseconds the longest trickling connection was held
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}
	if c, err := (&net.Dialer{LocalAddr: local}).Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(base.Load().(string), "http://"), "/")); err != nil {
		t.Logf("SKIPPING the trickling connections: cannot dial from 127.0.0.2: %v", err)
		local = nil
	} else {
		c.Close()
	}
	for range tricklers {
		if local == nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopped() {
				c, err := (&net.Dialer{LocalAddr: local}).Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(base.Load().(string), "http://"), "/"))
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				began := time.Now()
				io.WriteString(c, "POST /file_upload_handler HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
				closed := make(chan struct{})
				go func() {
					io.Copy(io.Discard, c) // returns when the server closes it
					close(closed)
				}()
				header := "<data_server_request>\n<file_upload>\n<file_info>\n<name>"
				for i := 0; ; i++ {
					select {
					case <-closed:
					case <-stop:
					case <-time.After(50 * time.Millisecond):
						c.Write([]byte{header[i%len(header)]})
						continue
					}
					break
				}
				held := time.Since(began)
				c.Close()
				<-closed
				if stopped() {
					return
				}
				if held < 200*time.Millisecond {
					refused.Add(1)
					time.Sleep(20 * time.Millisecond)
				} else {
					trickled.Add(1)
				}
				for {
					old := longest.Load()
					if int64(held) <= old || longest.CompareAndSwap(old, int64(held)) {
						break
					}
				}
			}
		}()
	}

	udir := filepath.Join(pdir, "upload")
	orphans := 0
	for k := range kills {
		time.Sleep(time.Duration(300+100*k) * time.Millisecond)
		proc.cmd.Process.Signal(syscall.SIGKILL)
		proc.cmd.Wait()
		if k == kills-1 {
			orphans = len(tempFiles(t, udir))
		}
		proc = startServeProc(t, db, pdir, serveArgs...)
		base.Store(strings.TrimSuffix(proc.url, "scheduler"))
	}
	time.Sleep(1500 * time.Millisecond) // longer than the read time-out: the tricklers meet it
	close(stop)
	wg.Wait()
	proc.cmd.Process.Signal(syscall.SIGTERM)
	if err := proc.cmd.Wait(); err != nil {
		t.Errorf("last server: %v\n%s", err, proc.stderr)
	}
	if t.Failed() {
		return
	}
	if left := tempFiles(t, udir); len(left) != 0 {
		t.Errorf("temporary files left in upload/ (%d before the last start): %v", orphans, left)
	}

	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkIntegrity(t, s)
	rows, err := s.DB.QueryContext(context.Background(), `SELECT r.name, r.server_state, r.outcome, r.output_digest, f.name, f.sha256
		FROM result r LEFT JOIN result_file f ON f.resultid=r.id WHERE r.server_state<>?`, store.ServerStateUnsent)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var name, digest string
		var state, outcome int
		var file, sum sql.NullString
		if err := rows.Scan(&name, &state, &outcome, &digest, &file, &sum); err != nil {
			t.Fatal(err)
		}
		if file.Valid {
			b, err := os.ReadFile(filepath.Join(udir, filetree.Path(file.String)))
			if got := fmt.Sprintf("%x", sha256.Sum256(b)); err != nil || got != sum.String {
				t.Errorf("%s: the file in upload/ (%v) is not the one recorded", file.String, err)
			}
		}
		mu.Lock()
		k, ok := kind[name]
		ack, up := acked[name], uploaded[name]
		mu.Unlock()
		switch {
		case state != store.ServerStateOver:
		case outcome == store.OutcomeSuccess:
			counts["success"]++
			if !file.Valid || digest != "sha256:"+sum.String {
				t.Errorf("%s: a success with digest %q, recorded file %v %v", name, digest, file, sum)
			}
			if ok && k == reportOnly {
				t.Errorf("%s: reported without an upload, yet a success", name)
			}
		case outcome == store.OutcomeValidateError:
			counts["validate error"]++
			if file.Valid {
				t.Errorf("%s: a validate error with a file recorded (%s): an upload was recorded after the report", name, file.String)
			}
			if ok && k == uploadThenReport && up == "0" && ack {
				t.Errorf("%s: uploaded, then reported, yet a validate error", name)
			}
		default:
			t.Errorf("%s: outcome %s", name, store.OutcomeName[outcome])
		}
		if ok && k == reportOnly && ack && outcome != store.OutcomeValidateError {
			t.Errorf("%s: reported without an upload: outcome %s, want validate_error", name, store.OutcomeName[outcome])
		}
		if ok && k == raceUploadReport && state == store.ServerStateOver {
			counts[fmt.Sprintf("race, upload %q, outcome %s", up, store.OutcomeName[outcome])]++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d hosts, %d requests (%d failed while a server was down), %d uploads, %d kills, %d temporary files orphaned by the last kill; outcomes %v; "+
		"trickling connections: %d dropped by the time-out (longest held %v), %d refused at once",
		hosts, requests.Load(), failures.Load(), uploads.Load(), kills, orphans, counts, trickled.Load(), time.Duration(longest.Load()), refused.Load())
	if counts["success"] == 0 || counts["validate error"] == 0 || failures.Load() == 0 {
		t.Errorf("the load did not meet the kills: outcomes %v, %d failed requests", counts, failures.Load())
	}
	if local != nil {
		if refused.Load() == 0 || trickled.Load() == 0 {
			t.Errorf("trickling connections: %d dropped by the time-out, %d refused at once; want both", trickled.Load(), refused.Load())
		}
		if d := time.Duration(longest.Load()); d > 5*time.Second {
			t.Errorf("a trickling connection was held %v; the header's time-out is 1 s", d)
		}
	}
}

var uploadStatusRE = regexp.MustCompile(`<status>(-?[0-9]+)</status>`)

// tempFiles lists the uploads' temporary files in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}
