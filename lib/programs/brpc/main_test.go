package brpc_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bkit/bkit/lib/programs/bdevices"
	"github.com/bkit/bkit/lib/programs/bfetch"
	"github.com/bkit/bkit/lib/programs/brpc"
	"github.com/bkit/bkit/lib/programs/bsched"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/programs/bsim"
	"github.com/bkit/bkit/lib/scripttest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain puts the programs on PATH: brpc and bfetch for the testscripts, and the
// whole client loop with bserver for TestClientLoopLive.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"brpc":     func() { os.Exit(brpc.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bfetch":   func() { os.Exit(bfetch.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bdevices": func() { os.Exit(bdevices.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bsched":   func() { os.Exit(bsched.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bsim":     func() { os.Exit(bsim.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bserver":  func() { os.Exit(bserver.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/script/*.txtar; UPDATE_SCRIPTS=1 rewrites their golden files.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") == "1",
		Cmds:          map[string]func(*testscript.TestScript, bool, []string){"serverurl": scripttest.URLVar, "stdoutvar": scripttest.StdoutVar},
		Setup: func(env *testscript.Env) error {
			repo, err := filepath.Abs("../../..")
			env.Setenv("REPO", repo)
			return err
		},
	})
}
