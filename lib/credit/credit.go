// Package credit owns what a project grants for valid results: the cobblestone (credit
// per floating-point operation) and BOINC's exponentially decaying average of credit
// per day (expavg_credit, update_average in BOINC's lib/util.cpp), kept for hosts and
// users. The validator grants a valid result its workunit's estimated credit, fixed
// credit in BOINC's terms; seed 004's locality scheduling ranks hosts and teams by the
// average. Nothing here reads a clock or does I/O.
package credit

import "math"

// PerFlop converts floating-point operations to credit (BOINC's cobblestone: a host
// doing 1 GFLOPS for a day earns 200 credits).
const PerFlop = 200.0 / (86400 * 1e9)

// HalfLife is the half-life of the average, seconds: a week, BOINC's CREDIT_HALF_LIFE.
const HalfLife = 7 * 86400

// Granted is the credit of a valid result of a workunit estimated at fpopsEst
// floating-point operations.
func Granted(fpopsEst float64) float64 {
	if !(fpopsEst > 0) || math.IsInf(fpopsEst, 0) {
		return 0
	}
	return fpopsEst * PerFlop
}

// UpdateAverage is BOINC's update_average: the average avg (credit per day), last
// brought up to date at avgTime (0: never), after work credits granted at now; start
// is when the work began (the account's or host's creation), used for the first
// grant. Between updates the average decays with half-life HalfLife, and new work
// enters at its rate over the time since the last update.
func UpdateAverage(now, start, work, avg, avgTime float64) (newAvg, newTime float64) {
	return DecayedAverage(now, start, work, HalfLife, avg, avgTime)
}

// DecayedAverage is UpdateAverage with the half-life halfLife (seconds): BOINC uses
// the one function for credit (a week) and for its client's recent estimated credit
// (REC, lib/boincpolicy: ten days by default).
func DecayedAverage(now, start, work, halfLife, avg, avgTime float64) (newAvg, newTime float64) {
	var d Decay
	return d.Average(now, start, work, halfLife, avg, avgTime)
}

// Decay is DecayedAverage for a caller that brings averages up to date interval after
// interval of one length (an emulator's steps): it keeps the last interval's weight,
// the math.Exp that is most of the function's time, and the interval in days, for the
// next interval of the same length and half-life, and it adds nothing for no work
// (below). The zero value is ready; the averages are the plain formula's, to the last
// bit (TestDecayIsDecayedAverage, whose decayedAverageFormula is that formula).
type Decay struct {
	diff, halfLife, weight, days float64
	known                        bool
}

// Average is DecayedAverage with d's weight. Without work (±0) and with a half-life
// above 0 the new work's term is a zero, (1 − w) × ±0 ÷ days or ln 2 × ±0 × a day ÷
// the half-life, and adding a zero changes no average but −0 (−0 + +0 is +0), so it is
// added only to a decayed average of 0; the steps of an emulated host's projects that
// ran nothing (every one while the host is off) are then a multiplication, not two
// divisions. (A half-life of ±0 or NaN can make the term NaN: always added.)
func (d *Decay) Average(now, start, work, halfLife, avg, avgTime float64) (newAvg, newTime float64) {
	switch {
	case avgTime > 0:
		diff := max(now-avgTime, 0)
		// The half-life by its bits: −0 and +0 are equal but give weights of
		// another sign's infinity.
		if !d.known || diff != d.diff || math.Float64bits(halfLife) != math.Float64bits(d.halfLife) {
			d.diff, d.halfLife, d.weight, d.known = diff, halfLife, math.Exp(-diff*math.Ln2/halfLife), true
			d.days = diff / 86400
		}
		weight := d.weight
		avg *= weight
		if work == 0 && avg != 0 && halfLife > 0 {
			break
		}
		if 1-weight > 1e-6 {
			avg += (1 - weight) * work / d.days
		} else {
			// The limit as diff → 0, where the quotient above is 0 × ∞.
			avg += math.Ln2 * work * 86400 / halfLife
		}
	case work > 0:
		if days := (now - start) / 86400; days > 0 {
			avg = work / days
		} else {
			avg = math.Ln2 * work * 86400 / halfLife // no time yet: as for a burst
		}
	}
	return avg, now
}

// Again is Average where d keeps the interval's weight already (an average brought
// up to date before, avgTime > 0, over an interval of the last one's length, of the
// same half-life by its bits) and that weight is not within 1e-6 of 1: the new
// average and true, Average's to the last bit; else false, d as it was, and the
// caller calls Average. It is small enough to be inlined where Average is not: a
// caller that brings averages up to date at every step of an emulated host (the REC,
// lib/boincpolicy) asks it first (TestAgainIsAverage). It compares now − avgTime with
// the interval kept where Average compares max(now − avgTime, 0): where the first
// equals it, so does the second, the interval kept being at least 0.
func (d *Decay) Again(now, work, halfLife, avg, avgTime float64) (float64, bool) {
	if !(avgTime > 0) || !d.known || now-avgTime != d.diff || math.Float64bits(halfLife) != math.Float64bits(d.halfLife) {
		return 0, false
	}
	w := d.weight
	avg *= w
	if work == 0 && avg != 0 && halfLife > 0 {
		return avg, true
	}
	return avg + (1-w)*work/d.days, 1-w > 1e-6
}
