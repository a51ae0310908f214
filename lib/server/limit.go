package server

import (
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultAccountRequestsPerMinute is how many account lookups and creations one
// address may make a minute (Config.AccountRequestsPerMinute), with as many at once:
// a person setting up a few clients needs far fewer, a password guesser far more.
const DefaultAccountRequestsPerMinute = 10

// accountLimits holds a token bucket per client address for the account endpoints
// (lookup_account.php, create_account.php), on the wall clock whatever the server's
// Now says (a server run on a test clock still meets real request rates).
type accountLimits struct {
	mu      sync.Mutex
	perMin  float64
	buckets map[string]*rate.Limiter
}

// maxBuckets bounds the addresses remembered; past it, those whose bucket is full
// again (no request for a minute) are forgotten.
const maxBuckets = 10000

// allow reports whether a request from remote (host:port) may go on at now.
func (l *accountLimits) allow(remote string, now time.Time) bool {
	if l.perMin <= 0 {
		return true
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[string]*rate.Limiter{}
	}
	b := l.buckets[host]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			burst := float64(max(1, int(l.perMin)))
			for k, v := range l.buckets {
				if v.TokensAt(now) >= burst {
					delete(l.buckets, k)
				}
			}
		}
		b = rate.NewLimiter(rate.Limit(l.perMin/60), max(1, int(l.perMin)))
		l.buckets[host] = b
	}
	return b.AllowN(now, 1)
}
