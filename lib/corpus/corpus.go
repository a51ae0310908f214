// Package corpus owns the scenario corpus generator: scenario directories in BOINC's
// client emulator's format (../shared/boinc-emulator.md) drawn from a documented space of
// hosts, projects and apps, so that a policy is measured on many hosts it was not tuned
// on rather than on four public scenarios. 'bsim gen' is its shell; scenarios/corpus/ is
// its output, with BOINC's emulator's figures beside each scenario.
//
// The space (Space says it in numbers): 1–16 CPUs; no GPU, or one or two GPU types
// (NVIDIA, ATI) of one device each at 1–20× a CPU, whose app versions take 0–1 CPU;
// 1–6 projects with resource shares 1–1000, each with one or two apps that are CPU-only,
// GPU-only or both; job run times 5 minutes to 24 hours; latency bounds 1.2× to 30× the
// run time; the estimate the client sees 50 % low to 50 % high with noise; the host on
// 0.2–1 of the time in spells of 1–40 hours, active and GPU-active fractions; project
// servers up 0.3–1 of the time in spells; work buffers of 0.01–1 day each (min and
// additional). Draws are log-uniform for scale-like quantities (shares, run times,
// latency factors, spells, buffers) and uniform otherwise.
//
// A scenario is a pure function of (seed, index): Generate draws from a PCG stream of
// both, so scenario 17 of seed 1 is the same whether 20 or 200 are made.
package corpus

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Space is the corpus's parameter space, in the units the scenario files use. It is
// fixed: a change of space is a new corpus, and the README of scenarios/corpus says
// which space made it.
var Space = struct {
	CPUs                    [2]int
	CPUFlops                [2]float64 // p_fpops
	GPUSpeed                [2]float64 // × one CPU
	GPUCPUFrac              [2]float64 // avg_ncpus of a GPU app version
	Projects                [2]int
	Share                   [2]float64
	Runtime                 [2]float64 // seconds, on the app's reference processor
	Latency                 [2]float64 // × run time
	Estimate                [2]float64 // estimate ÷ real work
	EstimateNoise           [2]float64 // std_dev ÷ mean of the estimate
	OnFrac, ActiveFrac      [2]float64
	GPUActiveFrac           [2]float64
	Spell                   [2]float64 // seconds, mean "on" spell of every process
	ServerUp                [2]float64
	BufMin, BufAdditional   [2]float64 // days
	MaxHeldJobs             float64
	PAlwaysOn, PAlwaysUp    float64
	PAlwaysActive, PNoNoise float64
}{
	CPUs: [2]int{1, 16}, CPUFlops: [2]float64{1e9, 4e9},
	GPUSpeed: [2]float64{1, 20}, GPUCPUFrac: [2]float64{0, 1},
	Projects: [2]int{1, 6}, Share: [2]float64{1, 1000},
	Runtime: [2]float64{300, 86400}, Latency: [2]float64{1.2, 30},
	Estimate: [2]float64{0.5, 1.5}, EstimateNoise: [2]float64{0, 0.3},
	OnFrac: [2]float64{0.2, 1}, ActiveFrac: [2]float64{0.5, 1}, GPUActiveFrac: [2]float64{0.5, 1},
	Spell: [2]float64{3600, 40 * 3600}, ServerUp: [2]float64{0.3, 1},
	BufMin: [2]float64{0.01, 1}, BufAdditional: [2]float64{0.01, 1},
	MaxHeldJobs: 150,
	PAlwaysOn:   0.35, PAlwaysUp: 0.5, PAlwaysActive: 0.5, PNoNoise: 0.2,
}

// GPU is one GPU type of the host: one device.
type GPU struct {
	Type  string  // NVIDIA or ATI
	Speed float64 // × one CPU
}

// Version is an app version.
type Version struct {
	GPU     string  // "" for the CPU
	AvgCPUs float64 // CPUs it takes
	Flops   float64 // its real speed
}

// App is an app of a project and its job parameters.
type App struct {
	Name        string
	Runtime     float64 // seconds, on its first version
	Latency     float64 // seconds
	Fpops       float64 // real work of a job
	EstMean     float64 // the estimate's distribution
	EstStdDev   float64
	Weight      float64
	Versions    []Version
	Description string // CPU, GPU or CPU+GPU
}

// Project is a project and its apps.
type Project struct {
	Name         string
	Share        float64
	UpFrac       float64 // 1: always up
	UpLambda     float64
	Apps         []App
	descriptions []string
}

// Scenario is one generated scenario.
type Scenario struct {
	Seed  uint64
	Index int
	NCPUs int
	Flops float64 // per CPU
	GPUs  []GPU
	// Host availability: fraction and mean on-spell of each process.
	OnFrac, OnLambda               float64
	ActiveFrac, ActiveLambda       float64
	GPUActiveFrac, GPUActiveLambda float64
	Projects                       []Project
	BufMin, BufAdditional          float64 // days
}

// Name is the scenario's directory name in a corpus.
func (s *Scenario) Name() string { return fmt.Sprintf("c%03d", s.Index) }

// Generate draws scenario index of the corpus of seed. A draw whose client would hold
// more than Space.MaxHeldJobs jobs to fill its buffers is drawn again (from the same
// stream): such scenarios take both emulators minutes per run, and the corpus is for
// measuring policies many times over.
func Generate(seed uint64, index int) *Scenario {
	rng := rand.New(rand.NewPCG(seed, 0xc0a5<<32|uint64(index)))
	for {
		s := draw(rng)
		s.Seed, s.Index = seed, index
		if s.HeldJobs() <= Space.MaxHeldJobs {
			return s
		}
	}
}

func uniform(r *rand.Rand, b [2]float64) float64 { return b[0] + (b[1]-b[0])*r.Float64() }

func logUniform(r *rand.Rand, b [2]float64) float64 {
	return math.Exp(math.Log(b[0]) + (math.Log(b[1])-math.Log(b[0]))*r.Float64())
}

// round keeps 3 significant digits: the files stay short and read well.
func round(x float64) float64 {
	if x == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	return v
}

func draw(r *rand.Rand) *Scenario {
	sp := &Space
	s := &Scenario{}
	s.NCPUs = sp.CPUs[0] + r.IntN(sp.CPUs[1]-sp.CPUs[0]+1)
	s.Flops = round(uniform(r, sp.CPUFlops))
	switch x := r.Float64(); {
	case x < 0.4: // no GPU
	case x < 0.8:
		s.GPUs = []GPU{{Type: "NVIDIA"}}
	default:
		s.GPUs = []GPU{{Type: "NVIDIA"}, {Type: "ATI"}}
	}
	for i := range s.GPUs {
		s.GPUs[i].Speed = round(logUniform(r, sp.GPUSpeed))
	}
	s.OnFrac, s.ActiveFrac, s.GPUActiveFrac = 1, 1, 1
	s.OnLambda, s.ActiveLambda, s.GPUActiveLambda = round(logUniform(r, sp.Spell)), round(logUniform(r, sp.Spell)), round(logUniform(r, sp.Spell))
	if r.Float64() >= sp.PAlwaysOn {
		s.OnFrac = round(uniform(r, sp.OnFrac))
	}
	if r.Float64() >= sp.PAlwaysActive {
		s.ActiveFrac = round(uniform(r, sp.ActiveFrac))
	}
	if len(s.GPUs) > 0 && r.Float64() >= sp.PAlwaysActive {
		s.GPUActiveFrac = round(uniform(r, sp.GPUActiveFrac))
	}
	s.BufMin, s.BufAdditional = round(logUniform(r, sp.BufMin)), round(logUniform(r, sp.BufAdditional))
	n := sp.Projects[0] + r.IntN(sp.Projects[1]-sp.Projects[0]+1)
	for p := range n {
		proj := Project{Name: string(rune('A' + p)), Share: math.Round(logUniform(r, sp.Share)), UpFrac: 1}
		if r.Float64() >= sp.PAlwaysUp {
			proj.UpFrac, proj.UpLambda = round(uniform(r, sp.ServerUp)), round(logUniform(r, sp.Spell))
		}
		napps := 1 + r.IntN(2)
		for a := range napps {
			proj.Apps = append(proj.Apps, s.drawApp(r, fmt.Sprintf("%s%d", strings.ToLower(proj.Name), a+1), napps))
		}
		s.Projects = append(s.Projects, proj)
	}
	// A GPU no app uses would only idle in both emulators' figures: the host keeps the
	// GPUs its projects use.
	var used []GPU
	for _, g := range s.GPUs {
		if s.usesGPU(g.Type) {
			used = append(used, g)
		}
	}
	s.GPUs = used
	if len(s.GPUs) == 0 {
		s.GPUActiveFrac = 1
	}
	return s
}

func (s *Scenario) usesGPU(typ string) bool {
	for _, p := range s.Projects {
		for _, a := range p.Apps {
			for _, v := range a.Versions {
				if v.GPU == typ {
					return true
				}
			}
		}
	}
	return false
}

// drawApp draws an app: its kind (CPU-only, GPU-only or both, when the host has a GPU),
// run time on its first version, latency, estimate and weight.
func (s *Scenario) drawApp(r *rand.Rand, name string, napps int) App {
	sp := &Space
	a := App{Name: name, Weight: 1}
	cpu := Version{AvgCPUs: 1, Flops: s.Flops}
	kind := 0 // CPU only
	if len(s.GPUs) > 0 {
		// CPU-only apps a little more often than the others, so that a GPU host's
		// CPUs are seldom left without work by every project.
		switch x := r.Float64(); {
		case x < 0.3:
			kind = 1 // GPU only
		case x < 0.6:
			kind = 2 // both
		}
	}
	var gpu Version
	if kind > 0 {
		g := s.GPUs[r.IntN(len(s.GPUs))]
		gpu = Version{GPU: g.Type, AvgCPUs: round(uniform(r, sp.GPUCPUFrac)), Flops: round(g.Speed * s.Flops)}
	}
	switch kind {
	case 0:
		a.Versions, a.Description = []Version{cpu}, "CPU"
	case 1:
		a.Versions, a.Description = []Version{gpu}, "GPU"
	default:
		a.Versions, a.Description = []Version{cpu, gpu}, "CPU+GPU"
	}
	a.Runtime = round(logUniform(r, sp.Runtime))
	a.Fpops = round(a.Runtime * a.Versions[0].Flops)
	a.Latency = round(a.Runtime * logUniform(r, sp.Latency))
	a.EstMean = round(a.Fpops * uniform(r, sp.Estimate))
	if r.Float64() >= sp.PNoNoise {
		a.EstStdDev = round(a.EstMean * uniform(r, sp.EstimateNoise))
	}
	if napps > 1 {
		a.Weight = round(logUniform(r, [2]float64{0.5, 2}))
	}
	return a
}

// HeldJobs is about how many jobs the client holds to fill its buffers: per resource,
// the buffer's seconds × instances ÷ the shortest estimated run time of a job that runs
// on it.
func (s *Scenario) HeldJobs() float64 {
	buf := (s.BufMin + s.BufAdditional) * 86400
	shortest := map[string]float64{}
	for _, p := range s.Projects {
		for _, a := range p.Apps {
			for _, v := range a.Versions {
				est := a.EstMean / v.Flops
				if old, ok := shortest[v.GPU]; !ok || est < old {
					shortest[v.GPU] = est
				}
			}
		}
	}
	held := 0.0
	for typ, est := range shortest {
		inst := 1.0
		if typ == "" {
			inst = float64(s.NCPUs)
		}
		held += max(inst, buf*inst/max(est, 1))
	}
	return held
}
