package boincpolicy

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/state"
)

// TestAccountDecayMeans: AccountDecayMeans (lib/sim's adjust_rec in one walk) leaves
// every project's REC and REC time, and the rows, as the three walks it replaced do
// (each instance-seconds ÷ dt, then AccountDecayCPU, then the rows cleared), to the
// bit: random projects (rows more or fewer than the projects), resources, intervals
// and usage, zeros among them, the same documents accounted step after step.
func TestAccountDecayMeans(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 1))
	for c := range 300 {
		nP, nR := 1+r.IntN(4), 1+r.IntN(3)
		var a, b state.Document
		for range nP {
			p := state.Project{REC: r.Float64() * 1000 * float64(r.IntN(2))}
			if p.REC > 0 {
				p.RECTime = 1e6 - r.Float64()*1000
			}
			a.Projects = append(a.Projects, p)
		}
		b.Projects = append([]state.Project(nil), a.Projects...)
		rel := make([]float64, nR)
		for k := range rel {
			rel[k] = r.Float64() * 3
		}
		cpu := 1e9 * (1 + r.Float64())
		var da, db credit.Decay
		now := 1e6
		rows := nP + r.IntN(3) - 1
		for step := range 20 {
			dt := 1 + r.Float64()*120
			if step%3 == 0 {
				dt = 60
			}
			now += dt
			secs := make([][]float64, rows)
			for p := range secs {
				secs[p] = make([]float64, nR)
				for k := range secs[p] {
					if r.IntN(3) > 0 {
						secs[p][k] = r.Float64() * 4 * dt
					}
				}
			}
			old := make([][]float64, rows)
			for p := range secs {
				old[p] = append([]float64(nil), secs[p]...)
				for k := range old[p] {
					old[p][k] /= dt
				}
			}
			AccountDecayCPU(&a, old, dt, now, rel, cpu, &da)
			AccountDecayMeans(&b, secs, dt, now, rel, cpu, &db)
			for p := range a.Projects {
				x, y := a.Projects[p], b.Projects[p]
				if math.Float64bits(x.REC) != math.Float64bits(y.REC) || math.Float64bits(x.RECTime) != math.Float64bits(y.RECTime) {
					t.Fatalf("case %d step %d project %d: REC %v at %v, three walks %v at %v", c, step, p, y.REC, y.RECTime, x.REC, x.RECTime)
				}
			}
			for p := range secs {
				for _, s := range secs[p] {
					if math.Float64bits(s) != 0 {
						t.Fatalf("case %d step %d: row %d left %v", c, step, p, secs[p])
					}
				}
			}
		}
	}
}

// TestAccountDecayOnlyCPU: on a host whose one resource is the CPU, AccountDecayOnlyCPU
// (lib/sim's Account there: no relative speeds, credit.Decay.Again before Average)
// leaves every project's REC and REC time as AccountDecayCPU with RelativeSpeedsCPU's
// speeds and FLOPS does, to the bit: random projects (RECs never brought up to date
// among them, rows more or fewer than the projects, empty or missing), intervals
// mostly of one length, usage with zeros of both signs and odd values, the same
// documents accounted step after step, each path with its own Decay. (A NaN is any
// NaN: which operand's payload an addition passes on is the compiler's choice.)
func TestAccountDecayOnlyCPU(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 2))
	odd := []float64{0, math.Copysign(0, -1), 5e-324, math.Inf(1), math.NaN(), -1, 1e300}
	host := state.Host{Resources: []state.Resource{{Type: state.ResourceCPU, Instances: 4}}}
	again := 0
	for c := range 500 {
		nP := 1 + r.IntN(4)
		host.Resources[0].Flops = 1e9 * (1 + r.Float64())
		if r.IntN(20) == 0 {
			host.Resources[0].Flops = odd[r.IntN(len(odd))]
		}
		rel, cpu := RelativeSpeedsCPU(&host, nil)
		var a, b state.Document
		for range nP {
			p := state.Project{REC: r.Float64() * 1000 * float64(r.IntN(2))}
			if p.REC > 0 || r.IntN(3) == 0 {
				p.RECTime = 1e6 - r.Float64()*1000
			}
			if r.IntN(20) == 0 {
				p.REC = odd[r.IntN(len(odd))]
			}
			a.Projects = append(a.Projects, p)
		}
		b.Projects = append([]state.Project(nil), a.Projects...)
		var da, db credit.Decay
		now := 1e6
		rows := nP + r.IntN(3) - 1
		for step := range 40 {
			dt := 60.0
			switch r.IntN(8) {
			case 0:
				dt = 1 + r.Float64()*120
			case 1:
				dt = []float64{0, -60, 1e-9, 3600}[r.IntN(4)]
			}
			now += max(dt, 0)
			used := make([][]float64, rows)
			for p := range used {
				if r.IntN(10) == 0 {
					continue // no row
				}
				used[p] = []float64{0}
				switch r.IntN(6) {
				case 0, 1:
					used[p][0] = r.Float64() * 4
				case 2:
					used[p][0] = odd[r.IntN(len(odd))]
				case 3:
					used[p] = used[p][:0]
				}
			}
			AccountDecayCPU(&a, used, dt, now, rel, cpu, &da)
			AccountDecayOnlyCPU(&b, used, dt, now, cpu, &db)
			for p := range a.Projects {
				x, y := a.Projects[p], b.Projects[p]
				if !sameOrNaN(x.REC, y.REC) || math.Float64bits(x.RECTime) != math.Float64bits(y.RECTime) {
					t.Fatalf("case %d step %d project %d (dt %v, row %v): REC %v at %v, with the speeds %v at %v",
						c, step, p, dt, used[min(p, len(used)-1)], y.REC, y.RECTime, x.REC, x.RECTime)
				}
				if dt > 0 && x.RECTime == now {
					again++
				}
			}
		}
	}
	if again < 20_000 {
		t.Fatalf("only %d RECs brought up to date", again)
	}
}

// sameOrNaN: a and b are the same float64 to the last bit, or both NaN.
func sameOrNaN(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b
}

// TestUpdateRECKept: updateREC with one Decay kept step after step (which asks
// credit.Decay.Again first) leaves each REC and REC time as UpdateREC does, a fresh
// Decay at every call (Average's whole formula), to the bit: random projects, RECs
// never brought up to date among them, intervals mostly of one length, odd work.
func TestUpdateRECKept(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 3))
	odd := []float64{0, math.Copysign(0, -1), 5e-324, math.Inf(1), math.NaN(), -1, 1e300}
	kept := 0
	for c := range 300 {
		var a, b []state.Project
		for range 1 + r.IntN(4) {
			p := state.Project{REC: r.Float64() * 1000 * float64(r.IntN(2))}
			if p.REC > 0 || r.IntN(3) == 0 {
				p.RECTime = 1e6 - r.Float64()*1000
			}
			a = append(a, p)
		}
		b = append(b, a...)
		var d credit.Decay
		now := 1e6
		for step := range 40 {
			dt := 60.0
			switch r.IntN(8) {
			case 0:
				dt = 1 + r.Float64()*120
			case 1:
				dt = []float64{0, -60, 1e-9, 3600}[r.IntN(4)]
			}
			now += max(dt, 0)
			for p := range a {
				work := 0.0
				switch r.IntN(4) {
				case 0:
					work = r.Float64() * 1e-3
				case 1:
					work = odd[r.IntN(len(odd))]
				}
				UpdateREC(&a[p], now-dt, now, work)
				updateREC(&b[p], now-dt, now, work, &d)
				if !sameOrNaN(a[p].REC, b[p].REC) || math.Float64bits(a[p].RECTime) != math.Float64bits(b[p].RECTime) {
					t.Fatalf("case %d step %d project %d (dt %v, work %v): REC %v at %v, afresh %v at %v",
						c, step, p, dt, work, b[p].REC, b[p].RECTime, a[p].REC, a[p].RECTime)
				}
				if dt == 60 {
					kept++
				}
			}
		}
	}
	if kept < 10_000 {
		t.Fatalf("only %d steps of the kept length", kept)
	}
}

// TestAccountDecayCPUTime: AccountDecayCPUTime leaves every REC and REC time as
// AccountDecayCPU of a copy of the usage with the CPUs' column replaced by each
// project's CPU time ÷ the step (lib/sim's Account as it was), to the bit, any NaN
// for any NaN: random hosts of two or three resources, the CPU anywhere or absent,
// CPU times for fewer projects than rows, odd usage, times and steps, one Decay kept.
func TestAccountDecayCPUTime(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 4))
	odd := []float64{0, math.Copysign(0, -1), 5e-324, math.Inf(1), math.NaN(), -1, 1e300}
	pick := func(scale float64) float64 {
		if r.IntN(15) == 0 {
			return odd[r.IntN(len(odd))]
		}
		return r.Float64() * scale
	}
	replaced := 0
	for c := range 500 {
		nR, nP := 2+r.IntN(2), 1+r.IntN(4)
		var host state.Host
		for range nR {
			host.Resources = append(host.Resources, state.Resource{Type: "NVIDIA", Instances: 1 + r.IntN(2), Flops: 1e10 * (1 + r.Float64())})
		}
		col := r.IntN(nR + 1)
		if col < nR {
			host.Resources[col] = state.Resource{Type: state.ResourceCPU, Instances: 4, Flops: 1e9 * (1 + r.Float64())}
		} else {
			col = -1
		}
		rel, cpu := RelativeSpeedsCPU(&host, nil)
		var a, b state.Document
		for range nP {
			p := state.Project{REC: r.Float64() * 1000 * float64(r.IntN(2))}
			if p.REC > 0 || r.IntN(3) == 0 {
				p.RECTime = 1e6 - r.Float64()*1000
			}
			a.Projects = append(a.Projects, p)
		}
		b.Projects = append([]state.Project(nil), a.Projects...)
		var da, db credit.Decay
		now := 1e6
		rows := nP + r.IntN(3) - 1
		for step := range 40 {
			dt := 60.0
			switch r.IntN(8) {
			case 0:
				dt = 1 + r.Float64()*120
			case 1:
				dt = []float64{0, -60, 1e-9, 3600}[r.IntN(4)]
			}
			now += max(dt, 0)
			used := make([][]float64, rows)
			for p := range used {
				used[p] = make([]float64, nR)
				for k := range used[p] {
					used[p][k] = pick(4)
				}
			}
			cpuTime := make([]float64, max(0, rows-r.IntN(2)))
			for p := range cpuTime {
				cpuTime[p] = pick(240)
			}
			copied := used
			if col >= 0 && dt > 0 {
				copied = make([][]float64, rows)
				for p := range used {
					copied[p] = slices.Clone(used[p])
					if p < len(cpuTime) {
						copied[p][col] = cpuTime[p] / dt
						replaced++
					}
				}
			}
			AccountDecayCPU(&a, copied, dt, now, rel, cpu, &da)
			AccountDecayCPUTime(&b, used, col, cpuTime, dt, now, rel, cpu, &db)
			for p := range a.Projects {
				x, y := a.Projects[p], b.Projects[p]
				if !sameOrNaN(x.REC, y.REC) || math.Float64bits(x.RECTime) != math.Float64bits(y.RECTime) {
					t.Fatalf("case %d step %d project %d (dt %v, col %d): REC %v at %v, with the copy %v at %v",
						c, step, p, dt, col, y.REC, y.RECTime, x.REC, x.RECTime)
				}
			}
		}
	}
	if replaced < 20_000 {
		t.Fatalf("only %d CPU times", replaced)
	}
	t.Logf("%d CPU times", replaced)
}
