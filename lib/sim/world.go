package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/bkit/bkit/lib/glibcrand"
	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
)

// WorldVersion is the version of the World file format.
const WorldVersion = 1

// World is everything of a run that is not the client's state document: the emulated
// world around the client (the clock, the availability processes and the project
// servers with the positions of their random streams, the real work of each task) and
// the tallies of the figures of merit. A run is its state document plus its World, so
// a shell loop of the real programs (scripts/client-loop.sh) can carry a run from one
// program to the next: the bsim subcommands read and write the World beside the
// document the client programs pass along, and give the same figures as 'bsim run' to
// the last digit.
//
// The World holds the run of a policy whose every decision the document carries
// (CarriedPolicies: seed and goals); rr keeps its round-robin turns in memory.
type World struct {
	Version  int     `json:"version"`
	Scenario string  `json:"scenario"` // as given to bsim init, for the figures' heading
	Policy   string  `json:"policy"`
	Seed     uint64  `json:"seed"`
	Duration float64 `json:"duration"`
	Delta    float64 `json:"delta"`
	Start    float64 `json:"start"`
	Now      float64 `json:"now"` // the current step's start
	End      float64 `json:"end"`
	Avail    Avail   `json:"avail"` // the current step's availability
	// ExistingJobsOnly: the servers send no jobs (Config.ExistingJobsOnly).
	ExistingJobsOnly bool `json:"existing_jobs_only,omitempty"`
	// ThreeState: the servers send three-state replies (Config.ThreeState).
	ThreeState bool `json:"three_state,omitempty"`
	// EmulateBOINC: BOINC's emulator's conventions (Config.EmulateBOINC).
	EmulateBOINC bool `json:"emulate_boinc,omitempty"`

	On        Process `json:"on"`
	Active    Process `json:"active"`
	GPUActive Process `json:"gpu_active"`
	Connected Process `json:"connected"`
	Decisions []byte  `json:"decisions"` // the decisions' random stream
	// BOINCRand: under EmulateBOINC, the run's one glibc rand() stream (Sim.g), which
	// the processes and servers draw from instead of their own.
	BOINCRand []byte `json:"boinc_rand,omitempty"`
	// GPUState: under EmulateBOINC, the GPUs' suspension as BOINC's emulator's
	// scheduler sees it (Sim.gpuPrev, gpuSuspended, gpuRun, in that order).
	GPUState  []bool         `json:"gpu_state,omitempty"`
	Servers   []WorldServer  `json:"servers"`   // in the document's project order
	Jobs      []WorldJob     `json:"jobs"`      // in the document's task order
	Finishing int            `json:"finishing"` // tasks finished but not settled
	Finished  int            `json:"finished"`  // tasks settled since the run began
	Tallies   WorldTallies   `json:"tallies"`
	Apps      []WorldAppList `json:"apps"` // per server, the apps it makes jobs of
	// Live: the project servers are real ones the client's programs reach (see Live);
	// nil for a run against emulated servers.
	Live *Live `json:"live,omitempty"`
}

// Process is an availability process and its random stream's position.
type Process struct {
	Frac   float64 `json:"frac"`
	Lambda float64 `json:"lambda"`
	On     bool    `json:"on"`
	Next   float64 `json:"next"`
	RNG    []byte  `json:"rng"`
	// AtRPC, Asked: a project server's process sampled at RPCs only, as BOINC's
	// emulator's (--emulate boinc; onOff.askedAt).
	AtRPC bool `json:"at_rpc,omitempty"`
	Asked bool `json:"asked,omitempty"`
	// LastAsk: under --emulate boinc, a server's last RPC (onOff.askedAt); Next is then
	// the process's time left (onOff.sampleBOINC).
	LastAsk float64 `json:"last_ask,omitempty"`
}

// WorldServer is a project's emulated server.
type WorldServer struct {
	Project string  `json:"project"`
	Up      Process `json:"up"`
	Seq     int     `json:"seq"` // the number of jobs it has made
	RNG     []byte  `json:"rng"`
	// MasterFetchFailures: BOINC's client's rounds of ten RPC failures in a row for
	// the project (--emulate boinc; server.boincBackoff).
	MasterFetchFailures int `json:"master_fetch_failures,omitempty"`
}

// WorldAppList is the apps one server makes jobs of.
type WorldAppList struct {
	Project string         `json:"project"`
	Apps    []scenario.App `json:"apps"`
}

// WorldJob is what the emulator knows of a task and the client does not: its real work,
// the peak FLOPs credited to it so far, and whether its work is done.
type WorldJob struct {
	Task     string  `json:"task"`
	Real     float64 `json:"real"`
	Peak     float64 `json:"peak"`
	Finished bool    `json:"finished"`
}

// WorldTallies are the running sums the figures of merit are made from.
type WorldTallies struct {
	Total       float64     `json:"total"`
	Used        []float64   `json:"used"`
	Wasted      float64     `json:"wasted"`
	ByResource  [][]float64 `json:"by_resource"`
	Met         []int       `json:"met"`
	Missed      []int       `json:"missed"`
	SinceRan    []float64   `json:"since_ran"`
	SumSq       []float64   `json:"sum_sq"`
	RunningTime float64     `json:"running_time"`
	RPCs        int         `json:"rpcs"`
	FailedRPCs  int         `json:"failed_rpcs,omitempty"`
	Jobs        int         `json:"jobs"`
	Masters     int         `json:"master_fetches"`
}

// World returns the run's world as it stands; scenario names the scenario.
func (s *Sim) World(scenario string) (*World, error) {
	s.nameTasks()
	w := &World{Version: WorldVersion, Scenario: scenario, Policy: s.cfg.Policy, Seed: s.cfg.Seed,
		Duration: s.cfg.Duration, Delta: s.cfg.Delta, Start: s.start, Now: s.now, End: s.end, Avail: s.avail,
		Finishing: s.finishing, Finished: s.su.Finished, ExistingJobsOnly: s.cfg.ExistingJobsOnly, ThreeState: s.cfg.ThreeState, EmulateBOINC: s.cfg.EmulateBOINC, Live: s.liveWorld()}
	var err error
	proc := func(p *onOff) Process {
		var b []byte
		if p.g == nil {
			var e error
			b, e = p.rng.pcg.MarshalBinary()
			err = errors.Join(err, e)
		}
		return Process{Frac: p.frac, Lambda: p.lambda, On: p.on, Next: p.next, RNG: b, AtRPC: p.atRPC, Asked: p.asked, LastAsk: p.lastAsk}
	}
	w.On, w.Active, w.GPUActive, w.Connected = proc(s.on), proc(s.active), proc(s.gpuActive), proc(s.connected)
	dec, e := s.rng.pcg.MarshalBinary()
	w.Decisions, err = dec, errors.Join(err, e)
	if s.g != nil {
		w.BOINCRand, e = s.g.MarshalBinary()
		err = errors.Join(err, e)
		w.GPUState = []bool{s.gpuPrev, s.gpuSuspended, s.gpuRun}
	}
	for _, srv := range s.servers {
		b, e := srv.rng.pcg.MarshalBinary()
		err = errors.Join(err, e)
		w.Servers = append(w.Servers, WorldServer{Project: srv.project, Up: proc(srv.up), Seq: srv.seq, RNG: b, MasterFetchFailures: srv.masterFetchFailures})
		al := WorldAppList{Project: srv.project}
		for _, a := range srv.apps {
			al.Apps = append(al.Apps, a.App)
		}
		w.Apps = append(w.Apps, al)
	}
	for i, j := range s.jobs {
		w.Jobs = append(w.Jobs, WorldJob{Task: s.doc.Tasks[i].Name, Real: j.real, Peak: j.peak, Finished: j.finished})
	}
	m := &s.m
	w.Tallies = WorldTallies{Total: m.total, Used: m.used, Wasted: m.wasted, ByResource: m.byResource, Met: m.met,
		Missed: m.missed, SinceRan: m.sinceRan, SumSq: m.sumSq, RunningTime: m.runningTime, RPCs: m.rpcs, FailedRPCs: m.failedRPCs, Jobs: m.jobs, Masters: m.masterFetches}
	return w, err
}

// Restore takes up the run that doc and w describe, as the previous program left them.
// The document may have been changed by the client's programs in between (a
// scheduling pass, a work request, a reply's backoffs), but its projects, resources and
// app versions must be those of the run, and its tasks the run's, in order.
//
// It takes up the World's parts in turn (see World): the run and its clock, the
// availability processes and the decisions' stream, the project servers, the real
// work of each task (a live run's come from its session: restoreLive), the tallies.
func Restore(doc *state.Document, w *World) (*Sim, error) {
	s, err := restoreRun(doc, w)
	if err != nil {
		return nil, err
	}
	if err := s.restoreStreams(w); err != nil {
		return nil, err
	}
	s.indexAppVersions()
	if err := s.restoreServers(w); err != nil {
		return nil, err
	}
	if w.Live == nil {
		if err := s.restoreJobs(w); err != nil {
			return nil, err
		}
	}
	if err := s.restoreTallies(w); err != nil {
		return nil, err
	}
	if w.Live != nil {
		if err := s.restoreLive(w); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// restoreRun checks the world's version and policy, the document, and the run's clock,
// and returns the run on doc as of w.Now, its processes, servers, jobs and tallies not
// yet taken up.
func restoreRun(doc *state.Document, w *World) (*Sim, error) {
	if w.Version != WorldVersion {
		return nil, fmt.Errorf("world version %d, want %d", w.Version, WorldVersion)
	}
	pol, err := NewPolicy(w.Policy)
	if err != nil {
		return nil, err
	}
	if !Carried(w.Policy) {
		return nil, fmt.Errorf("policy %q keeps state between steps that no document holds: a run carried from program to program is %s", w.Policy, strings.Join(CarriedPolicies(), " or "))
	}
	if err := state.Validate(doc); err != nil {
		return nil, err
	}
	cfg := Config{Duration: w.Duration, Delta: w.Delta, Policy: w.Policy, Seed: w.Seed, ExistingJobsOnly: w.ExistingJobsOnly, ThreeState: w.ThreeState, EmulateBOINC: w.EmulateBOINC}
	if !(cfg.Delta > 0) {
		return nil, fmt.Errorf("delta must be > 0 seconds, got %g", cfg.Delta)
	}
	s := &Sim{doc: doc, cfg: cfg, policy: pol, start: w.Start, now: w.Now, end: w.End, avIndex: map[string]int{},
		avail: w.Avail, finishing: w.Finishing}
	for _, x := range []float64{w.Duration, w.Start, w.Now, w.End} {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return nil, fmt.Errorf("world times must be finite and >= 0 (duration %g, start %g, now %g, end %g)", w.Duration, w.Start, w.Now, w.End)
		}
	}
	if math.IsInf(cfg.Delta, 0) || w.Now < w.Start || w.End < w.Start || (w.End-w.Start)/cfg.Delta > maxSteps {
		return nil, fmt.Errorf("world clock out of order (start %g, now %g, end %g, delta %g)", w.Start, w.Now, w.End, w.Delta)
	}
	return s, nil
}

// restoreProcess is availability process p (name names it in errors) of world w, its
// random stream where p left it. A process that would never move on (or never stop
// moving) over the rest of w's run is refused rather than looped on.
func restoreProcess(name string, p Process, w *World, g *glibcrand.Rand) (*onOff, error) {
	if !(p.Frac >= 0 && p.Frac <= 1) || math.IsNaN(p.Next) || math.IsInf(p.Next, 0) ||
		(p.Frac > 0 && p.Frac < 1 && !(p.Lambda > 0 && !math.IsInf(p.Lambda, 0))) {
		return nil, fmt.Errorf("%s: an availability process needs frac in [0, 1], lambda > 0 and a finite next flip (frac %g, lambda %g, next %g)", name, p.Frac, p.Lambda, p.Next)
	}
	if err := checkProcess(name, p.Frac, p.Lambda, max(w.End, w.Now)-min(p.Next, w.Start)); err != nil {
		return nil, err
	}
	if g != nil {
		return &onOff{frac: p.Frac, lambda: p.Lambda, on: p.On, next: p.Next, atRPC: p.AtRPC, asked: p.Asked, g: g, lastAsk: p.LastAsk}, nil
	}
	src := &rand.PCG{}
	if err := src.UnmarshalBinary(p.RNG); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return &onOff{frac: p.Frac, lambda: p.Lambda, on: p.On, next: p.Next, rng: stream{rand.New(src), src}, atRPC: p.AtRPC, asked: p.Asked}, nil
}

// restoreStreams takes up the host's availability processes and the decisions' random
// stream.
func (s *Sim) restoreStreams(w *World) error {
	var err error
	if w.EmulateBOINC {
		s.g = &glibcrand.Rand{}
		if err := s.g.UnmarshalBinary(w.BOINCRand); err != nil {
			return fmt.Errorf("boinc_rand: %v", err)
		}
		if len(w.GPUState) != 3 {
			return fmt.Errorf("gpu_state: want 3 values under emulate_boinc, got %d", len(w.GPUState))
		}
		s.gpuPrev, s.gpuSuspended, s.gpuRun = w.GPUState[0], w.GPUState[1], w.GPUState[2]
	}
	if s.on, err = restoreProcess("on", w.On, w, s.g); err != nil {
		return err
	}
	if s.active, err = restoreProcess("active", w.Active, w, s.g); err != nil {
		return err
	}
	if s.gpuActive, err = restoreProcess("gpu_active", w.GPUActive, w, s.g); err != nil {
		return err
	}
	if s.connected, err = restoreProcess("connected", w.Connected, w, s.g); err != nil {
		return err
	}
	dec := &rand.PCG{}
	if err := dec.UnmarshalBinary(w.Decisions); err != nil {
		return fmt.Errorf("decisions: %v", err)
	}
	s.rng = stream{rand.New(dec), dec}
	s.shareBOINCStream()
	return nil
}

// restoreServers takes up each project's emulated server, in the document's project
// order: its up process, the count of jobs it made, its random stream and its apps.
func (s *Sim) restoreServers(w *World) error {
	doc := s.doc
	if len(w.Servers) != len(doc.Projects) || len(w.Apps) != len(doc.Projects) {
		return fmt.Errorf("the world has %d project servers, the document %d projects", len(w.Servers), len(doc.Projects))
	}
	for p, ws := range w.Servers {
		if ws.Project != doc.Projects[p].Name || w.Apps[p].Project != ws.Project {
			return fmt.Errorf("projects[%d]: the world's server is for %q, the document's project is %q", p, ws.Project, doc.Projects[p].Name)
		}
		up, err := restoreProcess("servers["+ws.Project+"].up", ws.Up, w, s.g)
		if err != nil {
			return err
		}
		src := &rand.PCG{}
		if err := src.UnmarshalBinary(ws.RNG); err != nil {
			return fmt.Errorf("servers[%s]: %v", ws.Project, err)
		}
		srv := &server{project: ws.Project, index: p, up: up, seq: ws.Seq, rng: stream{rand.New(src), src}, boinc: w.EmulateBOINC, g: s.g, masterFetchFailures: ws.MasterFetchFailures}
		for _, a := range w.Apps[p].Apps {
			if a.Project != ws.Project {
				return fmt.Errorf("servers[%s]: an app of project %q", ws.Project, a.Project)
			}
			srv.apps = append(srv.apps, newGenApp(doc, a))
		}
		s.servers = append(s.servers, srv)
	}
	return nil
}

// restoreJobs takes up the emulator's knowledge of each task (its real work, the peak
// FLOPs credited, whether its work is done), the world's jobs in the document's task
// order.
func (s *Sim) restoreJobs(w *World) error {
	doc := s.doc
	if len(w.Jobs) != len(doc.Tasks) {
		return fmt.Errorf("the world knows %d tasks, the document has %d", len(w.Jobs), len(doc.Tasks))
	}
	for i, j := range w.Jobs {
		if j.Task != doc.Tasks[i].Name {
			return fmt.Errorf("tasks[%d]: the world's task is %q, the document's %q", i, j.Task, doc.Tasks[i].Name)
		}
		s.jobs = append(s.jobs, s.newJob(&doc.Tasks[i], job{real: j.Real, peak: j.Peak, finished: j.Finished}))
	}
	s.noteJobs(0)
	return nil
}

// restoreTallies takes up the running sums of the figures of merit, which must have the
// document's projects and resources, and starts the step's usage afresh.
func (s *Sim) restoreTallies(w *World) error {
	doc := s.doc
	s.m.init(doc)
	t := w.Tallies
	n, nr := len(doc.Projects), len(doc.Host.Resources)
	if len(t.Used) != n || len(t.Met) != n || len(t.Missed) != n || len(t.SinceRan) != n || len(t.SumSq) != n || len(t.ByResource) != nr {
		return errors.New("the world's tallies do not match the document's projects and resources")
	}
	for _, r := range t.ByResource {
		if len(r) != n {
			return errors.New("the world's tallies do not match the document's projects and resources")
		}
	}
	s.m.total, s.m.used, s.m.wasted, s.m.byResource = t.Total, t.Used, t.Wasted, t.ByResource
	s.m.met, s.m.missed, s.m.sinceRan, s.m.sumSq, s.m.runningTime = t.Met, t.Missed, t.SinceRan, t.SumSq, t.RunningTime
	s.m.rpcs, s.m.failedRPCs, s.m.jobs, s.m.masterFetches = t.RPCs, t.FailedRPCs, t.Jobs, t.Masters
	s.su = StepUsage{Used: make([][]float64, n), CPUTime: make([]float64, n), Finished: w.Finished}
	for p := range s.su.Used {
		s.su.Used[p] = make([]float64, nr)
	}
	return nil
}

// EncodeWorld writes w as JSON. Numbers keep every bit: a run carried through files is
// the run held in memory.
func EncodeWorld(w *World) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// DecodeWorld reads a World written by EncodeWorld; file names it in errors.
func DecodeWorld(r io.Reader, file string) (*World, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var w World
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%s: not a bsim world file: %v", file, err)
	}
	return &w, nil
}
