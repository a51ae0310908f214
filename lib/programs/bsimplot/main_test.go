package bsimplot_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bkit/bkit/lib/programs/bsim"
	"github.com/bkit/bkit/lib/programs/bsimplot"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary run as bsim-plot and as bsim, whose --plot runs
// bsim-plot: bsim's --plot scripts are here, so that bsim's own test binary need not
// link the plotting library (its scripts start it hundreds of times).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"bsim-plot": func() { os.Exit(bsimplot.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bsim":      func() { os.Exit(bsim.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/script/*.txtar.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			repo, err := filepath.Abs("../../..")
			env.Setenv("REPO", repo)
			return err
		},
	})
}
