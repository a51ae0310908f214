package corpus

import (
	"bytes"
	"testing"
	"testing/fstest"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/sim"
)

func TestGenerateIsAFunctionOfSeedAndIndex(t *testing.T) {
	a, b := Generate(1, 17).Files(), Generate(1, 17).Files()
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs between two draws of seed 1, scenario 17", name)
		}
	}
	if bytes.Equal(Generate(1, 17).Files()[ClientState], Generate(2, 17).Files()[ClientState]) {
		t.Error("seeds 1 and 2 gave the same scenario 17")
	}
	if bytes.Equal(Generate(1, 17).Files()[ClientState], Generate(1, 18).Files()[ClientState]) {
		t.Error("scenarios 17 and 18 of seed 1 are the same")
	}
}

func in(x float64, b [2]float64) bool { return x >= b[0]*0.99 && x <= b[1]*1.01 }

// Every scenario lies in the documented space, and the corpus covers its corners: GPU
// hosts and CPU-only ones, part-time hosts, down servers, each kind of app.
func TestScenariosLieInTheSpace(t *testing.T) {
	seen := map[string]int{}
	for i := range 200 {
		s := Generate(1, i)
		if s.NCPUs < Space.CPUs[0] || s.NCPUs > Space.CPUs[1] || len(s.Projects) < Space.Projects[0] || len(s.Projects) > Space.Projects[1] {
			t.Fatalf("scenario %d: %d CPUs, %d projects", i, s.NCPUs, len(s.Projects))
		}
		if s.HeldJobs() > Space.MaxHeldJobs {
			t.Errorf("scenario %d: holds %g jobs", i, s.HeldJobs())
		}
		if !in(s.OnFrac, Space.OnFrac) || !in(s.BufMin, Space.BufMin) || !in(s.BufAdditional, Space.BufAdditional) || !in(s.OnLambda, Space.Spell) {
			t.Errorf("scenario %d: on %g in %g s spells, buffer %g+%g", i, s.OnFrac, s.OnLambda, s.BufMin, s.BufAdditional)
		}
		seen[map[int]string{0: "no GPU", 1: "one GPU", 2: "two GPUs"}[len(s.GPUs)]]++
		if s.OnFrac < 1 {
			seen["part-time"]++
		}
		for _, g := range s.GPUs {
			if !s.usesGPU(g.Type) || !in(g.Speed, Space.GPUSpeed) {
				t.Errorf("scenario %d: GPU %s at %g× a CPU (used: %v)", i, g.Type, g.Speed, s.usesGPU(g.Type))
			}
		}
		for _, p := range s.Projects {
			if !in(p.Share, Space.Share) || (p.UpFrac < 1 && !in(p.UpFrac, Space.ServerUp)) {
				t.Errorf("scenario %d project %s: share %g, up %g", i, p.Name, p.Share, p.UpFrac)
			}
			if p.UpFrac < 1 {
				seen["server down"]++
			}
			for _, a := range p.Apps {
				seen[a.Description]++
				if !in(a.Runtime, Space.Runtime) || !in(a.Latency/a.Runtime, Space.Latency) || !in(a.EstMean/a.Fpops, Space.Estimate) ||
					!in(a.EstStdDev/a.EstMean, Space.EstimateNoise) {
					t.Errorf("scenario %d app %s: %+v", i, a.Name, a)
				}
				for _, v := range a.Versions {
					if v.GPU != "" && !in(v.AvgCPUs, Space.GPUCPUFrac) {
						t.Errorf("scenario %d app %s: GPU version takes %g CPUs", i, a.Name, v.AvgCPUs)
					}
				}
			}
		}
	}
	for _, k := range []string{"no GPU", "one GPU", "two GPUs", "part-time", "server down", "CPU", "GPU", "CPU+GPU"} {
		if seen[k] < 10 {
			t.Errorf("only %d scenarios or apps of kind %q in 200", seen[k], k)
		}
	}
}

// The files are what bsim reads: every scenario of the first 200 loads and starts a run.
func TestFilesLoadAndRun(t *testing.T) {
	for i := range 200 {
		s := Generate(1, i)
		fsys := fstest.MapFS{}
		for name, data := range s.Files() {
			fsys[name] = &fstest.MapFile{Data: data}
		}
		sc, err := boincxml.ReadScenario(fsys, s.Name())
		if err != nil {
			t.Fatalf("scenario %d: %v", i, err)
		}
		if len(sc.Doc.Projects) != len(s.Projects) || sc.Doc.Host.CPU().Instances != s.NCPUs || len(sc.Doc.Host.Resources) != 1+len(s.GPUs) {
			t.Fatalf("scenario %d read as %d projects, %d CPUs, %d resources", i, len(sc.Doc.Projects), sc.Doc.Host.CPU().Instances, len(sc.Doc.Host.Resources))
		}
		if _, err := sim.New(sc, sim.Config{Duration: 10 * 86400, Delta: 60, Policy: "seed", Seed: 1}); err != nil {
			t.Fatalf("scenario %d: %v", i, err)
		}
	}
}
