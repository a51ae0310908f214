package sim

import (
	"testing"

	"github.com/bkit/bkit/lib/alonetest"
)

// Alone runs a test that must have the process to itself in a process of its own
// (alonetest.Alone): those that set a package switch (noSkips, noHoldAfterRPC,
// noGPUWatch, noReportWatch, accountCheck: read by every step of every run) and
// TestStepLoopAllocatesNothing (it counts the process's heap allocations).
func Alone(t *testing.T) bool {
	t.Helper()
	return alonetest.Alone(t)
}
