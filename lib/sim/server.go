package sim

import (
	"math"
	"strconv"

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
	rng     stream // the project's own stream: another project's replies do not shift it

	needs []need // fill's buffers, kept from one reply to the next
	best  []int
	busy  prsc.BusyWork
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
}

// need is what is still asked of one resource while a reply is filled.
type need struct {
	secs, inst float64
	closed     bool    // a job for it would miss its deadline: stop sending
	delay      float64 // estimated seconds before a new job on it would start
}

func (n *need) open() bool { return !n.closed && (n.secs > 0 || n.inst > 0) }

// fill makes jobs for request req at now and appends them to doc.Tasks (and their real
// work to jobs). It returns the jobs sent per resource type.
//
// As in BOINC's emulator (client/sim.cpp, simulate_rpc): each job picks an app by
// weight among the apps with a version for a resource still asked for, and the fastest
// such version; its real work is fpops_est, its estimate a sample of <fpops> (normal,
// clamped at 0), its deadline now + latency_bound. A job's estimated run time is its
// estimate ÷ the version's speed ÷ (on_frac × active_frac); it uses up that many seconds
// × instances of the request, and the instances. The deadline check is BOINC's: a job
// is not sent, and the server stops sending for its resource, when the resource's
// estimated delay plus the job's estimate ÷ speed (not stretched by availability) would
// pass latency_bound. The delay starts at what the client reports (prsc.BusyTimes: the
// work its round-robin simulation sees missing deadlines, 0 when nothing is late) and
// grows by each job sent: its stretched run time × its share of the instances.
func (s *server) fill(doc *state.Document, avIndex map[string]int, req *state.WorkRequest, now float64, jobs *[]job) map[string]int {
	host := &doc.Host
	ts := host.TimeStats
	availability := ts.OnFrac * ts.ActiveFrac
	if availability <= 0 {
		availability = 1
	}
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
	resIdx := func(av *state.AppVersion) int {
		t := av.ResourceType()
		for r := range host.Resources {
			if host.Resources[r].Type == t {
				return r
			}
		}
		return -1
	}
	asked := false
	for r := range needs {
		asked = asked || needs[r].open()
	}
	if asked {
		for r, d := range s.busy.BusyTimes(doc, now) {
			needs[r].delay = d
		}
	}
	sent := map[string]int{}
	for n := 0; n < maxJobsPerReply; n++ {
		// Apps that can still serve the request, and their fastest version for it.
		var total float64
		best := s.best[:0]
		best = append(best, make([]int, len(s.apps))...)
		s.best = best
		for a := range s.apps {
			best[a] = -1
			var speed float64
			for _, v := range s.apps[a].versions {
				av := &doc.AppVersions[v]
				if r := resIdx(av); r >= 0 && needs[r].open() && av.Speed(host) > speed {
					best[a], speed = v, av.Speed(host)
				}
			}
			if best[a] >= 0 {
				total += s.apps[a].weight
			}
		}
		if total <= 0 {
			break
		}
		x := s.rng.Float64() * total
		a := -1
		for i := range s.apps {
			if best[i] < 0 || s.apps[i].weight <= 0 {
				continue
			}
			a = i
			if x < s.apps[i].weight {
				break
			}
			x -= s.apps[i].weight
		}
		app := &s.apps[a]
		av := &doc.AppVersions[best[a]]
		r := resIdx(av)
		est := app.mean
		if app.stdDev > 0 {
			est = math.Max(0, est+app.stdDev*s.rng.NormFloat64())
		}
		runtime := est / av.Speed(host) / availability
		inst := av.Instances()
		deadline := now + app.LatencyBound
		if needs[r].delay+est/av.Speed(host) > app.LatencyBound {
			needs[r].closed = true
			continue
		}
		needs[r].delay += runtime * inst / float64(host.Resources[r].Instances)
		needs[r].secs -= runtime * inst
		needs[r].inst -= inst
		s.seq++
		doc.Tasks = append(doc.Tasks, state.Task{
			Name:           s.project + "_" + strconv.Itoa(s.seq),
			Project:        s.project,
			AppVersion:     av.Name,
			State:          state.TaskReady,
			EstimatedFlops: est,
			ReportDeadline: deadline,
			ReceivedTime:   now,
		})
		*jobs = append(*jobs, job{real: app.FpopsEst, project: s.index, av: best[a]})
		sent[host.Resources[r].Type]++
	}
	return sent
}
