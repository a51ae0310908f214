// Package quota is the scheduler's bound on what one host may take of one app version:
// jobs a day and jobs in progress, per instance of the version's resource (a CPU, or
// a GPU of its type), with the counts of instances a host may claim capped. It follows
// BOINC's scheduler (sched/sched_version.cpp, sched_send.cpp, sched_result.cpp,
// transitioner.cpp; docs/decisions.md, quotas): each (host, app version) has its own
// daily quota, max_jobs_per_day, between 1 and the app's; an error result takes one
// off it, a valid result doubles it back up to the app's, and a day's count of jobs sent is
// held against it times the host's instances. The functions are pure: the state comes
// in, the new state goes out; lib/store keeps it (table host_app_version), lib/server
// applies it and the reported errors, bretry's pass the timeouts and the valid results.
package quota

import (
	"fmt"
	"math"
)

// The most instances a host may claim for the quotas and for filling a request, as
// BOINC's scheduler caps them: config.max_ncpus (default MAX_NCPUS, 64) for CPUs and
// MAX_GPUS (64) for the GPUs of one type. A host claiming 65,536 CPUs is taken at 64.
const (
	MaxCPUs = 64
	MaxGPUs = 64
)

// Defaults of a new app: BOINC's make_project writes daily_result_quota 500 into a new
// project's config.xml; BOINC has no default bound on jobs in progress, bkit has 10 an
// instance, so that one host (at most 64 instances) cannot hold more than 640 jobs of
// a version however many it claims.
const (
	DefaultPerDay     = 500
	DefaultInProgress = 10
)

// Limits are an app's quotas for one resource: jobs a day per instance (BOINC's
// daily_result_quota) and jobs in progress per instance (BOINC's max_wus_in_progress
// and max_wus_in_progress_gpu). 0 means no limit.
type Limits struct {
	PerDay     int
	InProgress int
}

// State is one (host, app version)'s quota state, BOINC's host_app_version columns:
// MaxPerDay is max_jobs_per_day (0: not set yet, which counts as the app's PerDay);
// Today the jobs sent on Day, a UTC day number (Unix seconds / 86,400), as BOINC's
// n_jobs_today counts the jobs of the day of the host's last request.
type State struct {
	MaxPerDay int
	Today     int
	Day       int64
}

// DayOf is the UTC day number of time now.
func DayOf(now float64) int64 { return int64(math.Floor(now / 86400)) }

// CapInstances is how many instances of a resource a host is taken to have when it
// claims n: at most max (MaxCPUs or MaxGPUs), at least 1.
func CapInstances(n, most int) int {
	return max(1, min(most, n))
}

// perDay is the state's daily quota per instance, within [1, l.PerDay] as BOINC keeps
// it (a value above the app's, set before the app's was lowered, counts as the app's).
func perDay(l Limits, s State) int {
	if s.MaxPerDay <= 0 || s.MaxPerDay > l.PerDay {
		return l.PerDay
	}
	return s.MaxPerDay
}

// Left is how many more jobs of the version the host may be sent now, having
// instances (capped: CapInstances) of its resource and inProgress jobs of it in
// progress, and why no more, when none: BOINC's message, which the client logs. -1
// means no limit.
func Left(l Limits, s State, instances, inProgress int, now float64) (n int, why string) {
	n = -1
	if l.PerDay > 0 {
		// BOINC does not scale a quota of 1 (a host that keeps failing gets one job
		// a day, however many instances it has).
		per := perDay(l, s)
		day := per
		if per > 1 {
			day = per * instances
		}
		today := s.Today
		if s.Day != DayOf(now) {
			today = 0
		}
		if n = max(0, day-today); n == 0 {
			return 0, fmt.Sprintf("This computer has finished a daily quota of %d tasks", day)
		}
	}
	if l.InProgress > 0 {
		m := max(0, l.InProgress*instances-inProgress)
		if m == 0 {
			return 0, "This computer has reached a limit on tasks in progress"
		}
		if n < 0 || m < n {
			n = m
		}
	}
	return n, ""
}

// Sent counts k more jobs sent now.
func Sent(s State, k int, now float64) State {
	if d := DayOf(now); s.Day != d {
		s.Day, s.Today = d, 0
	}
	s.Today += k
	return s
}

// AfterError is the state after an error result of the version on the host (a
// reported error, not an abort by the project, or a result that timed out): its
// daily quota one less, at least 1 (BOINC's got_bad_result and result_timed_out).
func AfterError(l Limits, s State) State {
	if l.PerDay <= 0 {
		return s
	}
	s.MaxPerDay = max(1, perDay(l, s)-1)
	return s
}

// AfterSuccess is the state after a result the validator found valid: its daily quota
// doubled, up to the app's (BOINC's got_good_result, which BOINC's scheduler applies
// at report time; bkit at validation, docs/decisions.md).
func AfterSuccess(l Limits, s State) State {
	if l.PerDay <= 0 {
		return s
	}
	s.MaxPerDay = min(l.PerDay, 2*perDay(l, s))
	return s
}
