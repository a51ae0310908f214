package boincpolicy

import (
	"testing"

	"github.com/bkit/bkit/lib/alonetest"
)

// Alone runs a test that sets the package's switches (a check turned on, a shortcut
// broken on purpose) in a process of its own (alonetest.Alone): the switches are the
// process's, so the test runs beside the others rather than before them.
func Alone(t *testing.T) bool {
	t.Helper()
	return alonetest.Alone(t)
}
