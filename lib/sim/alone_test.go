package sim

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// aloneEnv names, in a child process of the test binary, the one test it runs.
const aloneEnv = "BKIT_SIM_ALONE"

// Alone runs a test that must have the process to itself in a process of its own,
// the test binary again with -test.run naming that test alone: those that set a
// package switch (noSkips, noHoldAfterRPC, noGPUWatch, noReportWatch, accountCheck:
// read by every step of every run) and TestStepLoopAllocatesNothing (it counts the
// process's heap allocations). So they run beside the others (t.Parallel), one core
// each, rather than one after another before them. In that process Alone returns
// true and the test goes on as before; in the test binary go test started it returns
// false once the child has passed, and the test returns. The child's output fails
// the test unless it says the test passed (a name -test.run did not match runs
// nothing and passes), and is logged under -v. (lib/boincpolicy's Alone, the same.)
func Alone(t *testing.T) bool {
	t.Helper()
	if os.Getenv(aloneEnv) == t.Name() {
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
	cmd.Env = append(os.Environ(), aloneEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\n--- PASS: "+t.Name()+" ") {
		t.Fatalf("%s in a process of its own: %v\n%s", t.Name(), err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
	return false
}
