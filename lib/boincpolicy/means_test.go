package boincpolicy

import (
	"math"
	"math/rand/v2"
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
