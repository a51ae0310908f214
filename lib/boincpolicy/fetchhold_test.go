package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestFetchHoldKept: in runs of policy boinc on the corpus scenarios whose work fetch
// the list schedules' bound decides at most moments (c029, c139, c063), random corpus
// scenarios, the public ones and noisy (random seeds, both conventions, 2 to 10 days),
// wherever the work fetch's hold answers that no project is to be asked, a whole work
// fetch (a workspace with no skips) asks none. (NoneYet's check is on too, so that the
// hold is asked at the moments NoneYet answers.) Under bsim's conventions lowHold's
// hold rests on served CPUs that read the RECs: it fails with fetchHeld's box test
// dropped or its box doubled (c139, deadlines-4cpu). lowHoldFor's hold, job by job
// (c060, c159: issue 30, twenty-fourth round), fails it with a job's rate dropped
// (its margin never eaten) or the least of the jobs' own holds taken for the n-th
// (the longest: the n − 1 longer ones left out).
func TestFetchHoldKept(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 1920))
	dirs := []string{"../../scenarios/corpus/c029", "../../scenarios/corpus/c139", "../../scenarios/corpus/c063",
		"../../scenarios/corpus/c060", "../../scenarios/corpus/c159",
		"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/deadlines-4cpu",
		"../../scenarios/share-75-25", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 12, dirs...)
	checkedRuns(t, r, dirs, func(on bool) { boincpolicy.SetFetchCheck(on); boincpolicy.SetNoneYetCheck(on) },
		checked{boincpolicy.FetchDiffs, "of the work fetch hold's answers contradicted by a whole work fetch"})
}
