package sim

import (
	"fmt"

	"github.com/bkit/bkit/lib/glibcrand"
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
	// atRPC: the process moves only when it is asked (askedAt), as BOINC's emulator's
	// project servers' do; asked says it has been, and until then next holds the
	// time left in the first state rather than a time.
	atRPC, asked bool
	// g: under --emulate boinc the process is BOINC's emulator's RANDOM_PROCESS
	// (client/sim_util.cpp), drawn from the run's one glibc stream (Sim.g): on holds
	// its value, next its time_left, lastAsk a server's last RPC (newBOINCProcess).
	g       *glibcrand.Rand
	lastAsk float64
}

// newBOINCProcess is BOINC's emulator's RANDOM_PROCESS as it is made when a scenario
// file is read (client/sim_util.cpp RANDOM_PROCESS::init, called by
// CLIENT_TIME_STATS::parse and PROJECT::parse_state at their end tags): two draws from
// g, whatever the fraction, even 1: drand() > frac starts it off for
// exponential(lambda/frac − lambda), else on for exponential(lambda).
func newBOINCProcess(frac, lambda float64, g *glibcrand.Rand) *onOff {
	p := &onOff{frac: frac, lambda: lambda, g: g}
	if g.Float64() > frac {
		p.on, p.next = false, g.Exponential(lambda/frac-lambda)
	} else {
		p.on, p.next = true, g.Exponential(lambda)
	}
	return p
}

// sampleBOINC is RANDOM_PROCESS::sample(diff) (client/sim_util.cpp): a fraction of 1
// is on and draws nothing; otherwise diff comes off the time left, and when that goes
// below 0 the value flips once, adding one exponential period (one draw), however far
// below 0 it was. BOINC's emulator samples the host's processes by delta at each step
// (client/sim.cpp simulate: on; active and connected only while on; gpu_active only
// while active), so a process's clock stops while it is not sampled.
func (p *onOff) sampleBOINC(diff float64) bool {
	if p.frac == 1 {
		return true
	}
	p.next -= diff
	if p.next < 0 {
		if p.on {
			p.next += p.g.Exponential(p.lambda/p.frac - p.lambda)
			p.on = false
		} else {
			p.next += p.g.Exponential(p.lambda)
			p.on = true
		}
	}
	return p.on
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
	if p.g != nil {
		// client/sim.cpp simulate_rpc: sample(now − last_rpc_time), or sample(0) when
		// last_rpc_time is 0 (no RPC yet).
		dt := 0.0
		if p.lastAsk != 0 {
			dt = t - p.lastAsk
		}
		p.lastAsk = t
		return p.sampleBOINC(dt)
	}
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
