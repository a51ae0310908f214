// Package scripttest owns the testscript commands that several programs' script tests
// share (it is test support, imported only by _test files), so each program's
// TestScripts registers them instead of keeping its own copy.
package scripttest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Exits is the script command `exits N PROGRAM ARGS...`: it runs PROGRAM like exec and
// checks that its exit status is N, so scripts tell bad usage (2) from a failure at run
// time (1).
func Exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits STATUS PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad status %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}

// ServerURL waits for the URL file a background `bserver serve --url-file FILE` writes
// (whole once it ends in a newline) and returns the URL.
func ServerURL(ts *testscript.TestScript, file string) string {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(ts.MkAbs(file)); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s: the server did not start", file)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// URLVar is the script command `serverurl FILE VAR`: it waits for the URL file of a
// background `bserver serve --url-file FILE` (ServerURL) and sets $VAR to the URL, so
// a client program can be pointed at the server.
func URLVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: serverurl FILE VAR")
	}
	ts.Setenv(args[1], ServerURL(ts, args[0]))
}

// StdoutVar is the script command `stdoutvar VAR`: it sets $VAR to the last command's
// standard output, trimmed (an account key 'bserver user add' printed, for the
// requests that follow).
func StdoutVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stdoutvar VAR")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

// Start runs PROG (on $PATH: a test binary's own programs, put there by
// testscript.Main) until cleanup (SIGTERM, exit 0), and
// returns the first line it prints (with wait).
func Start(t testing.TB, wait bool, prog string, args ...string) string {
	t.Helper()
	cmd, line, stderr := Launch(t, wait, prog, args...)
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s: %v\n%s", prog, err, stderr.String())
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", prog, stderr.String())
		}
	})
	return line
}

// Launch starts PROG (on $PATH) and, with wait, returns the first line it prints
// (failing t after 30 s without one), with the process and its standard error; the
// caller stops it (Start does at cleanup; a test that kills it uses Launch).
func Launch(t testing.TB, wait bool, prog string, args ...string) (*exec.Cmd, string, *bytes.Buffer) {
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
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !wait {
		go io.Copy(io.Discard, stdout)
		return cmd, "", stderr
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		io.Copy(io.Discard, stdout)
	}()
	select {
	case s := <-line:
		return cmd, strings.TrimSpace(s), stderr
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%s did not start", prog)
	}
	return cmd, "", stderr
}

// StartServe starts a `bserver serve` process (Start) on a free loopback port and
// returns its base URL; the process gets SIGTERM at cleanup and must exit 0. projectDir
// is its --project-dir, or "" for the default (SQLite's database directory; a new one
// for MySQL).
func StartServe(t testing.TB, db, projectDir string) string {
	t.Helper()
	args := []string{"serve", "--db", db, "--addr", "127.0.0.1:0"}
	if projectDir == "" && strings.HasPrefix(db, "mysql://") {
		// Required with MySQL, where no database file's directory implies it.
		projectDir = t.TempDir()
	}
	if projectDir != "" {
		args = append(args, "--project-dir", projectDir)
	}
	s := Start(t, true, "bserver", args...)
	url, ok := strings.CutPrefix(s, "listening on ")
	if !ok {
		t.Fatalf("serve said %q", s)
	}
	return url
}
