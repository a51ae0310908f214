// Package alonetest runs one test of a package in a process of its own, for tests
// that must have the process to themselves: those that set a package switch (a check
// turned on, a shortcut broken on purpose: variables every run of the package reads)
// and those that count the process's heap allocations. Run that way they run beside
// the package's other tests (t.Parallel), one core each, rather than one after
// another before them (lib/boincpolicy's and lib/sim's tests).
package alonetest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// env names, in a child process of the test binary, the one test it runs.
const env = "BKIT_TEST_ALONE"

// Alone runs the test t in a process of its own: the test binary again, with
// -test.run naming that test alone. In that process Alone returns true and the test
// goes on; in the test binary go test started it returns false once the child has
// passed, and the test returns. The child's output fails the test unless it says the
// test passed (a name -test.run did not match runs nothing and passes), and is logged
// under -v (the counts the checks log).
func Alone(t *testing.T) bool {
	t.Helper()
	if os.Getenv(env) == t.Name() {
		return true
	}
	t.Parallel()
	args := []string{"-test.run=^" + t.Name() + "$", "-test.count=1", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).String())
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), env+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\n--- PASS: "+t.Name()+" ") {
		t.Fatalf("%s in a process of its own: %v\n%s", t.Name(), err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
	return false
}
