package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestSaturatedLowCoprocs: in runs of policy boinc on GPU hosts of the corpus whose
// work fetch found every resource saturated past work_buf_min at most moments (c122,
// c025, c103, c048), random corpus scenarios, the public GPU one and noisy (random
// seeds, both conventions, 2 to 10 days), wherever saturatedLow answers on a host with
// coprocessors that no resource is below work_buf_min, a whole work fetch (without
// that bound) asks no project. It fails with the coprocessors' bounds (coprocsOver)
// dropped.
func TestSaturatedLowCoprocs(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2800))
	dirs := []string{"../../scenarios/corpus/c122", "../../scenarios/corpus/c025", "../../scenarios/corpus/c103",
		"../../scenarios/corpus/c048", "../../scenarios/seed002-gpu", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetSatCoCheck, boincpolicy.SatCoChecks, 200, "saturatedLow answers on hosts with coprocessors",
		checked{boincpolicy.SatCoDiffs, "of saturatedLow's answers on hosts with coprocessors contradicted by a whole work fetch"})
}
