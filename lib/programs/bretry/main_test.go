package bretry_test

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/bkit/bkit/lib/programs/bretry"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary run as bretry and bserver: testscript puts copies on
// $PATH for the scripts, and the process tests start several of them.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"bretry":  func() { os.Exit(bretry.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bserver": func() { os.Exit(bserver.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/script/*.txtar; UPDATE_SCRIPTS=1 rewrites their golden files.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") == "1",
		Cmds:          map[string]func(*testscript.TestScript, bool, []string){"exits": exits},
	})
}

// exits N PROGRAM ARGS... runs PROGRAM like exec and checks that its exit status is N.
func exits(ts *testscript.TestScript, neg bool, args []string) {
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
