package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/filetree"
	"github.com/bkit/bkit/lib/programs/bretry"
	"github.com/bkit/bkit/lib/programs/bsched"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/programs/bsim"
	"github.com/bkit/bkit/lib/scripttest"
	"github.com/bkit/bkit/lib/store"
	"github.com/rogpeppe/go-internal/testscript"
)

// runOut runs bserver in-process, fails t unless it exits 0, and returns its stdout.
func runOut(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := bserver.Main(append([]string{"bserver"}, args...), nil, &out, &errb); code != 0 {
		t.Fatalf("bserver %v: status %d: %s", args, code, errb.String())
	}
	return out.String()
}

// clientPrefs make the client run jobs whatever else the machine does (the tests
// share it) and keep a small work buffer.
const clientPrefs = `<global_preferences>
<run_if_user_active>1</run_if_user_active>
<suspend_cpu_usage>0</suspend_cpu_usage>
<idle_time_to_run>0</idle_time_to_run>
<cpu_usage_limit>100</cpu_usage_limit>
<max_ncpus_pct>100</max_ncpus_pct>
<work_buf_min_days>0.01</work_buf_min_days>
<work_buf_additional_days>0.01</work_buf_additional_days>
</global_preferences>
`

// clientConfig makes the client report each result once its output is uploaded (at
// its next scheduler poll, every 5 s) rather than when it next needs work, and ask for
// work once only (fetch_minimal_work: its first request gets every job, and a second,
// sent as the first job ends, would take the poll the reports wait for, and the next
// poll 5 s after its reply): the test waits for the reports.
const clientConfig = `<cc_config>
<options>
<report_results_immediately>1</report_results_immediately>
<fetch_minimal_work>1</fetch_minimal_work>
</options>
</cc_config>
`

// TestMain lets the test binary run as the bserver program too: testscript puts a copy
// named bserver on $PATH, which scripttest.StartServe starts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"bserver": func() { os.Exit(bserver.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestRealBOINCClient runs Debian's boinc-client against `bserver serve` on loopback:
// the client creates an account (create_account.php) and attaches with its key,
// downloads the signed example app (examples/boinc-app) and the jobs' input, runs the
// jobs, uploads their outputs and reports them; then bretry validate validates them by
// the uploaded outputs' digests and grants their credit. Skipped, loudly, when the
// boinc and boinccmd commands are missing (.ci/run installs them).
func TestRealBOINCClient(t *testing.T) {
	t.Parallel()
	boinc, err1 := exec.LookPath("boinc")
	boinccmd, err2 := exec.LookPath("boinccmd")
	if err1 != nil || err2 != nil {
		t.Skip("SKIP: no real BOINC client (boinc, boinccmd) on PATH: install Debian's boinc-client (apt-get install -y boinc-client) to run the end-to-end test; .ci/run does")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("SKIP: the test's app is built for x86_64-pc-linux-gnu, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	const njobs = 6
	dir := t.TempDir()
	proj, cdir := filepath.Join(dir, "project"), filepath.Join(dir, "client")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(cdir, 0o755)
	// The client starts first: its start-up (a look at every library directory for a
	// 32-bit libc, no option skips it) goes on while the app is built and the project
	// made. Its scheduler poll comes every 5 s from its start; the attach below waits
	// for the next one.
	os.WriteFile(filepath.Join(cdir, "global_prefs_override.xml"), []byte(clientPrefs), 0o644)
	os.WriteFile(filepath.Join(cdir, "cc_config.xml"), []byte(clientConfig), 0o644)
	os.WriteFile(filepath.Join(cdir, "gui_rpc_auth.cfg"), []byte("bkit-test\n"), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var clientLog bytes.Buffer
	client := exec.Command(boinc, "--dir", cdir, "--gui_rpc_port", strconv.Itoa(port), "--allow_multiple_clients", "--skip_cpu_benchmarks")
	client.Stdout, client.Stderr = &clientLog, &clientLog
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := func(args ...string) (string, error) {
		out, err := exec.Command(boinccmd, append([]string{"--host", "127.0.0.1:" + strconv.Itoa(port), "--passwd", "bkit-test"}, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		cmd("--quit")
		done := make(chan error, 1)
		go func() { done <- client.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			client.Process.Kill()
			<-done
		}
	})
	appBin := filepath.Join(dir, "boinc-app")
	build := exec.Command("go", "build", "-o", appBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the example app: %v\n%s", err, out)
	}
	input := filepath.Join(dir, "input.txt")
	os.WriteFile(input, []byte("hello from bkit"), 0o644)

	db := filepath.Join(proj, "project.db")
	runOut(t, "init", "--db", db)
	runOut(t, "keys", "--db", db)
	runOut(t, "app", "add", "--db", db, "upper")
	runOut(t, "app-version", "add", "--db", db, "--app", "upper", "--version", "1", "--platform", "x86_64-pc-linux-gnu", "--file", appBin)
	// Jobs estimated at 0.1 s: a client's first request to a project asks for 1 s of
	// work (BOINC's initial work request), so its first reply carries all of them
	// instead of one, and the rest a work fetch later. The bound stays far above what
	// the job takes, so the client never aborts one for its elapsed time.
	runOut(t, "work", "create", "--db", db, "--app", "upper", "--count", strconv.Itoa(njobs), "--fpops-est", "1e8", "--fpops-bound", "1e12",
		"--delay-bound", "1d", "--input", "in="+input, "--output", "out:100000")
	// Accounts are made by clients here (create_account.php), as on most BOINC projects.
	url, ok := strings.CutPrefix(scripttest.Start(t, true, "bserver", "serve", "--db", db, "--addr", "127.0.0.1:0", "--account-creation"), "listening on ")
	if !ok {
		t.Fatalf("bserver serve did not start")
	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := cmd("--get_cc_status"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client's GUI RPC did not answer:\n%s", clientLog.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The volunteer makes an account with the client (the Manager's new-account page does
	// the same), then attaches with its account key.
	out, err := cmd("--create_account", url, "alice@example.org", "secret-pw", "alice")
	_, key, found := strings.Cut(out, "account key: ")
	key = strings.TrimSpace(key)
	if err != nil || !found || len(key) != 32 {
		t.Fatalf("create_account: %v: %s", err, out)
	}
	attach := time.Now()
	if out, err := cmd("--project_attach", url, key); err != nil {
		t.Fatalf("attach: %v: %s", err, out)
	}

	st, err := store.Open("sqlite:" + db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	deadline = time.Now().Add(3 * time.Minute)
	var firstReport float64
	for {
		rs, err := st.Results(ctx)
		if err != nil {
			t.Fatal(err)
		}
		over := 0
		for _, r := range rs {
			if r.ServerState == store.ServerStateOver {
				over++
				if firstReport == 0 || r.ReceivedTime < firstReport {
					firstReport = r.ReceivedTime
				}
			}
		}
		if over == njobs {
			break
		}
		if time.Now().After(deadline) {
			msgs, _ := cmd("--get_messages")
			t.Fatalf("%d of %d results reported after 3 minutes; client messages:\n%s", over, njobs, msgs)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("FIGURE: attach to first report %.1f s, to all %d reports %.1f s (real BOINC client %s on loopback)",
		firstReport-float64(attach.UnixNano())/1e9, njobs, time.Since(attach).Seconds(), "7.20")

	rs, _ := st.Results(ctx)
	for _, r := range rs {
		if r.Outcome != store.OutcomeSuccess {
			t.Errorf("result %s: outcome %s, want success", r.Name, store.OutcomeName[r.Outcome])
		}
		b, err := os.ReadFile(filepath.Join(proj, "upload", filetree.Path(r.Name+"_0")))
		if err != nil || string(b) != "HELLO FROM BKIT\n15 bytes\n" {
			t.Errorf("output of %s: %q, %v", r.Name, b, err)
		}
	}
	up, err := st.UploadedFiles(ctx)
	if err != nil || len(up) != njobs {
		t.Errorf("uploaded files recorded: %d, %v; want %d", len(up), err, njobs)
	}

	// The validator validates the real results: each report's digest is that of the
	// file the client uploaded (a BOINC client sends none of its own), and bretry
	// validate chooses every workunit's canonical result.
	wantDigest := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("HELLO FROM BKIT\n15 bytes\n")))
	var errb bytes.Buffer
	if code := bretry.Main([]string{"bretry", "validate", "--db", "sqlite:" + db, "--app", "upper", "--once"}, nil, io.Discard, &errb); code != 0 {
		t.Fatalf("bretry validate: status %d: %s", code, errb.String())
	}
	rows, err := st.DB.QueryContext(ctx, `SELECT r.name, r.output_digest, r.validate_state, w.canonical_resultid=r.id FROM result r
		JOIN workunit w ON w.id=r.workunitid ORDER BY r.name`)
	if err != nil {
		t.Fatal(err)
	}
	validated := 0
	for rows.Next() {
		var name, digest string
		var vstate int
		var canonical bool
		if err := rows.Scan(&name, &digest, &vstate, &canonical); err != nil {
			t.Fatal(err)
		}
		if digest != wantDigest || vstate != store.ValidateValid || !canonical {
			t.Errorf("result %s: digest %q, validate state %d, canonical %v; want %s, valid (%d), canonical", name, digest, vstate, canonical,
				wantDigest, store.ValidateValid)
		}
		validated++
	}
	if err := rows.Err(); err != nil || validated != njobs {
		t.Errorf("%d results looked at (%v), want %d", validated, err, njobs)
	}
	rows.Close()
	status := runOut(t, "status", "--db", db)
	if !strings.Contains(status, "│ upper │ over         │ success │ "+strconv.Itoa(njobs)) ||
		!strings.Contains(status, fmt.Sprintf("workunits %d (%d validated)", njobs, njobs)) {
		t.Errorf("bserver status does not count %d successes, all validated:\n%s", njobs, status)
	}
	users := runOut(t, "user", "list", "--db", db, "-o", "json")
	if !strings.Contains(users, `"hosts": 1`) {
		t.Errorf("the client's host is not alice's:\n%s", users)
	}
	// The validator granted each valid result its estimated credit, to alice.
	var accounts []store.User
	if err := json.Unmarshal([]byte(users), &accounts); err != nil || len(accounts) != 1 ||
		math.Abs(accounts[0].TotalCredit-njobs*credit.Granted(1e8)) > 1e-12 {
		t.Errorf("alice's credit after validation: %+v (%v), want %d × %g", accounts, err, njobs, credit.Granted(1e8))
	}
	msgs, err := cmd("--get_messages")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(msgs, "\n") {
		if strings.Contains(strings.ToLower(line), "error") {
			t.Errorf("client message: %s", line)
		}
	}

	// The client's state imports into a state document bsched reads.
	var state bytes.Buffer
	errb.Reset()
	if code := bsim.Main([]string{"bsim", "import", filepath.Join(cdir, "client_state.xml")}, nil, &state, &errb); code != 0 {
		t.Fatalf("bsim import: status %d: %s", code, errb.String())
	}
	var table bytes.Buffer
	errb.Reset()
	if code := bsched.Main([]string{"bsched", "-o", "table"}, &state, &table, &errb); code != 0 || !strings.Contains(table.String(), "Scheduling pass") {
		t.Fatalf("bsched -o table: status %d: %s%s", code, table.String(), errb.String())
	}
}
