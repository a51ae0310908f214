package sim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestEmulateBOINC: under BOINC's emulator's conventions a part-time host's running
// tasks go on computing while it is off, so it uses more than bsim's total (the most
// the host can give while on and active); the total is the CPUs' peak over the whole
// simulated time; and monotony's mean is over that time too. bsim's own conventions
// stay the default.
func TestEmulateBOINC(t *testing.T) {
	t.Parallel()
	const days = 2
	cfg := Config{Duration: days * 86400, Delta: 60, Policy: "goals", Seed: 1}
	own, err := Run(load(t, "../../scenarios/part-time-4cpu"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.EmulateBOINC = true
	boinc, err := Run(load(t, "../../scenarios/part-time-4cpu"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	wall := 4 * 1e9 * days * 86400.0
	if boinc.TotalFlops != wall {
		t.Errorf("total under BOINC's conventions %g, want the CPUs' peak over the whole time %g", boinc.TotalFlops, wall)
	}
	if !(own.TotalFlops < 0.7*wall) {
		t.Errorf("bsim's total %g: want only the time the host was on and active (well below %g)", own.TotalFlops, wall)
	}
	if !(boinc.UsedFlops > own.TotalFlops) {
		t.Errorf("used %g under BOINC's conventions: want more than the %g the host can give while on (tasks compute while it is off)", boinc.UsedFlops, own.TotalFlops)
	}
	if !(own.UsedFlops <= own.TotalFlops) {
		t.Errorf("bsim's conventions: used %g > total %g", own.UsedFlops, own.TotalFlops)
	}
}

// TestEmulateBOINCChargesWholeSteps: BOINC's emulator charges a task that finishes within
// a step the whole step (sim.cpp's poll: diff × peak). With 90-second jobs and steps of
// 60 s, bsim's CPU idled the rest of every step a job ended in (a quarter of the time)
// until its steps ended with the job (Sim.compute's endEarly); under BOINC's
// conventions the rest is charged busy, and the next job starts a step later.
func TestEmulateBOINCChargesWholeSteps(t *testing.T) {
	t.Parallel()
	cfg := Config{Duration: 86400, Delta: 60, Policy: "rr", Seed: 1}
	own, err := Run(load(t, "testdata/midstep"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.EmulateBOINC = true
	boinc, err := Run(load(t, "testdata/midstep"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if own.TotalFlops != boinc.TotalFlops {
		t.Errorf("a host always on: totals %g and %g, want the same", own.TotalFlops, boinc.TotalFlops)
	}
	if !(own.IdleFraction < 0.01) || !(boinc.IdleFraction < 0.01) {
		t.Errorf("idle %f under bsim's conventions, %f under BOINC's: want about 0 and 0", own.IdleFraction, boinc.IdleFraction)
	}
	// BOINC's emulator charges each 90-second job two steps; bsim's step ends with the
	// job and the next starts at once: a third more jobs done.
	if r := float64(own.Jobs) / float64(boinc.Jobs); !(r > 1.25 && r < 1.4) {
		t.Errorf("jobs %d under bsim's conventions, %d under BOINC's: want about 4/3 as many", own.Jobs, boinc.Jobs)
	}
}

// TestEmulateBOINCCarried: the World carries the switch, so a run carried from program to
// program (scripts/client-loop.sh, bsim init --emulate boinc) keeps BOINC's conventions.
func TestEmulateBOINCCarried(t *testing.T) {
	t.Parallel()
	s, err := New(load(t, "testdata/noisy"), Config{Duration: 86400, Delta: 180, Policy: "seed", Seed: 5, EmulateBOINC: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Step()
	w, err := s.World("noisy")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Restore(s.Doc(), w)
	if err != nil {
		t.Fatal(err)
	}
	if !w.EmulateBOINC || r.cfg != s.cfg {
		t.Errorf("restored config %+v, want %+v (world emulate_boinc %v)", r.cfg, s.cfg, w.EmulateBOINC)
	}
}

// TestEmulateBOINCCompletedAtStepEnd: under BOINC's emulator's conventions a task that
// ends within a step is completed at the step's end, when BOINC's emulator finds it
// exited and app_finished sets its completed_time (client/cs_apps.cpp): the report an
// hour later (MAX_REPORT_DELAY) then comes at BOINC's step, not one early.
func TestEmulateBOINCCompletedAtStepEnd(t *testing.T) {
	t.Parallel()
	s, err := New(load(t, "testdata/midstep"), Config{Duration: 6 * 3600, Delta: 60, Policy: "boinc", Seed: 1, EmulateBOINC: true})
	if err != nil {
		t.Fatal(err)
	}
	ended := 0
	for {
		before := s.now
		if !s.Step() {
			break
		}
		for i := range s.doc.Tasks {
			if c := s.doc.Tasks[i].CompletedTime; c > before {
				ended++
				if c != s.now {
					t.Fatalf("task %s completed at %g, within the step [%g, %g]: want its end", s.doc.Tasks[i].Name, c, before, s.now)
				}
			}
		}
	}
	if ended == 0 {
		t.Fatal("no task ended")
	}
}

// TestEmulateBOINCDoneOvershoot: in BOINC's emulator a task's sim_flops_left falls
// by the step's whole interval (client/sim.cpp ACTIVE_TASK_SET::poll), so the step it
// ends in takes it below 0, and BOINC's work fetch reads that until the result is
// reported (boincpolicy setup): under --emulate boinc a done task's EmulatorFlopsLeft
// is that overshoot. A 90-second job at 1 GFLOPS ends 30 s into its second step of
// 60 s: 30 GFLOPs past its end.
func TestEmulateBOINCDoneOvershoot(t *testing.T) {
	t.Parallel()
	s, err := New(load(t, "testdata/midstep"), Config{Duration: 3600, Delta: 60, Policy: BOINCPolicy, Seed: 1, EmulateBOINC: true})
	if err != nil {
		t.Fatal(err)
	}
	for s.Step() {
		for _, task := range s.Doc().Tasks {
			if task.CompletedTime > 0 {
				if task.EmulatorFlopsLeft != -30e9 {
					t.Fatalf("a done task's EmulatorFlopsLeft %g, want -30e9", task.EmulatorFlopsLeft)
				}
				return
			}
		}
	}
	t.Fatal("no task completed")
}

// TestEmulateBOINCFlopsLeftBySteps: BOINC's emulator takes each step's work off what
// is left of a running task (client/sim.cpp ACTIVE_TASK_SET::poll: sim_flops_left -=
// diff × flops), and its round-robin simulation starts from that; under --emulate
// boinc EmulatorFlopsLeft is kept so, to the last bit, not as the real work less the
// work done, which rounds otherwise at a speed like c078's (2.8146736800000005
// GFLOPS), where four jobs tie in exact arithmetic and the last bit decides which
// the simulation ends first.
func TestEmulateBOINCFlopsLeftBySteps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const xml = `<client_state>
<host_info><p_ncpus>1</p_ncpus><p_fpops>2814673680.0000005</p_fpops></host_info>
<project><master_url>http://a.example.org/</master_url><project_name>A</project_name><resource_share>100</resource_share></project>
<app><name>a</name><latency_bound>86400</latency_bound><fpops_est>1480e9</fpops_est></app>
<app_version><app_name>a</app_name><version_num>1</version_num><avg_ncpus>1</avg_ncpus><flops>2814673680.0000005</flops></app_version>
</client_state>`
	if err := os.WriteFile(filepath.Join(dir, "client_state.xml"), []byte(xml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(load(t, dir), Config{Duration: 3600, Delta: 60, Policy: BOINCPolicy, Seed: 1, EmulateBOINC: true})
	if err != nil {
		t.Fatal(err)
	}
	const speed, real = 2814673680.0000005, 1480e9
	want := map[string]float64{} // each task's left by BOINC's subtraction
	checked, parted := 0, false
	for s.Step() {
		for _, task := range s.Doc().Tasks {
			if task.FlopsDone == 0 || task.CompletedTime > 0 {
				continue
			}
			w, ok := want[task.Name]
			if !ok {
				w = real
			}
			w -= 60 * speed
			want[task.Name] = w
			if task.EmulatorFlopsLeft != w {
				t.Fatalf("task %s after %g FLOPs: EmulatorFlopsLeft %.17g, want %.17g (each step's work taken off)", task.Name, task.FlopsDone, task.EmulatorFlopsLeft, w)
			}
			checked++
			parted = parted || real-task.FlopsDone != w
		}
	}
	if checked == 0 || !parted {
		t.Fatalf("%d steps checked, the two sums parted: %v: the test tells nothing", checked, parted)
	}
}

// TestEmulateBOINCSettlesWhileOff: BOINC's emulator handles the tasks that ended at
// every step, the host off too (client/sim.cpp simulate: poll and
// handle_finished_apps before if (on)), so its correction factor learns from each at
// its own step; policy boinc under --emulate boinc settles them while off too (c091
// at seed 1 learned three at once when the host came back, in another order, and its
// server's busy time parted from BOINC's).
func TestEmulateBOINCSettlesWhileOff(t *testing.T) {
	t.Parallel()
	s, err := New(load(t, "testdata/midstep"), Config{Duration: 3600, Delta: 60, Policy: BOINCPolicy, Seed: 1, EmulateBOINC: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Step() // on: jobs arrive and one starts
	for range 5 {
		s.avail = Avail{} // off: the running task computes on (BOINC's emulator)
		s.Step()
	}
	done := 0
	for _, task := range s.Doc().Tasks {
		if task.State == state.TaskDone {
			done++
		}
	}
	if done == 0 {
		t.Error("after 5 steps off no task that ended is done: want each settled at the step after it ended")
	}
}

// TestEmulateBOINCJobNames: under --emulate boinc the emulated servers name their jobs
// as BOINC's emulator does (client/sim.cpp make_job: PROJECT_n, n from 0, numbered
// before the deadline check), so a refused job uses a number and the run's task names
// are the ones BOINC's emulator's log prints. c143 at seed 1, as BOINC's emulator ran
// it: the first reply sends A_0 to A_41 and refuses the next job (A_42), the second,
// twelve minutes later, sends 33 jobs from A_43.
func TestEmulateBOINCJobNames(t *testing.T) {
	s, err := New(load(t, "../../scenarios/corpus/c143"), Config{Duration: 13 * 60, Delta: 60, Policy: BOINCPolicy, Seed: 1, EmulateBOINC: true})
	if err != nil {
		t.Fatal(err)
	}
	for s.Step() {
	}
	var names []string
	for _, task := range s.Doc().Tasks {
		names = append(names, task.Name)
	}
	if len(names) != 75 || names[0] != "A_0" || names[41] != "A_41" || names[42] != "A_43" || names[74] != "A_75" {
		t.Errorf("%d tasks named %v", len(names), names)
	}
}

// TestEmulateBOINCHalfGPU: corpus c024 with its GPU app versions at half a GPU
// (testdata/gpuhalf, the sweep's c024-gpuhalf), policy boinc under BOINC's emulator's
// conventions, seed 1, 10 days, gives BOINC's emulator's figures to the sixth decimal
// (client/sim.cpp at c5c6cb79b9, delta 60). It parts from them (if 0.372453) when the
// run list's jobs take the GPU by the count of its instances alone: at 1 day 10:54
// BOINC's assign_coprocs keeps the half that running B_0 holds for its time slice from
// A_1, which waits behind it in the list (boincpolicy.Workspace.assignShared).
func TestEmulateBOINCHalfGPU(t *testing.T) {
	t.Parallel()
	res, err := Run(load(t, "testdata/gpuhalf"), Config{Duration: 10 * 86400, Delta: 60, Policy: BOINCPolicy, Seed: 1, EmulateBOINC: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.OneLine(), "wf 0.000000 if 0.404024 sv 0.020934 m 0.909832 r 1.500000"; got != want {
		t.Errorf("got  %s\nwant %s (BOINC's emulator)", got, want)
	}
}
