package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"syscall"
	"time"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/store"
)

// Summary is what a run of the loop did, and the invariants it broke (none, when all
// is well).
type Summary struct {
	Clients    int             `json:"clients"`
	Simulated  float64         `json:"simulated_seconds"`
	Delta      float64         `json:"delta_seconds"`
	Steps      int             `json:"steps"`
	Seed       uint64          `json:"seed"`
	FrontEnds  int             `json:"front_ends"`                // on project A's database
	KillAt     float64         `json:"kill_at_seconds,omitempty"` // --kill-at, after the start
	Projects   []ProjectCounts `json:"projects"`
	Batch      BatchBytes      `json:"batch"`
	Figures    []ClientFigures `json:"clients_figures"`
	Server     ServerFigures   `json:"server"`
	CronRuns   int             `json:"cron_runs"`
	Offline    int             `json:"offline_lost"`    // tasks the offline clients lost
	Kills      int             `json:"front_end_kills"` // front ends SIGKILLed and restarted
	ProgramRun int             `json:"program_runs"`
	WallSec    float64         `json:"wall_seconds"`
	CPUSec     float64         `json:"cpu_seconds"` // the programs' (children's) user + system time
	Days       []DayFigures    `json:"days"`
	Uploads    uploadFigures   `json:"uploads"` // output files the clients uploaded
	Broken     []string        `json:"broken_invariants"`
}

// DayFigures are one project's database and directories at the end of a simulated
// day (the last one at the end of the run): whether rows and bytes level off once
// purge and file deletion keep up.
type DayFigures struct {
	Day           int     `json:"day"`
	Project       string  `json:"project"`
	Workunits     int     `json:"workunits"` // rows in the database now
	Results       int     `json:"results"`
	Rows          int     `json:"rows"`   // of every table purge empties (workunit, result, result_file, …)
	Purged        int     `json:"purged"` // workunits archived so far
	UploadBytes   float64 `json:"upload_bytes"`
	DownloadBytes float64 `json:"download_bytes"`
	ArchiveBytes  float64 `json:"archive_bytes"`
}

// daySample records DayFigures of both projects for day.
func (l *loop) daySample(ctx context.Context, day int) error {
	for _, p := range []struct {
		name string
		db   *store.Store
	}{{"A", l.dbA}, {"B", l.dbB}} {
		d := DayFigures{Day: day, Project: p.name, Purged: l.purged[p.name]}
		var err error
		if d.Workunits, err = count(ctx, p.db, `SELECT COUNT(*) FROM workunit`); err != nil {
			return err
		}
		if d.Results, err = count(ctx, p.db, `SELECT COUNT(*) FROM result`); err != nil {
			return err
		}
		if d.Rows, err = purgeTableRows(ctx, p.db); err != nil {
			return err
		}
		dir := filepath.Join(l.dir, p.name)
		d.UploadBytes, d.DownloadBytes, d.ArchiveBytes = treeBytes(filepath.Join(dir, "upload")), treeBytes(filepath.Join(dir, "download")), treeBytes(l.archiveDir(p.name))
		l.days = append(l.days, d)
		// Also as progress: a long run stopped early still says how it went.
		l.progress("day %d, project %s: %d workunits, %d results, %d rows in the database; %d purged; upload %s, download %s, archive %s bytes",
			d.Day, d.Project, d.Workunits, d.Results, d.Rows, d.Purged, cliutil.Num(d.UploadBytes), cliutil.Num(d.DownloadBytes), cliutil.Num(d.ArchiveBytes))
	}
	return nil
}

// purgeTableRows counts the rows of the tables purge empties.
func purgeTableRows(ctx context.Context, db *store.Store) (int, error) {
	total := 0
	for _, t := range store.PurgeTables {
		n, err := count(ctx, db, `SELECT COUNT(*) FROM `+t)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// ProjectCounts are one project's jobs: results created (by work create, the locality
// work generator and the retry job), sent, reported, lost (no reply by the deadline,
// marked by bretry), retried (made by bretry), still in progress; workunits validated
// (a canonical result) and given up (a wu_giveup row).
type ProjectCounts struct {
	Project    string `json:"project"`
	Workunits  int    `json:"workunits"`
	Created    int    `json:"results_created"`
	Sent       int    `json:"sent"`
	Reported   int    `json:"reported"`
	Validated  int    `json:"validated"`
	Retried    int    `json:"retried"`
	Lost       int    `json:"lost"`
	GivenUp    int    `json:"given_up"`
	InProgress int    `json:"in_progress"`
	// The lifecycle: workunits assimilated, and of them with their files deleted;
	// files deleted and their bytes.
	Assimilated  int     `json:"assimilated"`
	FilesDeleted int     `json:"workunits_files_deleted"`
	Files        int     `json:"files_deleted"`
	FileBytes    float64 `json:"file_bytes_deleted"`
	// Purged: workunits bserver purge moved into the archive (the counts above include
	// them: they are read from the database and the archive); Rows: rows of the tables
	// purge empties still in the database at the end.
	Purged int `json:"purged"`
	Rows   int `json:"database_rows"`
	// ReportsOfPurged: reports that came after their workunit was purged, which the
	// front end acknowledged without recording (its rows are in the archive).
	ReportsOfPurged int `json:"reports_of_purged"`
}

// BatchBytes compares what the locality batch's jobs made hosts download (each file
// once per host that got a job reading it: the client keeps its sticky files) with
// the batch's bytes: all its files, and those sent at least once.
type BatchBytes struct {
	Sent        float64 `json:"bytes_sent"`
	UniqueSent  float64 `json:"unique_bytes_sent"`
	UniqueAll   float64 `json:"unique_bytes"`
	CopiesRatio float64 `json:"copies_per_file"` // Sent ÷ UniqueSent
}

// ClientFigures are a client's figures of merit as bsim figures prints them.
type ClientFigures struct {
	Client         string  `json:"client"`
	WastedFraction float64 `json:"wasted_fraction"`
	IdleFraction   float64 `json:"idle_fraction"`
	ShareViolation float64 `json:"share_violation"`
	Monotony       float64 `json:"monotony"`
	RPCsPerJob     float64 `json:"rpcs_per_job"`
}

// ServerFigures are the front ends' scheduler RPCs, from their /metrics: requests
// answered, refused or failed, and latency percentiles estimated from the latency
// histogram (linear within a bucket, as Prometheus' histogram_quantile).
type ServerFigures struct {
	RPCs    int     `json:"rpcs"`
	Refused int     `json:"refused"`
	P50ms   float64 `json:"p50_ms"`
	P99ms   float64 `json:"p99_ms"`
}

func (l *loop) summary(ctx context.Context, wall time.Duration) (*Summary, error) {
	s := &Summary{Clients: len(l.clients), Simulated: l.cfg.Duration, Delta: l.cfg.Delta, Steps: int((l.end - start) / l.cfg.Delta),
		Seed: l.cfg.Seed, FrontEnds: l.cfg.FrontEnds, KillAt: l.cfg.KillAt}
	for _, c := range l.cron {
		s.CronRuns += c.runs
	}
	for _, c := range l.clients {
		s.Offline += len(c.lost)
	}
	s.Kills = l.kills
	for _, c := range l.clients {
		out, err := l.exec(ctx, "bsim", "figures", "--world", c.world, "--state", c.doc, "-o", "json")
		if err != nil {
			return nil, err
		}
		f := ClientFigures{Client: c.name}
		if err := json.Unmarshal([]byte(out), &f); err != nil {
			return nil, fmt.Errorf("%s: bsim figures: %v", c.name, err)
		}
		f.Client = c.name
		s.Figures = append(s.Figures, f)
	}
	// The front ends' own figures (/metrics), and with --plot their status pages, are
	// read before they stop and the programs' CPU time is taken.
	var rpc rpcFigures
	for _, f := range l.fronts {
		if err := f.scrape(); err != nil {
			return nil, err
		}
		rpc.add(f.rpc)
	}
	if l.cfg.Plot != "" {
		if err := l.snapshotStatus(ctx, l.cfg.Plot); err != nil {
			return nil, err
		}
	}
	for _, f := range l.fronts {
		f.stop()
	}
	s.Server.RPCs, s.Server.Refused = int(rpc.answered), int(rpc.refused)
	s.Server.P50ms, s.Server.P99ms = rpc.quantile(0.50), rpc.quantile(0.99)
	// Counts and invariants read each project's rows as if nothing had been purged:
	// its database and its archive together (merged).
	for _, p := range []struct {
		name string
		db   *store.Store
	}{{"A", l.dbA}, {"B", l.dbB}} {
		if err := l.rowsBounded(ctx, p.db, p.name); err != nil {
			return nil, err
		}
		m, purged, err := l.merged(ctx, p.db, p.name)
		if err != nil {
			return nil, fmt.Errorf("project %s: reading the archive with the database: %w", p.name, err)
		}
		defer m.Close()
		pc, err := counts(ctx, m, p.name)
		if err != nil {
			return nil, err
		}
		pc.Purged = purged
		l.mu.Lock()
		for _, a := range l.acked {
			if a.project == p.name && a.purged {
				pc.ReportsOfPurged++
			}
		}
		l.mu.Unlock()
		if pc.Rows, err = purgeTableRows(ctx, p.db); err != nil {
			return nil, err
		}
		s.Projects = append(s.Projects, pc)
		if err := l.invariants(ctx, m, p.name); err != nil {
			return nil, err
		}
		if p.name == "A" {
			if s.Batch, err = batchBytes(ctx, m); err != nil {
				return nil, err
			}
		}
	}
	if l.cfg.Plot != "" {
		if err := l.plot(); err != nil {
			return nil, err
		}
	}
	s.ProgramRun = l.execs
	s.WallSec = wall.Seconds()
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		s.CPUSec = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	s.Days = l.days
	s.Uploads = l.uploads
	s.Broken = append([]string{}, l.broken...)
	return s, nil
}

// rowsBounded checks that purge keeps the database bounded: no workunit whose files
// were deleted more than --purge-after ago, plus two of purge's hourly periods, is
// still in the database, unless it is a locality job its cursor has not passed yet
// (purge leaves those for the transitioner).
func (l *loop) rowsBounded(ctx context.Context, db *store.Store, name string) error {
	before := l.end - l.cfg.PurgeAge - 2*3600
	n, err := count(ctx, db, fmt.Sprintf(`SELECT COUNT(*) FROM workunit w WHERE w.file_delete_state = %d AND w.file_delete_time < ?
		AND (w.cursor_id = 0 OR w.job_num < (SELECT c.first_unfinished_job_num FROM locality_cursor c WHERE c.id = w.cursor_id))`, store.FileDeleteDone), before)
	if err != nil {
		return err
	}
	if n > 0 {
		l.breakf("project %s: rows are not bounded: %d workunits whose files were deleted before %s are still in the database (purge --older-than %s)",
			name, n, human(before-start), human(l.cfg.PurgeAge))
	}
	return nil
}

func count(ctx context.Context, db *store.Store, q string, args ...any) (int, error) {
	var n int
	err := db.DB.QueryRowContext(ctx, q, args...).Scan(&n)
	return n, err
}

func counts(ctx context.Context, db *store.Store, name string) (ProjectCounts, error) {
	pc := ProjectCounts{Project: name}
	for _, q := range []struct {
		n   *int
		sql string
	}{
		{&pc.Workunits, `SELECT COUNT(*) FROM workunit`},
		{&pc.Created, `SELECT COUNT(*) FROM result`},
		{&pc.Sent, `SELECT COUNT(*) FROM result WHERE sent_time > 0`},
		{&pc.Reported, fmt.Sprintf(`SELECT COUNT(*) FROM result WHERE outcome IN (%d, %d)`, store.OutcomeSuccess, store.OutcomeClientError)},
		{&pc.Validated, `SELECT COUNT(*) FROM workunit WHERE canonical_resultid > 0`},
		{&pc.Retried, `SELECT COUNT(*) FROM result r JOIN workunit w ON w.id = r.workunitid WHERE r.create_time > w.create_time`},
		{&pc.Lost, fmt.Sprintf(`SELECT COUNT(*) FROM result WHERE outcome = %d`, store.OutcomeNoReply)},
		{&pc.GivenUp, `SELECT COUNT(DISTINCT workunitid) FROM wu_giveup`},
		{&pc.InProgress, fmt.Sprintf(`SELECT COUNT(*) FROM result WHERE server_state = %d`, store.ServerStateInProgress)},
		{&pc.Assimilated, fmt.Sprintf(`SELECT COUNT(*) FROM workunit WHERE assimilate_state = %d`, store.AssimilateDone)},
		{&pc.FilesDeleted, fmt.Sprintf(`SELECT COUNT(*) FROM workunit WHERE file_delete_state = %d`, store.FileDeleteDone)},
		{&pc.Files, `SELECT COUNT(*) FROM deleted_file WHERE done = 1 AND message = ''`},
	} {
		var err error
		if *q.n, err = count(ctx, db, q.sql); err != nil {
			return pc, fmt.Errorf("project %s: %v", name, err)
		}
	}
	if err := db.DB.QueryRowContext(ctx, `SELECT COALESCE(SUM(nbytes), 0) FROM deleted_file WHERE done = 1 AND message = ''`).Scan(&pc.FileBytes); err != nil {
		return pc, fmt.Errorf("project %s: %v", name, err)
	}
	return pc, nil
}

func batchBytes(ctx context.Context, db *store.Store) (BatchBytes, error) {
	var b BatchBytes
	// The distinct (host, file) pairs of the jobs sent: a host downloads a file once.
	sent := `SELECT DISTINCT r.hostid, f.id, f.nbytes FROM result r
		JOIN workunit w ON w.id = r.workunitid
		JOIN batch_file f ON f.batch_id = w.batch_id AND f.file_num BETWEEN w.first_file_num AND w.last_file_num
		WHERE r.sent_time > 0 AND w.batch_id > 0`
	for _, q := range []struct {
		x   *float64
		sql string
	}{
		{&b.Sent, `SELECT COALESCE(SUM(nbytes), 0) FROM (` + sent + `) hf`},
		{&b.UniqueSent, `SELECT COALESCE(SUM(nbytes), 0) FROM batch_file WHERE id IN (SELECT id FROM (` + sent + `) hf)`},
		{&b.UniqueAll, `SELECT COALESCE(SUM(nbytes), 0) FROM batch_file`},
	} {
		if err := db.DB.QueryRowContext(ctx, q.sql).Scan(q.x); err != nil {
			return b, fmt.Errorf("batch bytes: %v", err)
		}
	}
	if b.UniqueSent > 0 {
		b.CopiesRatio = b.Sent / b.UniqueSent
	}
	return b, nil
}

// Table prints the summary for a person, with a legend of what each figure counts.
func (s *Summary) Table(w io.Writer) error {
	fmt.Fprintf(w, "The full loop: %d clients, %s simulated in %d steps of %s, seed %d, %d front end(s) on project A",
		s.Clients, human(s.Simulated), s.Steps, human(s.Delta), s.Seed, s.FrontEnds)
	if s.KillAt > 0 {
		fmt.Fprintf(w, ", the first SIGKILLed at %s and restarted a step later (%d kill)", human(s.KillAt), s.Kills)
	}
	fmt.Fprintf(w, "; %d cron job runs, %d program runs; %.1f s wall, %.1f s CPU (programs)\n\n",
		s.CronRuns, s.ProgramRun, s.WallSec, s.CPUSec)
	t := cliutil.NewTable(w, "project", "workunits", "results created", "sent", "reported", "validated wus", "retried", "lost", "given up wus", "in progress")
	for _, p := range s.Projects {
		t.Append(p.Project, p.Workunits, p.Created, p.Sent, p.Reported, p.Validated, p.Retried, p.Lost, p.GivenUp, p.InProgress)
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprint(w, `Counts of workunits (jobs): "workunits", "validated wus" (a canonical result), "given up wus"
(a wu_giveup row: the nondeterministic app's results never agreed). Counts of results
(copies of a job sent to one host each): "results created" (by work create, the locality
work generator and bretry), "sent", "reported" (success or client error), "retried"
(results bretry made after the first ones), "lost" (no report by the deadline, marked by
bretry), "in progress" (sent, deadline ahead). A workunit of two results counts once
on the left and twice on the right; results not yet sent are created, not sent.
`)
	for _, p := range s.Projects {
		fmt.Fprintf(w, "Project %s lifecycle: %d workunits assimilated, %d with their files deleted (%d files, %s bytes), %d purged into the archive (%d rows left in the database); %d reports came after their workunit was purged (acknowledged, not recorded)\n",
			p.Project, p.Assimilated, p.FilesDeleted, p.Files, cliutil.Num(p.FileBytes), p.Purged, p.Rows, p.ReportsOfPurged)
	}
	fmt.Fprintf(w, "Output files: %d uploaded by the clients (%s bytes), %d refused for good\n",
		s.Uploads.Files, cliutil.Num(s.Uploads.Bytes), s.Uploads.Refused)
	if len(s.Days) > 0 {
		fmt.Fprintln(w)
		t := cliutil.NewTable(w, "day", "project", "workunits", "results", "rows", "purged", "upload bytes", "download bytes", "archive bytes")
		for _, d := range s.Days {
			t.Append(d.Day, d.Project, d.Workunits, d.Results, d.Rows, d.Purged, cliutil.Num(d.UploadBytes), cliutil.Num(d.DownloadBytes), cliutil.Num(d.ArchiveBytes))
		}
		if err := t.Render(); err != nil {
			return err
		}
		fmt.Fprint(w, `At the end of each simulated day (the last row: the end of the run): rows of workunits,
results and of every table purge empties still in the database, workunits purged so far,
and the bytes in upload/, download/ and the archive. With file deletion and purge
keeping up, rows and upload bytes level off after the first days; the archive grows.
`)
	}
	fmt.Fprintf(w, "\nLocality batch: %s bytes sent to hosts for %s unique bytes sent (%s of the batch's %s): %.2f copies per file\n",
		cliutil.Num(s.Batch.Sent), cliutil.Num(s.Batch.UniqueSent), cliutil.Num(s.Batch.UniqueSent), cliutil.Num(s.Batch.UniqueAll), s.Batch.CopiesRatio)
	fmt.Fprint(w, `(1 is ideal. 'blocality simulate' reports about 1.5 with its defaults, a batch of
5,000 files read by ten jobs each through 200 one-CPU hosts over days; here a file is
read by about eight jobs, shared by a team of 3 of a handful of multi-CPU hosts in a few
hours, so most of a file's jobs go to different team members, and the offline client's
lost jobs go to other hosts again: expect about 2.)

`)
	t = cliutil.NewTable(w, "client", "wf", "if", "sv", "m", "r")
	for _, f := range s.Figures {
		t.Append(f.Client, fmt.Sprintf("%f", f.WastedFraction), fmt.Sprintf("%f", f.IdleFraction), fmt.Sprintf("%f", f.ShareViolation),
			fmt.Sprintf("%f", f.Monotony), fmt.Sprintf("%f", f.RPCsPerJob))
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprint(w, `Each client's figures of merit as bsim prints them (0 is best): wf wasted fraction
(work on results reported after their deadline), if idle fraction (the host's FLOPS
unused while it is on, over all its processors, GPU included), sv share violation, m
monotony, r RPCs per job. The first steps idle while the work buffers fill (more so
with few, long steps). The offline client idles while off and wastes what it lost. The
GPU client idled 0.15 to 0.2 while its CPU scheduler left the CPU a GPU job takes 0.2 of
without a CPU job (one of two CPUs: 0.115 of the host's FLOPS); it now overcommits that
CPU as BOINC's client does (issue 29), and what idling remains is mostly the GPU waiting
for work: project A makes GPU work hourly at exactly the GPU's rate.
`)
	fmt.Fprintf(w, "\nServer: %d scheduler RPCs answered (%d refused or failed), latency p50 %.2f ms, p99 %.2f ms\n",
		s.Server.RPCs, s.Server.Refused, s.Server.P50ms, s.Server.P99ms)
	if len(s.Broken) == 0 {
		fmt.Fprintln(w, "Invariants: all hold")
		return nil
	}
	fmt.Fprintf(w, "Invariants: %d BROKEN\n", len(s.Broken))
	for _, b := range s.Broken {
		fmt.Fprintln(w, "  -", b)
	}
	return nil
}
