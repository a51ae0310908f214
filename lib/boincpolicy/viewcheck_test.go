package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestRefreshedViews: in runs of policy boinc on corpus hosts whose RPCs bring jobs
// at most moments (c150, c143), random ones, the public scenarios and noisy (random
// seeds, both conventions, 2 to 10 days), every view refresh brings up to date,
// quietView's and the one kept after a moment's second pass (Arrived), is the view
// built afresh. It fails with refresh's shortcut for unchanged tasks taken after
// TasksReceived (c175: as many tasks reported as received), and with a waiting job's
// estimate kept where its project's correction factor moved (c175: 4 and 22 views).
func TestRefreshedViews(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2124))
	dirs := []string{"../../scenarios/corpus/c150", "../../scenarios/corpus/c143", "../../scenarios/corpus/c175",
		"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/seed002-gpu",
		"../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 4, dirs...)
	checkedRuns(t, r, dirs, boincpolicy.SetViewCheck,
		checked{boincpolicy.ViewDiffs, "refreshed views differed from views built afresh"})
}
