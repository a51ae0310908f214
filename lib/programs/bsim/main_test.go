package bsim_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/programs/bdevices"
	"github.com/bkit/bkit/lib/programs/bfetch"
	"github.com/bkit/bkit/lib/programs/brpc"
	"github.com/bkit/bkit/lib/programs/bsched"
	"github.com/bkit/bkit/lib/programs/bsim"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	// The client programs too: scripts/client-loop.sh runs them beside bsim. Not
	// bsim-plot: this binary is started some 600 times by client_loop.txtar, and
	// linking the plotting library would cost each start a third more; bsim's --plot
	// scripts are in lib/programs/bsimplot.
	testscript.Main(m, map[string]func(){
		"bsim":     func() { os.Exit(bsim.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bfetch":   func() { os.Exit(bfetch.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bdevices": func() { os.Exit(bdevices.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bsched":   func() { os.Exit(bsched.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"brpc":     func() { os.Exit(brpc.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/script/*.txtar; UPDATE_SCRIPTS=1 rewrites their golden files.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") == "1",
		Setup: func(env *testscript.Env) error {
			repo, err := filepath.Abs("../../..")
			env.Setenv("REPO", repo)
			return err
		},
	})
}

// publicExample is the shared example scenario, relative to this package: it lives
// beside the repository, not in it.
const publicExample = "../../../../shared/scenarios/example-2cpu-2to1"

// BOINC's emulator on the public example (BOINC 8.3 client code, 10 days, delta 60),
// from ../shared/boinc-emulator.md.
const boincPublicExample = "wf 0.000000 if 0.000000 sv 0.022014 m 0.352439 r 0.183226"

// TestPublicExample runs the public example through the whole program, as a user would,
// and shows its figures beside BOINC's.
func TestPublicExample(t *testing.T) {
	if _, err := os.Stat(filepath.Join(publicExample, "client_state.xml")); err != nil {
		t.Skipf("the public example is not beside the repository (%v): nothing to compare", err)
	}
	for _, policy := range []string{"seed", "rr"} {
		var out, errb bytes.Buffer
		code := bsim.Main([]string{"bsim", "run", publicExample, "--duration", "10d", "--policy", policy}, nil, &out, &errb)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", policy, code, errb.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		t.Logf("bsim %-4s %s", policy, lines[len(lines)-1])
	}
	t.Logf("BOINC     %s", boincPublicExample)
}
