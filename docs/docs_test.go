// Package docs_test runs the commands README.md and docs/*.md show (issue 32: examples
// that could not run as written): every fenced sh block, and the example column of
// README's table of programs, each in a fresh directory that holds the repository's
// examples, scenarios, schema and scripts, with the programs on PATH. A block that
// cannot run here (a real BOINC client, minutes of tests) is marked just above its
// fence with <!-- doctest: skip: REASON -->, and the reason is required.
package docs_test

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/programs/bdevices"
	"github.com/bkit/bkit/lib/programs/bfetch"
	"github.com/bkit/bkit/lib/programs/blocality"
	"github.com/bkit/bkit/lib/programs/bretry"
	"github.com/bkit/bkit/lib/programs/brpc"
	"github.com/bkit/bkit/lib/programs/bsched"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/programs/bsim"
)

// programs are the toolkit's programs the test binary runs as, when started under
// their name, so that the commands run the real programs without building them.
var programs = map[string]func([]string, io.Reader, io.Writer, io.Writer) int{
	"bserver": bserver.Main, "bretry": bretry.Main, "blocality": blocality.Main, "bsim": bsim.Main,
	"bfetch": bfetch.Main, "bdevices": bdevices.Main, "bsched": bsched.Main, "brpc": brpc.Main,
}

func TestMain(m *testing.M) {
	if main, ok := programs[filepath.Base(os.Args[0])]; ok {
		os.Exit(main(os.Args, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// example is a command block of a document.
type example struct {
	where string // file:line
	text  string
	skip  string // why it is not run, or ""
}

var (
	fence  = regexp.MustCompile("(?ms)^```(sh|bash)\n(.*?)^```")
	marker = regexp.MustCompile(`<!-- doctest: skip: (.*?) -->\s*$`)
	// A row of README's table of programs: | `prog` | policy | `example` |
	row = regexp.MustCompile("(?m)^\\| `(b[a-z]+)` \\|.*\\| `([^`]+)` \\|$")
)

func examples(t *testing.T) []example {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	for _, f := range append([]string{"../README.md"}, files...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		line := func(i int) string { return f + ":" + strconv.Itoa(strings.Count(s[:i], "\n")+1) }
		for _, m := range fence.FindAllStringSubmatchIndex(s, -1) {
			e := example{where: line(m[0]), text: s[m[4]:m[5]]}
			before := strings.TrimRight(s[:m[0]], "\n")
			if mm := marker.FindStringSubmatch(before[strings.LastIndex(before, "\n")+1:]); mm != nil {
				e.skip = mm[1]
			}
			out = append(out, e)
		}
		if f == "../README.md" {
			for _, m := range row.FindAllStringSubmatchIndex(s, -1) {
				out = append(out, example{where: line(m[0]), text: s[m[4]:m[5]] + "\n"})
			}
		}
	}
	return out
}

// TestDocCommands runs each example; one that fails shows its output.
func TestDocCommands(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for name := range programs {
		if err := os.Symlink(exe, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	all := examples(t)
	if len(all) < 10 {
		t.Fatalf("found only %d examples: the patterns no longer match the documents", len(all))
	}
	for _, e := range all {
		t.Run(e.where, func(t *testing.T) {
			if e.skip != "" {
				t.Logf("not run (%s): %s", e.skip, e.text)
				return
			}
			t.Parallel()
			dir := t.TempDir()
			for _, d := range []string{"examples", "scenarios", "schema", "scripts"} {
				if err := os.Symlink(filepath.Join(repo, d), filepath.Join(dir, d)); err != nil {
					t.Fatal(err)
				}
			}
			// A fixed port may be taken on a shared machine: a free one stands in.
			text := strings.ReplaceAll(e.text, "127.0.0.1:8080", "127.0.0.1:"+freePort(t))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", "set -eo pipefail\ntrap 's=$?; for j in $(jobs -p); do kill $j 2>/dev/null; done; wait; exit $s' EXIT\n"+text)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "BSERVER_DB=")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: %v\n--- the commands:\n%s--- their output:\n%s", e.where, err, e.text, out)
			}
		})
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
