package servertest_test

import (
	"testing"
	"time"

	"github.com/bkit/bkit/lib/server/servertest"
	"github.com/bkit/bkit/lib/store/storetest"
)

// The open loop sends at its rate whatever the replies do: over half a second at 200
// a second some 100 RPCs (a Poisson count: 40 to 200 is far outside its spread), each
// with a latency, and none left in flight after Stop.
func TestStartRate(t *testing.T) {
	dsn := storetest.SQLiteDSN(t)
	st := storetest.Open(t, dsn) // migrates the database
	st.Close()
	l := servertest.StartRate(t, dsn, 10, 200)
	time.Sleep(500 * time.Millisecond)
	l.Stop()
	lat := l.Latencies()
	if len(lat) < 40 || len(lat) > 200 {
		t.Fatalf("%d RPCs in half a second at 200 a second", len(lat))
	}
	if lat[0] <= 0 {
		t.Fatalf("latency %v", lat[0])
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
