package sim

import "fmt"

// onOff is an alternating availability process (boinc-emulator.md): on periods are
// exponential with mean lambda, off periods exponential with mean lambda/frac − lambda.
// A fraction of 1 is always on and a fraction of 0 always off; neither draws a number,
// so adding an always-on process does not shift the random sequence of the others.
type onOff struct {
	frac, lambda float64
	on           bool
	next         float64 // when the state flips next
	rng          stream
	// atRPC: the process moves only when it is asked (askedAt), as BOINC's emulator's
	// project servers' do; asked says it has been, and until then next holds the
	// time left in the first state rather than a time.
	atRPC, asked bool
}

func newOnOff(frac, lambda, start float64, rng stream) *onOff {
	p := &onOff{frac: frac, lambda: lambda, on: frac > 0, rng: rng}
	if p.frac > 0 && p.frac < 1 {
		// Start in the stationary state: on with probability frac.
		p.on = rng.Float64() < p.frac
		p.next = start + p.period()
	}
	return p
}

// askedAt is the process as BOINC's emulator samples a project server's at each RPC
// (client/sim.cpp CLIENT_STATE::simulate_rpc: available.sample(now − last_rpc_time),
// sample(0) the first time; client/sim_util.cpp RANDOM_PROCESS::sample): the time
// since the last ask comes off the time left, and when that goes below 0 the state
// flips once, adding one period, whatever the gap. A server asked after a gap of
// several periods has flipped once, not as often as the gap would hold: asked hours
// apart (a backoff of hours), a down server is up at the next ask more often than its
// fraction says.
func (p *onOff) askedAt(t float64) bool {
	if p.frac <= 0 || p.frac >= 1 {
		return p.on
	}
	if !p.asked {
		p.asked = true
		p.next += t
	}
	if p.next < t {
		p.on = !p.on
		p.next += p.period()
	}
	return p.on
}

// period draws the length of the current state.
func (p *onOff) period() float64 {
	mean := p.lambda
	if !p.on {
		mean = p.lambda/p.frac - p.lambda
	}
	return p.rng.ExpFloat64() * mean
}

// at advances the process to time t and returns its state there. (Small enough to be
// inlined: the loop asks every process at every step, and most do not flip.)
func (p *onOff) at(t float64) bool {
	if p.next <= t && p.frac > 0 && p.frac < 1 {
		p.advance(t)
	}
	return p.on
}

// advance flips the process until its next flip is after t. (Not inlined, so that at
// can be.)
//
//go:noinline
func (p *onOff) advance(t float64) {
	for p.next <= t {
		p.on = !p.on
		p.next += p.period()
	}
}

// maxFlips bounds how often a process may flip over a run: a tiny lambda (or a tiny
// fraction) would make a run that never ends.
const maxFlips = 1e7

// checkProcess refuses a process that would flip more than maxFlips times (on average)
// over span seconds.
func checkProcess(name string, frac, lambda, span float64) error {
	if frac <= 0 || frac >= 1 {
		return nil
	}
	shortest := min(lambda, lambda/frac-lambda)
	if !(shortest > 0) || span/shortest > maxFlips {
		return fmt.Errorf("%s: periods of %g s on average (frac %g, lambda %g) are too short for a run of %g s", name, shortest, frac, lambda, span)
	}
	return nil
}
