package prsc

import (
	"math"
	"math/rand/v2"

	"github.com/bkit/bkit/lib/state"
)

// Backoff limits (DESIGN.md, seed 002 gaps): the first backoff of a (project, resource)
// is 600 s, each further one doubles, and none exceeds a day.
const (
	MinBackoff = 600.0
	MaxBackoff = 86400.0
)

// NextBackoffInterval is the interval after one more request for a resource that
// returned no job of it: 600 s after none, then double, capped at 86,400 s.
func NextBackoffInterval(interval float64) float64 {
	if interval <= 0 {
		return MinBackoff
	}
	return math.Min(2*interval, MaxBackoff)
}

// BackOff records one more fruitless request for pr at time now: the interval grows
// (NextBackoffInterval) and the resource is not asked for before now + interval × j,
// with j uniform in [0.5, 1) from rng. The jitter, the same as seed 000's RPC backoff,
// keeps many clients that failed together from asking again together; the stored
// interval has no jitter, so the sequence 600, 1200, 2400, ... is exact.
func BackOff(pr *state.ProjectResource, now float64, rng *rand.Rand) {
	pr.BackoffInterval = NextBackoffInterval(pr.BackoffInterval)
	pr.BackoffUntil = now + pr.BackoffInterval*(0.5+0.5*rng.Float64())
}

// ClearBackoff forgets pr's backoff: a job for the resource arrived.
func ClearBackoff(pr *state.ProjectResource) {
	pr.BackoffInterval = 0
	pr.BackoffUntil = 0
}

// BackedOff reports whether project p may not be asked for work of resource type t at
// time now.
func BackedOff(p *state.Project, t string, now float64) bool {
	for i := range p.Resources {
		if p.Resources[i].Type == t {
			return p.Resources[i].BackoffUntil > now
		}
	}
	return false
}

// ContactBackoffUntil is the project's overall work-fetch backoff (DESIGN.md, seed 002
// gaps): the minimum over the host's resources of the project's resource backoffs, so
// the project may be asked for work as soon as any resource's backoff has ended. A
// resource without an entry has no backoff, which makes the result 0.
func ContactBackoffUntil(h *state.Host, p *state.Project) float64 {
	until := math.Inf(1)
	for _, r := range h.Resources {
		u := 0.0
		for i := range p.Resources {
			if p.Resources[i].Type == r.Type {
				u = p.Resources[i].BackoffUntil
			}
		}
		until = math.Min(until, u)
	}
	if math.IsInf(until, 1) {
		return 0
	}
	return until
}

// NewRand is the random source bdevices reply draws backoff jitter from for --seed
// seed; the emulator hands the same seed to the same source, so that a shell loop of
// the programs and bsim draw the same numbers.
func NewRand(seed uint64) *rand.Rand {
	pcg := new(rand.PCG)
	Reseed(pcg, seed)
	return rand.New(pcg)
}

// Reseed sets pcg to the state NewRand(seed)'s source starts from, for a caller that
// draws every reply's jitter from one source (the emulator: no allocation per reply).
func Reseed(pcg *rand.PCG, seed uint64) {
	pcg.Seed(seed, seed^0x9e3779b97f4a7c15)
}
