package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/plotcmd"
	"github.com/bkit/bkit/lib/sim"
	"github.com/bkit/bkit/lib/store"
)

// Config is one run of the loop.
type Config struct {
	Bin       string  // the programs' directory
	Clients   int     // emulated clients
	Duration  float64 // simulated seconds
	Delta     float64 // simulated seconds per client step
	DB, DB2   string  // projects A and B (default SQLite in the work directory)
	FrontEnds int     // serve processes on A's database
	KillAt    float64 // > 0: SIGKILL A's first front end this long after the start
	Seed      uint64
	Plot      string // directory for the pictures, or ""
	Keep      string // work directory to leave, or "" (a temporary one)
	Output    string // table or json
	// PurgeAge is bserver purge's --older-than: how long a workunit's rows stay after
	// its files are deleted.
	PurgeAge float64
}

// The project's work, in simulated units a newcomer can follow: jobs of half an hour
// on a 1 GFLOPS CPU, due three hours after they are sent; the clients keep about 45
// minutes of work (low-water 0.01 d, high-water 0.03 d), so several rounds of
// send–compute–report–validate, and a retry after a lost deadline, fit in a few
// simulated hours.
const (
	start       = sim.DefaultStart // the clock's start, as bsim init's
	jobFlops    = 1.8e12           // a CPU job: 30 min at 1e9 FLOPS
	gpuJobFlops = 1.8e13           // a GPU job: 30 min at 1e10 FLOPS
	delayBound  = 3 * 3600         // report deadline after sending
	retryDelay  = 4 * 3600         // first retry check after creation: after a deadline
	dwu         = 3600             // seed 003's DWU for every app
	dresult     = 3 * 3600         // seed 003's Dresult
	ndProb      = 0.5              // the nondeterministic app's chance that a result disagrees
	fileBytes   = 20e6             // a locality batch file
)

// A kind of client, taken in turn.
type kind struct {
	name        string
	cpus        int
	flops       float64
	gpu         float64 // an NVIDIA GPU of these FLOPS, or 0
	offline     bool    // off for the middle of the run, losing its work
	twoProjects bool    // attached to project B too
}

var kinds = []kind{
	{name: "quad", cpus: 4, flops: 2e9},
	{name: "gpu", cpus: 2, flops: 1.5e9, gpu: 1e10},
	{name: "offline", cpus: 2, flops: 1e9, offline: true},
	{name: "two-projects", cpus: 2, flops: 2e9, twoProjects: true},
	{name: "small", cpus: 1, flops: 1e9},
	{name: "big", cpus: 8, flops: 3e9},
}

// loop is a run in progress.
type loop struct {
	cfg     Config
	dir     string
	log     io.Writer
	clock   string // the front ends' clock file
	now     float64
	end     float64
	dbA     *store.Store
	dbB     *store.Store
	urlsA   []string
	urlB    string
	fronts  []*frontEnd // A's, then B's
	clients []*client
	cron    []*cronJob

	mu       sync.Mutex
	received map[string]string // result name → the client that received it first
	acked    map[string]ack    // result name → reports acknowledged by a front end
	broken   []string          // invariants broken along the way
	execs    int               // program runs
	kills    int               // front ends killed
	samples  []sample          // for --plot
	purged   map[string]int    // project → workunits bserver purge archived so far
	days     []DayFigures      // per project, at the end of each simulated day
	// uploadKeys are the projects' upload keys; uploads counts the output files the
	// clients uploaded (upload.go).
	uploadKeys map[string][]byte
	uploads    uploadFigures
}

// programNames are the programs the loop runs besides bserver.
func programNames(cfg Config) []string {
	names := []string{"bretry", "blocality", "bsim", "bfetch", "bdevices", "bsched", "brpc"}
	if cfg.Plot != "" {
		names = append(names, plotcmd.Program)
	}
	return names
}

// ack is a report a front end acknowledged: the client, the result's project, when,
// and whether the result was gone from the database then (purged before the report).
type ack struct {
	client, project string
	purged          bool
	at              float64
}

// Run runs the loop and returns its summary; a broken invariant is in Summary.Broken,
// an error means the loop could not run.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Summary, error) {
	wall := time.Now()
	for _, name := range append(programNames(cfg), "bserver") {
		if _, err := os.Stat(filepath.Join(cfg.Bin, name)); err != nil {
			return nil, fmt.Errorf("the programs are taken from --bin %s: %v (go build -o DIR ./cmd/...)", cfg.Bin, err)
		}
	}
	l := &loop{cfg: cfg, log: progress, now: start, end: start + cfg.Duration,
		received: map[string]string{}, acked: map[string]ack{}, purged: map[string]int{}, uploadKeys: map[string][]byte{}}
	if cfg.Keep != "" {
		if err := os.MkdirAll(cfg.Keep, 0o755); err != nil {
			return nil, err
		}
		l.dir = cfg.Keep
	} else {
		d, err := os.MkdirTemp("", "bkit-full-loop-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		l.dir = d
	}
	l.clock = filepath.Join(l.dir, "clock.txt")
	if err := l.setClock(start); err != nil {
		return nil, err
	}
	defer l.stopAll()
	l.progress("setting up projects A and B (%s, %s)", engineOf(l.dsnA()), engineOf(l.dsnB()))
	if err := l.setup(ctx); err != nil {
		return nil, err
	}
	if err := l.startFrontEnds(ctx); err != nil {
		return nil, err
	}
	if err := l.makeClients(ctx); err != nil {
		return nil, err
	}
	l.makeCron()
	if err := l.run(ctx); err != nil {
		return nil, err
	}
	return l.summary(ctx, time.Since(wall))
}

func (l *loop) dsnA() string {
	if l.cfg.DB != "" {
		return l.cfg.DB
	}
	return "sqlite:" + filepath.Join(l.dir, "A", "project.db")
}

func (l *loop) dsnB() string {
	if l.cfg.DB2 != "" {
		return l.cfg.DB2
	}
	return "sqlite:" + filepath.Join(l.dir, "B", "project.db")
}

func engineOf(dsn string) string {
	if strings.HasPrefix(dsn, "mysql:") {
		return "MySQL/MariaDB"
	}
	return "SQLite"
}

func (l *loop) progress(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.log, "full-loop: "+format+"\n", args...)
}

func (l *loop) setClock(t float64) error {
	return cliutil.WriteFileAtomic(l.clock, []byte(strconv.FormatFloat(t, 'f', -1, 64)+"\n"))
}

// exactTime formats t so that --now reads back the same float64.
func exactTime(t float64) string { return strconv.FormatFloat(t, 'f', -1, 64) }

// run steps the clients and the cron jobs from the start to the end of the run.
func (l *loop) run(ctx context.Context) error {
	steps := int(math.Ceil(l.cfg.Duration / l.cfg.Delta))
	killed, restartAt := false, -1
	nextReport := 0.0
	for k := 0; k < steps; k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.now = start + float64(k)*l.cfg.Delta
		if err := l.setClock(l.now); err != nil {
			return err
		}
		if k == restartAt {
			if err := l.fronts[0].start(ctx, l); err != nil {
				return fmt.Errorf("restarting the killed front end: %w", err)
			}
			l.progress("%s: front end %s restarted", l.elapsed(), l.fronts[0].url)
		}
		var kill func() error
		if l.cfg.KillAt > 0 && !killed && l.now-start >= l.cfg.KillAt {
			// The SIGKILL comes between two clients' sessions of the step, at the same
			// place in every run (half of them before it): the clients after it find
			// the front end gone, fail and back off, or turn to the next scheduler
			// URL, and whatever it had committed must stay recorded. (A kill in the
			// middle of a request, a reply lost after its commit, is bserver's
			// kill-under-load test; here it would make the run unrepeatable.)
			killed, restartAt = true, k+1
			kill = func() error {
				l.progress("%s: SIGKILL to front end %s during the clients' step (restarted at the next step)", l.elapsed(), l.fronts[0].url)
				l.kills++
				return l.fronts[0].kill()
			}
		}
		if err := l.clientStep(ctx, kill); err != nil {
			return err
		}
		if err := l.cronPass(ctx, l.now, false); err != nil {
			return err
		}
		if l.cfg.Plot != "" {
			if err := l.sample(ctx); err != nil {
				return err
			}
		}
		if day := int((l.now + l.cfg.Delta - start) / 86400); day > int((l.now-start)/86400) && l.now+l.cfg.Delta < l.end {
			// The last step of a simulated day is done.
			if err := l.daySample(ctx, day); err != nil {
				return err
			}
		}
		if l.now-start >= nextReport {
			l.progress("%s of %s simulated (%d%%): %d results received by the clients, %d reports acknowledged, %d program runs",
				l.elapsed(), human(l.cfg.Duration), int(100*(l.now-start)/l.cfg.Duration), len(l.received), len(l.acked), l.execs)
			nextReport += max(3600, l.cfg.Duration/20)
		}
	}
	l.now = l.end
	if err := l.setClock(l.now); err != nil {
		return err
	}
	// The last word is the server side's: every cron job once more at the end, so
	// what is past its deadline is marked lost and what is reported validated.
	if err := l.cronPass(ctx, l.now, true); err != nil {
		return err
	}
	if err := l.daySample(ctx, int(math.Ceil(l.cfg.Duration/86400))); err != nil {
		return err
	}
	if l.cfg.Plot != "" {
		return l.sample(ctx)
	}
	return nil
}

func (l *loop) elapsed() string { return human(l.now - start) }

// human is a simulated duration as 1d2h03m.
func human(s float64) string {
	d := time.Duration(s) * time.Second
	days := int(d / (24 * time.Hour))
	d -= time.Duration(days) * 24 * time.Hour
	out := fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	if days > 0 {
		out = fmt.Sprintf("%dd", days) + out
	}
	return out
}

// clientStep runs every client's step (client.prepare): the parts that touch only
// the client's own files as many at once as there are processors, the sessions one
// after another in the clients' order; kill, if not nil, runs after the first half of
// the sessions.
func (l *loop) clientStep(ctx context.Context, kill func() error) error {
	ask := make([]bool, len(l.clients))
	err := l.eachClient(func(i int, c *client) (err error) {
		ask[i], err = c.prepare(ctx, l)
		return err
	})
	if err != nil {
		return err
	}
	for i, c := range l.clients {
		if kill != nil && i == len(l.clients)/2 {
			if err := kill(); err != nil {
				return err
			}
		}
		// A connected client's finished tasks' output files go up before its
		// session reports them, as a BOINC client uploads before it reports.
		if c.online {
			if err := c.upload(ctx, l); err != nil {
				return err
			}
		}
		if ask[i] {
			if err := c.session(ctx, l); err != nil {
				return err
			}
		}
	}
	return l.eachClient(func(_ int, c *client) error { return c.compute(ctx, l) })
}

// eachClient runs f for every client, as many at once as there are processors.
func (l *loop) eachClient(f func(int, *client) error) error {
	sem := make(chan struct{}, runtime.NumCPU())
	errs := make([]error, len(l.clients))
	var wg sync.WaitGroup
	for i, c := range l.clients {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = f(i, c)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// exec runs the program name from the bin directory and returns its standard output.
func (l *loop) exec(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(l.cfg.Bin, name), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "BSERVER_DB=") // every call names its database
	err := cmd.Run()
	l.mu.Lock()
	l.execs++
	l.mu.Unlock()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func (l *loop) breakf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.broken) < 100 {
		l.broken = append(l.broken, fmt.Sprintf(format, args...))
	}
}

// frontEnd is one 'bserver serve' process.
type frontEnd struct {
	project string
	dsn     string
	pdir    string
	addr    string // 127.0.0.1:PORT once started
	url     string
	logs    []string // its standard error files, one per start
	cmd     *exec.Cmd
	done    chan error
	rpc     rpcFigures // its processes' scheduler figures, from /metrics
}

func (f *frontEnd) start(ctx context.Context, l *loop) error {
	addr := f.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	urlFile := filepath.Join(l.dir, fmt.Sprintf("url-%s-%d-%d.txt", f.project, len(l.fronts), len(f.logs)))
	logFile := strings.TrimSuffix(urlFile, ".txt") + ".log"
	lf, err := os.Create(logFile)
	if err != nil {
		return err
	}
	f.logs = append(f.logs, logFile)
	// Not CommandContext: a front end is stopped by SIGTERM (or killed on purpose).
	cmd := exec.Command(filepath.Join(l.cfg.Bin, "bserver"), "serve", "--db", f.dsn, "--project-dir", f.pdir,
		"--addr", addr, "--url-file", urlFile, "--clock-file", l.clock, "--status-refresh", "0", "-v")
	cmd.Stderr, cmd.Stdout = lf, io.Discard
	if err := cmd.Start(); err != nil {
		lf.Close()
		return err
	}
	f.cmd, f.done = cmd, make(chan error, 1)
	go func() { f.done <- cmd.Wait(); lf.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(urlFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			f.url = strings.TrimSpace(string(b))
			f.addr = strings.TrimSuffix(strings.TrimPrefix(f.url, "http://"), "/")
			return nil
		}
		select {
		case err := <-f.done:
			log, _ := os.ReadFile(logFile)
			return fmt.Errorf("bserver serve --db %s exited: %v: %s", f.dsn, err, bytes.TrimSpace(log))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bserver serve --db %s: no URL after 30 s", f.dsn)
		}
	}
}

func (f *frontEnd) kill() error {
	if f.cmd == nil {
		return nil
	}
	// What the process counted dies with it: read it first (no client is in a request).
	if err := f.scrape(); err != nil {
		return err
	}
	if err := f.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-f.done
	f.cmd = nil
	return nil
}

func (f *frontEnd) stop() {
	if f.cmd == nil {
		return
	}
	f.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-f.done:
	case <-time.After(30 * time.Second):
		f.cmd.Process.Kill()
		<-f.done
	}
	f.cmd = nil
}

func (l *loop) stopAll() {
	for _, f := range l.fronts {
		f.stop()
	}
	for _, s := range []*store.Store{l.dbA, l.dbB} {
		if s != nil {
			s.Close()
		}
	}
}
