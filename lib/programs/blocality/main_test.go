package blocality_test

import (
	"os"
	"testing"

	"github.com/bkit/bkit/lib/programs/blocality"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/scripttest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary run as blocality and bserver: testscript puts copies
// on $PATH for the scripts, and the concurrency test starts several at once.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"blocality": func() { os.Exit(blocality.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"bserver":   func() { os.Exit(bserver.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/script/*.txtar; UPDATE_SCRIPTS=1 rewrites their golden files.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") == "1",
		Cmds:          map[string]func(*testscript.TestScript, bool, []string){"exits": scripttest.Exits},
	})
}
