package bdevices_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bkit/bkit/lib/programs/bdevices"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"bdevices": func() { os.Exit(bdevices.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/script/*.txtar; UPDATE_SCRIPTS=1 rewrites their golden files.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") == "1",
		// BINDIR is where testscript put bdevices, so a script can set a PATH of its own
		// (with or without a fake nvidia-smi) and still run bdevices.
		Setup: func(env *testscript.Env) error {
			for _, dir := range filepath.SplitList(env.Getenv("PATH")) {
				if _, err := os.Stat(filepath.Join(dir, "bdevices")); err == nil {
					env.Setenv("BINDIR", dir)
					return nil
				}
			}
			return errors.New("bdevices not found in PATH")
		},
	})
}
