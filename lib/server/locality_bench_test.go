package server

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// BenchmarkLocalityAssignment measures seed 004's assignment decision for one
// scheduler request (assignCursor: the host's cursor, its user's teams, the cursors
// with the greatest est_time_left, the choice by the team rules, and a move when the
// choice says so) on SQLite, with a batch of
// 1,000,000 jobs in 1,000 cursors and 10,000 hosts on teams of 10. It reports the p50
// and p99 in ms.
func BenchmarkLocalityAssignment(b *testing.B) {
	ctx := context.Background()
	st := storetest.Open(b, storetest.SQLiteDSN(b))
	if _, err := st.AddApp(ctx, "loc", true, 1); err != nil {
		b.Fatal(err)
	}
	const nJobs, nHosts, teamSize = 1_000_000, 10_000, 10
	spec := store.BatchSpec{Name: "big", App: "loc", DelayBound: 86400, MinQuorum: 1, TargetNResults: 1, MaxErrorResults: 3, MaxTotalResults: 5, MaxSuccessResults: 3}
	for f := 0; f < nJobs/10; f++ {
		spec.Files = append(spec.Files, store.BatchFile{Name: fmt.Sprintf("big_f%d", f), NBytes: 1e6})
	}
	credit := make([]float64, nJobs)
	for j := 0; j < nJobs; j++ {
		spec.Jobs = append(spec.Jobs, store.BatchJob{FirstFileNum: int64(j / 10), LastFileNum: int64(j / 10), FpopsEst: 1e13})
		credit[j] = 1e13 * locality.CreditPerFlop
	}
	spec.Cursors = locality.PlanCursors(credit, nHosts, teamSize)
	if _, err := st.CreateBatch(ctx, spec, 1); err != nil {
		b.Fatal(err)
	}
	err := st.InTx(ctx, func(tx *store.Tx) error {
		for h := 1; h <= nHosts; h++ {
			if _, err := tx.Exec(`INSERT INTO host (id, userid, authenticator, p_fpops, p_ncpus) VALUES (?, ?, ?, 1e9, 1)`, h, h/2+1, fmt.Sprint("a", h)); err != nil {
				return err
			}
			c := int64(h%len(spec.Cursors) + 1)
			if err := tx.MoveHost(1, int64(h), int64(h/2+1), 0, c, 200); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	// CPU time of the process per request beside the wall time: on a shared machine
	// the wall tail is mostly the request waiting for a core (docs/decisions.md).
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	lat := make([]time.Duration, 0, b.N)
	cpuLat := make([]time.Duration, 0, b.N)
	// The setup's garbage (a million jobs' spec) is collected now, not during the
	// requests measured: a server has no such heap.
	spec = store.BatchSpec{}
	credit = nil
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		hostID := int64(i%nHosts + 1)
		c0 := cpu()
		t0 := time.Now()
		err := st.InTx(ctx, func(tx *store.Tx) error {
			host, err := tx.HostByID(hostID)
			if err != nil {
				return err
			}
			_, ok, err := assignCursor(tx, 1, host)
			if err == nil && !ok {
				err = fmt.Errorf("no cursor")
			}
			return err
		})
		lat = append(lat, time.Since(t0))
		cpuLat = append(cpuLat, cpu()-c0)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(cpuLat)
	pct := func(l []time.Duration, p float64) float64 { return float64(l[int(p*float64(len(l)-1))]) / 1e6 }
	b.ReportMetric(pct(lat, 0.50), "p50-ms")
	b.ReportMetric(pct(lat, 0.99), "p99-ms")
	b.ReportMetric(pct(cpuLat, 0.50), "p50-cpu-ms")
	b.ReportMetric(pct(cpuLat, 0.99), "p99-cpu-ms")
}
