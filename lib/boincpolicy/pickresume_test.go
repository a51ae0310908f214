package boincpolicy

import (
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestPickResumeIsPick: on random queues of CPU hosts (dropQueue's, half of them
// under BOINC's emulator, a third with one project's jobs of two versions, two bumps), the simulation whose picks after a job's end are pickAgain's,
// pickDrop's and pickResume's where they may leaves every result and every pick
// (pickLog) as the simulation that picks afresh every time. It fails with the bumps'
// test left out outside the emulator, with the loop not resumed after the last
// pick's picks, and with pickResumeKept's CPUs' test left out or the last pick's stop
// left out of its project's count (a panic: a place past the list's end).
func TestPickResumeIsPick(t *testing.T) {
	if !Alone(t) {
		return
	}
	const trials = 20000
	run := func(seed uint64) (int, int) { // the picks resumed, the first trial that differed (-1: none)
		rng := rand.New(rand.NewPCG(30, seed))
		resumed := 0
		pickResumed = &resumed
		defer func() { pickResumed = nil }()
		for trial := range trials {
			doc := dropQueue(rng)
			if len(doc.Host.Resources) != 1 {
				doc = randomQueue(rng)
				doc.Host.Resources[0].Instances += rng.IntN(6)
			}
			doc.BOINCEmulator = rng.IntN(2) == 0
			if rng.IntN(3) == 0 {
				// A's jobs of two versions, of two speeds (two bumps).
				doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "A/w", Project: "A", AvgNCPUs: 1, Flops: 2e9})
				for k := range doc.Tasks {
					if doc.Tasks[k].Project == "A" && rng.IntN(2) == 0 {
						doc.Tasks[k].AppVersion = "A/w"
					}
				}
			}
			if resumeDiffers(doc) {
				return resumed, trial
			}
		}
		return resumed, -1
	}
	resumed, bad := run(47)
	if bad >= 0 {
		t.Fatalf("trial %d: pickResume's results differ from a whole pick's", bad)
	}
	if resumed < 20000 {
		t.Errorf("pickResume made %d picks only", resumed)
	}
	t.Logf("pickResume made %d picks in %d queues", resumed, trials)
	for _, c := range []struct {
		name string
		off  *bool
	}{{"the bumps", &resumeAnyBump}, {"the loop resumed", &noResumeLoop}, {"the priorities found again", &noResumePrio},
		{"the CPUs' test of the kept sums", &resumeAnyCPUs}, {"the last pick's stop counted", &noKeptStop}} {
		*c.off = true
		_, bad := run(47)
		*c.off = false
		if bad < 0 {
			t.Errorf("pickResume without %s: no result differs", c.name)
		} else {
			t.Logf("pickResume without %s: trial %d differs", c.name, bad)
		}
	}
	// pickSame's shortcut and the kept sums against p's jobs looked at and the sums
	// found again: the same picks.
	for _, c := range []struct {
		name string
		on   *bool
	}{{"p's jobs looked at", &noResumeSame}, {"the sums found again", &resumeWhole}} {
		*c.on = true
		_, bad := run(47)
		*c.on = false
		if bad >= 0 {
			t.Errorf("pickResume with %s: trial %d differs", c.name, bad)
		}
	}
}

// resumeDiffers is picksDiffer's answer, a panic (a switch's count of picks read past
// a list's end) taken as a difference.
func resumeDiffers(doc *state.Document) (differ bool) {
	defer func() {
		if recover() != nil {
			differ = true
		}
	}()
	differ, _ = picksDiffer(doc)
	return differ
}

// TestPickResumeWithCoprocessors: the same on random queues of hosts with one or two
// GPUs beside the CPUs (dropQueue's and randomGPUQueue's, half of them under BOINC's
// emulator, the GPUs now and then suspended): pickResume after a CPU job's end keeps
// the coprocessors' picks and starts the CPUs' sums from their jobs' CPUs. It fails
// with those sums started from none and with a project's last CPU job's end resumed
// (its temporary REC then its last coprocessor loop's, not its REC).
func TestPickResumeWithCoprocessors(t *testing.T) {
	if !Alone(t) {
		return
	}
	const trials = 20000
	run := func(seed uint64) (int, int) { // the picks resumed on such hosts, the first trial that differed (-1: none)
		rng := rand.New(rand.NewPCG(30, seed))
		resumed, co := 0, 0
		pickResumed, pickResumedCo = &resumed, &co
		defer func() { pickResumed, pickResumedCo = nil, nil }()
		for trial := range trials {
			var doc *state.Document
			if rng.IntN(2) == 0 {
				doc = randomGPUQueue(rng)
			} else {
				for doc = dropQueue(rng); len(doc.Host.Resources) == 1; doc = dropQueue(rng) {
				}
			}
			doc.BOINCEmulator = rng.IntN(2) == 0
			if resumeDiffers(doc) {
				return co, trial
			}
		}
		return co, -1
	}
	co, bad := run(53)
	if bad >= 0 {
		t.Fatalf("trial %d: pickResume's results differ from a whole pick's", bad)
	}
	if co < 10000 {
		t.Errorf("pickResume made %d picks on hosts with coprocessors only", co)
	}
	t.Logf("pickResume made %d picks on hosts with coprocessors in %d queues", co, trials)
	for _, c := range []struct {
		name string
		sw   *bool
	}{{"the CPUs' sums started from none", &noResumeCoCPUs}, {"a project's last CPU job's end resumed", &resumeCoEmpty}} {
		*c.sw = true
		_, bad := run(53)
		*c.sw = false
		if bad < 0 {
			t.Errorf("pickResume with %s: no result differs", c.name)
		} else {
			t.Logf("pickResume with %s: trial %d differs", c.name, bad)
		}
	}
}
