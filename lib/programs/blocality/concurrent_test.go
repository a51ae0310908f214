package blocality_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/scripttest"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

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
				s := scripttest.Start(t, true, "bserver", append([]string{"serve", "--db", e.DSN, "--addr", "127.0.0.1:0"}, project...)...)
				url, ok := strings.CutPrefix(s, "listening on ")
				if !ok {
					t.Fatalf("serve said %q", s)
				}
				urls = append(urls, url)
				scripttest.Start(t, false, "blocality", "generate", "--db", e.DSN, "--cushion", "5", "--interval", "0.02", "-v")
			}
			keys := accountKeys(t, st, 8)
			var sent, dupJobs, overSent, twiceOnHost int
			q := func(query string, v *int) {
				t.Helper()
				if err := st.DB.QueryRow(query).Scan(v); err != nil {
					t.Fatal(err)
				}
			}
			// Rounds of 1.5 s of requests until the servers have sent enough to have
			// raced (on a loaded machine one round may send only a few), for 30 s at most.
			for start := time.Now(); sent < 40 && time.Since(start) < 30*time.Second; {
				var wg sync.WaitGroup
				deadline := time.Now().Add(1500 * time.Millisecond)
				for h := range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						hostRPCs(t, urls, h, boincxml.SchedulerRequest{Authenticator: keys[h], CPUReqSecs: 300, CPUReqInstances: 1, WorkReqSeconds: 300, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9}}, deadline, 0)
					}()
				}
				wg.Wait()
				q(`SELECT COUNT(*) FROM result WHERE server_state<>2`, &sent)
			}
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

// TestDaemonsTwiceAndKilled runs the three daemons twice each (generate, transition,
// credit) beside two `bserver serve` processes while hosts fetch and report jobs
// (two results a job, both must succeed), SIGKILLs a daemon at random every tenth of
// a second and starts another in its place, then makes one clean pass of the
// transitioner and the locality daemon and checks every cursor against what its
// jobs say: each job below first_ungenerated_job_num made once with its two results,
// none above; every job below first_unfinished_job_num finished and the one at it
// not; remaining_credit the estimated credit of the unfinished jobs (ungenerated ones
// included); expavg_credit and the team size those of the batch_host rows; no job
// sent to more hosts than its results nor twice to one host.
func TestDaemonsTwiceAndKilled(t *testing.T) {
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
			spec := store.BatchSpec{Name: "kk", App: "loc", DelayBound: 86400, MinQuorum: 2, TargetNResults: 2, MaxErrorResults: 3,
				MaxTotalResults: 6, MaxSuccessResults: 4, StreamJobs: 10}
			for f := 0; f < 60; f++ {
				spec.Files = append(spec.Files, store.BatchFile{Name: fmt.Sprintf("kk_f%d", f), NBytes: 1e6})
			}
			credit := make([]float64, 300)
			for j := range 300 {
				spec.Jobs = append(spec.Jobs, store.BatchJob{FirstFileNum: int64(j / 5), LastFileNum: min(int64(j/5+1), 59), FpopsEst: 1e11 * float64(1+j%3)})
				credit[j] = spec.Jobs[j].FpopsEst
			}
			spec.Cursors = locality.PlanCursors(credit, 8, 3)
			if _, err := st.CreateBatch(ctx, spec, 1); err != nil {
				t.Fatal(err)
			}
			project := []string{}
			if e.Name == store.MySQL {
				project = []string{"--project-dir", t.TempDir()}
			}
			var urls []string
			for range 2 {
				s := scripttest.Start(t, true, "bserver", append([]string{"serve", "--db", e.DSN, "--addr", "127.0.0.1:0"}, project...)...)
				url, ok := strings.CutPrefix(s, "listening on ")
				if !ok {
					t.Fatalf("serve said %q", s)
				}
				urls = append(urls, url)
			}
			daemons := [][]string{
				{"generate", "--cushion", "8"}, {"generate", "--cushion", "8"},
				{"transition"}, {"transition"}, {"credit"}, {"credit"},
			}
			bin, err := exec.LookPath("blocality")
			if err != nil {
				t.Fatal(err)
			}
			run := func(i int) *exec.Cmd {
				cmd := exec.Command(bin, append(daemons[i], "--db", e.DSN, "--interval", "0.01")...)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				return cmd
			}
			procs := make([]*exec.Cmd, len(daemons))
			for i := range daemons {
				procs[i] = run(i)
			}
			stop := make(chan struct{})
			killed := make(chan int)
			go func() {
				n := 0
				defer func() { killed <- n }()
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					i := (k * 7) % len(procs)
					procs[i].Process.Signal(syscall.SIGKILL)
					procs[i].Wait()
					procs[i] = run(i)
					n++
				}
			}()
			// Rounds of 2 s until the hosts have reported enough to exercise the
			// daemons: one round on a quiet machine, more on a loaded one (where a
			// fixed 2 s once reported nothing), at most 10.
			keys := accountKeys(t, st, 8)
			for round := 0; round < 10; round++ {
				var wg sync.WaitGroup
				deadline := time.Now().Add(2 * time.Second)
				for h := range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						// A reply with no result waits for the generator's turn.
						hostRPCs(t, urls, h, boincxml.SchedulerRequest{Authenticator: keys[h], CPUReqSecs: 300, CPUReqInstances: 2, HostInfo: boincxml.HostInfo{PNCPUs: 2, PFpops: 1e9}}, deadline, 20*time.Millisecond)
					}()
				}
				wg.Wait()
				var reported int
				if err := st.DB.QueryRow(`SELECT COUNT(*) FROM result WHERE server_state=5`).Scan(&reported); err != nil {
					t.Fatal(err)
				}
				if reported >= 20 {
					break
				}
			}
			close(stop)
			kills := <-killed
			time.Sleep(300 * time.Millisecond) // the last one started has its SIGTERM handler
			for _, p := range procs {
				p.Process.Signal(syscall.SIGTERM)
				err := p.Wait()
				var exit *exec.ExitError
				if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM {
					// On a loaded machine the SIGTERM can come before the daemon has
					// its handler: that is one more kill, which the run already
					// survives, not a failed shutdown.
					t.Logf("daemon %v ended by SIGTERM before its handler was set", p.Args)
					continue
				}
				if err != nil {
					t.Errorf("daemon %v: %v", p.Args, err)
				}
			}
			now := float64(time.Now().Unix())
			if _, _, err := st.Transition(ctx, now); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Credit(ctx, 3*86400, now); err != nil {
				t.Fatal(err)
			}
			checkCursors(t, st, spec)
			var reported int
			if err := st.DB.QueryRow(`SELECT COUNT(*) FROM result WHERE server_state=5`).Scan(&reported); err != nil {
				t.Fatal(err)
			}
			if reported < 20 || kills < 5 {
				t.Errorf("%d results reported, %d daemons killed: the run did not exercise the daemons", reported, kills)
			}
			t.Logf("%d results reported, %d daemons killed", reported, kills)
		})
	}
}

// checkCursors checks every cursor of the batch spec against its jobs (see
// TestDaemonsTwiceAndKilled).
func checkCursors(t *testing.T, st *store.Store, spec store.BatchSpec) {
	t.Helper()
	type wu struct {
		n        int
		finished bool
	}
	wus := map[int64]*wu{}
	rows, err := st.DB.Query(`SELECT w.job_num, (SELECT COUNT(*) FROM result r WHERE r.workunitid=w.id),
		w.canonical_resultid<>0 OR w.error_mask<>0 OR (NOT EXISTS (SELECT 1 FROM result r WHERE r.workunitid=w.id AND r.server_state IN (2, 4))
			AND (SELECT COUNT(*) FROM result r WHERE r.workunitid=w.id AND r.server_state=5 AND r.outcome=1)>=w.min_quorum)
		FROM workunit w`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var j int64
		var w wu
		if err := rows.Scan(&j, &w.n, &w.finished); err != nil {
			t.Fatal(err)
		}
		if wus[j] != nil {
			t.Errorf("job %d generated twice", j)
		}
		wus[j] = &w
	}
	rows.Close()
	cs, err := st.BatchStatuses(context.Background(), []string{spec.Name})
	if err != nil {
		t.Fatal(err)
	}
	members := map[int64][]float64{}
	rows, err = st.DB.Query(`SELECT cursor_id, credit FROM batch_host`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c int64
		var credit float64
		if err := rows.Scan(&c, &credit); err != nil {
			t.Fatal(err)
		}
		members[c] = append(members[c], credit)
	}
	rows.Close()
	for _, c := range cs[0].Cursors {
		remaining, total := 0.0, 0.0
		for j := c.FirstJobNum; j <= c.LastJobNum; j++ {
			w := wus[j]
			credit := spec.Jobs[j].FpopsEst * locality.CreditPerFlop
			total += credit
			switch {
			case j < c.FirstUngeneratedJobNum && (w == nil || w.n != 2):
				t.Errorf("cursor %d: job %d below first ungenerated %d: workunit %+v, want one with 2 results", c.ID, j, c.FirstUngeneratedJobNum, w)
			case j >= c.FirstUngeneratedJobNum && w != nil:
				t.Errorf("cursor %d: job %d at or past first ungenerated %d has a workunit", c.ID, j, c.FirstUngeneratedJobNum)
			case j < c.FirstUnfinishedJobNum && !w.finished:
				t.Errorf("cursor %d: job %d below first unfinished %d is not finished", c.ID, j, c.FirstUnfinishedJobNum)
			case j == c.FirstUnfinishedJobNum && w != nil && w.finished:
				t.Errorf("cursor %d: job %d at first unfinished is finished", c.ID, j)
			}
			if j >= c.FirstUnfinishedJobNum && (w == nil || !w.finished) {
				remaining += credit
			}
		}
		if math.Abs(c.RemainingCredit-remaining) > 1e-9*total || (c.RemainingCredit == 0) != (c.FirstUnfinishedJobNum > c.LastJobNum) {
			t.Errorf("cursor %d: remaining_credit %g, its unfinished jobs' credit %g (first unfinished %d of %d..%d)",
				c.ID, c.RemainingCredit, remaining, c.FirstUnfinishedJobNum, c.FirstJobNum, c.LastJobNum)
		}
		sum, _ := locality.TeamCredit(members[c.ID])
		if math.Abs(c.ExpavgCredit-sum) > 1e-9*max(sum, 1) || int(c.NHosts) != len(members[c.ID]) {
			t.Errorf("cursor %d: expavg_credit %g team %d, its members' %g and %d", c.ID, c.ExpavgCredit, c.NHosts, sum, len(members[c.ID]))
		}
	}
	var overSent, twiceOnHost int
	if err := st.DB.QueryRow(`SELECT COUNT(*) FROM (SELECT workunitid FROM result WHERE hostid<>0 GROUP BY workunitid HAVING COUNT(DISTINCT hostid)>2) d`).Scan(&overSent); err != nil {
		t.Fatal(err)
	}
	if err := st.DB.QueryRow(`SELECT COUNT(*) FROM (SELECT workunitid, hostid FROM result WHERE hostid<>0 GROUP BY workunitid, hostid HAVING COUNT(*)>1) d`).Scan(&twiceOnHost); err != nil {
		t.Fatal(err)
	}
	if overSent != 0 || twiceOnHost != 0 {
		t.Errorf("%d jobs sent beyond their redundancy, %d sent twice to one host", overSent, twiceOnHost)
	}
}

// accountKeys makes n accounts and returns their keys: the hosts' of hostRPCs.
func accountKeys(t *testing.T, st *store.Store, n int) []string {
	t.Helper()
	var keys []string
	for i := range n {
		u, err := st.AddUser(context.Background(), fmt.Sprintf("volunteer %d", i), "", 1)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, u.Authenticator)
	}
	return keys
}

// hostRPCs is host h (its request carries its account's key) asking for work as req says, at the servers of urls in turn, until
// deadline: each request reports every result the last reply sent. After a reply with
// no result it waits idle, if any, before the next request.
func hostRPCs(t *testing.T, urls []string, h int, req boincxml.SchedulerRequest, deadline time.Time, idle time.Duration) {
	for k := 0; time.Now().Before(deadline); k++ {
		body, _ := req.Marshal()
		resp, err := http.Post(urls[(h+k)%len(urls)]+"scheduler", "text/xml", bytes.NewReader(body))
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
			req.HostID = rep.HostID // it goes on with its account key
		}
		req.RPCSeqno++
		req.Results = nil
		for _, r := range rep.ResultsSent {
			req.Results = append(req.Results, boincxml.ReportedResult{Name: r.Name, State: boincxml.ResultFilesUploaded})
		}
		if len(rep.ResultsSent) == 0 && idle > 0 {
			time.Sleep(idle)
		}
	}
}
