package quota

import (
	"testing"
)

const day0 = 1_700_000_000.0 // a time on UTC day 19675

func TestLeft(t *testing.T) {
	today := DayOf(day0)
	for _, tc := range []struct {
		name       string
		l          Limits
		s          State
		inst, busy int
		now        float64
		want       int
		why        string
	}{
		{"no limits", Limits{}, State{}, 4, 100, day0, -1, ""},
		{"a new host: the app's quota times its CPUs", Limits{PerDay: 500}, State{}, 4, 0, day0, 2000, ""},
		{"jobs sent today count", Limits{PerDay: 5}, State{Today: 7, Day: today}, 2, 0, day0, 3, ""},
		{"yesterday's do not", Limits{PerDay: 5}, State{Today: 10, Day: today}, 2, 0, day0 + 86400, 10, ""},
		{"spent", Limits{PerDay: 5}, State{Today: 10, Day: today}, 2, 0, day0, 0, "This computer has finished a daily quota of 10 tasks"},
		{"the host's own quota, lowered by errors", Limits{PerDay: 5}, State{MaxPerDay: 3}, 2, 0, day0, 6, ""},
		{"a quota of 1 is not multiplied", Limits{PerDay: 5}, State{MaxPerDay: 1}, 64, 0, day0, 1, ""},
		{"a host's quota above the app's counts as the app's", Limits{PerDay: 5}, State{MaxPerDay: 50}, 1, 0, day0, 5, ""},
		{"in progress per instance", Limits{InProgress: 10}, State{}, 64, 600, day0, 40, ""},
		{"in progress full", Limits{PerDay: 500, InProgress: 10}, State{}, 64, 640, day0, 0, "This computer has reached a limit on tasks in progress"},
		{"the smaller of the two", Limits{PerDay: 5, InProgress: 10}, State{}, 1, 3, day0, 5, ""},
	} {
		n, why := Left(tc.l, tc.s, tc.inst, tc.busy, tc.now)
		if n != tc.want || why != tc.why {
			t.Errorf("%s: Left = %d, %q; want %d, %q", tc.name, n, why, tc.want, tc.why)
		}
	}
}

// TestErrorsAndSuccesses: BOINC's rule (sched_result.cpp got_bad_result and
// got_good_result): an error takes one off, at least 1; a success doubles, up to the
// app's quota.
func TestErrorsAndSuccesses(t *testing.T) {
	l := Limits{PerDay: 8}
	s := State{}
	var got []int
	for _, ok := range []bool{false, false, false, false, false, false, false, false, true, true, true, true} {
		if ok {
			s = AfterSuccess(l, s)
		} else {
			s = AfterError(l, s)
		}
		got = append(got, s.MaxPerDay)
	}
	want := []int{7, 6, 5, 4, 3, 2, 1, 1, 2, 4, 8, 8}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("quota after each result: %v, want %v", got, want)
		}
	}
	if s := AfterError(Limits{}, State{MaxPerDay: 3}); s.MaxPerDay != 3 {
		t.Errorf("no daily limit: an error changed the state to %+v", s)
	}
}

func TestSentAndCaps(t *testing.T) {
	s := Sent(State{Today: 4, Day: DayOf(day0)}, 3, day0)
	if s.Today != 7 {
		t.Errorf("same day: %+v", s)
	}
	if s = Sent(s, 2, day0+86400); s.Today != 2 || s.Day != DayOf(day0)+1 {
		t.Errorf("next day: %+v", s)
	}
	for _, tc := range [][3]int{{65536, MaxCPUs, 64}, {4, MaxCPUs, 4}, {0, MaxCPUs, 1}, {-3, MaxGPUs, 1}, {100, MaxGPUs, 64}} {
		if got := CapInstances(tc[0], tc[1]); got != tc[2] {
			t.Errorf("CapInstances(%d, %d) = %d, want %d", tc[0], tc[1], got, tc[2])
		}
	}
}
