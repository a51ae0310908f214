package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestArrivedAgainstPass: wherever a hold goes on across an RPC's new jobs, the
// emulator's second pass of the moment that arrivedKeeps leaves unmade, made whole on
// a copy, starts and stops no task, and every pass held (arrivedHold's and the holds'
// after it) is a whole pass's on a copy (passCheck's: no task started or stopped, the
// same miss counts). It wants many such answers.
func TestArrivedAgainstPass(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2929))
	dirs := []string{"../../scenarios/corpus/c143", "../../scenarios/corpus/c124",
		"../../scenarios/corpus/c065", "../../scenarios/corpus/c150", "../../scenarios/corpus/c057",
		"../../scenarios/corpus/c118", "../../scenarios/part-time-4cpu", "../../scenarios/deadlines-4cpu",
		"../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetArrivedCheck, boincpolicy.ArrivedChecks, 1000, "answers arrivedKeeps and arrivedHold gave",
		checked{boincpolicy.ArrivedDiffs, "of arrivedKeeps' answers contradicted by a whole pass"},
		checked{boincpolicy.PassDiffs, "of the passes cut short or held contradicted by a whole pass"})
}
