package lifecycle_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/filetree"
	"github.com/bkit/bkit/lib/lifecycle"
	"github.com/bkit/bkit/lib/server/servertest"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// benchWorkunits is the size of the lifecycle benchmark: LIFECYCLE_BENCH_WUS
// workunits (default 1,000,000), a tenth of them ready for each pass.
func benchWorkunits() int {
	if n, err := strconv.Atoi(os.Getenv("LIFECYCLE_BENCH_WUS")); err == nil && n >= 10 {
		return n
	}
	return 1_000_000
}

// BenchmarkLifecycle measures one assimilate (--to), one delete-files and one purge
// pass over a million workunits of which 100,000 are ready for each, on SQLite, while
// four hosts keep making scheduler RPCs to an endpoint on the same database: each
// pass's wall time (assimilate-s, delete-s, purge-s), and the RPCs' p50 and p99
// latency during it (scripts/bench-lifecycle.sh prints them). The other 900,000
// workunits are assimilated and their files deleted lately (too young to purge): a
// project's history the passes must not read. Each of the 100,000 has one result
// with one uploaded output file. Run with -benchtime 1x: the setup is most of it.
func BenchmarkLifecycle(b *testing.B) { benchLifecycle(b, storetest.SQLiteDSN(b)) }

// BenchmarkLifecycleMySQL is the same on MySQL/MariaDB (BKIT_TEST_MYSQL_DSN).
func BenchmarkLifecycleMySQL(b *testing.B) { benchLifecycle(b, storetest.MySQLDSN(b)) }

func benchLifecycle(b *testing.B, dsn string) {
	if b.N > 1 {
		b.Skip("one pass each: run with -benchtime 1x")
	}
	ctx := context.Background()
	st := storetest.Open(b, dsn)
	if _, err := st.AddApp(ctx, "bench", false, created); err != nil {
		b.Fatal(err)
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "bench", VersionNum: 1, AvgNCPUs: 1}, created); err != nil {
		b.Fatal(err)
	}
	n := benchWorkunits()
	ready := n / 10
	const t0 = 50_000_000.0 // the 900,000's assimilation and file deletion
	t1 := time.Now()
	if err := st.Populate(ctx, store.PopulateSpec{App: "bench", Hosts: 100, Done: n, ResultsPerWorkunit: 1}, created); err != nil {
		b.Fatal(err)
	}
	// The project's files beside the database, as one directory holds both in
	// bserver's layout; LIFECYCLE_BENCH_FILES puts them in a directory of their own
	// (another file system: what the passes' file work costs the RPCs' commits).
	dir := b.TempDir()
	if d := os.Getenv("LIFECYCLE_BENCH_FILES"); d != "" {
		var err error
		if dir, err = os.MkdirTemp(d, "lifecycle-bench"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	upload := filepath.Join(dir, "upload")
	// The history, and an uploaded output for each ready workunit's result.
	concat := `r.name || '_0'`
	if st.Engine() == store.MySQL {
		concat = `CONCAT(r.name, '_0')`
	}
	for _, q := range []string{
		fmt.Sprintf(`UPDATE workunit SET assimilate_state=2, assimilate_time=%g, file_delete_state=2, file_delete_time=%g WHERE id>%d`, t0, t0, ready),
		fmt.Sprintf(`INSERT INTO result_file (resultid, file_num, name, nbytes, md5_cksum, sha256, upload_time)
			SELECT r.id, 0, %s, 100, '', '', %d FROM result r WHERE r.workunitid<=%d`, concat, created, ready),
	} {
		if _, err := st.DB.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	rows, err := st.DB.QueryContext(ctx, `SELECT f.name FROM result_file f`)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 100)
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(upload, filetree.Path(name))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	rows.Close()
	// The uploads on disk before the passes, as a project's are, having come over
	// days: without this, assimilation's first sync wrote back the setup's 100,000
	// new files and its directories (2.4 s of a pass of 18 s).
	syscall.Sync()
	b.Logf("setup: %d workunits, %d ready, %v", n, ready, time.Since(t1))

	load := servertest.StartFromEnv(b, dsn, benchHosts())
	defer load.Stop()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	inProcess := benchInProcess()
	if inProcess {
		b.Logf("passes in this process (LIFECYCLE_BENCH_INPROCESS): they share its Go scheduler with the endpoint")
	}
	// The RPCs' latency with no pass running, what each pass's is held to (issue 33:
	// within twice the idle p99).
	steps := timeSteps(load.Store())
	load.Latencies()
	time.Sleep(benchIdle())
	idle, idleSteps := load.Latencies(), steps()
	b.ResetTimer() // which forgets the metrics reported so far: idle's is reported after the passes'
	defer b.ReportMetric(mkdirCost(b, dir), "fs-mkdir-us")
	defer func() { servertest.Report(b, "idle-rpc-", idle) }()
	defer b.ReportMetric(servertest.RateFromEnv(b), "rpc-rate") // 0: the closed loop
	defer func() { reportSteps(b, "idle-rpc-", idleSteps) }()
	// Assimilation 20 days before t0, file deletion 10 days before, purge of what went
	// more than 5 days ago an hour after t0: the ready 100,000 and none of the rest.
	// LIFECYCLE_BENCH_LAYOUT=flat: assimilation's --layout flat (dirs by default).
	layoutName := cmp.Or(os.Getenv("LIFECYCLE_BENCH_LAYOUT"), "dirs")
	layout, err := lifecycle.ParseLayout(layoutName)
	if err != nil {
		b.Fatalf("LIFECYCLE_BENCH_LAYOUT: %v", err)
	}
	b.Logf("assimilation's layout: %s", layoutName)
	for _, pass := range []struct {
		name string
		run  func() (int, error)
		args []string       // the same pass as bserver's cron job (unless benchInProcess)
		done *regexp.Regexp // its count in the job's output
	}{
		{"assimilate", func() (int, error) {
			st := passStore(b, dsn, true)
			a := &lifecycle.Assimilator{Store: st, UploadDir: upload, To: filepath.Join(dir, "results"), Layout: layout, Clock: lifecycle.NewClock(t0 - 20*86400),
				Owner: lifecycle.Owner(), Lease: 600, Log: log}
			sum, err := a.Run(ctx)
			return sum.Assimilated, err
		}, []string{"--now", fmt.Sprint(t0 - 20*86400), "assimilate", "--to", filepath.Join(dir, "results"), "--layout", layoutName, "--once"}, assimilated},
		{"delete", func() (int, error) {
			st := passStore(b, dsn, true)
			d := &lifecycle.FileDeleter{Store: st, UploadDir: upload, DownloadDir: filepath.Join(dir, "download"), Clock: lifecycle.NewClock(t0 - 10*86400), Log: log}
			sum, err := d.Run(ctx)
			return sum.Workunits, err
		}, []string{"--now", fmt.Sprint(t0 - 10*86400), "delete-files", "--delay", "0", "--once"}, deletedWorkunits},
		{"purge", func() (int, error) {
			st := passStore(b, dsn, false)
			p := &lifecycle.Purger{Store: st, Archive: filepath.Join(dir, "archive"), OlderThan: 5 * 86400, Clock: lifecycle.NewClock(t0 + 3600),
				Owner: lifecycle.Owner(), Lease: 600, Log: log}
			sum, err := p.Run(ctx)
			if sum.Workunits != ready {
				b.Logf("purge: %v", sum) // why not all of them
			}
			skipped, reread := st.PurgeRechecks()
			b.Logf("purge: batches' second reads: %d left out, %d made", skipped, reread)
			return sum.Workunits, err
		}, []string{"--now", fmt.Sprint(t0 + 3600), "purge", "--older-than", "5d", "--archive", filepath.Join(dir, "archive"), "--once"}, purgedWorkunits},
	} {
		load.Latencies()
		steps()
		passHolds.Lock()
		passHolds.d = nil
		passHolds.Unlock()
		var done int
		var err error
		var wall time.Duration
		var cpu float64
		if inProcess {
			stopProfile := profilePass(b, pass.name)
			cpu0 := cpuTime()
			start := time.Now()
			done, err = pass.run()
			wall = time.Since(start)
			cpu = cpuTime() - cpu0
			stopProfile()
		} else {
			done, wall, cpu, err = runJob(dsn, dir, pass.args, pass.done)
		}
		if err != nil {
			b.Fatalf("%s: %v", pass.name, err)
		}
		if done != ready {
			b.Fatalf("%s: %d workunits, want %d", pass.name, done, ready)
		}
		b.ReportMetric(wall.Seconds(), pass.name+"-s")
		b.ReportMetric(cpu, pass.name+"-cpu-s")
		b.ReportMetric(float64(done)/wall.Seconds(), pass.name+"-wu/s")
		servertest.Report(b, pass.name+"-rpc-", load.Latencies())
		reportSteps(b, pass.name+"-rpc-", steps())
		if inProcess {
			passHolds.Lock()
			reportSteps(b, pass.name+"-pass-", map[string][]time.Duration{"hold": passHolds.d})
			passHolds.Unlock()
		}
	}
	// Idle again after the passes, as bretry's benchmark takes it: the machine's load
	// moves over minutes, and one window's p99 at 50 RPC/s is its fifth-worst RPC (4.4
	// to 11.6 ms in four runs of one binary here).
	load.Latencies()
	steps()
	time.Sleep(benchIdle())
	idle = append(idle, load.Latencies()...)
	slices.Sort(idle)
	for step, d := range steps() {
		idleSteps[step] = append(idleSteps[step], d...)
	}
}

// timeSteps times the transactions of s (the scheduler endpoint's) and returns what
// takes the times so far of their waits for the write lock (begin) and their
// commits, and starts anew: an RPC slow during a pass waited for the pass's lock
// (begin), or for its commit's sync behind the pass's file work in the file
// system's journal (commit).
func timeSteps(s *store.Store) func() map[string][]time.Duration {
	var mu sync.Mutex
	steps := map[string][]time.Duration{}
	s.TimeTransactions(func(step string, d time.Duration) {
		if step == "begin" || step == "commit" || step == "sync" {
			mu.Lock()
			steps[step] = append(steps[step], d)
			mu.Unlock()
		}
	})
	return func() map[string][]time.Duration {
		mu.Lock()
		defer mu.Unlock()
		out := steps
		steps = map[string][]time.Duration{}
		return out
	}
}

// reportSteps reports the p99 of each step's times.
func reportSteps(b *testing.B, prefix string, steps map[string][]time.Duration) {
	for step, d := range steps {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, prefix+step+"-p99-ms")
	}
}

// passStore opens the database for one pass as bserver's subcommand does: a store
// of its own, whose commits skip the WAL's sync (store.BatchJob) for assimilate and
// delete-files (the purger sets that itself, Purger.Run).
func passStore(b *testing.B, dsn string, batchJob bool) *store.Store {
	st, err := store.Open(dsn)
	if err != nil {
		b.Fatal(err)
	}
	st.TimeTransactions(func(step string, d time.Duration) {
		if step == "hold" {
			passHolds.Lock()
			passHolds.d = append(passHolds.d, d)
			passHolds.Unlock()
		}
	})
	b.Cleanup(func() { st.Close() })
	if batchJob {
		if err := st.BatchJob(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	return st
}

// passHolds are how long the pass's transactions held the database (on SQLite its
// one write lock, which every scheduler RPC's transaction waits for): the p99 is
// what an RPC that comes at the wrong moment waits (pass-hold-p99-ms).
var passHolds struct {
	sync.Mutex
	d []time.Duration
}

// benchInProcess says to run the passes as calls in the benchmark's own process
// (LIFECYCLE_BENCH_INPROCESS=1), which reports each pass's transactions' hold p99 and
// can profile them (LIFECYCLE_BENCH_PROFILE), rather than as bserver's cron jobs in
// processes of their own, as a project runs them. In one process the pass's
// goroutines and the endpoint's share two Ps of one Go scheduler, so an RPC ready to
// run may wait for a pass's goroutine to be preempted (up to 10 ms), a wait the
// endpoint, its own process, does not have beside a cron job: at 50 RPC/s the RPCs'
// p99 during assimilation was 27.4 ms with the pass in this process and 17.3 ms with
// it in its own (docs/decisions.md, "the lifecycle passes measured as cron jobs").
func benchInProcess() bool { return os.Getenv("LIFECYCLE_BENCH_INPROCESS") == "1" }

// runJob runs one pass as bserver's cron job does (bserver --db DSN --project-dir DIR
// ARGS, this test binary as bserver: TestMain) and returns its count (done's first
// group in its output), its wall time and its CPU seconds (the job's alone).
func runJob(dsn, dir string, args []string, done *regexp.Regexp) (int, time.Duration, float64, error) {
	bin, err := exec.LookPath("bserver")
	if err != nil {
		return 0, 0, 0, err
	}
	cmd := exec.Command(bin, append([]string{"--db", dsn, "--project-dir", dir}, args...)...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil {
		return 0, wall, 0, fmt.Errorf("bserver %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	m := done.FindSubmatch(out)
	if m == nil {
		return 0, wall, cpu, fmt.Errorf("bserver %s: no count in %q", strings.Join(args, " "), out)
	}
	n, err := strconv.Atoi(string(m[1]))
	return n, wall, cpu, err
}

var (
	deletedWorkunits = regexp.MustCompile(`workunits (\d+), files deleted`)
	purgedWorkunits  = regexp.MustCompile(`purged (\d+) workunits`)
)

// benchIdle is how long the RPCs' idle latency is measured before the passes and
// again after them:
// LIFECYCLE_BENCH_IDLE (a duration), default 10 s.
func benchIdle() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("LIFECYCLE_BENCH_IDLE")); err == nil && d >= 0 {
		return d
	}
	return 10 * time.Second
}

// benchHosts is how many hosts keep the endpoint busy: LIFECYCLE_BENCH_HOSTS, default 4
// (0: the passes alone).
func benchHosts() int {
	if n, err := strconv.Atoi(os.Getenv("LIFECYCLE_BENCH_HOSTS")); err == nil && n >= 0 {
		return n
	}
	return 4
}

// cpuTime is this process's user and system CPU seconds so far: the pass's own work
// (with the endpoint under load in the same process, its work too), which a machine
// shared with other jobs stretches into more wall time.
func cpuTime() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// profilePass writes a CPU profile of one pass to LIFECYCLE_BENCH_PROFILE/PASS.prof
// when that directory is set (the benchmark's -cpuprofile would be mostly the
// fixture's), and returns what stops it.
func profilePass(b *testing.B, pass string) func() {
	dir := os.Getenv("LIFECYCLE_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, pass+".prof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// mkdirCost is how long making a directory takes on the file system of dir just
// before the passes, in microseconds (the mean of 2,000, in a directory of their
// own, left in place: removing them would make the next inodes dearer). Most of an
// assimilation's kernel time is a new directory per workunit, and its cost moves with
// the file system's state more than with the code: on an ext4 without a journal it
// rose from 37 µs to over 200 µs after other jobs removed many files (docs/decisions.md,
// "What a new directory costs on this machine's disk"). Reported beside the passes so
// that two runs' figures can be told apart by the disk as well as by the code.
func mkdirCost(b *testing.B, dir string) float64 {
	d, err := os.MkdirTemp(dir, "mkdir-cost")
	if err != nil {
		b.Fatal(err)
	}
	const n = 2000
	start := time.Now()
	for i := range n {
		if err := os.Mkdir(filepath.Join(d, strconv.Itoa(i)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return float64(time.Since(start).Microseconds()) / n
}
