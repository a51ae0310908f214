package sim

import (
	"math"
	"slices"
	"strconv"

	"github.com/bkit/bkit/lib/glibcrand"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
)

// maxJobsPerReply bounds one reply: a request the server cannot fill (estimates
// sampled at 0 never use up req_secs) must still end.
const maxJobsPerReply = 1000

// server is a project's emulated scheduler (boinc-emulator.md): no arrival process,
// it makes up jobs to fill each request.
type server struct {
	project string
	index   int // the project's index in the document
	up      *onOff
	apps    []genApp
	seq     int
	rng     stream          // the project's own stream: another project's replies do not shift it
	g       *glibcrand.Rand // under --emulate boinc, the run's one stream instead (Sim.g)
	// boinc: BOINC's emulator's server (--emulate boinc), where it differs: a
	// coprocessor job's CPUs count against the CPU request (fill), and the server is
	// up or down as sampled at each RPC (upAt).
	boinc bool
	// masterFetchFailures: the rounds of ten failures in a row BOINC's client has
	// counted for the project (boincBackoff), under --emulate boinc.
	masterFetchFailures int
	// deferNames: a job's task is named when something asks for the name (Sim.Doc),
	// not when it is made (see Sim.nameTasks).
	deferNames bool

	needs    []need // fill's buffers, kept from one reply to the next
	best     []int
	rejected []bool // per app version (doc.AppVersions): a job of it would miss its deadline
	busy     prsc.BusyWork
	sent     map[string]int // the jobs of the last reply (Reply.Jobs until the next)
}

// genApp is an app the server makes jobs of, with its values in force (the scenario's
// defaults filled in) and its app versions (indices in doc.AppVersions).
type genApp struct {
	scenario.App
	weight, mean, stdDev float64
	versions             []int
}

// newGenApp is app a with its project's versions of it.
func newGenApp(doc *state.Document, a scenario.App) genApp {
	g := genApp{App: a, weight: a.JobWeight(), mean: a.EstimateMean(), stdDev: a.EstimateStdDev()}
	for v, av := range doc.AppVersions {
		if av.Project == a.Project && av.App == a.Name {
			g.versions = append(g.versions, v)
		}
	}
	return g
}

// job is the emulator's private knowledge of a task: its real work, which the client
// only estimates, and the peak FLOPs credited to it so far (wasted if it is reported
// late).
type job struct {
	real     float64
	peak     float64
	finished bool // its real work is done (it becomes done at the next settle)
	// The task's project and app version (indices in the document), which never
	// change: the step loop does not look them up by name.
	project, av int
	// seq is the number the project's server gave the job while its task waits for
	// its name (server.deferNames); 0 once named, and for a scenario's own tasks.
	seq int
	// started is, under --emulate boinc, the task's place in the order tasks first
	// started (BOINC's client's list of active tasks, Sim.noteStarts); 0 never started.
	started int
	// stalled counts, under --emulate boinc, the steps it was scheduled on a
	// coprocessor that did not compute (Sim.compute): BOINC's emulator adds those
	// steps to its elapsed time once, not twice (Sim.Settle).
	stalled int
}

// upAt reports whether the server answers an RPC at now: its process at now, or as
// BOINC's emulator samples it at each RPC (onOff.askedAt) under --emulate boinc.
func (s *server) upAt(now float64) bool {
	if s.up.atRPC {
		return s.up.askedAt(now)
	}
	return s.up.at(now)
}

// need is what is still asked of one resource while a reply is filled.
type need struct {
	secs, inst float64
	delay      float64 // estimated seconds before a new job on it would start
}

func (n *need) open() bool { return n.secs > 0 || n.inst > 0 }

// fill makes jobs for request req at now and appends them to doc.Tasks (and their real
// work to jobs). It returns the jobs sent per resource type, in a map of s's that its
// next fill empties (a reply is taken in before the next RPC: no map per RPC).
//
// As in BOINC's emulator (client/sim.cpp, simulate_rpc): each job picks an app by
// weight among the apps with a version for a resource still asked for, and the fastest
// such version; its real work is fpops_est, its estimate a sample of <fpops> (normal,
// clamped at 0), its deadline now + latency_bound. A job's estimated run time is its
// estimate ÷ the version's speed ÷ (on_frac × active_frac); it uses up that many seconds
// × instances of the request, and the instances. The deadline check is BOINC's: a job
// is not sent, and the server stops using its app version for the rest of the reply
// (dont_use: the project's other apps and versions go on), when the resource's
// estimated delay plus the job's estimate ÷ speed (not stretched by availability) would
// pass latency_bound. The delay starts at what the client reports (prsc.BusyTimes: the
// work its round-robin simulation sees missing deadlines, 0 when nothing is late) and
// grows by each job sent: its stretched run time × its share of the instances.
//
// In steps: startNeeds, then per job fastestVersions, pickApp, estimate, the deadline
// check (need.late), need.use and makeJob.
func (s *server) fill(doc *state.Document, avIndex map[string]int, req *state.WorkRequest, now float64, busy []float64, jobs *[]job) map[string]int {
	host := &doc.Host
	availability := host.TimeStats.OnFrac * host.TimeStats.ActiveFrac
	if availability <= 0 {
		availability = 1
	}
	needs := s.startNeeds(doc, req, now, busy)
	s.rejected = s.rejected[:0]
	s.rejected = append(s.rejected, make([]bool, len(doc.AppVersions))...)
	if s.sent == nil {
		s.sent = map[string]int{}
	}
	sent := s.sent
	clear(sent)
	for n := 0; n < maxJobsPerReply; n++ {
		total := s.fastestVersions(doc, needs)
		if total <= 0 {
			break
		}
		a := s.pickApp(total)
		app, av := &s.apps[a], &doc.AppVersions[s.best[a]]
		r := resourceOf(host, av)
		est := s.estimate(app)
		if needs[r].late(est/av.Speed(host), app.LatencyBound) {
			if s.boinc {
				// BOINC's emulator numbers the job before its deadline check
				// (client/sim.cpp make_job: result_index++): a refused job uses a
				// number, so the names of the jobs sent are its names.
				s.seq++
			}
			s.rejected[s.best[a]] = true
			continue
		}
		runtime := est / av.Speed(host) / availability
		needs[r].use(runtime, av.Instances(), host.Resources[r].Instances)
		if s.boinc && av.Coproc != nil && av.AvgNCPUs > 0 {
			// BOINC's emulator's server takes a coprocessor job's CPUs off the CPU
			// request and adds them to the CPUs' delay too (client/sim.cpp
			// decrement_request): a reply of GPU jobs asks fewer CPU jobs.
			if c := slices.IndexFunc(host.Resources, func(res state.Resource) bool { return res.Type == state.ResourceCPU }); c >= 0 && c != r {
				needs[c].use(runtime, av.AvgNCPUs, host.Resources[c].Instances)
			}
		}
		s.makeJob(doc, a, est, now, jobs)
		sent[host.Resources[r].Type]++
	}
	return sent
}

// startNeeds is what request req asks of each host resource (in s.needs, good until the
// next reply), each with the delay the client reports for it when anything is asked at
// all: busy, per host resource, when the caller has the client's own (busyEstimator),
// else prsc.BusyTimes.
func (s *server) startNeeds(doc *state.Document, req *state.WorkRequest, now float64, busy []float64) []need {
	host := &doc.Host
	needs := s.needs[:0]
	needs = append(needs, make([]need, len(host.Resources))...)
	s.needs = needs
	for r, res := range host.Resources {
		if res.Type == state.ResourceCPU {
			needs[r].secs, needs[r].inst = req.CPUReqSecs, req.CPUReqInstances
		}
		for _, c := range req.Coprocs {
			if c.Type == res.Type {
				needs[r].secs, needs[r].inst = c.ReqSecs, c.ReqInstances
			}
		}
	}
	asked := false
	for r := range needs {
		asked = asked || needs[r].open()
	}
	if asked {
		if busy == nil {
			busy = s.busy.BusyTimes(doc, now)
		}
		for r, d := range busy {
			needs[r].delay = d
		}
	}
	return needs
}

// resourceOf is the host resource (index) app version av runs on, -1 if the host has
// none.
func resourceOf(host *state.Host, av *state.AppVersion) int {
	t := av.ResourceType()
	for r := range host.Resources {
		if host.Resources[r].Type == t {
			return r
		}
	}
	return -1
}

// fastestVersions sets, per app, its fastest version (index in doc.AppVersions) on a
// resource whose need is still open, not rejected in this reply, or -1 (s.best), and
// returns the weight of the apps that have one.
func (s *server) fastestVersions(doc *state.Document, needs []need) float64 {
	host := &doc.Host
	var total float64
	best := s.best[:0]
	best = append(best, make([]int, len(s.apps))...)
	s.best = best
	for a := range s.apps {
		best[a] = -1
		var speed float64
		for _, v := range s.apps[a].versions {
			av := &doc.AppVersions[v]
			if v < len(s.rejected) && s.rejected[v] {
				continue
			}
			if r := resourceOf(host, av); r >= 0 && needs[r].open() && av.Speed(host) > speed {
				best[a], speed = v, av.Speed(host)
			}
		}
		if best[a] >= 0 {
			total += s.apps[a].weight
		}
	}
	return total
}

// pickApp draws an app by weight among those with a version (s.best), total being
// their weight.
func (s *server) pickApp(total float64) int {
	if s.g != nil {
		return s.pickAppBOINC(total)
	}
	x := s.rng.Float64() * total
	a := -1
	for i := range s.apps {
		if s.best[i] < 0 || s.apps[i].weight <= 0 {
			continue
		}
		a = i
		if x < s.apps[i].weight {
			break
		}
		x -= s.apps[i].weight
	}
	return a
}

// pickAppBOINC is BOINC's emulator's choose_app (client/sim.cpp) on the run's one
// stream: x = drand(), then, in the apps' order, x −= weight/total until x ≤ 0; the last
// app if rounding leaves x above 0.
func (s *server) pickAppBOINC(total float64) int {
	x := s.g.Float64()
	a := -1
	for i := range s.apps {
		if s.best[i] < 0 || s.apps[i].weight <= 0 {
			continue
		}
		a = i
		x -= s.apps[i].weight / total
		if x <= 0 {
			break
		}
	}
	return a
}

// estimate is a job's estimated FLOPs: a sample of the app's <fpops>, clamped at 0.
// Under --emulate boinc the sample is NORMAL_DIST::sample's (client/sim_util.cpp):
// mean + std_dev × rand_normal() on the run's one stream, whose second number of each
// pair waits for the next job of any app.
func (s *server) estimate(app *genApp) float64 {
	est := app.mean
	if s.g != nil {
		if app.stdDev != 0 {
			est = math.Max(0, est+app.stdDev*s.g.Normal())
		}
		return est
	}
	if app.stdDev > 0 {
		est = math.Max(0, est+app.stdDev*s.rng.NormFloat64())
	}
	return est
}

// late is BOINC's deadline check: a job that would run secs seconds (its estimate ÷ its
// version's speed, not stretched by availability) after the resource's estimated delay
// would end after latencyBound.
func (n *need) late(secs, latencyBound float64) bool {
	return n.delay+secs > latencyBound
}

// use takes a job that runs runtime seconds on inst of the resource's instances off
// the need, and adds its share of the instances to the delay.
func (n *need) use(runtime, inst float64, instances int) {
	n.delay += runtime * inst / float64(instances)
	n.secs -= runtime * inst
	n.inst -= inst
}

// makeJob appends a new job of app a, estimated at est FLOPs, to doc.Tasks (a ready
// task of app a's chosen version, s.best[a], due latency_bound after now) and its real
// work to jobs.
func (s *server) makeJob(doc *state.Document, a int, est, now float64, jobs *[]job) {
	app, v := &s.apps[a], s.best[a]
	s.seq++
	var name string
	seq := s.seq
	if !s.deferNames {
		name, seq = jobName(s.project, s.jobNumber(s.seq)), 0
	}
	doc.Tasks = append(doc.Tasks, state.Task{
		Name:           name,
		Project:        s.project,
		AppVersion:     doc.AppVersions[v].Name,
		State:          state.TaskReady,
		EstimatedFlops: est,
		ReportDeadline: now + app.LatencyBound,
		ReceivedTime:   now,
	})
	if s.boinc {
		// BOINC's emulator's client knows every task's true work, started or not
		// (client/result.h estimated_flops_remaining, #ifdef SIM: sim_flops_left).
		doc.Tasks[len(doc.Tasks)-1].EmulatorFlopsLeft = app.FpopsEst
	}
	*jobs = append(*jobs, job{real: app.FpopsEst, project: s.index, av: v, seq: seq})
}

// nameTasks names the tasks whose servers deferred their names (server.deferNames).
// Nothing in the step loop reads a task's name but the trace, and a run that traces
// names its jobs when it makes them.
func (s *Sim) nameTasks() {
	for i := range s.jobs {
		if j := &s.jobs[i]; j.seq > 0 {
			srv := s.servers[j.project]
			s.doc.Tasks[i].Name, j.seq = jobName(srv.project, srv.jobNumber(j.seq)), 0
		}
	}
}

// jobNumber is the number in the name of the seq-th job the server numbered (from 1):
// seq itself, or under --emulate boinc BOINC's emulator's numbering, from 0 and
// counting the jobs it refused (fill), so that its log's task names are the run's.
func (s *server) jobNumber(seq int) int {
	if s.boinc {
		return seq - 1
	}
	return seq
}

// jobName is the name of job seq of project: the project's name, '_', the number.
func jobName(project string, seq int) string {
	var buf [64]byte // built on the stack: one allocation, the string's
	return string(strconv.AppendInt(append(append(buf[:0], project...), '_'), int64(seq), 10))
}
