package boincpolicy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/boincpolicy"
)

// TestMissesRelistAgainstSimulation: in runs of policy boinc on corpus hosts of one
// project (c143, c124, c150, c065, c026), random ones, the public scenarios and noisy
// (random seeds, both conventions, 2 to 10 days), wherever missesKept gives an answer
// missesRelist carried by the project's list schedule, the whole simulation finds the
// same jobs missing their deadlines. It wants many such answers, and fails with
// relistable's test of one project dropped (noisy, c118, c057) and with the jobs that
// miss left out of the list schedule (c143, c124, c052).
func TestMissesRelistAgainstSimulation(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2427))
	dirs := []string{"../../scenarios/corpus/c143", "../../scenarios/corpus/c124",
		"../../scenarios/corpus/c150", "../../scenarios/corpus/c065", "../../scenarios/corpus/c026",
		"../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu", "../../scenarios/deadlines-4cpu",
		"../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetRelistCheck, boincpolicy.RelistChecks, 1000, "answers missesRelist carried",
		checked{boincpolicy.RelistDiffs, "of the answers missesRelist carried differed from the whole simulation's"})
}

// TestRelistableKept: in runs of policy boinc on corpus hosts of one project (c143,
// c124, c065, c137), of several (c182, c002, with a GPU), the public scenarios and
// noisy, random ones (random seeds, both conventions, 2 to 10 days), every answer
// relistable keeps while the jobs are (jobsGen) is the walk of the jobs'. It wants
// many such answers, and fails with the kept answer read whatever jobsGen (relGen's
// test dropped by hand: the first run, c143's, panics in the policy).
func TestRelistableKept(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 4242))
	dirs := []string{"../../scenarios/corpus/c143", "../../scenarios/corpus/c124",
		"../../scenarios/corpus/c065", "../../scenarios/corpus/c137", "../../scenarios/corpus/c182",
		"../../scenarios/corpus/c002", "../../scenarios/part-time-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/example-2cpu-2to1", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetRelistableCheck, boincpolicy.RelistableChecks, 10000, "answers relistable kept",
		checked{boincpolicy.RelistableDiffs, "of relistable's kept answers differed from the walk of the jobs"})
}

// TestMissesReboundAgainstSimulation: as TestMissesRelistAgainstSimulation, wherever
// missesKept gives an answer missesRebound carried past its rest by the bounds from
// above at that moment (hosts of several projects under BOINC's emulator: down-2cpu,
// part-time-4cpu, deadlines-4cpu, noisy and corpus hosts), at that pass or an earlier
// one, the whole simulation finds the same jobs missing their deadlines. It wants
// many such answers (without missesRebound, none: it fails), and fails with a job the
// answer has in time let through late by its bound (down-2cpu, part-time-4cpu, noisy,
// c072). pickListed's second case is off (SetNoPickOrder): those hosts, their jobs all
// of one CPU, are otherwise its, and missesRelist carries their answers.
func TestMissesReboundAgainstSimulation(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	boincpolicy.SetNoPickOrder(true)
	defer boincpolicy.SetNoPickOrder(false)
	r := rand.New(rand.NewPCG(30, 3901))
	dirs := []string{"../../scenarios/down-2cpu", "../../scenarios/part-time-4cpu",
		"../../scenarios/deadlines-4cpu", "../../scenarios/example-2cpu-2to1",
		"../../scenarios/share-75-25", "../../lib/sim/testdata/noisy",
		"../../scenarios/corpus/c072", "../../scenarios/corpus/c182"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetRelistCheck, boincpolicy.BoundChecks, 500, "answers missesRebound carried",
		checked{boincpolicy.BoundDiffs, "of the answers missesRebound carried differed from the whole simulation's"})
}

// TestMissesStayAgainstSimulation: as TestMissesRelistAgainstSimulation, wherever
// missesKept gives an answer whose misses by missBounds' bound missesStay carried to
// the rest (at that pass or an earlier one), the whole simulation finds the
// same jobs missing their deadlines. It wants many such answers, and fails with
// missesStay's test that each job still misses at the lowered times dropped, and
// with the running jobs' times not lowered (c160, drawn from the corpus).
func TestMissesStayAgainstSimulation(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2631))
	dirs := []string{"../../scenarios/corpus/c143", "../../scenarios/corpus/c124",
		"../../scenarios/corpus/c065", "../../scenarios/corpus/c150", "../../scenarios/corpus/c052",
		"../../scenarios/deadlines-4cpu", "../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetRelistCheck, boincpolicy.StayChecks, 500, "answers missesStay carried",
		checked{boincpolicy.StayDiffs, "of the answers missesStay carried differed from the whole simulation's"})
}

// TestMissesListedAgainstSimulation: as TestMissesRelistAgainstSimulation, wherever
// missesListed decides the misses from the project's list schedule, and wherever
// missesKept gives an answer kept from one it decided, the whole simulation finds the
// same jobs missing their deadlines. It wants many such answers, and fails with
// relistable's test of one project dropped (c057, c118, part-time-4cpu, noisy, ...),
// with the running jobs' fall left out of the misses' slack (c057, part-time-4cpu,
// c013) and with the fall carried from job to job left out (shiftAfter's: c143,
// c065, c057, part-time-4cpu). (No scenario has a CPU job of more than one CPU, so
// relistable's test of the CPUs is not one these runs can fail.)
func TestMissesListedAgainstSimulation(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 2727))
	dirs := []string{"../../scenarios/corpus/c143", "../../scenarios/corpus/c124",
		"../../scenarios/corpus/c150", "../../scenarios/corpus/c065", "../../scenarios/corpus/c057",
		"../../scenarios/corpus/c118", "../../scenarios/part-time-4cpu", "../../scenarios/deadlines-4cpu",
		"../../lib/sim/testdata/noisy"}
	dirs = withCorpus(r, 8, dirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetListedCheck, boincpolicy.ListedChecks, 2000, "answers missesListed decided or kept",
		checked{boincpolicy.ListedDiffs, "of the answers missesListed decided or kept differed from the whole simulation's"})
}

// pickOrderDirs: hosts of several projects whose jobs are all CPU jobs of one CPU (with
// 8 random corpus hosts, the pick-order tests' runs).
var pickOrderDirs = []string{"../../scenarios/corpus/c159", "../../scenarios/corpus/c072",
	"../../scenarios/corpus/c182", "../../scenarios/down-2cpu", "../../scenarios/part-time-4cpu",
	"../../scenarios/deadlines-4cpu", "../../scenarios/example-2cpu-2to1",
	"../../scenarios/share-75-25", "../../lib/sim/testdata/noisy"}

// TestMissesListedInPickOrderAgainstSimulation: as TestMissesListedAgainstSimulation,
// on hosts of several projects under BOINC's emulator, where missesListed decides the
// misses from the list schedule of every project's jobs in pick's order (pickListed:
// by address, the last project first), and wherever missesKept gives an answer kept
// from one (carried by its slack, missesRelist or missesStay in that order), the whole
// simulation finds the same jobs missing their deadlines. It wants many such answers
// (without pickListed's second case, none: it fails), and fails with the projects
// taken first to last (c159, c072, c182, down-2cpu, part-time-4cpu, noisy, ...).
func TestMissesListedInPickOrderAgainstSimulation(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 4001))
	dirs := withCorpus(r, 8, pickOrderDirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetListedCheck, boincpolicy.OrderChecks, 2000, "answers missesListed decided or kept in pick's order",
		checked{boincpolicy.OrderDiffs, "of the answers missesListed decided or kept in pick's order differed from the whole simulation's"})
}

// TestMissesListedPickNowAgainstSimulation: as TestMissesListedInPickOrderAgainstSimulation,
// for the answers missesListedPick gives under bsim's conventions, at now alone, where
// pick takes every project's jobs before the next project's (priorityBlocks). It
// wants many such answers (without them, none: it fails), and fails with
// priorityBlocks' test that the projects' jobs do not interleave dropped (c159,
// c072, part-time-4cpu, noisy).
func TestMissesListedPickNowAgainstSimulation(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 4003))
	dirs := withCorpus(r, 8, pickOrderDirs...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetListedCheck, boincpolicy.NowChecks, 300, "answers missesListedPick gave under bsim's conventions",
		checked{boincpolicy.OrderDiffs, "of the answers missesListed decided or kept in pick's order differed from the whole simulation's"})
}

// TestMissesReplayedAgainstSimulation: as TestMissesListedAgainstSimulation, for the
// answers judgeReplayed gives where a job's end in the list schedule is within the
// margin for rounding of its computation deadline (on down-2cpu, jobs of whole hours
// whose ends meet their deadlines to the bit): the simulation's ends replayed
// (replayEnds) must find the jobs missing that the whole simulation finds, under both
// conventions. It wants many such answers, and fails with the replay's test of the
// end at or past the deadline (>= for >). (It passed with the list schedule's ends in
// place of the replayed ones, and with the step's cut dropped: on its runs they were
// the same to the bit. TestReplayAgainstSimulation is the test of the replay's
// arithmetic.)
func TestMissesReplayedAgainstSimulation(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 4207))
	down := "../../scenarios/down-2cpu"
	dirs := withCorpus(r, 8, append([]string{down, down, down, down, down, down, down}, pickOrderDirs...)...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetListedCheck, boincpolicy.ReplayChecks, 300, "answers judgeReplayed gave",
		checked{boincpolicy.ListedDiffs, "of the answers missesListed decided or kept differed from the whole simulation's"})
}

// TestSimulationReplayedInRuns: in runs of policy boinc on down-2cpu (five times), the
// hosts of pickOrderDirs and 8 corpus hosts (random seeds, both conventions, 2 to 10
// days), wherever Piggyback's simulation is simulateReplayed's, a whole simulation on
// a copy of the document leaves the same for its readers to the bit (sameSimulation).
// It wants many such simulations. (TestSimulationReplayedAgainstSimulation is the
// test of the replay's arithmetic on random queues, with ties.)
func TestSimulationReplayedInRuns(t *testing.T) {
	if !boincpolicy.Alone(t) {
		return
	}
	r := rand.New(rand.NewPCG(30, 4210))
	down := "../../scenarios/down-2cpu"
	dirs := withCorpus(r, 8, append([]string{down, down, down, down, down}, pickOrderDirs...)...)
	checkedAtLeast(t, r, dirs, boincpolicy.SetSimReplayCheck, boincpolicy.SimReplayChecks, 300, "simulations simulateReplayed gave",
		checked{boincpolicy.SimReplayDiffs, "of simulateReplayed's simulations differed from the whole one"})
}
