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
	"github.com/bkit/bkit/lib/sim"
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
	t.Parallel()
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

// publicExample is BOINC's emulator's public example scenario, shipped in scenarios/
// with BOINC's figures for it (boinc_figures.txt), relative to this package.
const publicExample = "../../../scenarios/example-2cpu-2to1"

// TestPublicExample runs the public example through the whole program, as a user would,
// and checks its one-line figures against BOINC's emulator's on the same scenario: the
// seed policy is no worse than BOINC's client on any figure, and the round-robin
// baseline, which ignores resource shares, is far off them (sv) where the seed policy
// is not.
func TestPublicExample(t *testing.T) {
	f, err := os.Open(filepath.Join(publicExample, bsim.BOINCFigures))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	boinc, err := bsim.ParseOneLine(f)
	if err != nil {
		t.Fatal(err)
	}
	figures := map[string]*sim.Result{}
	for _, policy := range []string{"seed", "rr"} {
		var out, errb bytes.Buffer
		code := bsim.Main([]string{"bsim", "run", publicExample, "--duration", "10d", "--policy", policy}, nil, &out, &errb)
		if code != 0 || errb.Len() > 0 {
			t.Fatalf("%s: exit %d: %s", policy, code, errb.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		res, err := bsim.ParseOneLine(strings.NewReader(lines[len(lines)-1]))
		if err != nil {
			t.Fatalf("%s: the last line: %v", policy, err)
		}
		figures[policy] = res
	}
	seed, rr := figures["seed"], figures["rr"]
	if seed.WastedFraction > boinc.WastedFraction || seed.IdleFraction > boinc.IdleFraction ||
		seed.ShareViolation > boinc.ShareViolation || seed.Monotony > boinc.Monotony || seed.RPCsPerJob > boinc.RPCsPerJob {
		t.Errorf("seed policy %s, worse than BOINC's %s", seed.OneLine(), boinc.OneLine())
	}
	if rr.ShareViolation < 0.2 || seed.ShareViolation > 0.01 {
		t.Errorf("share violation: rr %f (want >= 0.2: shares 2:1 split evenly), seed %f (want <= 0.01)", rr.ShareViolation, seed.ShareViolation)
	}
}
