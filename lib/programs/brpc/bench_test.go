package brpc

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/state"
)

// bigDoc is a document of 100 projects and 10,000 tasks (100 each; a tenth done, some
// overdue), projects with and without CPU time, some backed off.
func bigDoc(tb testing.TB) *state.Document {
	tb.Helper()
	d := &state.Document{Version: state.Version,
		Host:        state.Host{Resources: []state.Resource{{Type: state.ResourceCPU, Instances: 16, Flops: 1e9}}, TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1}},
		Preferences: state.Preferences{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5, ConnectionPeriodDays: 0.1, CPUSchedulingPeriod: 3600}}
	for p := range 100 {
		name := fmt.Sprintf("P%03d", p)
		pr := state.Project{Name: name, ResourceShare: float64(1 + p%7), SchedulerURLs: []string{"http://127.0.0.1:1/" + name}}
		if p%3 != 0 {
			pr.ExpAvgCPU, pr.ExpAvgTime = float64(1000*p), t0-3600
		}
		if p%10 == 0 {
			pr.MinRPCTime, pr.NRPCFailures = t0+600, 2
		}
		d.Projects = append(d.Projects, pr)
		d.AppVersions = append(d.AppVersions, state.AppVersion{Name: name + "/a/1", Project: name, AvgNCPUs: 1})
		for i := range 100 {
			t := state.Task{Name: fmt.Sprintf("%s_%d", name, i), Project: name, AppVersion: name + "/a/1", State: state.TaskReady,
				EstimatedFlops: 1e13, ReportDeadline: t0 + 86400*float64(2+i%5)}
			if i%10 == 0 {
				t.State, t.FlopsDone, t.ReportDeadline = state.TaskDone, 1e13, t0+3600*float64(1+p%20) // overdue
			}
			d.Tasks = append(d.Tasks, t)
		}
	}
	if err := state.Validate(d); err != nil {
		tb.Fatal(err)
	}
	return d
}

// BenchmarkPoll is brpc poll's decision in process on 100 projects and 10,000 tasks
// (the poll, the per-project table rows, the first RPC's request), target 5 ms.
func BenchmarkPoll(b *testing.B) {
	base := bigDoc(b)
	docs := make([]*state.Document, b.N)
	for i := range docs {
		d := *base
		d.Projects = slices.Clone(base.Projects)
		docs[i] = &d
	}
	b.ResetTimer()
	for i := range b.N {
		if res := poll(docs[i], t0, nil, cliutil.PolicySeed); !res.planned {
			b.Fatal("no RPC planned")
		}
	}
}

// BenchmarkPollProgram is the whole program in process (read, decide, write a
// 10,000-task document in place), target 50 ms; a process start adds a few ms.
func BenchmarkPollProgram(b *testing.B) {
	data, err := state.Encode(bigDoc(b), state.JSON)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "state.json")
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if code := Main([]string{"brpc", "poll", "--now", "1700000000", "--state", path, "--in-place"}, nil, io.Discard, io.Discard); code != 0 {
			b.Fatalf("status %d", code)
		}
	}
}

// BenchmarkSessionRoundTrip is one RPC to a loopback bserver (SQLite) with one report
// and one job: each RPC reports the job the previous one received (recorded, not a
// duplicate) and receives the next; it reports the latency's p50 and p99 over the
// iterations.
func BenchmarkSessionRoundTrip(b *testing.B) {
	pj := startProject(b, server.Config{ProjectName: "A"}, b.N+1)
	d := clientDoc(b, state.Project{Name: "A", MasterURL: pj.url, SchedulerURLs: []string{pj.url + "scheduler"}, ResourceShare: 100})
	client := NewClient(time.Second, 10*time.Second)
	// First contact: the host id, and a job to report.
	s := &Session{Doc: d, Now: t0, Rand: prsc.NewRand(1), Client: client, Log: func(string, ...any) {}}
	s.rpc(context.Background(), 0, &state.WorkRequest{Project: "A", CPUReqSecs: 1})
	if len(d.Tasks) != 1 {
		b.Fatalf("first contact: %+v", s.Attempts)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		d.Tasks[0].State, d.Tasks[0].FlopsDone = state.TaskDone, d.Tasks[0].EstimatedFlops
		s := &Session{Doc: d, Now: t0, Rand: prsc.NewRand(1), Client: client, Log: func(string, ...any) {}}
		start := time.Now()
		s.rpc(context.Background(), 0, &state.WorkRequest{Project: "A", CPUReqSecs: 1})
		lat = append(lat, time.Since(start))
		if len(d.Tasks) != 2 || d.Tasks[0].State != state.TaskReported || s.Attempts[0].Reported != 1 {
			b.Fatalf("round trip: %+v", s.Attempts)
		}
		d.Tasks = d.Tasks[1:] // the acknowledged report leaves; the new job is next
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
