package bdevices_test

import (
	"os"
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
	})
}
