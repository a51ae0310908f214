package bdevices

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
	"go.yaml.in/yaml/v3"
)

const (
	flagCPUFlops  = "cpu-flops"
	flagGPUFlops  = "gpu-flops"
	flagNvidiaSMI = "nvidia-smi"
	flagNCPUs     = "ncpus"
)

// Runner runs a program and returns its standard output. Detection goes through it so
// tests can give canned nvidia-smi output.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// LookPath finds a program; tests replace it along with Run.
var (
	Run Runner = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return exec.CommandContext(ctx, name, args...).Output()
	}
	LookPath = exec.LookPath
)

// nvidiaQuery is the nvidia-smi query: one CSV line per GPU.
var nvidiaQuery = []string{"--query-gpu=name,count,clocks.max.sm,memory.total", "--format=csv,noheader,nounits"}

// assumedCUDACores is what a GPU is taken to have when only its clock is known: FLOPS
// = 2 (fused multiply-add) × cores × clock. nvidia-smi does not report the cores; the
// figure is a mid-range GPU's, and --gpu-flops gives the real one.
const assumedCUDACores = 2048

func detectCommand() *cli.Command {
	return &cli.Command{
		Name:      "detect",
		Usage:     "describe this machine as the host part of a state document",
		UsageText: "bdevices detect [--ncpus N] [--cpu-flops FLOPS] [--gpu-flops FLOPS] [--nvidia-smi PATH] [-o yaml|json]",
		Description: cliutil.Help(`
Prints a state document with version and host only, for this machine: a resource of
type cpu with runtime.NumCPU() instances (or --ncpus) and the FLOPS of one CPU (a built-in
measurement of about 0.2 s of floating-point multiply-adds on one core, or
--cpu-flops), and, when nvidia-smi is found (in PATH, or --nvidia-smi), a resource of
type NVIDIA with one instance per GPU it lists and the FLOPS of the slowest of them:
--gpu-flops, or else estimated as 2 × 2048 cores × the maximum SM clock, since
nvidia-smi does not report the number of cores. Without nvidia-smi, or when it fails
(no driver), the host has no GPU; that is not an error (a warning says why with -v).

Add preferences, projects, app versions and tasks to the output to make a full
document (examples/gpu-seed-example.yaml shows one).`,
			[]string{
				"bdevices detect > host.yaml",
				"bdevices detect --cpu-flops 4e9 -o json",
			}, ""),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: flagNCPUs, Usage: "number of CPUs, `N` (default: runtime.NumCPU())"},
			&cli.Float64Flag{Name: flagCPUFlops, Usage: "FLOPS of one CPU, `FLOPS` (default: measured)"},
			&cli.Float64Flag{Name: flagGPUFlops, Usage: "FLOPS of one NVIDIA GPU, `FLOPS` (default: estimated from its clock)"},
			&cli.StringFlag{Name: flagNvidiaSMI, Usage: "the nvidia-smi program, `PATH` (default: nvidia-smi in PATH)"},
			cliutil.FormatFlag("yaml", "json"),
			cliutil.VerboseFlag(),
		},
		Action: runDetect,
	}
}

func runDetect(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() > 0 {
		return cliutil.Usagef("unexpected argument %q", cmd.Args().First())
	}
	log := cliutil.Logger(cmd)
	cpuFlops := cmd.Float64(flagCPUFlops)
	gpuFlops := cmd.Float64(flagGPUFlops)
	if cpuFlops < 0 || math.IsNaN(cpuFlops) || math.IsInf(cpuFlops, 0) {
		return cliutil.Usagef("--cpu-flops: want a number > 0, got %v", cpuFlops)
	}
	if gpuFlops < 0 || math.IsNaN(gpuFlops) || math.IsInf(gpuFlops, 0) {
		return cliutil.Usagef("--gpu-flops: want a number > 0, got %v", gpuFlops)
	}
	ncpus := cmd.Int(flagNCPUs)
	if ncpus < 0 {
		return cliutil.Usagef("--ncpus: want a number >= 1, got %d", ncpus)
	}
	if ncpus == 0 {
		ncpus = runtime.NumCPU()
	}
	if cpuFlops == 0 {
		cpuFlops = MeasureCPUFlops(200 * time.Millisecond)
	}
	host := state.Host{
		Resources: []state.Resource{{Type: state.ResourceCPU, Instances: ncpus, Flops: cpuFlops}},
		TimeStats: state.TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1},
	}
	smi := cmd.String(flagNvidiaSMI)
	if smi == "" {
		if p, err := LookPath("nvidia-smi"); err == nil {
			smi = p
		} else {
			log.Debug("no NVIDIA GPU: nvidia-smi not found", "err", err)
		}
	}
	if smi != "" {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := Run(ctx, smi, nvidiaQuery...)
		if err != nil {
			log.Warn("no NVIDIA GPU: nvidia-smi failed", "program", smi, "err", err)
		} else if gpus, err := ParseNvidiaSMI(out); err != nil {
			log.Warn("no NVIDIA GPU: cannot read nvidia-smi output", "err", err)
		} else if r, ok := NvidiaResource(gpus, gpuFlops); ok {
			host.Resources = append(host.Resources, r)
		}
	}
	doc := struct {
		Version int        `json:"version" yaml:"version"`
		Host    state.Host `json:"host" yaml:"host"`
	}{state.Version, host}
	var data []byte
	var err error
	if cmd.String(cliutil.FlagOutput) == "json" {
		data, err = json.MarshalIndent(doc, "", "  ")
		data = append(data, '\n')
	} else {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err = enc.Encode(doc); err == nil {
			err = enc.Close()
		}
		data = b.Bytes()
	}
	if err != nil {
		return err
	}
	_, err = cmd.Root().Writer.Write(data)
	return err
}

// GPU is one line of nvidia-smi's answer.
type GPU struct {
	Name      string
	ClockMHz  float64 // maximum SM clock; 0 if not reported
	MemoryMiB float64
}

// ParseNvidiaSMI reads the CSV lines of `nvidia-smi --query-gpu=name,count,clocks.max.sm,
// memory.total --format=csv,noheader,nounits`. Fields nvidia-smi cannot tell ("[N/A]",
// "[Not Supported]") read as 0; a line with too few fields is an error.
func ParseNvidiaSMI(out []byte) ([]GPU, error) {
	var gpus []GPU
	for i, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 4 {
			return nil, fmt.Errorf("line %d: want 4 comma-separated fields (name, count, clocks.max.sm, memory.total), got %q", i+1, line)
		}
		g := GPU{Name: strings.TrimSpace(strings.Join(f[:len(f)-3], ","))}
		g.ClockMHz = number(f[len(f)-2])
		g.MemoryMiB = number(f[len(f)-1])
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// number reads a field; anything not a plausible figure (a GHz-range clock in MHz, a
// memory size in MiB) reads as 0, so the FLOPS made from it stay finite.
func number(s string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(v >= 0 && v < 1e12) {
		return 0
	}
	return v
}

// NvidiaResource makes the NVIDIA resource of the GPUs: one instance each, with flops
// (when > 0) or else the slowest one's estimated FLOPS (seed 002 treats the instances of
// a type as equal; taking the slowest never promises work the host cannot do).
func NvidiaResource(gpus []GPU, flops float64) (state.Resource, bool) {
	if len(gpus) == 0 {
		return state.Resource{}, false
	}
	if flops <= 0 {
		flops = math.Inf(1)
		for _, g := range gpus {
			flops = math.Min(flops, 2*assumedCUDACores*g.ClockMHz*1e6)
		}
	}
	return state.Resource{Type: "NVIDIA", Instances: len(gpus), Flops: flops}, true
}

// MeasureCPUFlops times floating-point multiply-adds on one core for about d and
// returns the rate. Four independent chains keep the pipeline busy; the result is a
// rough peak figure of the kind BOINC's benchmark gives, not a promise.
func MeasureCPUFlops(d time.Duration) float64 {
	const batch = 1 << 20
	a, b, c, e := 1.0, 1.1, 1.2, 1.3
	const m, k = 0.9999999, 1e-7
	ops := 0.0
	start := time.Now()
	for time.Since(start) < d {
		for range batch {
			a = a*m + k
			b = b*m + k
			c = c*m + k
			e = e*m + k
		}
		ops += 8 * batch
	}
	el := time.Since(start).Seconds()
	sink = a + b + c + e
	if el <= 0 {
		return 1e9
	}
	// Three significant digits: the measurement is not better than that.
	r := ops / el
	p := math.Pow(10, math.Floor(math.Log10(r))-2)
	return math.Round(r/p) * p
}

// sink keeps the measurement from being optimised away.
var sink float64
