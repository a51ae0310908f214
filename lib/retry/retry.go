// Package retry owns seed 003's result retry rules and the validation they depend on,
// as pure functions over plain rows: which results are lost (past their deadline with
// no reply), which workunits are due (past their retry check time, not waiting for
// validation, no canonical result), what to do with a due workunit (give up, or create
// new results and move its check time), and which successful results agree on a
// canonical result. No clock, no database: time comes in as now, rows as values.
// lib/programs/bretry runs these rules over lib/store's database in short batches.
//
// The order of the rules is the seed's: a result never sent gives up first, then
// NError error results, then Ndet results done, else Nredundancy − n new results. A
// workunit's own limits (BOINC's max_error_results, max_success_results,
// max_total_results: Limits) are checked beside the app's, as BOINC's transitioner
// does: each after the seed's rule of the same kind (Decide has the order).
package retry

import (
	"fmt"
	"math"
	"sort"

	"github.com/bkit/bkit/lib/limits"
)

// Result server states, outcomes and validate states: BOINC's numbers, the same as
// lib/store's (kept here so the rules need no database package).
const (
	ServerStateInactive   = 1
	ServerStateUnsent     = 2
	ServerStateInProgress = 4
	ServerStateOver       = 5

	OutcomeInit          = 0
	OutcomeSuccess       = 1
	OutcomeCouldntSend   = 2
	OutcomeClientError   = 3
	OutcomeNoReply       = 4
	OutcomeDidntNeed     = 5
	OutcomeValidateError = 6

	ValidateInit    = 0
	ValidateValid   = 1
	ValidateInvalid = 2
)

// Params are seed 003's project-supplied parameters of one app.
type Params struct {
	DWU         float64 // seconds from creating a workunit (or retrying it) to its next check
	Dresult     float64 // seconds from creating a result to its deadline
	NError      int     // give up after this many error results
	Ndet        int     // give up after this many results done without a canonical result
	Nredundancy int     // try to get at least this many non-error results
}

// Check says what is wrong with p, naming the parameter, or nil.
func (p Params) Check() error {
	switch {
	case !(p.DWU > 0) || math.IsInf(p.DWU, 0):
		return fmt.Errorf("DWU: must be > 0 seconds, got %v", p.DWU)
	case !(p.Dresult > 0) || math.IsInf(p.Dresult, 0):
		return fmt.Errorf("Dresult: must be > 0 seconds, got %v", p.Dresult)
	case p.NError < 1 || p.NError > limits.WorkunitResults:
		return fmt.Errorf("NError: must be 1 to %d, got %d", limits.WorkunitResults, p.NError)
	case p.Ndet < 1 || p.Ndet > limits.WorkunitResults:
		return fmt.Errorf("Ndet: must be 1 to %d, got %d", limits.WorkunitResults, p.Ndet)
	case p.Nredundancy < 1 || p.Nredundancy > limits.Redundancy:
		return fmt.Errorf("Nredundancy: must be 1 to %d, got %d", limits.Redundancy, p.Nredundancy)
	}
	return nil
}

// Limits are one workunit's own bounds on its results, BOINC's workunit columns that
// bserver work create and a batch set. 0 means no bound (a workunit of the database
// always has all three).
type Limits struct {
	MaxErrorResults   int // give up when more results than this failed
	MaxSuccessResults int // give up when more than this succeeded without a canonical result
	MaxTotalResults   int // never more results than this; give up when more are needed
}

// DefaultParams are an app's parameters until the project sets its own: the
// workunit table's defaults (max_error_results 3, max_success_results 6,
// target_nresults 1) and a day per result, two per workunit.
var DefaultParams = Params{DWU: 2 * 86400, Dresult: 86400, NError: 3, Ndet: 6, Nredundancy: 1}

// Result is one result of a workunit as the rules see it.
type Result struct {
	ID             int64
	ServerState    int
	Outcome        int
	ValidateState  int
	ReportDeadline float64
	// OutputDigest is what the client said its output hashes to; empty when it said
	// nothing, and then it agrees with every other success.
	OutputDigest string
}

// Workunit is one workunit as the rules see it.
type Workunit struct {
	ID                int64
	RetryCheckTime    float64 // 0: never (given up, or a canonical result found)
	NeedValidate      bool
	CanonicalResultID int64
}

// Lost reports whether r was sent and is past its deadline with no reply. "Past"
// is strictly after: a result whose deadline is now still has its chance.
func Lost(r Result, now float64) bool {
	return r.ServerState == ServerStateInProgress && r.ReportDeadline < now
}

// Due reports whether the retry rules handle w now: past its check time (strictly,
// and a check time of 0 means never), not waiting for validation, no canonical result.
func Due(w Workunit, now float64) bool {
	return w.RetryCheckTime > 0 && w.RetryCheckTime < now && !w.NeedValidate && w.CanonicalResultID == 0
}

// Kinds of result, as the rules count them.

// NotSent: the scheduler never sent it.
func NotSent(r Result) bool {
	return r.ServerState == ServerStateUnsent || r.ServerState == ServerStateInactive
}

// IsError: the host or the validator said it failed. A lost result (no reply) is
// neither an error (it says nothing about the application) nor done.
func IsError(r Result) bool {
	if r.ServerState != ServerStateOver {
		return false
	}
	switch r.Outcome {
	case OutcomeClientError, OutcomeValidateError, OutcomeCouldntSend:
		return true
	}
	return false
}

// Done: a successful (non-error) result came back.
func Done(r Result) bool {
	return r.ServerState == ServerStateOver && r.Outcome == OutcomeSuccess
}

// Reason says why a workunit was given up.
type Reason string

// The seed's three reasons to give up, in its order, and the workunit's own three
// (BOINC's error_mask bits of the same names).
const (
	None       Reason = ""
	NotSentYet Reason = "not_sent"  // a result was never sent
	TooManyErr Reason = "errors"    // at least NError error results
	TooManyDet Reason = "ndet_done" // at least Ndet results done, no canonical result

	TooManyErrorResults   Reason = "max_error_results"   // more error results than the workunit's max_error_results
	TooManySuccessResults Reason = "max_success_results" // more successes than its max_success_results, no canonical result
	TooManyTotalResults   Reason = "max_total_results"   // more results needed than its max_total_results allows
)

// Reasons lists every reason to give up, in the order Decide checks them.
var Reasons = []Reason{NotSentYet, TooManyErr, TooManyErrorResults, TooManyDet, TooManySuccessResults, TooManyTotalResults}

// Decision is what to do with a due workunit.
type Decision struct {
	GiveUp  Reason // None: retry
	Message string // for the log line and the wu_giveup row
	// Retry: create NewResults results with deadline NewDeadline (NewResults may be 0)
	// and move the check time to RetryCheckTime. On a give-up RetryCheckTime is 0.
	NewResults     int
	NewDeadline    float64
	RetryCheckTime float64
	// Counts the decision rests on.
	NotSent, Errors, Done, Lost int
}

// Decide applies the seed's rules, in its order, to a due workunit with results rs
// (lost results already marked, or past their deadline: both count as lost), and the
// workunit's own limits lim each after the seed's rule of its kind:
//
//  1. a result never sent                                  -> not_sent
//  2. errors >= NError                                     -> errors
//  3. errors > max_error_results                           -> max_error_results
//  4. results done >= Ndet                                 -> ndet_done
//  5. results done > max_success_results                   -> max_success_results
//  6. results > max_total_results, or new results needed
//     and already max_total_results results               -> max_total_results
//  7. min(Nredundancy − n, max_total_results − results) new results.
//
// The workunit's limits compare as BOINC's transitioner and validator do ("more
// than"), the app's as the seed says ("at least"). Rule 7's cap means a workunit never
// has more than max_total_results results, so rule 6 gives up where BOINC would make
// the results and give up on its next pass.
//
// n, the results done that count toward Nredundancy, leaves out results the
// validator found invalid: they disagree with the others, so a nondeterministic app
// keeps getting new results until Ndet (which counts every result done) gives up, as
// the seed means it to. With no validator run, no result is invalid and n is the
// seed's "results done".
func Decide(rs []Result, p Params, lim Limits, now float64) Decision {
	var d Decision
	useful := 0
	for _, r := range rs {
		switch {
		case NotSent(r):
			d.NotSent++
		case IsError(r):
			d.Errors++
		case Done(r):
			d.Done++
			if r.ValidateState != ValidateInvalid {
				useful++
			}
		case Lost(r, now) || (r.ServerState == ServerStateOver && r.Outcome == OutcomeNoReply):
			d.Lost++
		}
	}
	switch {
	case d.NotSent > 0:
		d.GiveUp = NotSentYet
		d.Message = fmt.Sprintf("%d of %d results never sent: the job may need more than any host has, too few hosts for the work, or the scheduler was down", d.NotSent, len(rs))
	case d.Errors >= p.NError:
		d.GiveUp = TooManyErr
		d.Message = fmt.Sprintf("%d error results (NError %d): the application may have a bug", d.Errors, p.NError)
	case lim.MaxErrorResults > 0 && d.Errors > lim.MaxErrorResults:
		d.GiveUp = TooManyErrorResults
		d.Message = fmt.Sprintf("%d error results (the workunit's max_error_results %d): the application may have a bug", d.Errors, lim.MaxErrorResults)
	case d.Done >= p.Ndet:
		d.GiveUp = TooManyDet
		d.Message = fmt.Sprintf("%d results done without a canonical result (Ndet %d): the application may be nondeterministic", d.Done, p.Ndet)
	case lim.MaxSuccessResults > 0 && d.Done > lim.MaxSuccessResults:
		d.GiveUp = TooManySuccessResults
		d.Message = fmt.Sprintf("%d results done without a canonical result (the workunit's max_success_results %d): the application may be nondeterministic", d.Done, lim.MaxSuccessResults)
	}
	if d.GiveUp != None {
		return d
	}
	need := max(p.Nredundancy-useful, 0)
	if lim.MaxTotalResults > 0 {
		room := lim.MaxTotalResults - len(rs)
		if room < 0 || (need > 0 && room == 0) {
			d.GiveUp = TooManyTotalResults
			d.Message = fmt.Sprintf("%d results in all, %d more needed (the workunit's max_total_results %d)", len(rs), need, lim.MaxTotalResults)
			return d
		}
		need = min(need, room)
	}
	d.NewResults = need
	d.NewDeadline = now + p.Dresult
	d.RetryCheckTime = now + p.DWU
	return d
}

// Validation is the validator's verdict on a workunit's successful results.
type Validation struct {
	Canonical int64   // 0: no canonical result (yet)
	Valid     []int64 // agree with the canonical result
	Invalid   []int64 // disagree (with the canonical result, or with each other)
}

// Validate looks for min_quorum successful results whose output digests agree. A
// result without a digest agrees with any other. With such a quorum, the canonical
// result is the oldest (lowest id) of the largest agreeing group (ties: the group
// whose oldest member is oldest); its group is valid and every other success invalid.
// Without one: when at least minQuorum results are done they disagree, and all are
// invalid for now (a later agreeing result may still make a quorum, and they are
// judged again); fewer than minQuorum are left as they are.
func Validate(rs []Result, minQuorum int) Validation {
	minQuorum = max(minQuorum, 1)
	var done []Result
	for _, r := range rs {
		if Done(r) {
			done = append(done, r)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].ID < done[j].ID })
	// Candidate groups: one per distinct digest; results without one join every group.
	var digests []string
	seen := map[string]bool{}
	for _, r := range done {
		if r.OutputDigest != "" && !seen[r.OutputDigest] {
			seen[r.OutputDigest] = true
			digests = append(digests, r.OutputDigest)
		}
	}
	if len(digests) == 0 {
		digests = []string{""}
	}
	var best []int64
	for _, dg := range digests {
		var g []int64
		for _, r := range done {
			if r.OutputDigest == "" || r.OutputDigest == dg {
				g = append(g, r.ID)
			}
		}
		if len(g) > len(best) || (len(g) == len(best) && len(g) > 0 && g[0] < best[0]) {
			best = g
		}
	}
	var v Validation
	if len(best) >= minQuorum {
		v.Canonical = best[0]
		in := map[int64]bool{}
		for _, id := range best {
			in[id] = true
		}
		for _, r := range done {
			if in[r.ID] {
				v.Valid = append(v.Valid, r.ID)
			} else {
				v.Invalid = append(v.Invalid, r.ID)
			}
		}
		return v
	}
	if len(done) >= minQuorum {
		for _, r := range done {
			v.Invalid = append(v.Invalid, r.ID)
		}
	}
	return v
}
