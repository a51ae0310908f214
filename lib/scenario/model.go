package scenario

import (
	"github.com/bkit/bkit/lib/state"
)

// DefaultLambda is the mean length, seconds, of an "on" period of an availability
// process whose scenario gives none.
const DefaultLambda = 3600

// Scenario is a scenario as bsim runs it: the client state document the run starts from
// plus what only the emulation needs. Both readers fill it in: Decode from a bkit
// scenario file, lib/boincxml from a BOINC client emulator scenario directory. Its
// tags are the file's: the decoder, the validator, the encoder and the JSON Schema all
// read them, as lib/state's do (doc, required, min, max, gt).
//
// An optional value whose default is not zero is a pointer (nil: the default, whatever
// the source; a directory's reader leaves out what the XML leaves out), so that absent
// and zero differ and a file says no more than its source did. The values in force are
// the methods' (Lambdas.Means, ServerAvailability, App.EstimateMean, App.JobWeight,
// RunDefaults).
type Scenario struct {
	// Dir names the input, a directory or a file, in messages.
	Dir string `json:"-" yaml:"-"`
	// Notes are what a reader left out of the input, one line each (lib/boincxml leaves
	// out what BOINC's emulator does); for messages.
	Notes   []string        `json:"-" yaml:"-"`
	Version int             `json:"version" yaml:"version" doc:"scenario file format version; must be 1" required:"true" min:"1" max:"1"`
	Doc     *state.Document `json:"state" yaml:"state" doc:"the client state document the run starts from (lib/state, version 1; schema/state-v1.schema.json)" required:"true"`
	Lambdas *Lambdas        `json:"lambdas,omitempty" yaml:"lambdas,omitempty" doc:"mean lengths of the on periods of the host's availability processes, whose fractions are state.host.time_stats; absent fields are 3600"`
	Servers []Server        `json:"servers,omitempty" yaml:"servers,omitempty" doc:"the projects' scheduler up/down processes (an RPC to a down server fails); a project not listed is always up"`
	Apps    []App           `json:"apps,omitempty" yaml:"apps,omitempty" doc:"how each project's emulated server makes jobs; a project without an app here gets no work"`
	Run     *Run            `json:"run,omitempty" yaml:"run,omitempty" doc:"defaults for bsim run's --duration and --delta"`
	// NoTimeStats and ParseOrder are what BOINC's emulator draws from its one random
	// stream while it reads client_state.xml (--emulate boinc draws the same): the host's
	// processes at </time_stats> (client/time_stats.cpp CLIENT_TIME_STATS::parse), each
	// server's at its project's <available> (PROJECT::parse_state), a project culled
	// later included; a file without <time_stats> makes no host process
	// (RANDOM_PROCESS's frac stays 1: always on, nothing drawn).
	NoTimeStats bool     `json:"no_time_stats,omitempty" yaml:"no_time_stats,omitempty" doc:"the scenario's client_state.xml had no <time_stats>: under --emulate boinc the host is always on and its processes draw nothing from BOINC's random stream"`
	ParseOrder  []string `json:"boinc_parse_order,omitempty" yaml:"boinc_parse_order,omitempty" doc:"the order in which BOINC's emulator makes its random processes reading client_state.xml: an empty string for the host's time_stats, a project's name for its server; absent: the host's first, then the servers in the state's order"`
}

// Lambdas are the mean lengths, seconds, of the "on" periods of the host's alternating
// on/off processes; the fractions are Doc.Host.TimeStats. On periods are exponential
// with mean lambda, off periods exponential with mean lambda/frac − lambda; frac 1 means
// always on.
type Lambdas struct {
	On        *float64 `json:"on,omitempty" yaml:"on,omitempty" doc:"mean length of a period the client runs (state.host.time_stats.on_frac), seconds (default 3600)" gt:"0"`
	Active    *float64 `json:"active,omitempty" yaml:"active,omitempty" doc:"mean length of a period computing is allowed (active_frac), seconds (default 3600)" gt:"0"`
	GPUActive *float64 `json:"gpu_active,omitempty" yaml:"gpu_active,omitempty" doc:"mean length of a period GPU use is allowed (gpu_active_frac), seconds (default 3600)" gt:"0"`
	Connected *float64 `json:"connected,omitempty" yaml:"connected,omitempty" doc:"mean length of a connected period (connected_frac), seconds (default 3600)" gt:"0"`
}

// Server is a project's scheduler server as the emulation sees it: its up/down process
// (an RPC to a down server fails).
type Server struct {
	Project   string       `json:"project" yaml:"project" doc:"a project of the state" required:"true"`
	Available Availability `json:"available" yaml:"available" doc:"the server's up/down process: up periods exponential with mean lambda, down periods with mean lambda/frac - lambda"`
}

// Availability is an alternating up/down process: up a fraction Frac of the time (default
// 1: always), up periods exponential with mean Lambda seconds (default DefaultLambda).
type Availability struct {
	Frac   *float64 `json:"frac,omitempty" yaml:"frac,omitempty" doc:"fraction of the time the server is up (default 1: always)" min:"0" max:"1"`
	Lambda *float64 `json:"lambda,omitempty" yaml:"lambda,omitempty" doc:"mean length of an up period, seconds (default 3600)" gt:"0"`
}

// App is how a project's emulated server makes jobs of one app. Its max_concurrent is
// the state's (Doc.Apps), which the client obeys.
type App struct {
	Project string `json:"project" yaml:"project" doc:"a project of the state" required:"true"`
	Name    string `json:"name" yaml:"name" doc:"the app's name; state.app_versions must hold at least one version of it (app and project)" required:"true"`
	// LatencyBound: a job's deadline is its send time plus this, seconds.
	LatencyBound float64 `json:"latency_bound" yaml:"latency_bound" doc:"a job's deadline is its send time plus this, seconds" required:"true" gt:"0"`
	// FpopsEst is the real work of each job, FLOPs.
	FpopsEst float64 `json:"fpops_est" yaml:"fpops_est" doc:"the real work of each job, FLOPs" required:"true" gt:"0"`
	// Fpops is the distribution of the work estimate the client sees; nil: always
	// FpopsEst.
	Fpops *NormalDist `json:"fpops,omitempty" yaml:"fpops,omitempty" doc:"the distribution of the work estimate the client sees (rsc_fpops_est): normal, samples clamped at 0; absent: always fpops_est"`
	// Weight is the app's relative chance when a job is made; nil: 1.
	Weight *float64 `json:"weight,omitempty" yaml:"weight,omitempty" doc:"relative chance of this app when a job is made (default 1)" min:"0"`
}

// NormalDist is a normal distribution; samples are clamped at 0. A nil Mean is the
// app's FpopsEst.
type NormalDist struct {
	Mean   *float64 `json:"mean,omitempty" yaml:"mean,omitempty" doc:"mean, FLOPs (default fpops_est)" min:"0"`
	StdDev float64  `json:"std_dev" yaml:"std_dev" doc:"standard deviation, FLOPs (default 0)" min:"0"`
}

// Run holds a scenario file's defaults for bsim run (a BOINC directory has none).
type Run struct {
	Duration *Seconds `json:"duration,omitempty" yaml:"duration,omitempty" doc:"default simulated time of bsim run: seconds, or a number with a unit s, m, h, d or w (30d)" gt:"0"`
	Delta    *Seconds `json:"delta,omitempty" yaml:"delta,omitempty" doc:"default step of bsim run: seconds, or a number with a unit (60)" gt:"0"`
}

// Means are the host's lambdas in force, DefaultLambda where l (or l itself) is nil.
func (l *Lambdas) Means() (on, active, gpuActive, connected float64) {
	if l == nil {
		return DefaultLambda, DefaultLambda, DefaultLambda, DefaultLambda
	}
	return or(l.On, DefaultLambda), or(l.Active, DefaultLambda), or(l.GPUActive, DefaultLambda), or(l.Connected, DefaultLambda)
}

// ServerAvailability is project's server process in force: its Server's, with the
// defaults for what it leaves out; always up when it has none.
func (sc *Scenario) ServerAvailability(project string) (frac, lambda float64) {
	frac, lambda = 1, DefaultLambda
	for _, s := range sc.Servers {
		if s.Project == project {
			frac, lambda = or(s.Available.Frac, 1), or(s.Available.Lambda, DefaultLambda)
		}
	}
	return frac, lambda
}

// EstimateMean is the mean of the estimates the client sees: Fpops's, else FpopsEst.
func (a *App) EstimateMean() float64 {
	if a.Fpops == nil {
		return a.FpopsEst
	}
	return or(a.Fpops.Mean, a.FpopsEst)
}

// EstimateStdDev is the estimates' standard deviation (0 without Fpops).
func (a *App) EstimateStdDev() float64 {
	if a.Fpops == nil {
		return 0
	}
	return a.Fpops.StdDev
}

// JobWeight is the app's weight in force (1 when not given).
func (a *App) JobWeight() float64 { return or(a.Weight, 1) }

// RunDefaults are the file's defaults for the run's length and step, seconds; 0 where
// it gives none.
func (sc *Scenario) RunDefaults() (duration, delta float64) {
	if sc.Run == nil {
		return 0, 0
	}
	if sc.Run.Duration != nil {
		duration = float64(*sc.Run.Duration)
	}
	if sc.Run.Delta != nil {
		delta = float64(*sc.Run.Delta)
	}
	return duration, delta
}

// Canonical returns a copy of sc in the form Export writes: the host's lambdas in full
// when any differs from DefaultLambda and left out otherwise, a server's process in
// full for each project whose server is not always up (in the state's project order),
// every app's estimate distribution and weight spelt out. Two scenarios that run alike
// have equal canonical forms, whichever reader filled them in.
func (sc *Scenario) Canonical() *Scenario {
	c := *sc
	c.Lambdas = nil
	if on, active, gpu, conn := sc.Lambdas.Means(); on != DefaultLambda || active != DefaultLambda || gpu != DefaultLambda || conn != DefaultLambda {
		c.Lambdas = &Lambdas{On: &on, Active: &active, GPUActive: &gpu, Connected: &conn}
	}
	c.Servers = nil
	if sc.Doc != nil {
		for _, p := range sc.Doc.Projects {
			if frac, lambda := sc.ServerAvailability(p.Name); frac != 1 || lambda != DefaultLambda {
				c.Servers = append(c.Servers, Server{Project: p.Name, Available: Availability{Frac: &frac, Lambda: &lambda}})
			}
		}
	}
	if c.Run != nil && c.Run.Duration == nil && c.Run.Delta == nil {
		c.Run = nil
	}
	c.Apps = nil
	for _, a := range sc.Apps {
		mean, weight := a.EstimateMean(), a.JobWeight()
		a.Fpops = &NormalDist{Mean: &mean, StdDev: a.EstimateStdDev()}
		a.Weight = &weight
		c.Apps = append(c.Apps, a)
	}
	return &c
}

func or(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

// BOINCParseOrder is ParseOrder with its default spelt out: the host's processes first
// (unless NoTimeStats), then each project's server that Servers lists, in the state's
// order.
func (sc *Scenario) BOINCParseOrder() []string {
	if sc.ParseOrder != nil {
		return sc.ParseOrder
	}
	order := []string{}
	if !sc.NoTimeStats {
		order = append(order, "")
	}
	if sc.Doc != nil {
		for _, p := range sc.Doc.Projects {
			for _, sv := range sc.Servers {
				if sv.Project == p.Name {
					order = append(order, p.Name)
					break
				}
			}
		}
	}
	return order
}
