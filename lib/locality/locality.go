// Package locality owns the decisions of seed 004, locality scheduling, as pure
// functions over plain data: how a batch's jobs are cut into cursors (PlanCursors), a
// host's credit rate (HostRate), est_time_left, which cursor a host joins or moves to
// under the team rules (ChooseCursor), how many jobs the work generator adds to keep a
// cursor's cushion (GenerateCount), the transitioner's step over finished jobs
// (TransitionStep), and a team's credit as the locality daemon recomputes it
// (TeamCredit).
//
// Vocabulary (the seed's): a batch is a sequence of files F1…Fn and jobs J1…Jm, each job
// using a contiguous run of files; a cursor is a team of hosts plus a contiguous range
// of jobs; est_time_left(cursor) = remaining_credit / expavg_credit.
//
// lib/store runs these decisions inside database transactions; lib/server calls
// ChooseCursor for each scheduler request; blocality's daemons and simulate call the
// rest. Nothing here reads a clock, draws a random number or does I/O.
package locality

import (
	"math"

	"github.com/bkit/bkit/lib/credit"
)

// CreditPerFlop converts floating-point operations to credit (BOINC's cobblestone, the
// validator's: credit.PerFlop), so that remaining_credit and expavg_credit (credit per
// day) divide to days.
const CreditPerFlop = credit.PerFlop

// Defaults of the batch and the daemons.
const (
	// DefaultTeamSize is the smallest of the seed's "10 or 20": teams as small as the
	// fastest-host rule allows.
	DefaultTeamSize = 10
	// DefaultCushion is how many unsent jobs the generator keeps per cursor.
	DefaultCushion = 40
	// DefaultTeamTimeout is how long a host may stay silent before it leaves its
	// team (seconds).
	DefaultTeamTimeout = 3 * 86400
)

// Range is a contiguous range of job numbers, First..Last inclusive.
type Range struct{ First, Last int64 }

// PlanCursors cuts jobs 0..len(credit)-1 into contiguous ranges of roughly equal
// estimated credit: one cursor per teamSize active hosts (at least one, at most one
// per job). Equal credit rather than equal job counts is what makes a region of the
// file sequence dense in jobs get more cursors (seed 004: "based on # of hosts, # of
// jobs, and job density").
func PlanCursors(credit []float64, activeHosts, teamSize int) []Range {
	n := len(credit)
	if n == 0 {
		return nil
	}
	if teamSize <= 0 {
		teamSize = DefaultTeamSize
	}
	k := max(1, int(math.Round(float64(activeHosts)/float64(teamSize))))
	k = min(k, n)
	total := 0.0
	for _, c := range credit {
		total += max(c, 0)
	}
	out := make([]Range, 0, k)
	first, sum := int64(0), 0.0
	for j := 0; j < n; j++ {
		sum += max(credit[j], 0)
		cut := len(out) + 1 // the cursor this job ends, if it ends one
		left := n - 1 - j   // jobs after this one
		mustCut := left == k-cut
		wantCut := total > 0 && sum >= total*float64(cut)/float64(k)-1e-9*total
		if cut < k && left >= k-cut && (wantCut || mustCut) {
			out = append(out, Range{first, int64(j)})
			first = int64(j + 1)
		}
	}
	return append(out, Range{first, int64(n - 1)})
}

// Host is what the team rules need to know of a host.
type Host struct {
	UserID int64   // 0: unknown, never conflicts
	Rate   float64 // credit per day (HostRate)
}

// HostRate is a host's credit rate for team credit: its expavg_credit when it has
// earned any, else what its processors would earn at peak, scaled by the time it is on
// and allowed to compute (a host new to the project would otherwise count as nothing
// and every team of new hosts would look infinitely slow).
func HostRate(expavgCredit, pFpops float64, pNCPUs int, onFrac, activeFrac float64) float64 {
	if expavgCredit > 0 {
		return expavgCredit
	}
	if pFpops <= 0 {
		pFpops = 1e9
	}
	n := float64(max(pNCPUs, 1))
	if onFrac <= 0 {
		onFrac = 1
	}
	if activeFrac <= 0 {
		activeFrac = 1
	}
	return pFpops * n * onFrac * activeFrac * 86400 * CreditPerFlop
}

// Cursor is a cursor with what the team rules need of its team.
type Cursor struct {
	ID              int64
	RemainingCredit float64
	ExpavgCredit    float64 // the team's credit per day
	NHosts          int     // team size
	MaxHostCredit   float64 // the fastest member's rate
	HasUser         bool    // a member belongs to the requesting host's user
}

// EstTimeLeft is seed 004's est_time_left(cursor) = remaining_credit/expavg_credit in
// days: 0 when the cursor's jobs are all finished, infinite for a team with no credit
// (DESIGN.md section 5).
func EstTimeLeft(c Cursor) float64 {
	switch {
	case c.RemainingCredit <= 0:
		return 0
	case c.ExpavgCredit <= 0:
		return math.Inf(1)
	}
	return c.RemainingCredit / c.ExpavgCredit
}

// Admits reports whether the team rules let a host of rate join c's team: no member of
// the host's user, and, once the team has two members, the host would not become a
// fastest host faster than the rest together. A team of one cannot meet the
// fastest-host rule (its host is faster than nobody), so teams form from one host and
// the rule applies from two; a host no faster than the team's fastest only brings the
// team closer to the rule, so it is always admitted.
func Admits(c Cursor, rate float64) bool {
	if c.HasUser {
		return false
	}
	if c.NHosts < 2 || rate <= c.MaxHostCredit {
		return true
	}
	return rate <= c.ExpavgCredit
}

// ChooseCursor is seed 004's host assignment for one batch, with the team rules. A host
// new to the batch (current 0) joins the cursor with the greatest est_time_left among
// those whose team admits it (DESIGN.md section 5 reads "least greatest" so). A host on
// cursor C moves to that cursor D when est_time_left(C) < 0.5 × est_time_left(D). When
// no unfinished cursor admits the host, est_time_left alone decides: a host always gets
// work, and the rules are restored as teams grow (docs/decisions.md). Ties go to the
// lowest id; a batch whose cursors are all finished gets no new hosts (0).
func ChooseCursor(cursors []Cursor, current int64, rate float64) int64 {
	var d, any *Cursor
	for i := range cursors {
		c := &cursors[i]
		if c.ID == current || EstTimeLeft(*c) <= 0 {
			continue
		}
		if any == nil || EstTimeLeft(*c) > EstTimeLeft(*any) {
			any = c
		}
		if Admits(*c, rate) && (d == nil || EstTimeLeft(*c) > EstTimeLeft(*d)) {
			d = c
		}
	}
	if d == nil {
		d = any
	}
	if current == 0 {
		if d == nil {
			return 0
		}
		return d.ID
	}
	if d == nil {
		return current
	}
	for _, c := range cursors {
		if c.ID == current && EstTimeLeft(c) < 0.5*EstTimeLeft(*d) {
			return d.ID
		}
	}
	return current
}

// GenerateCount is how many jobs the work generator adds to a cursor that has unsent
// jobs unsent and next job firstUngenerated: enough for a cushion of cushion unsent
// jobs, within the cursor's range.
func GenerateCount(unsent, cushion int, firstUngenerated, lastJob int64) int {
	want := int64(cushion - unsent)
	left := lastJob - firstUngenerated + 1
	return int(max(0, min(want, left)))
}

// Job is a generated job of a cursor as the transitioner sees it: whether it is
// finished now, and whether its credit is already off the cursor's remaining_credit
// (Counted: it was finished when the transitioner last looked at it).
type Job struct {
	Num      int64
	Credit   float64
	Finished bool // completed, successfully or not
	Counted  bool
}

// TransitionStep is seed 004's transitioner step, done on what changed since the last
// step rather than on every generated job (which made the pass cost the cushion, not
// the change). remaining is the cursor's remaining_credit: the estimated credit of
// its jobs from firstUnfinished to lastJob less that of the Counted ones. changed are
// the jobs whose state may have changed since (any order); front are the generated
// jobs from firstUnfinished on, in job order, as far as the caller read them (it may
// stop at the first unfinished one). first_unfinished_job_num moves past every
// finished job, in order, and stops at the first unfinished (or ungenerated) one;
// remaining takes off newly finished jobs and puts back jobs no longer finished (the
// retry job may add results to one). counted[i] is changed[i]'s new Counted.
func TransitionStep(firstUnfinished, lastJob int64, remaining float64, changed, front []Job) (next int64, newRemaining float64, counted []bool) {
	counted = make([]bool, len(changed))
	now := map[int64]bool{} // Counted after the changes, by job
	for i, j := range changed {
		counted[i] = j.Finished
		if j.Num < firstUnfinished || j.Num > lastJob {
			continue // passed already: no longer in remaining_credit
		}
		switch {
		case j.Finished && !j.Counted:
			remaining -= j.Credit
		case !j.Finished && j.Counted:
			remaining += j.Credit
		}
		now[j.Num] = j.Finished
	}
	next = firstUnfinished
	for _, j := range front {
		if j.Num != next || !j.Finished || next > lastJob {
			break
		}
		c, ok := now[j.Num]
		if !ok {
			c = j.Counted
		}
		if !c {
			remaining -= j.Credit // leaves the range uncounted
		}
		next++
	}
	if next > lastJob {
		return next, 0, counted
	}
	// Jobs are left, so the cursor is not finished (remaining 0 means finished),
	// whatever rounding did to the sum.
	return next, max(remaining, math.SmallestNonzeroFloat64), counted
}

// TeamCredit is what the locality daemon sets for a cursor: the sum and the maximum of
// its members' rates.
func TeamCredit(rates []float64) (sum, fastest float64) {
	for _, r := range rates {
		sum += r
		fastest = max(fastest, r)
	}
	return sum, fastest
}

// Per-host streams (a refinement of seed 004's "Assigning jobs", docs/decisions.md):
// a cursor's job range is cut into streams of StreamJobs consecutive jobs. A host
// takes unsent results from its own stream in job order; when its stream has nothing
// it may take, it joins a stream that needs a host: one that no other member of its
// team works on and could serve (oldest first; else the one with fewest). So each
// stretch of files is worked by about as many hosts as a job has results, instead of
// by every member that asks while the team's front passes over it.

// DefaultStreamFiles is how many files' worth of jobs a stream holds by default: long
// enough that the files two neighbouring streams share (a job uses a run of files) are
// a small part of a stream's files.
const DefaultStreamFiles = 20

// DefaultStreamJobs is the stream length of a batch of nJobs jobs over nFiles files:
// DefaultStreamFiles files' worth of jobs, at least 1.
func DefaultStreamJobs(nJobs, nFiles int) int64 {
	if nFiles <= 0 {
		return 1
	}
	return max(1, int64(math.Round(DefaultStreamFiles*float64(nJobs)/float64(nFiles))))
}

// StreamOf is the stream number of job in a cursor whose range starts at first.
func StreamOf(first, streamJobs, job int64) int64 { return (job - first) / streamJobs }

// StreamRange is the job range of stream num of the cursor r.
func StreamRange(r Range, streamJobs, num int64) Range {
	lo := r.First + num*streamJobs
	return Range{lo, min(r.Last, lo+streamJobs-1)}
}

// Stream is a stream with work a host may take, and how many other members of the
// team work on it and could take its next job.
type Stream struct {
	Num     int64
	Members int
}

// ChooseStream picks the stream a host joins when its own has nothing for it, among
// streams with work for it in job order: the first that no other member serves, else
// the one with fewest (the oldest of those); -1 when there is none.
func ChooseStream(streams []Stream) int64 {
	best := -1
	for i, s := range streams {
		if s.Members == 0 {
			return s.Num
		}
		if best < 0 || s.Members < streams[best].Members {
			best = i
		}
	}
	if best < 0 {
		return -1
	}
	return streams[best].Num
}
