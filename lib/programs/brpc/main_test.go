package brpc_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bkit/bkit/lib/programs/bfetch"
	"github.com/bkit/bkit/lib/programs/brpc"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"brpc":   func() { os.Exit(brpc.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bfetch": func() { os.Exit(bfetch.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
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
