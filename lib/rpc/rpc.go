// Package rpc owns the decision half of seed 000, scheduler RPC timing and retry: when
// the client starts a scheduler RPC session, which project it contacts, and how a
// project's RPC bookkeeping changes when an RPC or a master file fetch succeeds or
// fails. It is shared by the brpc program and the emulator bsim, so every function is
// pure: time comes in as now (Unix seconds), randomness as a seeded *rand.Rand, and
// nothing reads a clock, the network or a file. Performing the RPCs (HTTP to a
// scheduler, reading a master page) is the caller's job.
//
// # Resource debt
//
// Each project keeps an exponentially averaged sum of the CPU time the client gave it
// (state.Project.ExpAvgCPU, last brought up to date at ExpAvgTime). It decays by a
// factor of e per week (EXP_DECAY_RATE = 1/week):
//
//	exp_avg_cpu(now) = exp_avg_cpu × exp(−(now − exp_avg_time) / week) [+ cpu time just done]
//
// and resource_debt = resource_share / exp_avg_cpu(now). A project with no CPU time yet
// has debt +Inf: the greatest (DESIGN.md section 5); among such projects the larger
// share comes first. A project with share 0 has debt 0. MoreDebt is the one ordering
// every choice "by debt" uses; ties keep document order.
//
// # Backoff and the master file
//
// A failed RPC increments nrpc_failures (n) and sets min_rpc_time = now + backoff, where
// backoff = min(60·2^n, 14400) s × uniform[0.5, 1) from the caller's source. In a
// get-work session, every MASTER_FETCH_PERIOD (10) consecutive failures set the
// master-fetch flag (a report-result session's failures do not: ReportFailed). A failed
// master fetch (or one naming no scheduler) counts as a failure and backs off; a master
// file naming a scheduler URL the project did not have replaces the URLs and clears
// nrpc_failures and min_rpc_time. A successful RPC clears nrpc_failures.
//
// # Sessions
//
// Poll decides whether to start a session (see poll.go): below the low-water mark of
// estimated work, a get-work session; otherwise a report session for a project with
// overdue results. A get-work session asks projects in order of resource debt, each at
// most once, while estimated work stays below the high-water mark. The session in
// progress is recorded in the document (state.RPCSession), so that brpc's stages can run
// as separate processes.
package rpc

import (
	"errors"
	"math"
	"math/rand/v2"

	"github.com/bkit/bkit/lib/state"
)

// Seed 000's constants (DESIGN.md section 5).
const (
	SecondsPerDay  = 86400
	SecondsPerWeek = 7 * SecondsPerDay

	// ExpDecayRate is EXP_DECAY_RATE, per second: exp_avg_cpu decays by e per week.
	ExpDecayRate = 1.0 / SecondsPerWeek

	// BackoffMin is the backoff base, seconds: the n-th failure backs off 60·2^n s.
	BackoffMin = 60
	// BackoffMax caps the backoff before jitter, seconds (4 hours).
	BackoffMax = 14400

	// MasterFetchPeriod is MASTER_FETCH_PERIOD: every this many consecutive failed
	// RPCs the master file is fetched again.
	MasterFetchPeriod = 10
)

// DecayedExpAvgCPU is the project's exp_avg_cpu decayed to now, without new CPU time.
// A project never brought up to date (ExpAvgTime 0) or one whose ExpAvgTime lies in the
// future (a clock that went back) is not decayed.
func DecayedExpAvgCPU(p *state.Project, now float64) float64 {
	dt := now - p.ExpAvgTime
	if p.ExpAvgTime <= 0 || dt <= 0 {
		return p.ExpAvgCPU
	}
	return p.ExpAvgCPU * math.Exp(-dt*ExpDecayRate)
}

// UpdateExpAvgCPU brings the project's exponentially averaged CPU time up to now and
// adds cpuTime, the CPU seconds the project received since the last update:
// ExpAvgCPU = decayed(now) + cpuTime, ExpAvgTime = now (never moved backwards). A
// negative cpuTime counts as 0.
func UpdateExpAvgCPU(p *state.Project, cpuTime, now float64) {
	var d ExpDecay
	d.UpdateExpAvgCPU(p, cpuTime, now)
}

// ExpDecay is UpdateExpAvgCPU for a caller that brings the averages up to date step
// after step (the emulator): it keeps the last decay factor, math.Exp of the last
// interval, for the next interval of the same length. The zero value is ready; the
// averages are UpdateExpAvgCPU's, to the last bit.
type ExpDecay struct {
	dt, factor float64
	known      bool
}

// UpdateExpAvgCPU is UpdateExpAvgCPU with d's factor.
func (d *ExpDecay) UpdateExpAvgCPU(p *state.Project, cpuTime, now float64) {
	decayed := p.ExpAvgCPU
	if dt := now - p.ExpAvgTime; !(p.ExpAvgTime <= 0 || dt <= 0) { // DecayedExpAvgCPU's test
		if !d.known || dt != d.dt {
			d.dt, d.factor, d.known = dt, math.Exp(-dt*ExpDecayRate), true
		}
		decayed = p.ExpAvgCPU * d.factor
	}
	p.ExpAvgCPU = decayed + max(0, cpuTime)
	if now > p.ExpAvgTime {
		p.ExpAvgTime = now
	}
}

// ResourceDebt is resource_share / exp_avg_cpu at now: +Inf for a project with a
// positive share and no CPU time yet, 0 for a project with share 0. It never divides
// by zero and never returns NaN.
func ResourceDebt(p *state.Project, now float64) float64 {
	if p.ResourceShare <= 0 {
		return 0
	}
	avg := DecayedExpAvgCPU(p, now)
	if avg <= 0 {
		return math.Inf(1)
	}
	return p.ResourceShare / avg
}

// MoreDebt reports whether project a comes before project b when choosing by resource
// debt at now: the greater debt first; between two projects of infinite debt (neither
// has CPU time yet) the greater share first. Equal projects are not ordered, so stable
// sorts and first-wins scans keep document order.
func MoreDebt(a, b *state.Project, now float64) bool {
	da, db := ResourceDebt(a, now), ResourceDebt(b, now)
	if da != db {
		return da > db
	}
	if math.IsInf(da, 1) {
		return a.ResourceShare > b.ResourceShare
	}
	return false
}

// CanContact reports whether an RPC to p may be done at now (min_rpc_time <= now; 0
// means at any time).
func CanContact(p *state.Project, now float64) bool {
	return p.MinRPCTime <= now
}

// BackoffCap is min(60·2^n, 14400) seconds, the backoff before jitter after n
// consecutive failures (n < 0 counts as 0).
func BackoffCap(n int) float64 {
	if n < 0 {
		n = 0
	}
	if n >= 8 { // 60·2^8 = 15360 > 14400; also keeps 2^n from overflowing
		return BackoffMax
	}
	return min(float64(int(BackoffMin)<<n), BackoffMax)
}

// Backoff is exponential_backoff(n): BackoffCap(n) × uniform[0.5, 1), the jitter
// 0.5 + 0.5 × rng.Float64() (one Float64 call; the largest Float64 would round the
// factor up to 1, so it is kept just below).
func Backoff(n int, rng *rand.Rand) float64 {
	f := 0.5 + 0.5*rng.Float64()
	if f >= 1 {
		f = math.Nextafter(1, 0)
	}
	return BackoffCap(n) * f
}

// RPCFailed records a failed RPC of a get-work session to p (every scheduler URL
// failed): nrpc_failures++, min_rpc_time = now + Backoff(nrpc_failures), and every
// MasterFetchPeriod-th consecutive failure sets the master-fetch flag. A project
// without scheduler URLs also gets the flag: the master file is where its URLs come
// from. It returns the backoff chosen, seconds.
func RPCFailed(p *state.Project, now float64, rng *rand.Rand) float64 {
	return failed(p, now, rng, true)
}

// ReportFailed records a failed RPC of a report-result session to p: nrpc_failures++
// and min_rpc_time = now + Backoff(nrpc_failures), as RPCFailed, but without the
// master-fetch flag at every MasterFetchPeriod-th failure: seed 000's
// report_result_session does not set it (only get_work_session does, and only it
// reads master files). A project without scheduler URLs still gets the flag. It
// returns the backoff chosen, seconds.
func ReportFailed(p *state.Project, now float64, rng *rand.Rand) float64 {
	return failed(p, now, rng, false)
}

func failed(p *state.Project, now float64, rng *rand.Rand, getWork bool) float64 {
	p.NRPCFailures++
	b := Backoff(p.NRPCFailures, rng)
	p.MinRPCTime = now + b
	if (getWork && p.NRPCFailures%MasterFetchPeriod == 0) || len(p.SchedulerURLs) == 0 {
		p.MasterFetchPending = true
	}
	return b
}

// RPCSucceeded records a successful RPC to p: nrpc_failures = 0. A request_delay in
// the scheduler's reply (seconds, 0 for none) sets min_rpc_time = now + delay;
// otherwise min_rpc_time is left alone (it is in the past, or the RPC would not have
// been made).
func RPCSucceeded(p *state.Project, now, requestDelay float64) {
	p.NRPCFailures = 0
	if requestDelay > 0 {
		p.MinRPCTime = now + requestDelay
	}
}

// Attempt tries an RPC at each of the scheduler URLs in order and stops at the first
// that succeeds (try returns nil). It returns that URL, or "" and the last error when
// every URL failed; with no URLs at all it returns ErrNoScheduler. The caller then
// records the outcome with RPCSucceeded or RPCFailed.
func Attempt(urls []string, try func(url string) error) (string, error) {
	var err error = ErrNoScheduler
	for _, u := range urls {
		if err = try(u); err == nil {
			return u, nil
		}
	}
	return "", err
}

// ErrNoScheduler is Attempt's error for a project without scheduler URLs.
var ErrNoScheduler = errors.New("no scheduler URL (the master file names none yet)")

// MasterOutcome is what a master file fetch changed.
type MasterOutcome int

// Outcomes of MasterFetched.
const (
	MasterFailed        MasterOutcome = iota // fetch or parse error, or no scheduler named: failure and backoff
	MasterUnchanged                          // the page names only URLs the project already had
	MasterNewSchedulers                      // new scheduler URLs: failures and min_rpc_time cleared
)

func (o MasterOutcome) String() string {
	switch o {
	case MasterFailed:
		return "failed"
	case MasterUnchanged:
		return "unchanged"
	case MasterNewSchedulers:
		return "new_schedulers"
	}
	return "unknown"
}

// MasterFetched records the outcome of reading p's master file: err is the fetch or
// parse error, urls the scheduler URLs the page names (boincxml.ParseMasterFile).
//
//   - err != nil or no URL: nrpc_failures++, min_rpc_time = now + Backoff; the flag
//     stays set so that the fetch is tried again once the backoff has passed.
//   - a URL p did not have: SchedulerURLs = urls, nrpc_failures = 0, min_rpc_time = 0,
//     flag cleared.
//   - the same URLs (in any order): flag cleared, nothing else changes.
func MasterFetched(p *state.Project, urls []string, err error, now float64, rng *rand.Rand) MasterOutcome {
	if err != nil || len(urls) == 0 {
		p.NRPCFailures++
		p.MinRPCTime = now + Backoff(p.NRPCFailures, rng)
		p.MasterFetchPending = true
		return MasterFailed
	}
	p.MasterFetchPending = false
	known := make(map[string]bool, len(p.SchedulerURLs))
	for _, u := range p.SchedulerURLs {
		known[u] = true
	}
	for _, u := range urls {
		if !known[u] {
			p.SchedulerURLs = append([]string(nil), urls...)
			p.NRPCFailures = 0
			p.MinRPCTime = 0
			return MasterNewSchedulers
		}
	}
	return MasterUnchanged
}
