package servertest_test

import (
	"testing"
	"time"

	"github.com/bkit/bkit/lib/server/servertest"
	"github.com/bkit/bkit/lib/store/storetest"
)

// The open loop sends at its rate whatever the replies do: over half a second at 200
// a second some 100 RPCs (a Poisson count: 40 to 200 is far outside its spread), each
// with a latency, and none left in flight after Stop. On a starved machine the loop's
// goroutine may start, or the replies come back, long after StartRate returned (a
// fixed half second saw fewer than 40 once at a load of 17): the test then waits for
// 40 latencies, ten seconds at most, and holds the count to twice the rate over the
// time it really waited.
func TestStartRate(t *testing.T) {
	const rate = 200
	dsn := storetest.SQLiteDSN(t)
	st := storetest.Open(t, dsn) // migrates the database
	st.Close()
	l := servertest.StartRate(t, dsn, 10, rate)
	start := time.Now()
	var lat []time.Duration
	for time.Since(start) < 500*time.Millisecond || len(lat) < 40 && time.Since(start) < 10*time.Second {
		time.Sleep(50 * time.Millisecond)
		lat = append(lat, l.Latencies()...)
	}
	l.Stop()
	waited := time.Since(start)
	lat = append(lat, l.Latencies()...)
	if max := int(2 * rate * waited.Seconds()); len(lat) < 40 || len(lat) > max {
		t.Fatalf("%d RPCs in %v at %d a second; want 40 to %d", len(lat), waited, rate, max)
	}
	for _, d := range lat {
		if d <= 0 {
			t.Fatalf("latency %v", d)
		}
	}
}

func TestRateFromEnv(t *testing.T) {
	t.Setenv("BKIT_BENCH_RPC_RATE", "")
	if r := servertest.RateFromEnv(t); r != 0 {
		t.Fatalf("unset: %g", r)
	}
	t.Setenv("BKIT_BENCH_RPC_RATE", "50")
	if r := servertest.RateFromEnv(t); r != 50 {
		t.Fatalf("50: %g", r)
	}
}
