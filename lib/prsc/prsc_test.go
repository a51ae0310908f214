package prsc

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// seedExample is seed 002's example: one CPU, one GPU twice as fast, A with GPU jobs
// only, B with CPU and GPU jobs, equal shares, D flags as those jobs set them.
func seedExample() *state.Document {
	return &state.Document{
		Version: 1,
		Host: state.Host{Resources: []state.Resource{
			{Type: "cpu", Instances: 1, Flops: 1e9},
			{Type: "NVIDIA", Instances: 1, Flops: 2e9},
		}},
		Projects: []state.Project{
			{Name: "A", ResourceShare: 100, Resources: []state.ProjectResource{{Type: "NVIDIA", AccumulateDebt: true}}},
			{Name: "B", ResourceShare: 100, Resources: []state.ProjectResource{
				{Type: "cpu", AccumulateDebt: true}, {Type: "NVIDIA", AccumulateDebt: true}}},
		},
	}
}

// TestSeedExample runs the debt accounting and a largest-debt choice per resource for
// 100 simulated days in steps of a minute: the CPU only has B's jobs; the GPU runs the
// project with the larger overall debt. The seed's target is GPU 75% A, 25% B.
func TestSeedExample(t *testing.T) {
	doc := seedExample()
	const dt, steps = 60.0, 144000
	gpuA := 0.0
	for range steps {
		used := [][]float64{{0, 0}, {1, 0}} // B runs on the CPU
		if OverallDebt(&doc.Host, &doc.Projects[0]) >= OverallDebt(&doc.Host, &doc.Projects[1]) {
			used[0][1] = 1
			gpuA++
		} else {
			used[1][1] = 1
		}
		AccumulateDebt(doc, used, dt, 0)
	}
	if frac := gpuA / steps; math.Abs(frac-0.75) > 0.03 {
		t.Errorf("GPU share of A = %.4f, want 0.75 ± 0.03", frac)
	}
	// The overall debts are zero-sum and stay bounded (within a few intervals' worth).
	a, b := OverallDebt(&doc.Host, &doc.Projects[0]), OverallDebt(&doc.Host, &doc.Projects[1])
	if math.Abs(a+b) > 1e-6 || math.Abs(a) > 10*dt {
		t.Errorf("overall debts A=%g B=%g: want zero-sum and bounded", a, b)
	}
}

// TestDebtAloneStaysPut: A only on the GPU, B only on the CPU. No resource is shared,
// so nothing can be evened out, and no debt drifts (the seed's objection to a single
// cross-resource debt).
func TestDebtAloneStaysPut(t *testing.T) {
	doc := seedExample()
	doc.Projects[1].Resources = []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}}
	for range 1000 {
		AccumulateDebt(doc, [][]float64{{0, 1}, {1, 0}}, 60, 0)
	}
	for _, p := range doc.Projects {
		if d := OverallDebt(&doc.Host, &p); d != 0 {
			t.Errorf("%s: overall debt %g, want 0", p.Name, d)
		}
	}
}

// TestDebtOneInterval checks one interval by hand. CPU: 2 instances at 1 GFLOPS; GPU
// at 3 GFLOPS (speed 3). A (share 1) has D on the CPU only, B (share 3) on both.
// For 10 s, A uses 2 CPUs, B uses the GPU.
//
//	CPU: use 2 → A credited 1/4·2·10 = 5, B 3/4·20 = 15; A charged 20, B 0.
//	GPU: use 1, only B takes part → B credited 10, charged 10.
//	One group; U = 20·1 + 10·3 = 50 CPU-s; A owed 50/4 = 12.5, B 37.5.
//	A credited 5 CPU-s so far: rest 7.5 over the CPU (its only resource, capacity 2):
//	  7.5·2/2 = 7.5 instance-s → A.cpu = 5 − 20 + 7.5 = −7.5.
//	B credited 15 + 10·3 = 45: rest −7.5 over capacity 2·1 + 1·3 = 5:
//	  cpu −7.5·2/5 = −3 → B.cpu = 15 − 0 − 3 = 12; GPU −7.5·1/5 = −1.5 → B.gpu = −1.5.
//	Overall: A −7.5, B 12 + 3·(−1.5) = 7.5: zero-sum.
func TestDebtOneInterval(t *testing.T) {
	doc := &state.Document{
		Host: state.Host{Resources: []state.Resource{{Type: "cpu", Instances: 2, Flops: 1e9}, {Type: "GPU", Instances: 1, Flops: 3e9}}},
		Projects: []state.Project{
			{Name: "A", ResourceShare: 1, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}}},
			{Name: "B", ResourceShare: 3, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}, {Type: "GPU", AccumulateDebt: true}}},
		},
	}
	AccumulateDebt(doc, [][]float64{{2, 0}, {0, 1}}, 10, 0)
	got := map[string]float64{}
	for _, p := range doc.Projects {
		for _, pr := range p.Resources {
			got[p.Name+"."+pr.Type] = pr.LongTermDebt
		}
	}
	want := map[string]float64{"A.cpu": -7.5, "B.cpu": 12, "B.GPU": -1.5}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("debts (-want +got):\n%s", diff)
	}
}

// TestDebtBackedOff: seed 002's debt accounting credits a project on R only "if P is
// not backed off for R"; a running job is charged whatever the backoff. The seed's
// example host (GPU speed 2); B (D on both) runs on the CPU and the GPU for 60 s; A has
// D(A,GPU) but is backed off for the GPU until 1000.
//
//	A idle: it takes part nowhere, so nothing changes: A.GPU = 0. B alone on both:
//	  U = 60 + 60·2 = 180, all owed to B and credited on each resource: B's debts 0.
//	A runs the GPU instead of B: its use makes it take part. GPU: A credited 30,
//	  charged 60; B credited 30. U = 180, 90 each. A: rest 90 − 30·2 = 30 over capacity
//	  2: A.GPU = −30 + 15 = −15. B: CPU 60 − 60 = 0, GPU 30, credited 60 + 60 = 120,
//	  rest −30 over capacity 3: B.cpu = −10, B.GPU = 30 − 10 = 20.
//	Once the backoff has ended (now 1000), idle A takes part on the GPU again: GPU
//	  credits 30 each, U = 180, 90 each. A: credited 30·2 = 60, rest 30 over the GPU
//	  (capacity 2): A.GPU = 30 + 15 = 45. B: CPU 60 − 60 = 0, GPU 30 − 60 = −30,
//	  credited 60 + 60 = 120, rest −30 over capacity 3: B.cpu = −10, B.GPU = −40.
func TestDebtBackedOff(t *testing.T) {
	debts := func(doc *state.Document) map[string]float64 {
		m := map[string]float64{}
		for _, p := range doc.Projects {
			for _, pr := range p.Resources {
				m[p.Name+"."+pr.Type] = pr.LongTermDebt
			}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		used [][]float64
		now  float64
		want map[string]float64
	}{
		{"backed off, idle", [][]float64{{0, 0}, {1, 1}}, 999, map[string]float64{"A.NVIDIA": 0, "B.cpu": 0, "B.NVIDIA": 0}},
		{"backed off, running", [][]float64{{0, 1}, {1, 0}}, 999, map[string]float64{"A.NVIDIA": -15, "B.cpu": -10, "B.NVIDIA": 20}},
		{"backoff over, idle", [][]float64{{0, 0}, {1, 1}}, 1000, map[string]float64{"A.NVIDIA": 45, "B.cpu": -10, "B.NVIDIA": -40}},
	} {
		doc := seedExample()
		doc.Projects[0].Resources[0].BackoffUntil = 1000
		AccumulateDebt(doc, tc.used, 60, tc.now)
		if d := cmp.Diff(tc.want, debts(doc), cmpopts.EquateApprox(0, 1e-9)); d != "" {
			t.Errorf("%s: debts (-want +got):\n%s", tc.name, d)
		}
	}
}

func TestBackoffSequence(t *testing.T) {
	// 600 s, doubling, capped at 86,400 s: 600·2^7 = 76,800, then the cap.
	want := []float64{600, 1200, 2400, 4800, 9600, 19200, 38400, 76800, 86400, 86400}
	rng := rand.New(rand.NewPCG(1, 2))
	var pr state.ProjectResource
	const now = 1000.0
	for i, w := range want {
		BackOff(&pr, now, rng)
		if pr.BackoffInterval != w {
			t.Fatalf("backoff %d: interval %g, want %g", i+1, pr.BackoffInterval, w)
		}
		if pr.BackoffUntil < now+w/2 || pr.BackoffUntil >= now+w {
			t.Errorf("backoff %d: until %g, want in [%g, %g)", i+1, pr.BackoffUntil, now+w/2, now+w)
		}
	}
	ClearBackoff(&pr)
	if pr.BackoffInterval != 0 || pr.BackoffUntil != 0 {
		t.Errorf("after clear: %+v", pr)
	}
	// Same seed, same jitter.
	a, b := state.ProjectResource{}, state.ProjectResource{}
	BackOff(&a, now, rand.New(rand.NewPCG(7, 7)))
	BackOff(&b, now, rand.New(rand.NewPCG(7, 7)))
	if a != b {
		t.Errorf("same seed gave %v and %v", a, b)
	}
}

func TestContactBackoff(t *testing.T) {
	doc := seedExample()
	p := &doc.Projects[1]
	p.ResourceState("cpu").BackoffUntil = 5000
	p.ResourceState("NVIDIA").BackoffUntil = 3000
	if got := ContactBackoffUntil(&doc.Host, p); got != 3000 {
		t.Errorf("contact backoff %g, want 3000 (the smaller)", got)
	}
	// A has no CPU entry: no CPU backoff, so no contact backoff.
	doc.Projects[0].ResourceState("NVIDIA").BackoffUntil = 3000
	if got := ContactBackoffUntil(&doc.Host, &doc.Projects[0]); got != 0 {
		t.Errorf("contact backoff %g, want 0", got)
	}
}

// flags returns "type:D" for each resource entry of project i, with the backoff interval.
func flags(doc *state.Document, i int) map[string][2]float64 {
	m := map[string][2]float64{}
	for _, pr := range doc.Projects[i].Resources {
		d := 0.0
		if pr.AccumulateDebt {
			d = 1
		}
		m[pr.Type] = [2]float64{d, pr.BackoffInterval}
	}
	return m
}

func TestDFlagTransitions(t *testing.T) {
	doc := seedExample()
	doc.Projects[0].Resources = nil // A: D false everywhere at first
	rng := rand.New(rand.NewPCG(1, 1))
	both := map[string]bool{"cpu": true, "NVIDIA": true}
	steps := []struct {
		name       string
		requested  map[string]bool
		rep        Reply
		threeState bool
		want       map[string][2]float64 // type -> {D, backoff interval}
	}{
		{"GPU job: D set, CPU requested without a job backs off", both,
			Reply{Project: "A", Jobs: map[string]int{"NVIDIA": 2}}, false,
			map[string][2]float64{"NVIDIA": {1, 0}, "cpu": {0, 600}}},
		{"no job at all: D cleared for every requested type, both back off", both,
			Reply{Project: "A"}, false,
			map[string][2]float64{"NVIDIA": {0, 600}, "cpu": {0, 1200}}},
		{"CPU job only: CPU D set and cleared; GPU requested: backs off, D unchanged", both,
			Reply{Project: "A", Jobs: map[string]int{"cpu": 1}}, false,
			map[string][2]float64{"NVIDIA": {0, 1200}, "cpu": {1, 0}}},
		{"GPU job, GPU only asked", map[string]bool{"NVIDIA": true},
			Reply{Project: "A", Jobs: map[string]int{"NVIDIA": 1}}, false,
			map[string][2]float64{"NVIDIA": {1, 0}, "cpu": {1, 0}}},
		{"no job, GPU asked by req_instances only: its D stays, CPU's is cleared", both,
			Reply{Project: "A", InstancesOnly: []string{"NVIDIA"}}, false,
			map[string][2]float64{"NVIDIA": {1, 600}, "cpu": {0, 600}}},
		{"GPU job: D set again", map[string]bool{"NVIDIA": true},
			Reply{Project: "A", Jobs: map[string]int{"NVIDIA": 1}}, false,
			map[string][2]float64{"NVIDIA": {1, 0}, "cpu": {0, 600}}},
		{"three-state: no work but supported keeps D", both,
			Reply{Project: "A", Unsupported: []string{"cpu"}}, true,
			map[string][2]float64{"NVIDIA": {1, 600}, "cpu": {0, 1200}}},
	}
	for _, s := range steps {
		if err := ApplyReply(doc, s.requested, s.rep, s.threeState, 1000, rng); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if diff := cmp.Diff(s.want, flags(doc, 0)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
	for _, bad := range []Reply{
		{Project: "Z"},
		{Project: "A", Jobs: map[string]int{"ATI": 1}},
		{Project: "A", Jobs: map[string]int{"cpu": -1}},
		{Project: "A", Unsupported: []string{"ATI"}},
		{Project: "A", Jobs: map[string]int{"cpu": 1}, Unsupported: []string{"cpu"}},
	} {
		for _, threeState := range []bool{false, true} {
			if err := ApplyReply(doc, both, bad, threeState, 1000, rng); err == nil {
				t.Errorf("%+v, three-state %v: no error", bad, threeState)
			}
		}
	}
}

// TestReplyUnsupported: a type the reply names unsupported (<no_rsc_apps>) loses
// D(P,R) in both modes, also when jobs of another type came (the seed's rule alone
// would keep it) and when it was not asked for; the three-state reply keeps D for the
// others when no job came, the two-state one clears it for every type asked with
// req_secs. Backoffs are as without Unsupported: every requested type without a job
// backs off.
func TestReplyUnsupported(t *testing.T) {
	both := map[string]bool{"cpu": true, "NVIDIA": true}
	cases := []struct {
		name       string
		requested  map[string]bool
		rep        Reply
		threeState bool
		want       map[string][2]float64 // project B: type -> {D, backoff interval}
	}{
		{"two-state, CPU jobs, GPU unsupported: GPU loses D", both,
			Reply{Project: "B", Jobs: map[string]int{"cpu": 2}, Unsupported: []string{"NVIDIA"}}, false,
			map[string][2]float64{"cpu": {1, 0}, "NVIDIA": {0, 600}}},
		{"two-state, CPU jobs, nothing unsupported: GPU keeps D (the seed's rule)", both,
			Reply{Project: "B", Jobs: map[string]int{"cpu": 2}}, false,
			map[string][2]float64{"cpu": {1, 0}, "NVIDIA": {1, 600}}},
		{"two-state, no job, GPU unsupported: both lose D", both,
			Reply{Project: "B", Unsupported: []string{"NVIDIA"}}, false,
			map[string][2]float64{"cpu": {0, 600}, "NVIDIA": {0, 600}}},
		{"two-state, GPU unsupported though only the CPU was asked", map[string]bool{"cpu": true},
			Reply{Project: "B", Jobs: map[string]int{"cpu": 1}, Unsupported: []string{"NVIDIA"}}, false,
			map[string][2]float64{"cpu": {1, 0}, "NVIDIA": {0, 0}}},
		{"three-state, CPU jobs, GPU unsupported: GPU loses D", both,
			Reply{Project: "B", Jobs: map[string]int{"cpu": 2}, Unsupported: []string{"NVIDIA"}}, true,
			map[string][2]float64{"cpu": {1, 0}, "NVIDIA": {0, 600}}},
		{"three-state, no job, GPU unsupported: CPU (no work but supported) keeps D", both,
			Reply{Project: "B", Unsupported: []string{"NVIDIA"}}, true,
			map[string][2]float64{"cpu": {1, 600}, "NVIDIA": {0, 600}}},
	}
	for _, c := range cases {
		doc := seedExample()
		if err := ApplyReply(doc, c.requested, c.rep, c.threeState, 1000, rand.New(rand.NewPCG(1, 1))); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if diff := cmp.Diff(c.want, flags(doc, 1)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestDebtWorkIsAccumulateDebt: one DebtWork used interval after interval, on documents
// that grow a project and lose one, whose D flags, backoffs, shares and resource entries
// change (what it keeps from call to call must be made again), changes the debts
// exactly as AccumulateDebt does; also when a backoff ends between two calls with no
// reply between them, which changes who takes part by time alone.
func TestDebtWorkIsAccumulateDebt(t *testing.T) {
	a, b, c := seedExample(), seedExample(), seedExample()
	var w, wSame DebtWork
	for i := range 3000 {
		now := float64(i) * 60
		// c's DebtWork is told when nothing but the debts changed since its last call
		// (AccumulateDebtSame), as the emulator tells it between replies.
		same := i > 0 && i != 1000 && i != 2000
		if i == 1000 {
			for _, d := range []*state.Document{a, b, c} {
				d.Projects = append(d.Projects, state.Project{Name: "C", ResourceShare: 50})
			}
		}
		if i == 2000 {
			for _, d := range []*state.Document{a, b, c} {
				d.Projects = d.Projects[1:]
			}
		}
		if i%250 == 100 || i%250 == 40 || i == 1500 || i == 2500 || i == 2700 {
			same = false
		}
		for _, d := range []*state.Document{a, b, c} {
			switch {
			case i%250 == 100:
				d.Projects[0].Resources[0].AccumulateDebt = !d.Projects[0].Resources[0].AccumulateDebt
			case i%250 == 40:
				// A reply backs the last project off the GPU for ten intervals; it takes
				// part there again when that ends, with no reply in between.
				pr := d.Projects[len(d.Projects)-1].ResourceState("NVIDIA")
				pr.AccumulateDebt, pr.BackoffUntil = true, now+600
			case i == 1500:
				d.Projects[len(d.Projects)-1].ResourceShare *= 3
			case i == 2500 || i == 2700:
				// An entry removed (AccumulateDebt adds it back when used), then the
				// entries reordered.
				prs := d.Projects[0].Resources
				if i == 2500 {
					d.Projects[0].Resources = prs[len(prs)-1:]
				} else {
					slices.Reverse(prs)
				}
			}
		}
		used := make([][]float64, len(a.Projects))
		for p := range used {
			j := i / 3 // three intervals alike in a row: the last interval's changes again
			used[p] = []float64{float64((j+p)%3) / 2, float64((j*7+p)%2) * 0.5}
		}
		dt := 60.0
		if i%3 == 2 && i%7 == 0 {
			dt = 30 // as long as the last interval's use, not its length
		}
		AccumulateDebt(a, used, dt, now)
		w.AccumulateDebt(b, used, dt, now)
		if same {
			wSame.AccumulateDebtSame(c, used, dt, now)
		} else {
			wSame.AccumulateDebt(c, used, dt, now)
		}
		for p := range a.Projects {
			if d := cmp.Diff(a.Projects[p].Resources, b.Projects[p].Resources); d != "" {
				t.Fatalf("interval %d, project %s (-fresh +DebtWork):\n%s", i, a.Projects[p].Name, d)
			}
			if d := cmp.Diff(a.Projects[p].Resources, c.Projects[p].Resources); d != "" {
				t.Fatalf("interval %d, project %s (-fresh +DebtWork, AccumulateDebtSame between changes):\n%s", i, a.Projects[p].Name, d)
			}
		}
	}
}

// TestDebtWorkSeesNewEntry: an entry added to a project between two calls (as
// ApplyReply adds one) counts at the next call, its D flag making the project take part.
func TestDebtWorkSeesNewEntry(t *testing.T) {
	a, b := seedExample(), seedExample()
	a.Projects[0].Resources, b.Projects[0].Resources = nil, nil
	used := [][]float64{{0, 0}, {1, 1}}
	var w DebtWork
	for i := range 3 {
		if i == 1 {
			for _, d := range []*state.Document{a, b} {
				d.Projects[0].Resources = append(d.Projects[0].Resources, state.ProjectResource{Type: "cpu", AccumulateDebt: true})
			}
		}
		AccumulateDebt(a, used, 60, 0)
		w.AccumulateDebt(b, used, 60, 0)
		if d := cmp.Diff(a.Projects, b.Projects); d != "" {
			t.Fatalf("interval %d (-fresh +DebtWork):\n%s", i, d)
		}
	}
	if a.Projects[0].Resources[0].LongTermDebt == 0 {
		t.Errorf("the new entry's project took no part: %+v", a.Projects[0])
	}
}

// TestDebtWorkSeesHostChange: intervals alike, but the host's resources change between
// them (a faster GPU, a CPU more): the last interval's changes are not added again,
// the debts move as AccumulateDebt moves them.
func TestDebtWorkSeesHostChange(t *testing.T) {
	a, b := seedExample(), seedExample()
	used := [][]float64{{0, 1}, {1, 0}}
	var w DebtWork
	for i := range 6 {
		for _, d := range []*state.Document{a, b} {
			switch i {
			case 2:
				d.Host.Resources[1].Flops *= 1.5
			case 4:
				d.Host.Resources[0].Instances++
			}
		}
		AccumulateDebt(a, used, 60, 0)
		w.AccumulateDebt(b, used, 60, 0)
		if d := cmp.Diff(a.Projects, b.Projects); d != "" {
			t.Fatalf("interval %d (-fresh +DebtWork):\n%s", i, d)
		}
	}
}
