package sim

import (
	"github.com/bkit/bkit/lib/boincxml"
)

// onOff is an alternating availability process (boinc-emulator.md): on periods are
// exponential with mean lambda, off periods exponential with mean lambda/frac − lambda.
// A fraction of 1 is always on and a fraction of 0 always off; neither draws a number,
// so adding an always-on process does not shift the random sequence of the others.
type onOff struct {
	frac, lambda float64
	on           bool
	next         float64 // when the state flips next
	rng          stream
}

func newOnOff(a boincxml.Availability, start float64, rng stream) *onOff {
	p := &onOff{frac: a.Frac, lambda: a.Lambda, on: a.Frac > 0, rng: rng}
	if p.frac > 0 && p.frac < 1 {
		// Start in the stationary state: on with probability frac.
		p.on = rng.Float64() < p.frac
		p.next = start + p.period()
	}
	return p
}

// period draws the length of the current state.
func (p *onOff) period() float64 {
	mean := p.lambda
	if !p.on {
		mean = p.lambda/p.frac - p.lambda
	}
	return p.rng.ExpFloat64() * mean
}

// at advances the process to time t and returns its state there.
func (p *onOff) at(t float64) bool {
	if p.frac <= 0 || p.frac >= 1 {
		return p.on
	}
	for p.next <= t {
		p.on = !p.on
		p.next += p.period()
	}
	return p.on
}
