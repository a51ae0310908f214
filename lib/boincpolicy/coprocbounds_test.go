package boincpolicy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/state"
)

// TestCoprocBoundsAgainstSimulation: on random queues of GPU hosts (randomGPUQueue),
// the coprocessor jobs most often taking every instance, the GPUs' availability now
// and then below the CPUs', the GPU jobs' deadlines just past their bound from above
// (coprocBounds: in time) or just short of their bound from below (a miss),
// whenever missesKnown decides the misses they are the simulation's, job by job; and
// so they stay at a moment within its slack (when it has no box of RECs), the running
// jobs (one GPU job at most) having computed meanwhile at any rate up to their speed.
// It fails when the other projects' jobs are left out of the bound from above, when the other projects' jobs are counted in the bound from below, when a resource
// whose jobs take part of its instances is bounded so, and when the misses' slack
// reads the CPUs' availability (coFall); the switches below check each.
func TestCoprocBoundsAgainstSimulation(t *testing.T) {
	if !Alone(t) {
		return
	}
	breakEach(t, []breakage{{"right", nil}, {"without the others above", &coUpNoOthers}, {"with others below", &coLowOthers},
		{"any resource", &coAnyWhole}, {"the CPUs' availability", &coCPUFall},
		{"ties the last first", &coTieLast}, {"the emulator's order exchanged", &coEmuOrder},
		{"the order's bound for a slack", &coNowSlack}}, coprocBoundsTrials)
}

// breakage is one of a randomized test's runs: with wrong nil the code as it is,
// which must pass; else with the test switch *wrong set, which must fail.
type breakage struct {
	name  string
	wrong *bool
}

// breakEach runs trials once per breakage, with its switch set (and cleared after):
// the right run must find no failure (trials' count: it checks and logs that the
// trials decided enough), and each broken one must find one, which is logged.
func breakEach(t *testing.T, runs []breakage, trials func(t *testing.T, count bool) string) {
	for _, c := range runs {
		if c.wrong != nil {
			*c.wrong = true
		}
		bad := trials(t, c.wrong == nil)
		if c.wrong != nil {
			*c.wrong = false
			if bad == "" {
				t.Errorf("%s: no trial failed", c.name)
			} else {
				t.Logf("%s: %s", c.name, bad)
			}
		} else if bad != "" {
			t.Fatal(bad)
		}
	}
}

// coprocBoundsTrials runs TestCoprocBoundsAgainstSimulation's trials and returns the
// first failure ("" if none); count: check and log that they decided enough.
func coprocBoundsTrials(t *testing.T, count bool) string {
	rng := rand.New(rand.NewPCG(30, 16))
	known, byCo, misses, later, ordered := 0, 0, 0, 0, 0
	for trial := range 20000 {
		doc := randomGPUQueue(rng)
		gpu := &doc.Host.Resources[len(doc.Host.Resources)-1]
		if rng.IntN(3) == 0 {
			doc.Host.TimeStats.GPUActiveFrac = 0.3
		}
		switch rng.IntN(3) {
		case 0: // RECs near one another: pick's order moves with them
			base := 20 + rng.Float64()*100
			for p := range doc.Projects {
				doc.Projects[p].REC = base * (1 + 0.05*rng.NormFloat64())
			}
		case 1: // ties of priority
			for p := range doc.Projects {
				doc.Projects[p].REC, doc.Projects[p].ResourceShare = 50, 100
			}
		}
		for v := range doc.AppVersions {
			if co := doc.AppVersions[v].Coproc; co != nil && rng.IntN(4) != 0 {
				co.Count = float64(gpu.Instances)
			}
		}
		// One GPU job running at most, as on a host; the running jobs part done.
		gpuRunning := -1
		for i := range doc.Tasks {
			tk := &doc.Tasks[i]
			if tk.State != state.TaskRunning {
				continue
			}
			tk.FlopsDone = tk.EstimatedFlops * 0.5 * rng.Float64()
			tk.FractionDone = tk.FlopsDone / tk.EstimatedFlops
			if strings.HasSuffix(tk.AppVersion, "/gpu") {
				if gpuRunning >= 0 {
					tk.State = state.TaskPreempted
				} else {
					gpuRunning = i
				}
			}
		}
		var q Workspace
		q.view(doc)
		q.prepareJobs(doc)
		q.coprocBounds(doc)
		comp := WorkBufMin(&doc.Preferences) + DeadlineCushion
		for i := range q.jobs {
			j := &q.jobs[i]
			tk := &doc.Tasks[j.task]
			switch {
			case j.res == q.cpuRes:
				if rng.IntN(2) == 0 {
					tk.ReportDeadline = t0 + 1e7 // the CPU jobs' bound decides
				}
			case !q.coWhole[j.res]:
				tk.ReportDeadline = t0 + comp + (q.sums[sumsPer*j.res+sumSerial]+1)*rng.Float64()
			case q.coOrdered && rng.IntN(2) == 0:
				// About its end in pick's order, either side.
				tk.ReportDeadline = t0 + comp + q.coEx[i]*(1+0.01*(2*rng.Float64()-1)) + 2*rng.Float64() - 1
			case rng.IntN(2) == 0:
				tk.ReportDeadline = t0 + comp + q.coUp[i]*(1+0.01*rng.Float64()) + 1
			case rng.IntN(2) == 0:
				tk.ReportDeadline = t0 + comp + q.coLow[i]*(1-0.01*rng.Float64()) - 1
			}
		}
		q = Workspace{}
		q.view(doc)
		q.prepareJobs(doc)
		if !q.missesKnown(doc, t0) {
			continue
		}
		known++
		q.prepareJobs(doc) // the resources' bounds, to count what they left open
		for i := range q.jobs {
			j := &q.jobs[i]
			if j.res != q.cpuRes && t0 <= j.deadline-comp && t0+q.bound[3*j.res]*(1+1e-9)+1e-6 > j.deadline-comp {
				byCo++
				break
			}
		}
		q.coprocBounds(doc)
		for i := range q.jobs { // decided by pick's order only
			j := &q.jobs[i]
			if j.res != q.cpuRes && q.coWhole[j.res] && t0 <= j.deadline-comp &&
				t0+q.coUp[i]*(1+1e-9)+1e-6 > j.deadline-comp && !(t0+q.coLow[i]*(1-1e-9)-1e-6 > j.deadline-comp) {
				ordered++
				break
			}
		}
		q.missesKnown(doc, t0)
		var sim Workspace
		sim.Simulate(doc, t0)
		for i := range q.jobs {
			if q.jobs[i].misses != sim.jobs[i].misses {
				return fmt.Sprintf("trial %d: job %d (resource %d) misses %v, in the simulation %v", trial, i, q.jobs[i].res, q.jobs[i].misses, sim.jobs[i].misses)
			}
			if q.jobs[i].misses && q.jobs[i].res != q.cpuRes {
				misses++
			}
		}
		if !(q.slack > 0) || !math.IsInf(q.recEps, 1) {
			continue
		}
		// The running jobs compute for a while within the slack, each at any rate up
		// to its speed, none to its end (its remaining work never grows); the RECs
		// move meanwhile, every instance to one project.
		dt := min(q.slack, recHorizon) * (0.5 + 0.5*rng.Float64())
		favoured := rng.IntN(len(doc.Projects))
		used := make([][]float64, len(doc.Projects))
		for p := range used {
			used[p] = make([]float64, len(doc.Host.Resources))
		}
		for r, res := range doc.Host.Resources {
			used[favoured][r] = float64(res.Instances)
		}
		var d credit.Decay
		rel := RelativeSpeeds(&doc.Host, nil)
		for k := 1; k <= 20; k++ {
			AccountDecay(doc, used, dt/20, t0+dt*float64(k)/20, rel, &d)
		}
		for i := range q.jobs {
			j := &q.jobs[i]
			tk := &doc.Tasks[j.task]
			if tk.State != state.TaskRunning {
				continue
			}
			rate := []float64{1, 1, rng.Float64()}[rng.IntN(3)]
			tk.FlopsDone = min(tk.EstimatedFlops*0.999, tk.FlopsDone+j.speed*dt*rate)
			tk.FractionDone = tk.FlopsDone / tk.EstimatedFlops
			tk.ElapsedTime += dt
		}
		var s Workspace
		s.Simulate(doc, t0+dt)
		for i := range q.jobs {
			if q.jobs[i].misses != s.jobs[i].misses {
				return fmt.Sprintf("trial %d: job %d (resource %d) misses %v at t0 (slack %.0f s), %v %.0f s later",
					trial, i, q.jobs[i].res, q.jobs[i].misses, q.slack, s.jobs[i].misses, dt)
			}
		}
		later++
	}
	if count {
		if byCo < 2000 || misses < 500 || later < 1000 || ordered < 300 {
			t.Errorf("%d queues known, %d with a coprocessor job the resource's bound left open, %d by pick's order only, %d coprocessor jobs missing, %d checked later: want more",
				known, byCo, ordered, misses, later)
		}
		t.Logf("%d queues known, %d with a coprocessor job the resource's bound left open, %d by pick's order only, %d coprocessor jobs missing, %d checked later",
			known, byCo, ordered, misses, later)
	}
	return ""
}

// TestCoprocRelowAgainstSimulation: TestRelowAgainstSimulation on
// TestCoprocBoundsAgainstSimulation's queues, whose kept answers miss by coprocBounds'
// bound from below (relow finds it again): time jumps to about where the misses' slack
// ends and past it, the running jobs (one GPU job at most) computing at any rate up to
// their speed, and whenever missesKept gives the misses they are the simulation's,
// job by job. It wants many moments past that slack, and fails when relow reads the
// CPUs' availability for a coprocessor job's pace (coRelowCPUFall) or the bound from
// below with the other projects' jobs (coLowOthers).
func TestCoprocRelowAgainstSimulation(t *testing.T) {
	if !Alone(t) {
		return
	}
	breakEach(t, []breakage{{"right", nil}, {"the CPUs' availability", &coRelowCPUFall}, {"with others below", &coLowOthers}}, coprocRelowTrials)
}

// coprocRelowTrials runs TestCoprocRelowAgainstSimulation's trials and returns the
// first failure ("" if none); count: check and log that there were enough.
func coprocRelowTrials(t *testing.T, count bool) string {
	rng := rand.New(rand.NewPCG(30, 17))
	answers, relowed := 0, 0
	for trial := range 20000 {
		doc := randomGPUQueue(rng)
		doc.BOINCEmulator = false
		doc.GPUsSuspended = false
		gpu := &doc.Host.Resources[len(doc.Host.Resources)-1]
		doc.Host.TimeStats.GPUActiveFrac = []float64{1, 0.3, 0.6}[rng.IntN(3)]
		for v := range doc.AppVersions {
			if co := doc.AppVersions[v].Coproc; co != nil {
				co.Count = float64(gpu.Instances)
			}
		}
		// More GPU jobs, of the projects with a GPU version.
		var gpuApps []string
		for _, av := range doc.AppVersions {
			if av.Coproc != nil {
				gpuApps = append(gpuApps, av.Name)
			}
		}
		for k := range len(gpuApps) * rng.IntN(4) {
			av := gpuApps[rng.IntN(len(gpuApps))]
			tk := task(fmt.Sprint("h", k), strings.TrimSuffix(av, "/gpu"), 600+rng.Float64()*20000, 0)
			tk.AppVersion = av
			if rng.IntN(3) == 0 {
				tk.State = state.TaskRunning
				tk.FlopsDone = tk.EstimatedFlops * 0.5 * rng.Float64()
				tk.FractionDone = tk.FlopsDone / tk.EstimatedFlops
			}
			doc.Tasks = append(doc.Tasks, tk)
		}
		if len(gpuApps) > 0 && rng.IntN(2) == 0 {
			// One project's GPU jobs (the bounds then meet).
			for i := range doc.Tasks {
				if tk := &doc.Tasks[i]; strings.HasSuffix(tk.AppVersion, "/gpu") {
					tk.AppVersion, tk.Project = gpuApps[0], strings.TrimSuffix(gpuApps[0], "/gpu")
				}
			}
		}
		running := false
		for i := range doc.Tasks {
			tk := &doc.Tasks[i]
			if tk.State == state.TaskRunning && tk.FlopsDone == 0 {
				tk.FlopsDone = tk.EstimatedFlops * 0.5 * rng.Float64()
				tk.FractionDone = tk.FlopsDone / tk.EstimatedFlops
			}
			if strings.HasSuffix(tk.AppVersion, "/gpu") {
				tk.ReportDeadline = t0 + WorkBufMin(&doc.Preferences) + DeadlineCushion + 40000*rng.Float64()
				if tk.State == state.TaskRunning && running {
					tk.State = state.TaskReady
				}
				running = running || tk.State == state.TaskRunning
			} else {
				tk.ReportDeadline = t0 + 1e7
			}
		}
		var quiet Workspace
		quiet.Quiet = true
		now := t0
		for range 3 { // until a pass changes nothing (a random queue's running jobs may not be the pass's)
			if quiet.Schedule(doc, now); !quiet.Changed() {
				break
			}
			now += 60
			quiet.TasksChanged()
		}
		if !quiet.mkKept || !quiet.mkBound || !(quiet.mkUntil < quiet.mkRest) || quiet.Changed() {
			continue
		}
		answers++
		speed := make([]float64, len(doc.Tasks))
		for i := range quiet.jobs {
			speed[quiet.jobs[i].task] = quiet.jobs[i].speed
		}
		for range 8 {
			if !quiet.mkKept || !(now < quiet.mkRest) {
				break
			}
			dt := max(1, (quiet.mkUntil-now)*(0.5+[]float64{1, 6}[rng.IntN(2)]*rng.Float64()))
			now += dt
			for i := range doc.Tasks {
				tk := &doc.Tasks[i]
				if tk.State != state.TaskRunning {
					continue
				}
				tk.ElapsedTime += dt
				rate := []float64{1, 1, rng.Float64()}[rng.IntN(3)]
				tk.FlopsDone = min(tk.EstimatedFlops*0.999, tk.FlopsDone+dt*speed[i]*rate)
				tk.FractionDone = tk.FlopsDone / tk.EstimatedFlops
			}
			quiet.viewDone = false
			quiet.quietView(doc, now)
			quiet.prepareJobs(doc)
			past := !(now < quiet.mkUntil)
			if !quiet.missesKept(doc, now) {
				break
			}
			if past {
				relowed++
			}
			var sim Workspace
			sim.Simulate(doc, now)
			for i := range quiet.jobs {
				if quiet.jobs[i].misses != sim.jobs[i].misses {
					return fmt.Sprintf("trial %d: %.0f s on: job %d (resource %d) misses %v, in the simulation %v",
						trial, now-t0, i, quiet.jobs[i].res, quiet.jobs[i].misses, sim.jobs[i].misses)
				}
			}
		}
	}
	if count {
		if relowed < 150 {
			t.Errorf("%d answers, %d moments past the bound's misses' slack: want more", answers, relowed)
		}
		t.Logf("%d answers, %d moments past the bound's misses' slack", answers, relowed)
	}
	return ""
}
