package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/bkit/bkit/lib/glibcrand"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
)

// DefaultStart is the simulated clock's start, Unix seconds, when the scenario holds no
// task to start from. Any fixed time would do; a recent one reads well in documents.
const DefaultStart = 1_700_000_000

// maxSteps bounds a run's steps: beyond it a run would take days of wall time.
const maxSteps = 1e10

// Config is one run's parameters.
type Config struct {
	Duration float64 // simulated seconds
	Delta    float64 // seconds per step
	Policy   string  // a registered policy name (Policies)
	Seed     uint64  // the seed of every random stream
	Trace    bool    // record a Trace (Sim.Trace) for pictures
	// ExistingJobsOnly: the servers send no jobs, so only the scenario's explicit jobs
	// run (BOINC's emulator's --existing_jobs_only).
	ExistingJobsOnly bool
	// ThreeState: the servers send seed 002's proposed three-state reply ("work", "no
	// work but supported", "not supported"), as bdevices reply --three-state takes it:
	// a reply without jobs no longer clears D(P,R), so a project that once refused work
	// for a resource is asked again when its backoff ends. The seed's text without the
	// proposal, which clears it, is the default.
	ThreeState bool
	// EmulateBOINC: BOINC's emulator's conventions (client/sim.cpp) instead of bsim's.
	// Running tasks go on computing while the host is off or inactive (a CPU task
	// always, a coprocessor task while the GPUs are active: sim.cpp's poll skips only
	// GPU tasks, and only when gpu_active is false); the figures' total is the CPUs'
	// peak over the whole simulated time plus the coprocessors' over the GPU-active
	// time, and monotony's mean is over the whole time; a task that finishes within a
	// step is credited the whole step (sim.cpp charges diff × peak whatever is left).
	// Its client's and servers' quirks come too (issue 30): a project's server is up
	// or down as sampled at each RPC, flipping at most once whatever the gap
	// (onOff.askedAt); a coprocessor job's CPUs count against the CPU request
	// (server.fill); a task's elapsed time teaches its correction factor twice; a
	// started task's remaining time is its true one (state.Task.EmulatorFlopsLeft);
	// the client asks every project for every resource (state.Document.BOINCEmulator).
	// Its random numbers are its: seed N is srand(N) of glibc's rand(), drawn at the
	// moments and in the order BOINC's emulator draws them (boincstream.go).
	// bsim's own convention (nothing computes while the host is off, the figures count
	// the time the host could compute) is the default: it is what a volunteer's host
	// does. docs/decisions.md lists the differences and which this reproduces.
	EmulateBOINC bool
	// Force runs a scenario estimated to take longer than MaxEstimatedRun of wall time.
	Force bool
}

// Random streams: each process draws from its own PCG stream of the seed, so that (for
// instance) a policy that makes more RPCs does not change when the host is switched off,
// and two policies run on one seed face the same host. (Not under --emulate boinc, where
// everything draws from BOINC's emulator's one stream, as it does: boincstream.go.)
const (
	streamOn = iota + 1
	streamActive
	streamGPUActive
	streamConnected
	streamDecisions
	streamServers // + 2 × project index (server up/down), + 2 × index + 1 (jobs)
)

// stream is one seeded random stream; its source is kept so that its position can be
// saved in a World and taken up again.
type stream struct {
	*rand.Rand
	pcg *rand.PCG
}

func newStream(seed uint64, id int) stream {
	pcg := rand.NewPCG(seed, 0x9e3779b97f4a7c15*uint64(id+1))
	return stream{rand.New(pcg), pcg}
}

// Sim is one emulated run: the client state document as the policies see it, the
// emulated world around it (availability, project servers, the real work of each task)
// and the tallies the figures of merit are made from.
type Sim struct {
	doc    *state.Document // Doc names its pending tasks first
	cfg    Config
	policy Policy
	start  float64
	now    float64
	end    float64

	on, active, gpuActive, connected *onOff
	servers                          []*server
	estimate                         float64 // EstimatedRunTime
	rng                              stream  // the decisions' stream (backoff jitter)
	// g is the run's one stream under --emulate boinc (nil otherwise): BOINC's
	// emulator's srand(seed)/rand(), which its availability processes, its servers' jobs
	// and BOINC's client's backoffs draw from, in its order (see boincStream).
	g        *glibcrand.Rand
	serverUp []*onOff // the servers' processes as boincProcesses made them, until New makes the servers
	avail    Avail    // the current step's, sampled at its start
	// Under --emulate boinc the client learns that the GPUs are suspended one step
	// late, as in BOINC's emulator (Step): gpuPrev is GPUActive at the last step the host was on,
	// gpuSuspended the suspension its scheduler sees, gpuRun whether this step's
	// pass let its coprocessor tasks run.
	gpuPrev, gpuSuspended, gpuRun bool

	jobs      []job // parallel to Doc.Tasks
	starts    int   // under --emulate boinc, the tasks started so far (job.started)
	settling  []int // Settle's buffer
	finishing int   // tasks whose work is done but that are still running (see settle)
	avIndex   map[string]int
	avRes     []int     // host resource index of each app version
	avSpeed   []float64 // FLOPS of each app version on the host
	asked     []int
	reports   []int // Serve's buffer
	// The running tasks (indices in Doc.Tasks, in order) while running holds: task
	// states change in a pass (the policy's Schedule says when it ran one), when tasks
	// are settled, and the indices when tasks are reported or received (Serve).
	running     []int
	runningHold bool
	// overest is the largest estimate ÷ real work of a job the client has held (at
	// least 1): how much faster than its app version's speed a task's estimated
	// remaining work can fall (noteJobs).
	overest float64

	m    metrics
	su   StepUsage
	tr   *tracer // nil unless Config.Trace
	live *Live   // nil unless the project servers are real (SetLive)
}

// New prepares a run of scenario sc. The run takes sc.Doc over and changes it: read
// it as Sim.Doc, which names the tasks the run's servers made.
func New(sc *scenario.Scenario, cfg Config) (*Sim, error) {
	if !(cfg.Delta > 0) || math.IsInf(cfg.Delta, 0) {
		return nil, fmt.Errorf("delta must be > 0 seconds, got %g", cfg.Delta)
	}
	if !(cfg.Duration >= 0) || math.IsInf(cfg.Duration, 0) {
		return nil, fmt.Errorf("duration must be >= 0 seconds, got %g", cfg.Duration)
	}
	pol, err := NewPolicy(cfg.Policy)
	if err != nil {
		return nil, err
	}
	doc := sc.Doc
	if doc == nil {
		return nil, errors.New("scenario without a state document")
	}
	if err := state.Validate(doc); err != nil {
		return nil, err
	}
	doc.BOINCEmulator = cfg.EmulateBOINC
	if b, ok := pol.(beginner); ok {
		b.Begin(doc)
	}
	s := &Sim{doc: doc, cfg: cfg, policy: pol, start: DefaultStart, avIndex: map[string]int{}}
	// Start at the latest moment a scenario's explicit task was received, so that its
	// deadlines keep their meaning.
	if len(doc.Tasks) > 0 {
		s.start = 0
		for _, t := range doc.Tasks {
			s.start = max(s.start, t.ReceivedTime)
		}
	}
	s.now, s.end = s.start, s.start+cfg.Duration
	if cfg.Duration/cfg.Delta > maxSteps {
		return nil, fmt.Errorf("%g s in steps of %g s is more than %g steps", cfg.Duration, cfg.Delta, float64(maxSteps))
	}
	// process starts an availability process on its own stream, once sure it can end.
	process := func(name string, frac, lambda float64, id int) (*onOff, error) {
		if err := checkProcess(name, frac, lambda, cfg.Duration); err != nil {
			return nil, err
		}
		return newOnOff(frac, lambda, s.start, newStream(cfg.Seed, id)), nil
	}
	ts := doc.Host.TimeStats
	on, active, gpuActive, connected := sc.Lambdas.Means()
	if cfg.EmulateBOINC {
		if err := s.boincProcesses(sc, on, active, gpuActive, connected); err != nil {
			return nil, err
		}
	} else {
		if s.on, err = process("on", ts.OnFrac, on, streamOn); err != nil {
			return nil, err
		}
		if s.active, err = process("active", ts.ActiveFrac, active, streamActive); err != nil {
			return nil, err
		}
		if s.gpuActive, err = process("gpu_active", ts.GPUActiveFrac, gpuActive, streamGPUActive); err != nil {
			return nil, err
		}
		if s.connected, err = process("connected", ts.ConnectedFrac, connected, streamConnected); err != nil {
			return nil, err
		}
	}
	s.rng = newStream(cfg.Seed, streamDecisions)

	s.indexAppVersions()
	for p, proj := range doc.Projects {
		srv := &server{project: proj.Name, index: p, rng: newStream(cfg.Seed, streamServers+2*p+1), boinc: cfg.EmulateBOINC, g: s.g}
		frac, lambda := sc.ServerAvailability(proj.Name)
		if s.g != nil {
			srv.up = s.serverUp[p] // made in the scenario's order (boincProcesses)
		} else if srv.up, err = process("project "+proj.Name+" server", frac, lambda, streamServers+2*p); err != nil {
			return nil, err
		}
		for _, a := range sc.Apps {
			if a.Project != proj.Name {
				continue
			}
			srv.apps = append(srv.apps, newGenApp(doc, a))
		}
		s.servers = append(s.servers, srv)
	}
	s.serverUp = nil
	s.shareBOINCStream()
	// BOINC's emulator's gpu_suspend_reason starts at 0 (not suspended) and changes
	// only in steps the host is on (simulate sets it inside its if (on)): an off
	// spell leaves the suspension its scheduler sees as the last on step left it
	// (Advance).
	s.gpuPrev = cfg.EmulateBOINC
	if s.estimate, err = checkJobSizes(doc, s.servers, s.avSpeed, cfg); err != nil {
		return nil, err
	}
	for i, t := range doc.Tasks {
		// Explicit jobs: the estimate is all the emulator knows of their work; one the
		// scenario has done already finished it.
		s.jobs = append(s.jobs, s.newJob(&t, job{real: t.EstimatedFlops, finished: t.State == state.TaskDone}))
		if cfg.EmulateBOINC && t.State.Runnable() && t.EmulatorFlopsLeft == 0 {
			// BOINC's emulator's client knows their true work too: their estimate
			// (client/sim.cpp: sim_flops_left = rsc_fpops_est; server.makeJob).
			doc.Tasks[i].EmulatorFlopsLeft = max(0, t.EstimatedFlops-t.FlopsDone)
		}
	}
	s.noteJobs(0)
	s.m.init(doc)
	if cfg.Trace {
		s.tr = newTracer(doc, s.start, s.end, cfg.Delta)
	} else {
		// A run that draws no trace reads no task names until it is over (Doc): its
		// servers' jobs are named when asked for. Most jobs are reported and dropped
		// first, so the names of a long run are never made. Each would be an
		// allocation that nothing frees before the run ends (a run makes too little
		// garbage for the collector to start), which would be memory in proportion
		// to the simulated time.
		for _, srv := range s.servers {
			srv.deferNames = true
		}
	}
	s.su = StepUsage{Used: make([][]float64, len(doc.Projects)), CPUTime: make([]float64, len(doc.Projects))}
	for p := range s.su.Used {
		s.su.Used[p] = make([]float64, len(doc.Host.Resources))
	}
	if s.now < s.end {
		s.sample()
	}
	return s, nil
}

// Bounds on a run. A work buffer filled with jobs estimated at next to nothing (fpops
// mean 1e-300) would make the document grow without end, and short jobs make every
// step slow in proportion to the thousands of jobs held, sent, run and reported (a
// scenario just under maxHeldJobs ran 568 s for ten simulated days on a loaded
// machine). New estimates a run's CPU time and refuses one estimated past
// MaxEstimatedRun unless Config.Force; the memory bound holds whatever Force says.
const (
	maxHeldJobs = 200_000 // of one app at once: about 60 MB of tasks
	// taskStepCost is the CPU time a run spends per step on each job its client
	// would hold to fill its work buffer, stepCost a step's own. Measured (user time,
	// bsim run on BOINC's public example with jobs of 0.5, 2, 5 and 20 s, 6 hours to 2
	// simulated days: 14-19 ns) and rounded up; hosts of long jobs cost far less (a
	// 16-CPU host of 12-minute jobs: 1 ns), so the estimate is an upper one. The
	// 568-s scenario above is estimated at 72 s of one unloaded core.
	taskStepCost = 25e-9
	stepCost     = 1e-6
	// MaxEstimatedRun is the longest estimated run, in CPU seconds of one unloaded
	// core, that New starts without Config.Force.
	MaxEstimatedRun = 300.0
)

// EstimatedRunTime is the CPU time, in seconds of one unloaded core, the run was
// estimated to take when it was made: each step's own cost plus its cost per job the
// client would hold to fill its work buffer. An upper estimate, not a promise: a
// loaded machine takes longer, a host that is often off holds fewer.
func (s *Sim) EstimatedRunTime() float64 { return s.estimate }

// checkJobSizes returns the run's estimated CPU time, and refuses a run whose client
// would hold more than maxHeldJobs jobs of one app to fill its work buffer (the larger
// of seed 001's 2 × connection period and the buffer's high-water mark), or, without
// cfg.Force, one estimated past MaxEstimatedRun. A job's estimated run time is its
// app's <fpops><mean> on the app's fastest version.
func checkJobSizes(doc *state.Document, servers []*server, avSpeed []float64, cfg Config) (float64, error) {
	_, high := rpc.WaterMarks(&doc.Preferences)
	bufferDays := max(high, 2*doc.Preferences.ConnectionPeriodDays)
	steps := math.Ceil(cfg.Duration / cfg.Delta)
	var heldAll, heldMost float64
	var biggest string // the app that holds the most, for the refusal
	if cfg.ExistingJobsOnly {
		servers = nil // they send nothing: only the scenario's own jobs are held
	}
	for _, srv := range servers {
		for _, a := range srv.apps {
			v := -1
			for _, w := range a.versions {
				if v < 0 || avSpeed[w] > avSpeed[v] {
					v = w
				}
			}
			if v < 0 || a.weight <= 0 || avSpeed[v] <= 0 {
				continue // never sent
			}
			av := &doc.AppVersions[v]
			res, _ := doc.Host.Resource(av.ResourceType())
			slots := float64(res.Instances) / av.Instances() // jobs that run at once
			est := a.mean / avSpeed[v]
			held := slots
			if bufferDays > 0 {
				held = max(held, bufferDays*86400*slots/est) // +Inf when est is 0
			}
			why := fmt.Sprintf("project %s app %s: jobs estimated at %g s each (fpops mean %g on its fastest version, %g FLOPS); its client would hold about %.3g of them to fill a work buffer of %g days on %d %s",
				srv.project, a.Name, est, a.mean, avSpeed[v], held, bufferDays, res.Instances, res.Type)
			if !(held <= maxHeldJobs) {
				return 0, fmt.Errorf("%s, more than the %d a run may hold (every step looks at each): make the jobs longer or the buffer smaller", why, maxHeldJobs)
			}
			if held > heldMost {
				biggest, heldMost = why, held
			}
			heldAll += held
		}
	}
	if biggest == "" {
		biggest = fmt.Sprintf("the scenario's %d jobs", len(doc.Tasks))
	}
	heldAll += float64(len(doc.Tasks))
	estimate := steps * (stepCost + heldAll*taskStepCost)
	if estimate > MaxEstimatedRun && !cfg.Force {
		return 0, fmt.Errorf("this run is estimated at %s of CPU time (%g steps, with about %.3g jobs held in each; %s), more than the %s a run takes without --force: "+
			"make the run shorter, the steps longer or the jobs longer, or give --force", roundDuration(estimate), steps, heldAll, biggest, roundDuration(MaxEstimatedRun))
	}
	return estimate, nil
}

// roundDuration writes seconds as a duration to the second.
func roundDuration(sec float64) string {
	if sec > 1e9 {
		return fmt.Sprintf("%.3g s", sec)
	}
	return time.Duration(sec * float64(time.Second)).Round(time.Second).String()
}

// indexAppVersions finds each app version's index, host resource and speed.
func (s *Sim) indexAppVersions() {
	doc := s.doc
	for i, av := range doc.AppVersions {
		s.avIndex[av.Name] = i
		r := slices.IndexFunc(doc.Host.Resources, func(res state.Resource) bool { return res.Type == av.ResourceType() })
		s.avRes = append(s.avRes, r)
		s.avSpeed = append(s.avSpeed, av.Speed(&doc.Host))
	}
}

// newJob is j for task t, with t's project and app version found (a validated document
// names known ones).
func (s *Sim) newJob(t *state.Task, j job) job {
	j.project, j.av = projectIndex(s.doc, t.Project), s.avIndex[t.AppVersion]
	return j
}

// Run runs scenario sc to the end and returns its figures.
func Run(sc *scenario.Scenario, cfg Config) (*Result, error) {
	s, err := New(sc, cfg)
	if err != nil {
		return nil, err
	}
	for s.Step() {
	}
	return s.Result(), nil
}

// Doc is the client state document of the run, as the policies see it, each task
// named. The run changes it at each step.
func (s *Sim) Doc() *state.Document {
	s.nameTasks()
	return s.doc
}

// Trace is what the run did so far, or nil when Config.Trace was not set.
func (s *Sim) Trace() *Trace {
	if s.tr == nil {
		return nil
	}
	return s.tr.t
}

// Now is the simulated time, Unix seconds.
func (s *Sim) Now() float64 { return s.now }

// Progress is the fraction of the run done, 0 to 1.
func (s *Sim) Progress() float64 {
	if s.end <= s.start {
		return 1
	}
	return (s.now - s.start) / (s.end - s.start)
}

// Avail is the host's availability during one step: sampled at the step's start, it
// holds for the whole step (as in BOINC's emulator).
type Avail struct {
	On        bool `json:"on"`
	Active    bool `json:"active"`     // on, and allowed to compute
	GPUActive bool `json:"gpu_active"` // active, and allowed to use the GPUs
	Connected bool `json:"connected"`  // on, and connected to the network
}

// sample draws the availability of the step that starts at s.now, and moves every
// project server's process along to it, asked or not (so that one project's RPCs do not
// shift another's outages).
func (s *Sim) sample() {
	now := s.now
	if s.g != nil {
		// client/sim.cpp simulate: on, then active and (while active) gpu_active while
		// on, then connected while on, each sampled by delta (onOff.sampleBOINC).
		d := s.cfg.Delta
		on := s.on.sampleBOINC(d)
		active := on && s.active.sampleBOINC(d)
		gpu := active && s.gpuActive.sampleBOINC(d)
		s.avail = Avail{On: on, Active: active, GPUActive: gpu, Connected: on && s.connected.sampleBOINC(d)}
		return
	}
	on := s.on.at(now)
	active := on && s.active.at(now)
	s.avail = Avail{On: on, Active: active, GPUActive: active && s.gpuActive.at(now), Connected: on && s.connected.at(now)}
	for _, srv := range s.servers {
		if !srv.up.atRPC {
			srv.up.at(now)
		}
	}
}

// Step runs one step of at most delta seconds and reports whether the run goes on.
//
// At the step's start the availability processes are sampled and hold for the step
// (as in BOINC's emulator). If the host is on: when connected, the policy's scheduler
// RPCs are made against the emulated servers; then the policy's scheduler may run
// (after the RPCs, so that new jobs can start at once), and once more if tasks that
// finished in the last step were settled. Then the running tasks compute for the step,
// the figures are tallied and the policy accounts for the step's use.
//
// scripts/client-loop.sh makes the same step of programs: bfetch, bdevices request and
// 'brpc poll' for each RPC (NextRPC), 'bsim serve' (Serve) and bdevices reply (Replied);
// bsched --if-due (Schedule), 'bsim settle' (Settle), bsched --if-due again; 'bsim
// advance' (Advance). Under --emulate boinc (bsim run and compare; the shell loop has
// no such switch) every policy's client takes BOINC's emulator's order instead: it is
// the emulator's loop, not a client's policy, and the figures it is compared with are
// that loop's.
func (s *Sim) Step() bool {
	if s.now >= s.end {
		return false
	}
	now := s.now
	if s.avail.On && s.cfg.EmulateBOINC {
		s.boincStep(now)
	} else if s.cfg.EmulateBOINC {
		if s.finishing > 0 && s.boincClient() {
			// BOINC's emulator handles the tasks that ended at every step, the host
			// off too (client/sim.cpp simulate: ACTIVE_TASK_SET::poll and
			// handle_finished_apps come before if (on)): the correction factor
			// learns from each at its own step, in that step's order.
			s.Settle()
		}
	} else if s.avail.On {
		if s.avail.Connected {
			s.rpcs(now)
		}
		if s.policy.Schedule(s.doc, now) {
			s.runningHold = false
		}
		if s.finishing > 0 && s.Settle() > 0 && s.policy.Schedule(s.doc, now) {
			s.runningHold = false
		}
	}
	return s.Advance()
}

// Advance ends the current step: the running tasks compute for it, the figures are
// tallied, the policy accounts for the step's use and the clock moves on; the next
// step's availability is sampled. It reports whether the run goes on.
func (s *Sim) Advance() bool {
	now := s.now
	a := s.avail
	dt := min(s.cfg.Delta, s.end-now)
	if s.cfg.EmulateBOINC {
		// BOINC's emulator computes this interval at its next step's start
		// (ACTIVE_TASK_SET::poll), after sampling that step's processes: its GPU
		// tasks compute, and its GPUs count in the figures, as the next sample
		// says (gpu_active), and only those its scheduler ran (gpuRun, Step).
		s.sample()
		b := s.avail
		s.avail = a
		s.compute(now, dt, true, b.GPUActive && s.gpuRun, false)
		s.m.step(s.doc, dt, true, true, b.GPUActive)
		s.avail = b
	} else {
		// A live run's clock is the loop's (scripts/full-loop.sh steps every client by
		// --delta and checks that bsim's clock agrees): its steps keep their length.
		dt = s.compute(now, dt, a.Active, a.GPUActive, s.live == nil)
		s.m.step(s.doc, dt, a.On, a.Active, a.GPUActive)
	}
	if s.tr != nil {
		s.tr.available(now, dt, a.Active, a.GPUActive)
	}
	s.su.Now, s.su.DT = now+dt, dt
	s.policy.Account(s.doc, &s.su)
	s.now = now + dt
	if s.now >= s.end {
		if s.cfg.EmulateBOINC && s.live == nil {
			// BOINC's emulator's loop stops only once its clock has passed the end
			// (client/sim.cpp simulate: now += delta; if now > start + duration,
			// break), so it makes one step more, at the end itself: its processes
			// are sampled and its client decides (a pass, an RPC: the RPC counts in
			// r, its reports in wf), but no time is left to compute.
			if s.avail.On {
				s.boincStep(s.now)
			}
		}
		return false
	}
	if !s.cfg.EmulateBOINC {
		s.sample()
	}
	return true
}

// Done reports whether the run is over.
func (s *Sim) Done() bool { return s.now >= s.end }
