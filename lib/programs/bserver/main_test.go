package bserver_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/scripttest"
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
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") == "1",
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"exits":     scripttest.Exits,
			"post":      post,
			"get":       get,
			"stdoutvar": scripttest.StdoutVar,
		},
	})
}

// post URLFILE PATH BODYFILE posts BODYFILE (with $VARS expanded) to the server whose
// base URL is in URLFILE and prints "status N" and the reply. It sets $HOSTID from a
// reply that carries one, and $AUTH from a reply that carries a host authenticator
// (an anonymous host's, --anonymous-hosts), so the next request can present them.
func post(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: post URLFILE PATH BODYFILE")
	}
	body := os.Expand(ts.ReadFile(args[2]), ts.Getenv)
	resp, err := http.Post(scripttest.ServerURL(ts, args[0])+args[1], "text/xml", strings.NewReader(body))
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "status %d\n%s", resp.StatusCode, b)
	if rep, err := boincxml.ParseSchedulerReply(strings.NewReader(string(b))); err == nil {
		if rep.HostID != 0 {
			ts.Setenv("HOSTID", strconv.FormatInt(rep.HostID, 10))
		}
		if rep.Authenticator != "" {
			ts.Setenv("AUTH", rep.Authenticator)
		}
	}
}

// get URLFILE PATH prints "status N" and the body of a GET.
func get(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: get URLFILE PATH")
	}
	resp, err := http.Get(scripttest.ServerURL(ts, args[0]) + args[1])
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "status %d\n%s", resp.StatusCode, b)
}
