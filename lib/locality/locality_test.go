package locality

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlanCursors(t *testing.T) {
	ones := func(n int) []float64 {
		c := make([]float64, n)
		for i := range c {
			c[i] = 1
		}
		return c
	}
	for _, tc := range []struct {
		name     string
		credit   []float64
		hosts    int
		teamSize int
		want     []Range
	}{
		{"one team per team size", ones(100), 40, 10, []Range{{0, 24}, {25, 49}, {50, 74}, {75, 99}}},
		{"no hosts: one cursor", ones(10), 0, 10, []Range{{0, 9}}},
		{"more cursors than jobs: one per job", ones(3), 100, 10, []Range{{0, 0}, {1, 1}, {2, 2}}},
		// Density: the first half of the jobs are heavy, so the first cursors are short.
		{"equal credit, not equal jobs", []float64{3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 20, 10,
			[]Range{{0, 3}, {4, 15}}},
		{"default team size", ones(20), 20, 0, []Range{{0, 9}, {10, 19}}},
		{"no jobs", nil, 10, 10, nil},
	} {
		if d := cmp.Diff(tc.want, PlanCursors(tc.credit, tc.hosts, tc.teamSize)); d != "" {
			t.Errorf("%s (-want +got)\n%s", tc.name, d)
		}
	}
}

// TestPlanCursorsCovers checks that the ranges always cover every job once, in order.
func TestPlanCursorsCovers(t *testing.T) {
	for n := 1; n < 60; n++ {
		for hosts := 0; hosts < 80; hosts += 7 {
			credit := make([]float64, n)
			for i := range credit {
				credit[i] = float64(1 + (i*7)%5)
			}
			rs := PlanCursors(credit, hosts, 10)
			next := int64(0)
			for _, r := range rs {
				if r.First != next || r.Last < r.First {
					t.Fatalf("n=%d hosts=%d: %v", n, hosts, rs)
				}
				next = r.Last + 1
			}
			if next != int64(n) {
				t.Fatalf("n=%d hosts=%d: %v does not reach the last job", n, hosts, rs)
			}
		}
	}
}

func TestHostRate(t *testing.T) {
	if got := HostRate(50, 1e9, 4, 1, 1); got != 50 {
		t.Errorf("earned credit: %g, want 50", got)
	}
	// 1 GFLOPS for a day is 200 credits; 4 CPUs on half the time: 400.
	if got := HostRate(0, 1e9, 4, 0.5, 1); math.Abs(got-400) > 1e-9 {
		t.Errorf("estimate: %g, want 400", got)
	}
	if got := HostRate(0, 0, 0, 0, 0); math.Abs(got-200) > 1e-9 {
		t.Errorf("nothing known: %g, want 200 (1 GFLOPS, 1 CPU)", got)
	}
}

func TestEstTimeLeft(t *testing.T) {
	if got := EstTimeLeft(Cursor{RemainingCredit: 100, ExpavgCredit: 10}); got != 10 {
		t.Errorf("got %g, want 10", got)
	}
	if got := EstTimeLeft(Cursor{RemainingCredit: 100}); !math.IsInf(got, 1) {
		t.Errorf("no team credit: got %g, want +Inf", got)
	}
	if got := EstTimeLeft(Cursor{ExpavgCredit: 10}); got != 0 {
		t.Errorf("finished: got %g, want 0", got)
	}
}

func TestAdmits(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Cursor
		rate float64
		want bool
	}{
		{"empty team", Cursor{}, 100, true},
		{"team of one: the rule starts at two", Cursor{NHosts: 1, ExpavgCredit: 1, MaxHostCredit: 1}, 100, true},
		{"fastest no faster than the rest", Cursor{NHosts: 2, ExpavgCredit: 20, MaxHostCredit: 10}, 20, true},
		{"joining host faster than the rest", Cursor{NHosts: 2, ExpavgCredit: 20, MaxHostCredit: 10}, 21, false},
		{"a slower host helps an unbalanced team", Cursor{NHosts: 2, ExpavgCredit: 40, MaxHostCredit: 35}, 1, true},
		{"same user", Cursor{HasUser: true}, 1, false},
	} {
		if got := Admits(tc.c, tc.rate); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestChooseCursor(t *testing.T) {
	c := func(id int64, remaining, credit float64) Cursor {
		return Cursor{ID: id, RemainingCredit: remaining, ExpavgCredit: credit}
	}
	user := func(c Cursor) Cursor { c.HasUser = true; return c }
	team := func(c Cursor, n int, fastest float64) Cursor { c.NHosts, c.MaxHostCredit = n, fastest; return c }
	for _, tc := range []struct {
		name    string
		cursors []Cursor
		current int64
		rate    float64
		want    int64
	}{
		{"new host: greatest time left", []Cursor{c(1, 100, 10), c(2, 100, 5)}, 0, 1, 2},
		{"new host: no team credit is infinite time left", []Cursor{c(1, 100, 10), c(2, 1, 0)}, 0, 1, 2},
		{"new host: ties to the lowest id", []Cursor{c(1, 100, 0), c(2, 100, 0)}, 0, 1, 1},
		{"new host: finished cursors take no one", []Cursor{c(1, 0, 10)}, 0, 1, 0},
		{"new host: not a team with its user", []Cursor{c(1, 100, 10), user(c(2, 100, 5))}, 0, 1, 1},
		{"new host: not a team it would outrun", []Cursor{c(1, 100, 10), team(c(2, 100, 5), 2, 3)}, 0, 6, 1},
		{"new host: rules give way when no team admits it", []Cursor{user(c(1, 100, 10)), user(c(2, 100, 5))}, 0, 1, 2},
		{"stay: not less than half", []Cursor{c(1, 50, 10), c(2, 100, 10)}, 1, 1, 1},
		{"move: less than half", []Cursor{c(1, 49, 10), c(2, 100, 10)}, 1, 1, 2},
		{"move off a finished cursor", []Cursor{c(1, 0, 10), c(2, 100, 10)}, 1, 1, 2},
		{"stay when every other cursor is finished", []Cursor{c(1, 10, 10), c(2, 0, 10)}, 1, 1, 1},
		{"move: only to a team that admits it", []Cursor{c(1, 10, 10), user(c(2, 100, 10)), c(3, 30, 10)}, 1, 1, 3},
		// The seed's D is the cursor with the greatest est_time_left: when that is the
		// host's own (20/2 = 10 days against 10/2 = 5), it stays.
		{"stay: its own cursor has the greatest time left", []Cursor{c(1, 20, 2), c(2, 10, 2)}, 1, 1, 1},
		// 1 day (10/10) < 0.5 × infinite (a team left empty): move.
		{"move: to a team with no credit", []Cursor{c(1, 10, 10), c(2, 10, 10), c(3, 1, 0)}, 1, 1, 3},
		// A team of two with fastest 10 and credit 15 (10 + 5): a host of 15 would be a
		// fastest host no faster than the rest (15 ≤ 15), a host of 16 would not.
		{"new host: fastest equal to the rest joins", []Cursor{c(1, 100, 40), team(c(2, 100, 15), 2, 10)}, 0, 15, 2},
		{"new host: fastest faster than the rest does not", []Cursor{c(1, 100, 40), team(c(2, 100, 15), 2, 10)}, 0, 16, 1},
	} {
		if got := ChooseCursor(tc.cursors, tc.current, tc.rate); got != tc.want {
			t.Errorf("%s: cursor %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestGenerateCount(t *testing.T) {
	for _, tc := range []struct {
		unsent, cushion int
		first, last     int64
		want            int
	}{
		{0, 10, 0, 99, 10},
		{4, 10, 20, 99, 6},
		{12, 10, 20, 99, 0},
		{0, 10, 95, 99, 5},
		{0, 10, 100, 99, 0},
	} {
		if got := GenerateCount(tc.unsent, tc.cushion, tc.first, tc.last); got != tc.want {
			t.Errorf("GenerateCount(%d, %d, %d, %d) = %d, want %d", tc.unsent, tc.cushion, tc.first, tc.last, got, tc.want)
		}
	}
}

func TestTransitionStep(t *testing.T) {
	j := func(num int64, finished, counted bool) Job {
		return Job{Num: num, Credit: 10, Finished: finished, Counted: counted}
	}
	for _, tc := range []struct {
		name           string
		first, last    int64
		remaining      float64
		changed, front []Job
		wantNext       int64
		wantRemaining  float64
		wantCounted    []bool
	}{
		{"advance past finished jobs", 0, 9, 100, []Job{j(0, true, false), j(1, true, false), j(3, true, false)},
			[]Job{j(0, true, false), j(1, true, false), j(2, false, false)}, 2, 70, []bool{true, true, true}},
		{"out of order: first unfinished stays", 0, 9, 100, []Job{j(2, true, false), j(1, true, false)},
			[]Job{j(0, false, false)}, 0, 80, []bool{true, true}},
		{"ungenerated job stops it", 0, 9, 100, []Job{j(0, true, false), j(2, true, false)},
			[]Job{j(0, true, false), j(2, true, false)}, 1, 80, []bool{true, true}},
		{"all finished", 5, 6, 20, []Job{j(6, true, false)}, []Job{j(5, true, false), j(6, true, false)}, 7, 0, []bool{true}},
		{"nothing generated", 0, 9, 100, nil, nil, 0, 100, []bool{}},
		{"jobs of other ranges ignored", 3, 4, 20, []Job{j(2, true, false), j(5, true, false), j(3, true, false)},
			[]Job{j(3, true, false), j(4, false, false)}, 4, 10, []bool{true, true, true}},
		// Counted before: its credit is off already, passing it takes nothing more.
		{"counted job passed", 0, 9, 90, nil, []Job{j(0, true, true), j(1, false, false)}, 1, 90, []bool{}},
		// A finished job the transitioner had not looked at is taken off as the front
		// passes it, once.
		{"uncounted job passed", 0, 9, 100, nil, []Job{j(0, true, false), j(1, false, false)}, 1, 90, []bool{}},
		// The retry job added a result to a counted job: its credit is remaining again.
		{"no longer finished", 0, 9, 80, []Job{j(4, false, true)}, []Job{j(0, false, false)}, 0, 90, []bool{false}},
		{"last job left keeps remaining above 0", 0, 1, 10, []Job{j(1, true, false)}, []Job{j(0, false, false)}, 0, math.SmallestNonzeroFloat64, []bool{true}},
	} {
		next, rem, counted := TransitionStep(tc.first, tc.last, tc.remaining, tc.changed, tc.front)
		if next != tc.wantNext || math.Abs(rem-tc.wantRemaining) > 1e-9 || (rem == 0) != (tc.wantRemaining == 0) || fmt.Sprint(counted) != fmt.Sprint(tc.wantCounted) {
			t.Errorf("%s: next %d remaining %g counted %v, want %d %g %v", tc.name, next, rem, counted, tc.wantNext, tc.wantRemaining, tc.wantCounted)
		}
	}
}

func TestTeamCredit(t *testing.T) {
	sum, fastest := TeamCredit([]float64{1, 5, 2})
	if sum != 8 || fastest != 5 {
		t.Errorf("got %g %g, want 8 5", sum, fastest)
	}
}

func TestStreams(t *testing.T) {
	if got := DefaultStreamJobs(50000, 5000); got != 200 {
		t.Errorf("DefaultStreamJobs(50000, 5000) = %d, want 200 (20 files of 10 jobs)", got)
	}
	if got := DefaultStreamJobs(3, 100); got != 1 {
		t.Errorf("DefaultStreamJobs(3, 100) = %d, want 1", got)
	}
	r := Range{First: 100, Last: 209}
	for _, tc := range []struct {
		job, stream int64
		rng         Range
	}{{100, 0, Range{100, 149}}, {149, 0, Range{100, 149}}, {150, 1, Range{150, 199}}, {209, 2, Range{200, 209}}} {
		s := StreamOf(r.First, 50, tc.job)
		if s != tc.stream || StreamRange(r, 50, s) != tc.rng {
			t.Errorf("job %d: stream %d %v, want %d %v", tc.job, s, StreamRange(r, 50, s), tc.stream, tc.rng)
		}
	}
	for _, tc := range []struct {
		name    string
		streams []Stream
		want    int64
	}{
		{"none", nil, -1},
		{"the oldest no one serves", []Stream{{3, 1}, {4, 0}, {5, 0}}, 4},
		{"all served: the fewest members, oldest first", []Stream{{0, 3}, {1, 2}, {2, 2}}, 1},
	} {
		if got := ChooseStream(tc.streams); got != tc.want {
			t.Errorf("%s: ChooseStream = %d, want %d", tc.name, got, tc.want)
		}
	}
}
