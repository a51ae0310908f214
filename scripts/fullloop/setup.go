package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/store"
)

// setup makes the two projects' databases with the bkit programs, as a project would.
func (l *loop) setup(ctx context.Context) error {
	now := []string{"--now", exactTime(start)}
	w := l.workPerHour()
	pdirA, pdirB := filepath.Join(l.dir, "A"), filepath.Join(l.dir, "B")
	for _, d := range []string{pdirA, pdirB} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		// An earlier run's archive (--keep DIR again) is not this run's.
		if err := os.RemoveAll(filepath.Join(d, "archive")); err != nil {
			return err
		}
	}
	a := func(args ...string) error {
		_, err := l.exec(ctx, args[0], append(append(args[1:], "--db", l.dsnA(), "--project-dir", pdirA), now...)...)
		return err
	}
	b := func(args ...string) error {
		_, err := l.exec(ctx, args[0], append(append(args[1:], "--db", l.dsnB(), "--project-dir", pdirB), now...)...)
		return err
	}
	// The upload key (and code-signing keys): jobs have output files (upload.go). An
	// earlier run's keys (--keep DIR again) stay: bserver keys never replaces keys.
	for _, p := range []struct {
		dir string
		run func(...string) error
	}{{pdirA, a}, {pdirB, b}} {
		if _, err := os.Stat(filepath.Join(p.dir, "keys", "upload_key")); err == nil {
			continue
		}
		if err := p.run("bserver", "keys"); err != nil {
			return err
		}
	}
	retry := []string{"--dwu", exactTime(dwu), "--dresult", exactTime(dresult)}
	for _, dsn := range []string{l.dsnA(), l.dsnB()} {
		if err := reuse(ctx, dsn); err != nil {
			return err
		}
	}
	steps := [][]string{
		{"bserver", "init"},
		{"bserver", "user", "add", "--name", loopUser},
		append([]string{"bserver", "app", "add", "cpu"}, retry...),
		append([]string{"bserver", "app", "add", "gpu"}, retry...),
		// Two results must agree; after four done without agreement, give up.
		append([]string{"bserver", "app", "add", "nd", "--ndet", "4", "--nredundancy", "2"}, retry...),
		// A locality job waits for its team's hosts: the generator's workunits get
		// their first retry check at the app's DWU (seed 003), so loc's is retryDelay,
		// the other apps' first check (bserver work create --retry-delay).
		{"bserver", "app", "add", "loc", "--locality", "--dwu", exactTime(retryDelay), "--dresult", exactTime(dresult)},
		{"bserver", "app-version", "add", "--app", "cpu", "--version", "1", "--avg-ncpus", "1"},
		{"bserver", "app-version", "add", "--app", "gpu", "--version", "1", "--plan-class", "cuda", "--avg-ncpus", "0.2", "--coproc", "NVIDIA", "--coproc-count", "1"},
		{"bserver", "app-version", "add", "--app", "nd", "--version", "1", "--avg-ncpus", "1"},
		{"bserver", "app-version", "add", "--app", "loc", "--version", "1", "--avg-ncpus", "1"},
	}
	for _, c := range w.create("A") {
		steps = append(steps, c)
	}
	for _, s := range steps {
		if err := a(s...); err != nil {
			return err
		}
	}
	// The locality batch: each job reads two consecutive files of a sequence, four
	// jobs start on each file.
	nloc := int(math.Ceil(w.loc * l.cfg.Duration / 3600))
	batch := filepath.Join(l.dir, "batch.yaml")
	var sb strings.Builder
	fmt.Fprintf(&sb, "name: loc1\nurl_base: http://data.example/\nfpops_est: %g\ndelay_bound: %d\nfiles:\n", jobFlops, retryDelay)
	nfiles := nloc/4 + 2
	for i := range nfiles {
		fmt.Fprintf(&sb, "  - {name: loc1_f%d, size: %g}\n", i, fileBytes)
	}
	sb.WriteString("jobs:\n")
	for j := range nloc {
		fmt.Fprintf(&sb, "  - {first: %d, last: %d}\n", j/4, j/4+1)
	}
	if err := os.WriteFile(batch, []byte(sb.String()), 0o644); err != nil {
		return err
	}
	if _, err := l.exec(ctx, "blocality", "batch", "create", "--db", l.dsnA(), "--now", exactTime(start), "--app", "loc", "--team-size", "3", "--hosts", strconv.Itoa(l.cfg.Clients), batch); err != nil {
		return err
	}
	stepsB := [][]string{
		{"bserver", "init"},
		{"bserver", "user", "add", "--name", loopUser},
		append([]string{"bserver", "app", "add", "bcpu"}, retry...),
		{"bserver", "app-version", "add", "--app", "bcpu", "--version", "1", "--avg-ncpus", "1"},
	}
	for _, s := range append(stepsB, w.create("B")...) {
		if err := b(s...); err != nil {
			return err
		}
	}
	for name, d := range map[string]string{"A": pdirA, "B": pdirB} {
		key, err := readUploadKey(d)
		if err != nil {
			return err
		}
		l.uploadKeys[name] = key
	}
	var err error
	if l.dbA, err = store.OpenInitialised(ctx, l.dsnA()); err != nil {
		return err
	}
	l.dbB, err = store.OpenInitialised(ctx, l.dsnB())
	return err
}

// loopUser is the account that marks a database as one the loop made: a later run
// on the same --db (or --keep directory) empties it and starts again.
const loopUser = "bkit-full-loop"

// reuse readies the database dsn names for a run: nothing to do if it is new or
// empty; emptied if an earlier run of the loop made it; refused otherwise (it may be
// a project's: the loop never empties what it did not make).
func reuse(ctx context.Context, dsn string) error {
	if path, ok := store.SQLitePath(dsn); ok {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return nil
		}
	}
	db, err := store.Open(dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	v, err := db.Version(ctx)
	if err != nil || v == 0 {
		return err
	}
	if n, err := count(ctx, db, `SELECT COUNT(*) FROM user WHERE name = ?`, loopUser); err != nil || n == 0 {
		if err == nil {
			err = fmt.Errorf("%s holds a project the loop did not make (no account %s): give the loop an empty database, or one an earlier run of the loop made", dsn, loopUser)
		}
		return err
	}
	return db.DropTables(ctx)
}

// work is how many jobs of each app an hour of the run needs: the clients' processing
// shared out (half the CPUs' time to CPU jobs, a fifth to locality jobs, a twentieth
// to nondeterministic workunits of two results, the GPUs' to GPU jobs, and project
// B's share of the two-projects clients' to B's jobs).
type work struct {
	cpu, nd, gpu, loc, bcpu float64
}

func (l *loop) workPerHour() work {
	var cpuFlops, gpuFlops, cpuB float64
	for i := range l.cfg.Clients {
		k := kinds[i%len(kinds)]
		cpuFlops += float64(k.cpus) * k.flops
		gpuFlops += k.gpu
		if k.twoProjects {
			cpuB += float64(k.cpus) * k.flops * 0.75
		}
	}
	return work{cpu: 0.5 * cpuFlops * 3600 / jobFlops, nd: 0.05 * cpuFlops * 3600 / jobFlops / 2,
		gpu: gpuFlops * 3600 / gpuJobFlops, loc: 0.2 * cpuFlops * 3600 / jobFlops, bcpu: cpuB * 3600 / jobFlops}
}

// create is the work creation of an hour for project p (A or B): bserver work create
// per app, each workunit's first retry check after retryDelay.
func (w work) create(p string) [][]string {
	wc := func(app string, n, flops, retry float64, extra ...string) []string {
		return append([]string{"bserver", "work", "create", "--app", app, "--count", strconv.Itoa(max(1, int(math.Ceil(n)))),
			"--fpops-est", exactTime(flops), "--delay-bound", exactTime(delayBound), "--retry-delay", exactTime(retry)}, append(outputFlags(), extra...)...)
	}
	if p == "B" {
		if w.bcpu == 0 {
			return nil
		}
		return [][]string{wc("bcpu", w.bcpu, jobFlops, retryDelay)}
	}
	// The nondeterministic app's first check comes after an hour (its jobs take
	// half of one): disagreeing pairs are retried, and given up at Ndet, within hours.
	out := [][]string{wc("cpu", w.cpu, jobFlops, retryDelay), wc("nd", w.nd, jobFlops, 3600, "--min-quorum", "2", "--target-nresults", "2")}
	if w.gpu > 0 {
		out = append(out, wc("gpu", w.gpu, gpuJobFlops, retryDelay))
	}
	return out
}

// startFrontEnds starts cfg.FrontEnds serve processes on A's database and one on B's.
func (l *loop) startFrontEnds(ctx context.Context) error {
	for range l.cfg.FrontEnds {
		f := &frontEnd{project: "A", dsn: l.dsnA(), pdir: filepath.Join(l.dir, "A")}
		l.fronts = append(l.fronts, f)
		if err := f.start(ctx, l); err != nil {
			return err
		}
		l.urlsA = append(l.urlsA, f.url+"scheduler")
	}
	f := &frontEnd{project: "B", dsn: l.dsnB(), pdir: filepath.Join(l.dir, "B")}
	l.fronts = append(l.fronts, f)
	if err := f.start(ctx, l); err != nil {
		return err
	}
	l.urlB = f.url + "scheduler"
	return nil
}

// cronJob is one server-side job run between steps every period simulated seconds.
type cronJob struct {
	name   string // for the summary
	args   []string
	period float64
	next   float64
	runs   int
	purged string // bserver purge of this project: its output counts what it archived
}

// makeCron lists the project's cron jobs (scripts/crontab.example runs the same on the
// wall clock): validation every 10 minutes, the retry job every 30, the locality
// work generator every 20 (a cushion of 4 unsent jobs per cursor), its transitioner
// every 30 and its credit daemon hourly; and an hour's new work every hour.
func (l *loop) makeCron() {
	a := []string{"--db", l.dsnA()}
	for _, app := range []string{"cpu", "gpu", "nd", "loc"} {
		l.cron = append(l.cron,
			&cronJob{name: "bretry validate --app " + app, args: append([]string{"bretry", "validate", "--app", app, "--once"}, a...), period: 600},
			&cronJob{name: "bretry --app " + app, args: append([]string{"bretry", "--app", app, "--once", "--no-validate"}, a...), period: 1800})
	}
	l.cron = append(l.cron,
		&cronJob{name: "blocality generate", args: append([]string{"blocality", "generate", "--once", "--cushion", "4"}, a...), period: 1200},
		&cronJob{name: "blocality transition", args: append([]string{"blocality", "transition", "--once"}, a...), period: 1800},
		&cronJob{name: "blocality credit", args: append([]string{"blocality", "credit", "--once"}, a...), period: 3600},
		&cronJob{name: "bretry --app bcpu (project B)", args: []string{"bretry", "--app", "bcpu", "--once", "--db", l.dsnB()}, period: 1800})
	// The lifecycle after validation, after the jobs above in each pass: assimilation
	// every 10 minutes (a command that logs each workunit, so the summary can tell
	// that each was handed over once), file deletion hourly an hour after it, and
	// purge hourly (--purge-after after the files went).
	for _, p := range []struct{ name, dsn, dir string }{{"A", l.dsnA(), "A"}, {"B", l.dsnB(), "B"}} {
		pd := []string{"--db", p.dsn, "--project-dir", filepath.Join(l.dir, p.dir)}
		l.cron = append(l.cron,
			&cronJob{name: "bserver assimilate (project " + p.name + ")", period: 600, args: append([]string{"bserver", "assimilate", "--once",
				"--exec", `echo "$BKIT_WORKUNIT $BKIT_OUTCOME" >> ` + l.assimilatedLog(p.name)}, pd...)},
			// A minute past the hour and --purge-after: each job's clock is --now plus the
			// wall time its pass has run, so a workunit assimilated (or whose files went)
			// exactly one period before would be taken or left by a few milliseconds
			// either way, and two runs of one seed would differ; it waits for the next.
			&cronJob{name: "bserver delete-files (project " + p.name + ")", period: 3600, args: append([]string{"bserver", "delete-files", "--once", "--delay", "61m"}, pd...)},
			&cronJob{name: "bserver purge (project " + p.name + ")", period: 3600, purged: p.name, args: append([]string{"bserver", "purge", "--once",
				"--older-than", exactTime(l.cfg.PurgeAge + 60), "--archive", l.archiveDir(p.name)}, pd...)})
	}
	for _, c := range l.cron {
		c.next = start
	}
	// The project's own work generator: an hour's jobs every hour, from the second
	// hour on (setup made the first).
	w := l.workPerHour()
	for _, p := range []struct{ name, dsn, dir string }{{"A", l.dsnA(), "A"}, {"B", l.dsnB(), "B"}} {
		for _, c := range w.create(p.name) {
			l.cron = append(l.cron, &cronJob{name: "bserver work create --app " + c[4], period: 3600, next: start + 3600,
				args: append(c, "--db", p.dsn, "--project-dir", filepath.Join(l.dir, p.dir))})
		}
	}
}

// assimilatedLog is the file the assimilator's command writes a line to per
// workunit of project name.
func (l *loop) assimilatedLog(name string) string {
	return filepath.Join(l.dir, name, "assimilated.log")
}

// cronPass runs the cron jobs due at now (all of them when all is set).
func (l *loop) cronPass(ctx context.Context, now float64, all bool) error {
	for _, c := range l.cron {
		if !all && now < c.next {
			continue
		}
		for c.next <= now {
			c.next += c.period
		}
		c.runs++
		out, err := l.exec(ctx, c.args[0], append(c.args[1:], "--now", exactTime(now))...)
		if err != nil {
			return err
		}
		if c.purged != "" {
			var n int
			fmt.Sscanf(out, "purged %d workunits", &n)
			l.purged[c.purged] += n
		}
	}
	return nil
}
