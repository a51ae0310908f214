package blocality_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// start runs one of the test binary's programs until cleanup (SIGTERM, exit 0), and
// returns the first line it prints (with wait).
func start(t *testing.T, wait bool, prog string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath(prog)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s: %v\n%s", prog, err, stderr.String())
		}
	})
	if !wait {
		go io.Copy(io.Discard, stdout)
		return ""
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		io.Copy(io.Discard, stdout)
	}()
	select {
	case s := <-line:
		return strings.TrimSpace(s)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start", prog)
	}
	return ""
}

// TestGenerateAndServeConcurrently runs two `blocality generate` and two `bserver
// serve` processes on one database while hosts fetch and report jobs through both
// servers, then checks: no job generated twice, and no job sent to more hosts than
// its redundancy (nor twice to one host).
func TestGenerateAndServeConcurrently(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			ctx := context.Background()
			st := storetest.Open(t, e.DSN)
			if _, err := st.AddApp(ctx, "loc", true, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "loc", VersionNum: 1, AvgNCPUs: 1, Flops: 1e9}, 1); err != nil {
				t.Fatal(err)
			}
			spec := store.BatchSpec{Name: "cc", App: "loc", DelayBound: 86400, MinQuorum: 2, TargetNResults: 2, MaxErrorResults: 3, MaxTotalResults: 6, MaxSuccessResults: 4}
			for f := 0; f < 50; f++ {
				spec.Files = append(spec.Files, store.BatchFile{Name: fmt.Sprintf("cc_f%d", f), NBytes: 1e6})
			}
			credit := make([]float64, 400)
			for j := range 400 {
				spec.Jobs = append(spec.Jobs, store.BatchJob{FirstFileNum: int64(j / 8), LastFileNum: int64(j / 8), FpopsEst: 1e11})
				credit[j] = 1
			}
			spec.Cursors = locality.PlanCursors(credit, 8, 4)
			if _, err := st.CreateBatch(ctx, spec, 1); err != nil {
				t.Fatal(err)
			}
			project := []string{}
			if e.Name == store.MySQL {
				project = []string{"--project-dir", t.TempDir()}
			}
			var urls []string
			for range 2 {
				s := start(t, true, "bserver", append([]string{"serve", "--db", e.DSN, "--addr", "127.0.0.1:0"}, project...)...)
				url, ok := strings.CutPrefix(s, "listening on ")
				if !ok {
					t.Fatalf("serve said %q", s)
				}
				urls = append(urls, url)
				start(t, false, "blocality", "generate", "--db", e.DSN, "--cushion", "5", "--interval", "0.02", "-v")
			}
			var wg sync.WaitGroup
			deadline := time.Now().Add(3 * time.Second)
			for h := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := boincxml.SchedulerRequest{CPUReqSecs: 300, CPUReqInstances: 1, WorkReqSeconds: 300, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9}}
					for k := 0; time.Now().Before(deadline); k++ {
						body, _ := req.Marshal()
						resp, err := http.Post(urls[(h+k)%2]+"scheduler", "text/xml", bytes.NewReader(body))
						if err != nil {
							t.Error(err)
							return
						}
						rep, err := boincxml.ParseSchedulerReply(resp.Body)
						resp.Body.Close()
						if err != nil || resp.StatusCode != 200 {
							t.Errorf("status %d: %v", resp.StatusCode, err)
							return
						}
						if req.HostID == 0 {
							req.HostID, req.Authenticator = rep.HostID, rep.Authenticator
						}
						req.RPCSeqno++
						req.Results = nil
						for _, r := range rep.ResultsSent {
							req.Results = append(req.Results, boincxml.ReportedResult{Name: r.Name, State: boincxml.ResultFilesUploaded})
						}
					}
				}()
			}
			wg.Wait()
			var sent, dupJobs, overSent, twiceOnHost int
			q := func(query string, v *int) {
				t.Helper()
				if err := st.DB.QueryRow(query).Scan(v); err != nil {
					t.Fatal(err)
				}
			}
			q(`SELECT COUNT(*) FROM result WHERE server_state<>2`, &sent)
			q(`SELECT COUNT(*) FROM (SELECT batch_id, job_num FROM workunit GROUP BY batch_id, job_num HAVING COUNT(*)>1) d`, &dupJobs)
			q(`SELECT COUNT(*) FROM (SELECT workunitid FROM result WHERE hostid<>0 GROUP BY workunitid HAVING COUNT(DISTINCT hostid)>2) d`, &overSent)
			q(`SELECT COUNT(*) FROM (SELECT workunitid, hostid FROM result WHERE hostid<>0 GROUP BY workunitid, hostid HAVING COUNT(*)>1) d`, &twiceOnHost)
			if sent < 20 {
				t.Errorf("only %d results sent: the run did not exercise the servers", sent)
			}
			if dupJobs != 0 || overSent != 0 || twiceOnHost != 0 {
				t.Errorf("%d jobs generated twice, %d jobs sent beyond their redundancy, %d sent twice to one host", dupJobs, overSent, twiceOnHost)
			}
			t.Logf("%d results sent", sent)
		})
	}
}
