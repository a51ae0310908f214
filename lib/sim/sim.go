package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

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
	// bsim's own convention (nothing computes while the host is off, the figures count
	// the time the host could compute) is the default: it is what a volunteer's host
	// does. docs/decisions.md lists the differences and which this reproduces.
	EmulateBOINC bool
	// Force runs a scenario estimated to take longer than MaxEstimatedRun of wall time.
	Force bool
}

// Random streams: each process draws from its own PCG stream of the seed, so that (for
// instance) a policy that makes more RPCs does not change when the host is switched off,
// and two policies run on one seed face the same host.
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
	avail                            Avail   // the current step's, sampled at its start

	jobs      []job // parallel to Doc.Tasks
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
	s.rng = newStream(cfg.Seed, streamDecisions)

	s.indexAppVersions()
	for p, proj := range doc.Projects {
		srv := &server{project: proj.Name, index: p, rng: newStream(cfg.Seed, streamServers+2*p+1), boinc: cfg.EmulateBOINC}
		frac, lambda := sc.ServerAvailability(proj.Name)
		if srv.up, err = process("project "+proj.Name+" server", frac, lambda, streamServers+2*p); err != nil {
			return nil, err
		}
		if cfg.EmulateBOINC {
			// BOINC's emulator's servers move only when asked (onOff.askedAt): next
			// becomes the time left in the first state.
			srv.up.atRPC, srv.up.next = true, srv.up.next-s.start
		}
		for _, a := range sc.Apps {
			if a.Project != proj.Name {
				continue
			}
			srv.apps = append(srv.apps, newGenApp(doc, a))
		}
		s.servers = append(s.servers, srv)
	}
	if s.estimate, err = checkJobSizes(doc, s.servers, s.avSpeed, cfg); err != nil {
		return nil, err
	}
	for _, t := range doc.Tasks {
		// Explicit jobs: the estimate is all the emulator knows of their work; one the
		// scenario has done already finished it.
		s.jobs = append(s.jobs, s.newJob(&t, job{real: t.EstimatedFlops, finished: t.State == state.TaskDone}))
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
// advance' (Advance).
func (s *Sim) Step() bool {
	if s.now >= s.end {
		return false
	}
	now := s.now
	if s.avail.On {
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
		s.compute(now, dt, true, a.GPUActive, false)
		s.m.step(s.doc, dt, true, true, a.GPUActive)
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
		return false
	}
	s.sample()
	return true
}

// Done reports whether the run is over.
func (s *Sim) Done() bool { return s.now >= s.end }

// rpcs makes the scheduler RPCs the policy asks for at now, each project at most once.
func (s *Sim) rpcs(now float64) {
	s.asked = s.asked[:0]
	for {
		r, ok := s.policy.NextRPC(s.doc, now, s.asked)
		if !ok || slices.Contains(s.asked, r.Project) {
			return
		}
		r.Report = rpc.IsReportSession(s.doc, now, s.asked, r.Project)
		s.asked = append(s.asked, r.Project)
		rep := s.Serve(r, now)
		s.policy.Replied(s.doc, r, rep, now)
	}
}

// boincClient reports whether the run is BOINC's client in BOINC's emulator (policy
// boinc under --emulate boinc): its failed RPCs back off as BOINC's client does and it
// reads no master file (boincBackoff). The other policies are bkit's clients, which
// follow seed 000 whatever the emulator's conventions: the backoff is the client's
// rule, not the world's, and a verdict "at least as good as BOINC" compares policies.
func (s *Sim) boincClient() bool {
	_, ok := s.policy.(*boincPolicy)
	return ok && s.cfg.EmulateBOINC
}

// Serve is the emulated servers' side of one scheduler RPC r at now ('bsim serve'): a
// down server fails it (seed 000's backoff, jitter from the decisions' stream; the
// master-fetch flag at a tenth failure in a row unless r is a report session's; for
// BOINC's client in BOINC's emulator its own backoff instead and no master file,
// boincClient;
// counted apart from the RPCs of the figures);
// otherwise the project's done tasks are reported, the server fills the request (under
// --emulate boinc with the delay from the policy's own estimator, busyEstimator, when
// it has one) and the project's RPC bookkeeping is reset. A successful reply carries a seed from the
// decisions' stream for whatever the client draws in answer to it (seed 002's backoff
// jitter: bdevices reply --seed).
func (s *Sim) Serve(r RPC, now float64) Reply {
	doc := s.doc
	p := &doc.Projects[r.Project]
	srv := s.servers[r.Project]
	up := srv.upAt(now)
	boincClient := s.boincClient()
	if p.MasterFetchPending && boincClient {
		// BOINC's emulator reads no master file: its projects have their scheduler
		// from the start, and a failure's flag is cleared at once (boincBackoff).
		rpc.MasterFetched(p, []string{schedulerURL(p)}, nil, now, nil)
	}
	if p.MasterFetchPending {
		// Seed 000: the master file is read again after every tenth failure in a row, and
		// first by a project that has no scheduler URL yet (as the emulated projects
		// start). The emulated project's master file names one scheduler, at its master
		// URL. A failed fetch is a failure with its backoff, and no RPC is made.
		s.m.masterFetches++
		if !up {
			rpc.MasterFetched(p, nil, errServerDown, now, s.rng.Rand)
			return Reply{Failed: true}
		}
		rpc.MasterFetched(p, []string{schedulerURL(p)}, nil, now, s.rng.Rand)
	}
	if !up {
		// Not a scheduler RPC in the figures: BOINC's emulator counts an RPC only
		// when the server answers it (simulate_rpc), so r compares.
		s.m.failedRPCs++
		if boincClient {
			srv.boincBackoff(p, now, s.rng.Rand)
			return Reply{Failed: true}
		}
		if r.Report {
			rpc.ReportFailed(p, now, s.rng.Rand)
		} else {
			rpc.RPCFailed(p, now, s.rng.Rand)
		}
		return Reply{Failed: true}
	}
	s.m.rpcs++
	defer s.tasksChanged() // reported and received
	// The delay the request reports, from the client's own estimator where the policy
	// has one (BOINC's emulator's server reads its client's; busyEstimator), taken
	// before the reports change the tasks the policy's simulation saw.
	var busy []float64
	if be, ok := s.policy.(busyEstimator); ok && s.cfg.EmulateBOINC && asksWork(&r.Request) {
		busy = be.busyTimes(doc, now)
	}

	reported := false
	s.reports = rpc.AppendReportTasks(s.reports[:0], doc, p.Name)
	for _, i := range s.reports {
		t := &doc.Tasks[i]
		s.m.report(r.Project, t.ReportDeadline < now || !s.jobs[i].finished, s.jobs[i].peak)
		t.State = state.TaskReported
		reported = true
	}
	if reported {
		s.dropReported()
	}
	var jobs map[string]int
	if !s.cfg.ExistingJobsOnly {
		from := len(s.jobs)
		jobs = srv.fill(doc, s.avIndex, &r.Request, now, busy, &s.jobs)
		s.noteJobs(from)
	}
	for _, n := range jobs {
		s.m.jobs += n
	}
	rpc.RPCSucceeded(p, now, 0)
	return Reply{Jobs: jobs, Seed: s.rng.Uint64(), ThreeState: s.cfg.ThreeState}
}

var errServerDown = errors.New("the project's server is down")

// schedulerURL is the emulated project's one scheduler: it answers at the master URL.
func schedulerURL(p *state.Project) string {
	if p.MasterURL != "" {
		return p.MasterURL
	}
	return "emulated:" + p.Name
}

// Settle marks the tasks that finished their work in the last step done, and returns
// how many ('bsim settle'). Each teaches its project's duration correction factor how
// long it ran against its estimate (state.Project.LearnDuration), as BOINC's client
// learns when a task completes. Until now they stayed running, so that the policy's
// scheduler saw their last CPU time: seed 001's pass counts the work of RUNNING tasks
// only, and a task that had become done before the pass would take its work since the
// previous pass out of the debts. With 30-minute jobs that finish at the pass they
// trigger, one project's work was never counted and it kept both CPUs (the public
// example gave 87 % to the 2/3 project).
func (s *Sim) Settle() int {
	n := 0
	for i := range s.doc.Tasks {
		if s.jobs[i].finished && s.doc.Tasks[i].State != state.TaskDone && s.doc.Tasks[i].State != state.TaskReported {
			t := &s.doc.Tasks[i]
			t.State = state.TaskDone
			if sp := s.avSpeed[s.jobs[i].av]; sp > 0 {
				elapsed := t.ElapsedTime
				if s.cfg.EmulateBOINC {
					// BOINC's emulator adds each step to a running task's elapsed
					// time twice (client/sim.cpp: ACTIVE_TASK_SET::poll adds diff,
					// simulate() adds delta again), whole steps, so its correction
					// factors learn twice the truth (docs/decisions.md, issue 30).
					elapsed = 2 * math.Ceil(elapsed/s.cfg.Delta-1e-9) * s.cfg.Delta
				}
				s.doc.Projects[s.jobs[i].project].LearnDuration(elapsed, t.EstimatedFlops/sp)
			}
			if s.live != nil {
				s.doc.Tasks[i].OutputDigest = s.digest(&s.doc.Tasks[i])
			}
			s.su.Finished++
			n++
		}
	}
	s.finishing = 0
	if n > 0 {
		s.tasksChanged()
	}
	return n
}

// overestimator is a policy whose skips need to know how fast a task's estimated
// remaining work can fall (seed's): a started task's is (1 − progress) × its estimate ×
// its project's correction factor (state.Task.RemainingWork), which falls estimate ÷
// real work times faster than the work is done.
type overestimator interface {
	overestimate(x float64)
}

// noteJobs brings overest up to date with the jobs from index from on, and tells an
// overestimator policy.
func (s *Sim) noteJobs(from int) {
	x := max(1, s.overest)
	for i := from; i < len(s.jobs); i++ {
		if r := s.jobs[i].real; r > 0 {
			x = max(x, s.doc.Tasks[i].EstimatedFlops/r)
		}
	}
	s.overest = x
	if o, ok := s.policy.(overestimator); ok {
		o.overestimate(x)
	}
}

// tasksChanged tells a watcher policy that the loop changed the tasks, and lets go of
// the running tasks' list.
func (s *Sim) tasksChanged() {
	s.runningHold = false
	if w, ok := s.policy.(watcher); ok {
		w.tasksChanged()
	}
}

// dropReported removes reported tasks: their story is told in the tallies, and a
// document that grew for 1,000 simulated days would slow every policy down.
//
// The tasks kept move down run by run (copy): the reported ones are the oldest, near
// the front, so nearly every task moves, and thousands of short jobs' tasks moved one
// by one took longer.
func (s *Sim) dropReported() {
	tasks, n, k := s.doc.Tasks, len(s.doc.Tasks), 0
	for i := 0; i < n; {
		if tasks[i].State == state.TaskReported {
			i++
			continue
		}
		j := i + 1
		for j < n && tasks[j].State != state.TaskReported {
			j++
		}
		if k != i {
			copy(tasks[k:], tasks[i:j])
			copy(s.jobs[k:], s.jobs[i:j])
		}
		k += j - i
		i = j
	}
	s.doc.Tasks, s.jobs = tasks[:k], s.jobs[:k]
}

// compute lets the running tasks work from now for dt seconds: a CPU task while the host
// is active, a coprocessor task while the GPUs are active too. A task advances by its
// app version's real speed; it is done when its real work is.
//
// With shorten (bsim's conventions), the step ends when the first running task finishes
// (endEarly), and the step returned is that much shorter: the next step starts then, so
// that the scheduler hands the task's processor on at once, as a real client does
// when a task exits. Each step otherwise left the processor idle from the task's end to
// the step's (BOINC's emulator charges that rest to the finished task instead: under
// --emulate boinc, shorten is off and the step keeps its length).
func (s *Sim) compute(now, dt float64, active, gpuActive, shorten bool) float64 {
	doc := s.doc
	su := &s.su
	for p, u := range su.Used {
		// Element by element: a range loop of zeroes (or clear) calls memclr, which
		// for the few resources of a host costs more than the stores.
		for r := 0; r < len(u); r++ {
			u[r] = 0
		}
		su.CPUTime[p] = 0
	}
	s.m.stepClear()
	if !active {
		return dt
	}
	cpuFlops := doc.Host.CPU().Flops
	if !s.runningHold {
		s.running = s.running[:0]
		for i := range doc.Tasks {
			if doc.Tasks[i].State == state.TaskRunning {
				s.running = append(s.running, i)
			}
		}
		s.runningHold = true
	}
	cpuScale, coScale := s.cpuScales(gpuActive)
	if shorten {
		dt = s.endEarly(dt, gpuActive, cpuScale)
	}
	for _, i := range s.running {
		t := &doc.Tasks[i]
		j := &s.jobs[i]
		v := j.av
		av := &doc.AppVersions[v]
		if av.Coproc != nil && !gpuActive {
			continue
		}
		speed := s.avSpeed[v]
		if speed <= 0 {
			continue
		}
		if j.finished {
			continue
		}
		// The CPUs a task gets: all it takes, unless the running tasks overcommit them.
		scale := coScale
		if av.Coproc == nil {
			scale = cpuScale
			speed *= cpuScale
			if speed <= 0 {
				continue
			}
		}
		cpus := av.AvgNCPUs * scale
		run := dt
		finished := false
		// (A step that endEarly cut ends as a task's work does: left ÷ speed is dt, and
		// speed × dt may round below left.)
		if left := j.real - t.FlopsDone; left <= speed*dt || shorten && left/speed <= dt {
			run, finished = max(0, left/speed), true
		}
		if finished {
			t.FlopsDone = j.real
		} else {
			t.FlopsDone += speed * run
		}
		// The progress the app reports: its real work done (what BOINC's client reads
		// as fraction_done; its estimates of a started task rest on it).
		if j.real > 0 {
			t.FractionDone = min(1, t.FlopsDone/j.real)
		}
		if s.cfg.EmulateBOINC {
			// BOINC's emulator's client knows a started task's true remaining time
			// (client/result.cpp RESULT::estimated_runtime_remaining, #ifdef SIM;
			// state.Task.EmulatorFlopsLeft).
			t.EmulatorFlopsLeft = max(0, j.real-t.FlopsDone)
		}
		t.CPUTime += cpus * run
		t.ElapsedTime += run
		p := j.project
		r := s.avRes[v]
		// The figures' peak FLOPs: the CPUs the task takes at the CPU's peak, its
		// coprocessor instances at theirs (boinc-emulator.md).
		charged := run
		if s.cfg.EmulateBOINC {
			charged = dt
		}
		cpuPeak := charged * cpus * cpuFlops
		var coPeak float64
		if av.Coproc != nil {
			coPeak = charged * av.Coproc.Count * doc.Host.Resources[r].Flops
		}
		j.peak += cpuPeak + coPeak
		s.m.credit(p, r, cpuPeak, coPeak)
		if s.tr != nil {
			s.tr.ran(t.Name, p, r, av.Instances(), now, now+run)
			s.tr.used(now, p, s.m.cpu, cpuPeak)
			s.tr.used(now, p, r, coPeak)
		}
		// What the policies account: the instances of the task's own resource type
		// (the rule of prsc.Usage), averaged over the step.
		inst := av.Instances()
		if av.Coproc == nil {
			inst = cpus
		}
		su.Used[p][r] += inst * run / dt
		su.CPUTime[p] += cpus * run
		if finished {
			j.finished = true
			t.CompletedTime = now + run
			s.finishing++
			s.tasksChanged()
		}
	}
	return dt
}

// minStepPart is the shortest part of a step that a task's end may cut it to: a task
// that ends earlier in the step leaves its processor idle to the step's end. Jobs of a
// few seconds would otherwise make a step each.
const minStepPart = 1.0 / 8

// endEarly is the step's length when it ends as the first running task finishes, if
// one finishes within dt but not before minStepPart of the step; dt otherwise.
func (s *Sim) endEarly(dt float64, gpuActive bool, cpuScale float64) float64 {
	end := dt
	for _, i := range s.running {
		j := &s.jobs[i]
		if j.finished {
			continue
		}
		av := &s.doc.AppVersions[j.av]
		speed := s.avSpeed[j.av]
		if av.Coproc == nil {
			speed *= cpuScale
		} else if !gpuActive {
			continue
		}
		if speed <= 0 {
			continue
		}
		if run := (j.real - s.doc.Tasks[i].FlopsDone) / speed; run >= minStepPart*dt && run < end {
			end = run
		}
	}
	return end
}

// cpuScales is the part of its CPUs each running task gets in a step: all of them while
// the running tasks commit no more CPUs than the host has. When they commit more (the
// schedulers overcommit the CPUs beside coprocessor tasks, as BOINC's client does:
// state.CPUsFit), the coprocessor tasks keep theirs and the CPU tasks share what is
// left, each running slower by that ratio (BOINC's emulator's cpu_scale,
// ACTIVE_TASK_SET::poll in client/sim.cpp). Coprocessor tasks that alone commit more
// than the host has share its CPUs (coScale; their speed is their coprocessor's).
// BOINC's emulator also credits a coprocessor task's CPUs at cpu_scale, so that an
// overcommitted host shows a little idle CPU; bsim credits what each task got, the
// CPUs' whole peak.
func (s *Sim) cpuScales(gpuActive bool) (cpuScale, coScale float64) {
	var cpu, co float64
	for _, i := range s.running {
		if s.jobs[i].finished {
			continue
		}
		v := s.jobs[i].av
		av := &s.doc.AppVersions[v]
		if s.avSpeed[v] <= 0 {
			continue
		}
		if av.Coproc == nil {
			cpu += av.AvgNCPUs
		} else if gpuActive {
			co += av.AvgNCPUs
		}
	}
	n := float64(s.doc.Host.Resources[s.m.cpu].Instances)
	if cpu+co <= n {
		return 1, 1
	}
	if co > n {
		return 0, n / co
	}
	return (n - co) / cpu, 1
}
