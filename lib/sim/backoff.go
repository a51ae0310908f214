package sim

import (
	"math"
	"math/rand/v2"

	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/state"
)

// BOINC's client's RPC backoff constants (client/scheduler_op.h): the failures in a row
// after which the master file is to be read again and the count starts over
// (MASTER_FETCH_PERIOD), the cap on the exponent (RETRY_CAP), the master-fetch rounds
// after which every failure backs off a day (MASTER_FETCH_RETRY_CAP,
// MASTER_FETCH_INTERVAL).
const (
	boincMasterFetchPeriod   = 10
	boincRetryCap            = 10
	boincMasterFetchRetryCap = 3
	boincMasterFetchInterval = 86400
)

// boincBackoff is a failed scheduler RPC to p at now under BOINC's emulator
// (--emulate boinc): its simulate_rpc calls SCHEDULER_OP::project_rpc_backoff
// (client/scheduler_op.cpp) for a down server, report or not, and clears the
// master-fetch flag that sets at once (the emulator reads no master file).
//
//   - A failure that finds boincMasterFetchPeriod failures in a row before it starts
//     the count over (its backoff is the first's again, 2 minutes at most) and counts
//     a round.
//   - Once boincMasterFetchRetryCap rounds are counted, every failure backs off a day,
//     jitter-free, and is not counted. The rounds are never reset: only a master file
//     read clears them, which the emulator never does, so three runs of ten failures
//     in a row, however far apart, start the day-long backoffs.
//   - Otherwise seed 000's exponential backoff (the same formula as BOINC's
//     calculate_exponential_backoff: 60 × 2^n up to 4 hours, × uniform [0.5, 1)).
//
// The rounds are the server's (s.masterFetchFailures), carried in the world file:
// they are the emulator's bookkeeping, not a field of the client's document.
func (s *server) boincBackoff(p *state.Project, now float64, rng *rand.Rand) {
	var u interface{ Float64() float64 } = rng
	if s.g != nil {
		u = s.g // BOINC's stream (boincstream.go)
	}
	if s.masterFetchFailures >= boincMasterFetchRetryCap {
		p.MinRPCTime = now + boincMasterFetchInterval
		return
	}
	if p.NRPCFailures == boincMasterFetchPeriod {
		p.NRPCFailures = 0
		s.masterFetchFailures++
	}
	p.NRPCFailures++
	p.MinRPCTime = now + boincExponentialBackoff(min(p.NRPCFailures, boincRetryCap), u)
	p.MasterFetchPending = false
}

// boincExponentialBackoff is BOINC's calculate_exponential_backoff(n, 60, 14400)
// (client/client_state.cpp): 60 × 2^n capped at 4 hours, × (0.5 + 0.5 × drand()), one
// draw. (rpc.Backoff, seed 000's, is the same but keeps the factor below 1.)
func boincExponentialBackoff(n int, u interface{ Float64() float64 }) float64 {
	x := math.Pow(2, float64(n)) * rpc.BackoffMin
	if x > rpc.BackoffMax {
		x = rpc.BackoffMax
	}
	return x * (0.5 + 0.5*u.Float64())
}
