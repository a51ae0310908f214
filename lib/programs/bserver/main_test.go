package bserver_test

import (
	"os"
	"testing"

	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary run as the bserver program: testscript puts a copy
// named bserver on $PATH for the scripts, and TestTwoServers starts two of them.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"bserver": func() { os.Exit(bserver.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/script/*.txtar; UPDATE_SCRIPTS=1 rewrites their golden files.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") == "1",
	})
}
