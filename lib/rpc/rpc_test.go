package rpc

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const (
	t0   = 1.7e9 // an arbitrary Unix time
	week = 604800.0
)

// approx compares floats to 1e-9 relative, and treats +Inf as equal to itself.
var approx = cmpopts.EquateApprox(1e-9, 0)

// constSource makes rng.Float64() return u/2^53: the jitter becomes a hand-computable
// number (math/rand/v2's Float64 is (Uint64()<<11>>11) / 2^53).
type constSource uint64

func (c constSource) Uint64() uint64 { return uint64(c) }

// jitter returns a source whose Float64 is f (f a multiple of 2^-53 in [0, 1)).
func jitter(f float64) *rand.Rand { return rand.New(constSource(uint64(f * (1 << 53)))) }

func TestDecayedExpAvgCPU(t *testing.T) {
	tests := []struct {
		name      string
		avg, time float64
		now       float64
		want      float64
	}{
		{"one week decays by e", 1000, t0, t0 + week, 1000 / math.E},                   // 367.879...
		{"half a week", 1000, t0, t0 + week/2, 606.5306597126334},                      // 1000·e^−0.5
		{"two weeks", 1000, t0, t0 + 2*week, 135.3352832366127},                        // 1000·e^−2
		{"no time passed", 1000, t0, t0, 1000},                                         // e^0
		{"never updated: no decay", 1000, 0, t0, 1000},                                 // exp_avg_time 0
		{"clock went back: no decay", 1000, t0, t0 - 3600, 1000},                       // dt < 0
		{"zero stays zero", 0, t0, t0 + week, 0},                                       // 0·anything
		{"one day", 7000, t0, t0 + SecondsPerDay, 7000 * 0.8668778997501817},           // e^(−1/7)
		{"one day, check constant", 1, t0, t0 + SecondsPerDay, math.Exp(-1.0/7.0) * 1}, // same
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := state.Project{ExpAvgCPU: tt.avg, ExpAvgTime: tt.time}
			if diff := cmp.Diff(tt.want, DecayedExpAvgCPU(&p, tt.now), approx); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestUpdateExpAvgCPU(t *testing.T) {
	tests := []struct {
		name     string
		avg, at  float64
		cpu, now float64
		wantAvg  float64
		wantTime float64
	}{
		// 100/e + 50 = 36.787944117 + 50
		{"a week later, 50 s done", 100, t0, 50, t0 + week, 86.78794411714423, t0 + week},
		// first CPU time ever: nothing to decay
		{"first update", 0, 0, 3600, t0, 3600, t0},
		// same instant: plain sum
		{"same instant", 100, t0, 20, t0, 120, t0},
		// negative CPU time counts as 0: 100·e^−0.5
		{"negative cpu ignored", 100, t0, -5, t0 + week/2, 60.65306597126334, t0 + week/2},
		// clock went back: no decay, time kept
		{"clock went back", 100, t0, 10, t0 - 60, 110, t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := state.Project{ExpAvgCPU: tt.avg, ExpAvgTime: tt.at}
			UpdateExpAvgCPU(&p, tt.cpu, tt.now)
			got := [2]float64{p.ExpAvgCPU, p.ExpAvgTime}
			if diff := cmp.Diff([2]float64{tt.wantAvg, tt.wantTime}, got, approx); diff != "" {
				t.Errorf("(-want +got) [exp_avg_cpu exp_avg_time]\n%s", diff)
			}
		})
	}
}

func TestResourceDebt(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name       string
		share, avg float64
		at, now    float64
		want       float64
	}{
		{"200 / 100", 200, 100, t0, t0, 2},                    // 200/100
		{"75 / 300", 75, 300, t0, t0, 0.25},                   // 75/300
		{"no CPU time yet", 100, 0, 0, t0, inf},               // greatest
		{"share 0, no CPU time", 0, 0, 0, t0, 0},              // never 0/0
		{"share 0 with CPU time", 0, 50, t0, t0, 0},           // 0/50
		{"decayed one week", 100, 100, t0, t0 + week, math.E}, // 100 / (100/e)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := state.Project{ResourceShare: tt.share, ExpAvgCPU: tt.avg, ExpAvgTime: tt.at}
			if diff := cmp.Diff(tt.want, ResourceDebt(&p, tt.now), approx); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestMoreDebt(t *testing.T) {
	a := state.Project{Name: "A", ResourceShare: 100, ExpAvgCPU: 50, ExpAvgTime: t0}  // debt 2
	b := state.Project{Name: "B", ResourceShare: 100, ExpAvgCPU: 0}                   // +Inf, share 100
	c := state.Project{Name: "C", ResourceShare: 300, ExpAvgCPU: 0}                   // +Inf, share 300
	d := state.Project{Name: "D", ResourceShare: 200, ExpAvgCPU: 100, ExpAvgTime: t0} // debt 2
	tests := []struct {
		x, y *state.Project
		want bool
	}{
		{&b, &a, true},  // Inf > 2
		{&a, &b, false}, // 2 < Inf
		{&c, &b, true},  // both Inf: share 300 > 100
		{&b, &c, false},
		{&a, &d, false}, // 2 = 2: unordered
		{&d, &a, false},
		{&b, &b, false},
	}
	for _, tt := range tests {
		if got := MoreDebt(tt.x, tt.y, t0); got != tt.want {
			t.Errorf("MoreDebt(%s, %s) = %v, want %v", tt.x.Name, tt.y.Name, got, tt.want)
		}
	}
}

func TestBackoffCap(t *testing.T) {
	got := map[int]float64{}
	for _, n := range []int{-1, 0, 1, 2, 5, 7, 8, 9, 63, 64, 1000} {
		got[n] = BackoffCap(n)
	}
	want := map[int]float64{
		-1: 60, 0: 60, // 60·2^0
		1: 120, 2: 240, 5: 1920, 7: 7680, // 60·2^n
		8: 14400, 9: 14400, 63: 14400, 64: 14400, 1000: 14400, // 60·2^8 = 15360 > 14400
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		n    int
		u    float64 // rng.Float64()
		want float64
	}{
		{1, 0, 60},       // 120 × 0.5
		{1, 0.5, 90},     // 120 × 0.75
		{3, 0.25, 300},   // 480 × 0.625
		{10, 0, 7200},    // 14400 × 0.5
		{10, 0.5, 10800}, // 14400 × 0.75
		{0, 0.75, 52.5},  // 60 × 0.875
		{2, 0.125, 135},  // 240 × 0.5625
	}
	for _, tt := range tests {
		if got := Backoff(tt.n, jitter(tt.u)); got != tt.want {
			t.Errorf("Backoff(%d) with Float64 %g = %g, want %g", tt.n, tt.u, got, tt.want)
		}
	}
	// The largest Float64 keeps the factor below 1.
	if got := Backoff(8, rand.New(constSource(math.MaxUint64))); got >= 14400 || got < 14399.99 {
		t.Errorf("Backoff(8) at the top of [0.5, 1) = %v, want just below 14400", got)
	}
	// A real seeded source stays in [cap/2, cap) and is reproducible.
	r1, r2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 20; n++ {
		b1, b2 := Backoff(n, r1), Backoff(n, r2)
		if b1 != b2 || b1 < BackoffCap(n)/2 || b1 >= BackoffCap(n) {
			t.Errorf("Backoff(%d) = %v and %v, want equal and in [%v, %v)", n, b1, b2, BackoffCap(n)/2, BackoffCap(n))
		}
	}
}

func TestRPCFailed(t *testing.T) {
	urls := []string{"http://s/cgi"}
	tests := []struct {
		name        string
		in          state.Project
		u           float64
		want        state.Project
		wantBackoff float64
	}{
		{"first failure", state.Project{SchedulerURLs: urls},
			0.5, state.Project{SchedulerURLs: urls, NRPCFailures: 1, MinRPCTime: t0 + 90}, 90}, // 120 × 0.75
		{"ninth to tenth sets the master flag", state.Project{SchedulerURLs: urls, NRPCFailures: 9},
			0, state.Project{SchedulerURLs: urls, NRPCFailures: 10, MinRPCTime: t0 + 7200, MasterFetchPending: true}, 7200}, // 14400 × 0.5
		{"tenth to eleventh keeps the flag as it was", state.Project{SchedulerURLs: urls, NRPCFailures: 10},
			0, state.Project{SchedulerURLs: urls, NRPCFailures: 11, MinRPCTime: t0 + 7200}, 7200},
		{"twentieth sets it again", state.Project{SchedulerURLs: urls, NRPCFailures: 19},
			0, state.Project{SchedulerURLs: urls, NRPCFailures: 20, MinRPCTime: t0 + 7200, MasterFetchPending: true}, 7200},
		{"no scheduler URL: fetch the master file", state.Project{NRPCFailures: 2},
			0, state.Project{NRPCFailures: 3, MinRPCTime: t0 + 240, MasterFetchPending: true}, 240}, // 480 × 0.5
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.in
			b := RPCFailed(&p, t0, jitter(tt.u))
			if diff := cmp.Diff(tt.want, p); diff != "" {
				t.Errorf("project (-want +got)\n%s", diff)
			}
			if b != tt.wantBackoff {
				t.Errorf("backoff %v, want %v", b, tt.wantBackoff)
			}
		})
	}
}

// TestReportFailed: seed 000's report_result_session, on failure, only counts it and
// backs off (nrpc_failures++, min_rpc_time = exponential_backoff): unlike the get-work
// session it never sets fetch_master_flag, even at the tenth failure in a row. A
// project without scheduler URLs still gets the flag (its master file is its only
// source of them).
func TestReportFailed(t *testing.T) {
	urls := []string{"http://s/cgi"}
	tests := []struct {
		name        string
		in          state.Project
		u           float64
		want        state.Project
		wantBackoff float64
	}{
		{"first failure", state.Project{SchedulerURLs: urls},
			0.5, state.Project{SchedulerURLs: urls, NRPCFailures: 1, MinRPCTime: t0 + 90}, 90}, // 120 × 0.75
		{"ninth to tenth: no master flag", state.Project{SchedulerURLs: urls, NRPCFailures: 9},
			0, state.Project{SchedulerURLs: urls, NRPCFailures: 10, MinRPCTime: t0 + 7200}, 7200}, // 14400 × 0.5
		{"nineteenth to twentieth: none either", state.Project{SchedulerURLs: urls, NRPCFailures: 19},
			0.25, state.Project{SchedulerURLs: urls, NRPCFailures: 20, MinRPCTime: t0 + 9000}, 9000}, // 14400 × 0.625
		{"a flag already set stays", state.Project{SchedulerURLs: urls, NRPCFailures: 10, MasterFetchPending: true},
			0, state.Project{SchedulerURLs: urls, NRPCFailures: 11, MinRPCTime: t0 + 7200, MasterFetchPending: true}, 7200},
		{"no scheduler URL: fetch the master file", state.Project{NRPCFailures: 1},
			0, state.Project{NRPCFailures: 2, MinRPCTime: t0 + 120, MasterFetchPending: true}, 120}, // 240 × 0.5
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.in
			b := ReportFailed(&p, t0, jitter(tt.u))
			if diff := cmp.Diff(tt.want, p); diff != "" {
				t.Errorf("project (-want +got)\n%s", diff)
			}
			if b != tt.wantBackoff {
				t.Errorf("backoff %v, want %v", b, tt.wantBackoff)
			}
		})
	}
}

func TestRPCSucceeded(t *testing.T) {
	tests := []struct {
		name  string
		in    state.Project
		delay float64
		want  state.Project
	}{
		{"clears failures", state.Project{NRPCFailures: 5, MinRPCTime: t0 - 10},
			0, state.Project{MinRPCTime: t0 - 10}},
		{"request_delay", state.Project{NRPCFailures: 1},
			600, state.Project{MinRPCTime: t0 + 600}},
		{"master flag left for the session's end", state.Project{NRPCFailures: 10, MasterFetchPending: true},
			0, state.Project{MasterFetchPending: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.in
			RPCSucceeded(&p, t0, tt.delay)
			if diff := cmp.Diff(tt.want, p); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestAttempt(t *testing.T) {
	down := errors.New("down")
	tests := []struct {
		name      string
		urls      []string
		up        map[string]bool
		wantURL   string
		wantErr   error
		wantTried []string
	}{
		{"first answers", []string{"a", "b"}, map[string]bool{"a": true, "b": true}, "a", nil, []string{"a"}},
		{"second answers", []string{"a", "b", "c"}, map[string]bool{"b": true}, "b", nil, []string{"a", "b"}},
		{"all down", []string{"a", "b"}, nil, "", down, []string{"a", "b"}},
		{"no URL", nil, nil, "", ErrNoScheduler, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tried []string
			u, err := Attempt(tt.urls, func(u string) error {
				tried = append(tried, u)
				if tt.up[u] {
					return nil
				}
				return down
			})
			if u != tt.wantURL || !errors.Is(err, tt.wantErr) {
				t.Errorf("got %q, %v; want %q, %v", u, err, tt.wantURL, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantTried, tried); diff != "" {
				t.Errorf("tried (-want +got)\n%s", diff)
			}
		})
	}
}

func TestMasterFetched(t *testing.T) {
	old := []string{"http://a/cgi", "http://b/cgi"}
	flagged := state.Project{SchedulerURLs: old, NRPCFailures: 10, MinRPCTime: t0 + 7200, MasterFetchPending: true}
	tests := []struct {
		name string
		urls []string
		err  error
		want state.Project
		out  MasterOutcome
	}{
		// 11th failure: 14400 × 0.5
		{"fetch error", nil, errors.New("timeout"),
			state.Project{SchedulerURLs: old, NRPCFailures: 11, MinRPCTime: t0 + 7200, MasterFetchPending: true}, MasterFailed},
		{"page names no scheduler", nil, nil,
			state.Project{SchedulerURLs: old, NRPCFailures: 11, MinRPCTime: t0 + 7200, MasterFetchPending: true}, MasterFailed},
		{"new scheduler URL", []string{"http://c/cgi", "http://a/cgi"}, nil,
			state.Project{SchedulerURLs: []string{"http://c/cgi", "http://a/cgi"}}, MasterNewSchedulers},
		{"same URLs in another order", []string{"http://b/cgi", "http://a/cgi"}, nil,
			state.Project{SchedulerURLs: old, NRPCFailures: 10, MinRPCTime: t0 + 7200}, MasterUnchanged},
		{"fewer of the same URLs", []string{"http://b/cgi"}, nil,
			state.Project{SchedulerURLs: old, NRPCFailures: 10, MinRPCTime: t0 + 7200}, MasterUnchanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := flagged
			p.SchedulerURLs = append([]string(nil), old...)
			out := MasterFetched(&p, tt.urls, tt.err, t0, jitter(0))
			if out != tt.out {
				t.Errorf("outcome %v, want %v", out, tt.out)
			}
			if diff := cmp.Diff(tt.want, p); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	// A project with no URLs yet gets its first ones.
	p := state.Project{NRPCFailures: 3, MinRPCTime: t0 + 100, MasterFetchPending: true}
	if out := MasterFetched(&p, []string{"http://s/"}, nil, t0, jitter(0)); out != MasterNewSchedulers || p.NRPCFailures != 0 || p.MinRPCTime != 0 {
		t.Errorf("first URLs: %v %+v", out, p)
	}
}

// TestExpDecayIsUpdateExpAvgCPU: one ExpDecay used update after update, with intervals
// that repeat and change (and a clock that stands or goes back), gives the averages a
// fresh UpdateExpAvgCPU gives, to the last bit.
func TestExpDecayIsUpdateExpAvgCPU(t *testing.T) {
	a, b := state.Project{ExpAvgCPU: 5000, ExpAvgTime: t0}, state.Project{ExpAvgCPU: 5000, ExpAvgTime: t0}
	var d ExpDecay
	now := t0
	for i := range 500 {
		switch {
		case i%97 == 0:
			now -= 30 // back: no decay
		case i%50 < 40:
			now += 60
		default:
			now += float64(i)
		}
		cpu := float64(i % 7 * 30)
		UpdateExpAvgCPU(&a, cpu, now)
		d.UpdateExpAvgCPU(&b, cpu, now)
		if a.ExpAvgCPU != b.ExpAvgCPU || a.ExpAvgTime != b.ExpAvgTime {
			t.Fatalf("update %d: UpdateExpAvgCPU %g at %g, ExpDecay %g at %g", i, a.ExpAvgCPU, a.ExpAvgTime, b.ExpAvgCPU, b.ExpAvgTime)
		}
	}
}
