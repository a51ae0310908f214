package bserver

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/server"
	"github.com/urfave/cli/v3"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "answer BOINC-style scheduler requests over HTTP",
		UsageText: "bserver serve --db DSN [--addr HOST:PORT] [flags]",
		Description: cliutil.Help(fmt.Sprintf(`
Serves the project on --addr:
  POST /scheduler (and POST /)  scheduler requests: <scheduler_request> in, <scheduler_reply> out
  GET /                         the master file naming the scheduler URL(s)
  GET /download/NAME            app and input files from the project directory's download/
                                (Range requests; 404 for anything else)
  POST /file_upload_handler     output files into upload/ (BOINC's upload protocol)
  GET /get_project_config.php   the project's name and platforms (BOINC Manager's wizard)
  GET /lookup_account.php       the account key for an e-mail address and password hash
                                (accounts made with 'bserver user add --password-file')
  GET /create_account.php       with --account-creation: a new account for an e-mail
                                address, password hash and name (boinccmd --create_account)
  GET /status                   the status page (also /server_status.php; ?xml=1 is BOINC's
                                XML form, /status.json JSON): jobs per app at each stage,
                                results reported and validated, active hosts and users,
                                this server's requests per minute and latency, and each
                                cron job's last run (off with --no-pages)
  GET /show_user.php?userid=N   a volunteer's page: name, credit, hosts (and /top_users.php,
                                /top_hosts.php; off with --no-pages)
  GET /metrics                  Prometheus metrics: requests by outcome, latency, jobs sent,
                                reports, uploads, refusals, database errors and retries, and
                                the cron jobs' recorded runs (off with --no-metrics)
and prints "listening on URL" on standard output once it accepts connections.

Each request is one database transaction. Accounts are required, as in BOINC: a
request carries an account key ('bserver user add', or an account a client made with
--account-creation) and its first request makes a new host of that user (the reply
carries the host id); a client attaching again (host id 0, same <host_cpid>) gets that
host back. An account makes at most --max-new-hosts new hosts in 24 hours (default
%d); a request for one more is refused with a notice and a request delay of an hour. A request without an account key, with an unknown one, or from a host of no
account is refused with BOINC's notice "Invalid or missing account key.  To fix,
remove and add this project." and a request delay of an hour, and nothing is written
(not even a host row). With --anonymous-hosts (testing: bkit's own and emulated
clients without accounts) a host's first request without an authenticator creates a
host of no account and the reply carries its hostid and authenticator, which later
requests present. Tasks in
progress on the host that the client neither reports nor lists in <other_results> (it
lost them: a project reset, a lost reply) are sent again while their deadline is ahead;
listed tasks the project no longer wants are aborted (<result_abort>, or
<result_abort_if_not_started> when their workunit is done or they timed out).
Replies carry the public code-signing key (keys/code_sign_public, made by
'bserver keys'); app versions with a --platform go only to hosts that report it.
An upload is accepted only for an output file of a result in progress on the host it
was sent to (the file's <xml_signature> says which), no larger than its limit,
complete and matching its MD5. Until the permission (<xml_signature>) is checked an
upload has the scheduler's time-outs (--read-timeout, --write-timeout), then 30 minutes.
Its data goes to a temporary file (upload/.tmp-*), which is renamed and
recorded in one transaction that checks the result again (a file uploaded in full is
never replaced; a result reported meanwhile refuses it). Temporary files no server is
writing (a server killed mid-upload) are removed at start and every 10 minutes.
A client address holding --max-conns-per-addr connections has further ones closed as
they arrive. A reported success whose declared output files were not all uploaded, or
whose <bkit_output_digest> is not that of its files, is a validate error. Reported
results are recorded once (a repeated report is acknowledged and changes nothing). Jobs are sent
per seed 002: only for resources with a nonzero request, enough to fill both the
requested seconds and instances, with app versions the host can run; a request with
only work_req_seconds (an old client) takes jobs of any resource the host can run,
the fastest version per app; report deadline = now + the delay bound. Each host is
held to the quotas of each app version (jobs a day and in progress per CPU or GPU, see
'bserver app set --help'), with the CPUs and GPUs it claims taken at most 64 each, as
BOINC does; a reply without jobs says which quota held.

Bad requests get a <scheduler_reply> with a notice and a log line on standard error:
malformed XML (HTTP 400), a body over --max-body bytes (413, default %d), a missing or
unknown account key, an unknown host or a wrong authenticator (200). SIGINT or SIGTERM stops accepting and lets
requests in flight finish (up to --drain-timeout). Any number of serve processes may
share one database.

Testing features, off by default: --anonymous-hosts (above); --now freezes the server's clock; --clock-file FILE
reads it from FILE (Unix seconds or RFC 3339, as --now takes them) at every request, so
that a loop of emulated clients (scripts/full-loop.sh) moves the server's time with its
own. A clock file that cannot be read at start is an error (exit 2); later, a read that
fails keeps the last time read and logs a warning.`, server.DefaultMaxNewHostsPerDay, boincxml.MaxRequestBytes),
			[]string{
				"bserver serve --db project.db --addr 127.0.0.1:8080",
				"bserver serve --db mysql://boinc:secret@db:3306/project --addr :80 --url http://project.example/scheduler --request-delay 60",
				"bserver serve --db project.db --addr 127.0.0.1:8080 --master-url https://project.example/    # behind a TLS proxy",
				"curl -s http://127.0.0.1:8080/    # the master file",
				"bserver serve --db project.db --addr 127.0.0.1:0 --url-file url.txt &",
			}, ""),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "listen on `HOST:PORT` (port 0: any free port)", Value: "127.0.0.1:8080"},
			&cli.StringFlag{Name: "clock-file", Usage: "testing: read the server's time from `FILE` at every request (see above; not with --now)"},
			&cli.StringFlag{Name: "url-file", Usage: "once listening, write the server's base URL to `FILE` (atomically), for scripts that start it on port 0"},
			&cli.StringFlag{Name: "master-url", Usage: "the project's `URL` as volunteers attach to it (replies, file URLs; default: http:// and the request's Host; set it behind a proxy)"},
			&cli.StringSliceFlag{Name: "url", Usage: "scheduler `URL` the master file names (repeat for several; default: the master URL's /scheduler)"},
			&cli.StringFlag{Name: "project-name", Usage: "project `NAME` in replies and the master file", Value: "bkit project"},
			&cli.StringFlag{Name: "request-delay", Usage: "ask clients to wait `DURATION` before their next request (0: no request_delay)", Value: "0"},
			&cli.BoolFlag{Name: "account-creation", Usage: "let clients create accounts by e-mail address and password (create_account.php: boinccmd --create_account, the Manager's new-account page); without it 'bserver user add' makes them"},
			&cli.FloatFlag{Name: "account-rate", Usage: "allow `N` account lookups and creations a minute per client network (its /24, or /64 for IPv6), counted in the database for every server of the project, as many at once (0: no limit; behind a proxy all clients share its address)", Value: server.DefaultAccountRequestsPerMinute},
			&cli.BoolFlag{Name: "anonymous-hosts", Usage: "testing: let a request without an account key create a host of no account (bkit's own and emulated clients); without it every request needs an account key"},
			&cli.BoolFlag{Name: "no-rsc-apps", Usage: "tell clients which requested resources the project has no app version for (<no_rsc_apps>; seed 002's proposed three-state reply)"},
			&cli.Int64Flag{Name: "max-body", Usage: "largest request body in `BYTES` (at most the default)", Value: boincxml.MaxRequestBytes},
			&cli.IntFlag{Name: "max-jobs", Usage: "most jobs in one reply (`N`)", Value: server.DefaultMaxJobsPerRPC},
			&cli.Int64Flag{Name: "max-upload", Usage: "largest output file in `BYTES` whatever a result template allows", Value: server.DefaultMaxUploadBytes},
			&cli.IntFlag{Name: "max-conns-per-addr", Usage: "most connections one client address may hold open at once, `N` (0: no limit; behind a proxy all clients share its address)", Value: server.DefaultMaxConnsPerAddr},
			&cli.IntFlag{Name: "max-new-hosts", Usage: "most new hosts one account may make in 24 hours, `N` (0: no limit); a client attaching again with its host CPID reuses its host", Value: server.DefaultMaxNewHostsPerDay},
			&cli.IntFlag{Name: "max-rpcs", Usage: "most scheduler requests parsed and handled at once, over all clients, `N` (0: no limit); more wait their turn", Value: server.DefaultMaxRPCsInFlight},
			&cli.DurationFlag{Name: "drain-timeout", Usage: "on SIGINT/SIGTERM, wait up to `DURATION` for requests in flight", Value: server.DefaultDrainTimeout},
			&cli.DurationFlag{Name: "read-timeout", Usage: "drop a client that takes longer than `DURATION` to send its request", Value: server.DefaultReadTimeout},
			&cli.BoolFlag{Name: "no-metrics", Usage: "serve no /metrics and count nothing for it (nor the status page's request rate and latency)"},
			&cli.BoolFlag{Name: "no-pages", Usage: "serve no status page and no volunteers' pages"},
			&cli.DurationFlag{Name: "status-refresh", Usage: "read the status page's and /metrics' database figures again when older than `DURATION`, and ahead of the views (0: at every view)", Value: server.DefaultStatusRefresh},
			&cli.DurationFlag{Name: "write-timeout", Usage: "drop a client that takes longer than `DURATION` from request to reply read", Value: server.DefaultWriteTimeout},
		},
		Action: serve,
	}
}

func serve(ctx context.Context, cmd *cli.Command) error {
	if err := cliutil.NoArgs(cmd); err != nil {
		return err
	}
	delay, err := cliutil.ParseDuration(cmd.String("request-delay"))
	if err != nil {
		return cliutil.Usagef("--request-delay: %v", err)
	}
	for _, u := range cmd.StringSlice("url") {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return cliutil.Usagef("--url: want an http or https URL, got %q", u)
		}
	}
	master := cmd.String("master-url")
	if master != "" {
		if p, err := url.Parse(master); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.RawQuery != "" || p.Fragment != "" {
			return cliutil.Usagef("--master-url: want an http or https URL, got %q", master)
		}
		if !strings.HasSuffix(master, "/") {
			master += "/" // as BOINC clients canonicalise it
		}
	}
	// The request parser reads at most boincxml.MaxRequestBytes whatever the HTTP
	// limit, so a larger --max-body would only seem to take effect.
	if b := cmd.Int64("max-body"); b < 1 || b > boincxml.MaxRequestBytes {
		return cliutil.Usagef("--max-body: must be from 1 to %d (the largest request the parser reads), got %d", boincxml.MaxRequestBytes, b)
	}
	if r := cmd.Float("account-rate"); !(r >= 0) || math.IsInf(r, 0) {
		return cliutil.Usagef("--account-rate: must be a number >= 0 (0: no limit), got %g", r)
	}
	if cmd.Int("max-conns-per-addr") < 0 {
		return cliutil.Usagef("--max-conns-per-addr: must be >= 0 (0: no limit), got %d", cmd.Int("max-conns-per-addr"))
	}
	if cmd.Int("max-new-hosts") < 0 {
		return cliutil.Usagef("--max-new-hosts: must be >= 0 (0: no limit), got %d", cmd.Int("max-new-hosts"))
	}
	if cmd.Int("max-rpcs") < 0 {
		return cliutil.Usagef("--max-rpcs: must be >= 0 (0: no limit), got %d", cmd.Int("max-rpcs"))
	}
	if cmd.Int("max-jobs") < 1 {
		return cliutil.Usagef("--max-jobs: must be >= 1, got %d", cmd.Int("max-jobs"))
	}
	var clock func() time.Time
	if cmd.String(cliutil.FlagNow) != "" {
		now, err := cliutil.Now(cmd)
		if err != nil {
			return err
		}
		t := time.Unix(0, int64(now*1e9))
		clock = func() time.Time { return t }
	}
	if f := cmd.String("clock-file"); f != "" {
		if clock != nil {
			return cliutil.Usagef("--clock-file and --now both set the server's clock: give one")
		}
		if clock, err = fileClock(f, cliutil.Logger(cmd)); err != nil {
			return err
		}
	}
	s, err := openStore(ctx, cmd, true)
	if err != nil {
		return err
	}
	defer s.Close()
	// Without a project directory (MySQL and no --project-dir) the server has no
	// files: it serves bkit's own clients, which need none.
	var dirs [2]string
	var codeSignKey string
	var uploadKey []byte
	if pdir, err := projectDir(cmd); err == nil {
		if codeSignKey, uploadKey, err = projectKeys(pdir); err != nil {
			return err
		}
		dirs = [2]string{filepath.Join(pdir, downloadSubdir), filepath.Join(pdir, uploadSubdir)}
		for _, d := range dirs {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
	}
	if cmd.Int64("max-upload") < 1 {
		return cliutil.Usagef("--max-upload: must be >= 1, got %d", cmd.Int64("max-upload"))
	}
	ln, err := net.Listen("tcp", cmd.String("addr"))
	if err != nil {
		return err
	}
	log := cliutil.Logger(cmd)
	srv := &server.Server{
		Store: s,
		Now:   clock,
		Log:   log,
		Config: server.Config{
			ProjectName:              cmd.String("project-name"),
			MasterURL:                master,
			SchedulerURLs:            cmd.StringSlice("url"),
			RequestDelay:             delay,
			NoRscApps:                cmd.Bool("no-rsc-apps"),
			AnonymousHosts:           cmd.Bool("anonymous-hosts"),
			AccountCreation:          cmd.Bool("account-creation"),
			AccountRequestsPerMinute: accountRate(cmd.Float("account-rate")),
			MaxBodyBytes:             cmd.Int64("max-body"),
			MaxJobsPerRPC:            cmd.Int("max-jobs"),
			DrainTimeout:             cmd.Duration("drain-timeout"),
			ReadTimeout:              cmd.Duration("read-timeout"),
			WriteTimeout:             cmd.Duration("write-timeout"),
			DownloadDir:              dirs[0],
			UploadDir:                dirs[1],
			CodeSignKey:              codeSignKey,
			UploadKey:                uploadKey,
			MaxUploadBytes:           cmd.Int64("max-upload"),
			MaxConnsPerAddr:          noLimitIfZero(cmd.Int("max-conns-per-addr")),
			MaxRPCsInFlight:          noLimitIfZero(cmd.Int("max-rpcs")),
			MaxNewHostsPerDay:        noLimitIfZero(cmd.Int("max-new-hosts")),
			NoMetrics:                cmd.Bool("no-metrics"),
			NoPages:                  cmd.Bool("no-pages"),
			StatusRefresh:            statusRefresh(cmd.Duration("status-refresh")),
		},
	}
	if codeSignKey == "" || uploadKey == nil {
		log.Warn("no project keys (or no --project-dir): BOINC clients cannot check app files and uploads are refused; run 'bserver keys'")
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f := cmd.String("url-file"); f != "" {
		if err := cliutil.WriteFileAtomic(f, []byte(server.URLFor(ln)+"\n")); err != nil {
			ln.Close()
			return err
		}
	}
	fmt.Fprintf(cmd.Root().Writer, "listening on %s\n", server.URLFor(ln))
	if durable, setting, err := s.Durability(ctx); err == nil && !durable {
		// A report acknowledged here and lost in a power cut is never sent again.
		log.Warn("the database may lose the last commits in a power cut, reports already acknowledged among them; see docs/bserver.md, Durability", "db", s.Engine(), "setting", setting)
	}
	log.Info("serving", "db", s.Engine(), "addr", ln.Addr().String())
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// fileClock is the server's clock read from path at every request (--clock-file): a
// driver of simulated time writes the file (atomically) and the server follows it.
// The first read must succeed; a later failure keeps the last good time, since a
// request in the middle of a rewrite must still be answered.
func fileClock(path string, log *slog.Logger) (func() time.Time, error) {
	read := func() (time.Time, error) {
		b, err := limits.ReadFile(path, limits.LineBytes)
		if err != nil {
			return time.Time{}, err
		}
		now, err := cliutil.ParseTime(strings.TrimSpace(string(b)))
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: %w", path, err)
		}
		return time.Unix(0, int64(now*1e9)), nil
	}
	last, err := read()
	if err != nil {
		return nil, cliutil.Usagef("--clock-file: %v", err)
	}
	var mu sync.Mutex
	return func() time.Time {
		t, err := read()
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			log.Warn("clock file unreadable: keeping the last time read", "err", err)
			return last
		}
		last = t
		return t
	}, nil
}

// noLimitIfZero is a count flag whose 0 means "no limit" as server.Config takes it
// (there 0 is the default, negative no limit).
func noLimitIfZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// accountRate is --account-rate as server.Config takes it: 0 on the command line means
// no limit.
func accountRate(perMin float64) float64 {
	if perMin == 0 {
		return -1
	}
	return perMin
}

// statusRefresh is --status-refresh as server.Config takes it: 0 on the command line
// means at every view.
func statusRefresh(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
