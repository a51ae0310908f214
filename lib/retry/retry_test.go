package retry

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var p = Params{DWU: 200, Dresult: 100, NError: 3, Ndet: 4, Nredundancy: 2}

const now = 1000.0

func unsent() Result     { return Result{ServerState: ServerStateUnsent} }
func inProgress() Result { return Result{ServerState: ServerStateInProgress, ReportDeadline: now + 1} }
func lostR() Result      { return Result{ServerState: ServerStateInProgress, ReportDeadline: now - 1} }
func noReply() Result    { return Result{ServerState: ServerStateOver, Outcome: OutcomeNoReply} }
func errR() Result       { return Result{ServerState: ServerStateOver, Outcome: OutcomeClientError} }
func ok() Result         { return Result{ServerState: ServerStateOver, Outcome: OutcomeSuccess} }
func invalid() Result {
	return Result{ServerState: ServerStateOver, Outcome: OutcomeSuccess, ValidateState: ValidateInvalid}
}

func rs(groups ...[]Result) []Result {
	var out []Result
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func n(k int, f func() Result) []Result {
	out := make([]Result, k)
	for i := range out {
		out[i] = f()
	}
	return out
}

func TestDecide(t *testing.T) {
	retry := func(newResults int) Decision {
		return Decision{NewResults: newResults, NewDeadline: now + 100, RetryCheckTime: now + 200}
	}
	for _, c := range []struct {
		name string
		rs   []Result
		want Decision
	}{
		{"no results at all: Nredundancy new", nil, retry(2)},
		{"one result never sent: give up", n(1, unsent), Decision{GiveUp: NotSentYet, NotSent: 1}},
		{"never-sent comes before errors", rs(n(1, unsent), n(3, errR)), Decision{GiveUp: NotSentYet, NotSent: 1, Errors: 3}},
		{"exactly NError errors: give up", n(3, errR), Decision{GiveUp: TooManyErr, Errors: 3}},
		{"NError-1 errors: retry", n(2, errR), func() Decision { d := retry(2); d.Errors = 2; return d }()},
		{"errors come before Ndet", rs(n(3, errR), n(4, ok)), Decision{GiveUp: TooManyErr, Errors: 3, Done: 4}},
		{"exactly Ndet done: give up", n(4, ok), Decision{GiveUp: TooManyDet, Done: 4}},
		{"Ndet-1 done: retry, none needed", n(3, ok), func() Decision { d := retry(0); d.Done = 3; return d }()},
		{"one done: Nredundancy-1 new", n(1, ok), func() Decision { d := retry(1); d.Done = 1; return d }()},
		{"invalid results are done for Ndet but not for Nredundancy", n(2, invalid), func() Decision { d := retry(2); d.Done = 2; return d }()},
		{"invalid results reach Ndet", n(4, invalid), Decision{GiveUp: TooManyDet, Done: 4}},
		{"lost results are neither errors nor done", rs(n(2, lostR), n(5, noReply)), func() Decision { d := retry(2); d.Lost = 7; return d }()},
		{"in progress, not past deadline: not counted", n(2, inProgress), retry(2)},
		{"mixed", rs(n(2, errR), n(1, ok), n(1, noReply), n(1, inProgress)), func() Decision {
			d := retry(1)
			d.Errors, d.Done, d.Lost = 2, 1, 1
			return d
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(c.rs, p, Limits{}, now)
			if (got.Message == "") != (c.want.GiveUp == None) {
				t.Errorf("message %q for give-up %q", got.Message, got.GiveUp)
			}
			got.Message = ""
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestDecideWorkunitLimits: a workunit's max_error_results, max_success_results and
// max_total_results beside the app's NError, Ndet and Nredundancy, in Decide's order.
func TestDecideWorkunitLimits(t *testing.T) {
	retry := func(newResults int) Decision {
		return Decision{NewResults: newResults, NewDeadline: now + 100, RetryCheckTime: now + 200}
	}
	big := Params{DWU: 200, Dresult: 100, NError: 50, Ndet: 50, Nredundancy: 5}
	for _, c := range []struct {
		name string
		rs   []Result
		p    Params
		lim  Limits
		want Decision
	}{
		{"max_error_results errors: not more than it, retry", n(2, errR), big, Limits{MaxErrorResults: 2},
			func() Decision { d := retry(5); d.Errors = 2; return d }()},
		{"more errors than max_error_results: give up", n(3, errR), big, Limits{MaxErrorResults: 2},
			Decision{GiveUp: TooManyErrorResults, Errors: 3}},
		{"NError comes before max_error_results", n(3, errR), p, Limits{MaxErrorResults: 2},
			Decision{GiveUp: TooManyErr, Errors: 3}},
		{"max_error_results comes before Ndet", rs(n(3, errR), n(4, ok)), Params{DWU: 200, Dresult: 100, NError: 9, Ndet: 4, Nredundancy: 2},
			Limits{MaxErrorResults: 2}, Decision{GiveUp: TooManyErrorResults, Errors: 3, Done: 4}},
		{"more successes than max_success_results: give up", n(3, invalid), big, Limits{MaxSuccessResults: 2},
			Decision{GiveUp: TooManySuccessResults, Done: 3}},
		{"Ndet comes before max_success_results", n(4, invalid), p, Limits{MaxSuccessResults: 2},
			Decision{GiveUp: TooManyDet, Done: 4}},
		{"max_success_results comes before max_total_results", n(3, invalid), big, Limits{MaxSuccessResults: 2, MaxTotalResults: 3},
			Decision{GiveUp: TooManySuccessResults, Done: 3}},
		{"new results capped by max_total_results", n(2, noReply), big, Limits{MaxTotalResults: 4},
			func() Decision { d := retry(2); d.Lost = 2; return d }()},
		{"max_total_results reached, more needed: give up", n(4, noReply), big, Limits{MaxTotalResults: 4},
			Decision{GiveUp: TooManyTotalResults, Lost: 4}},
		{"max_total_results reached, none needed: retry", rs(n(2, ok), n(2, noReply)), Params{DWU: 200, Dresult: 100, NError: 3, Ndet: 4, Nredundancy: 2},
			Limits{MaxTotalResults: 4}, func() Decision { d := retry(0); d.Done, d.Lost = 2, 2; return d }()},
		{"more than max_total_results already: give up", n(5, inProgress), big, Limits{MaxTotalResults: 4},
			Decision{GiveUp: TooManyTotalResults}},
		{"errors before max_total_results", rs(n(3, errR), n(2, noReply)), p, Limits{MaxTotalResults: 4},
			Decision{GiveUp: TooManyErr, Errors: 3, Lost: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(c.rs, c.p, c.lim, now)
			if (got.Message == "") != (c.want.GiveUp == None) {
				t.Errorf("message %q for give-up %q", got.Message, got.GiveUp)
			}
			got.Message = ""
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestDecideHugeRedundancy: however large Nredundancy is (even past what Check
// allows), new results never take a workunit past its max_total_results.
func TestDecideHugeRedundancy(t *testing.T) {
	huge := Params{DWU: 200, Dresult: 100, NError: 3, Ndet: 4, Nredundancy: 100000000}
	if got := Decide(n(1, noReply), huge, Limits{MaxTotalResults: 10}, now); got.NewResults != 9 {
		t.Errorf("NewResults = %d, want 9 (max_total_results 10, 1 result)", got.NewResults)
	}
}

func TestDecideMessages(t *testing.T) {
	for _, c := range []struct {
		rs   []Result
		want string
	}{
		{n(1, unsent), "1 of 1 results never sent"},
		{n(3, errR), "3 error results (NError 3)"},
		{n(4, ok), "4 results done without a canonical result (Ndet 4)"},
	} {
		if got := Decide(c.rs, p, Limits{}, now).Message; !strings.Contains(got, c.want) {
			t.Errorf("message %q, want it to contain %q", got, c.want)
		}
	}
}

func TestDue(t *testing.T) {
	for _, c := range []struct {
		name string
		w    Workunit
		want bool
	}{
		{"past its check time", Workunit{RetryCheckTime: now - 1}, true},
		{"check time exactly now: not yet", Workunit{RetryCheckTime: now}, false},
		{"check time ahead", Workunit{RetryCheckTime: now + 1}, false},
		{"check time 0 (given up or canonical): never", Workunit{RetryCheckTime: 0}, false},
		{"waiting for validation", Workunit{RetryCheckTime: now - 1, NeedValidate: true}, false},
		{"canonical result found", Workunit{RetryCheckTime: now - 1, CanonicalResultID: 7}, false},
	} {
		if got := Due(c.w, now); got != c.want {
			t.Errorf("%s: Due = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestLost(t *testing.T) {
	for _, c := range []struct {
		name string
		r    Result
		want bool
	}{
		{"in progress past its deadline", Result{ServerState: ServerStateInProgress, ReportDeadline: now - 0.5}, true},
		{"deadline exactly now: not yet", Result{ServerState: ServerStateInProgress, ReportDeadline: now}, false},
		{"deadline ahead", Result{ServerState: ServerStateInProgress, ReportDeadline: now + 1}, false},
		{"unsent, deadline past: not sent is not lost", Result{ServerState: ServerStateUnsent, ReportDeadline: now - 1}, false},
		{"over", Result{ServerState: ServerStateOver, Outcome: OutcomeSuccess, ReportDeadline: now - 1}, false},
	} {
		if got := Lost(c.r, now); got != c.want {
			t.Errorf("%s: Lost = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestParamsCheck(t *testing.T) {
	if err := DefaultParams.Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{DWU: 0, Dresult: 1, NError: 1, Ndet: 1, Nredundancy: 1}, "DWU: must be > 0"},
		{Params{DWU: 1, Dresult: -1, NError: 1, Ndet: 1, Nredundancy: 1}, "Dresult: must be > 0"},
		{Params{DWU: 1, Dresult: 1, NError: 0, Ndet: 1, Nredundancy: 1}, "NError: must be 1 to 1000"},
		{Params{DWU: 1, Dresult: 1, NError: 1, Ndet: 0, Nredundancy: 1}, "Ndet: must be 1 to 1000"},
		{Params{DWU: 1, Dresult: 1, NError: 1, Ndet: 1, Nredundancy: 0}, "Nredundancy: must be 1 to 100, got 0"},
		{Params{DWU: 1, Dresult: 1, NError: 1, Ndet: 1, Nredundancy: 100000000}, "Nredundancy: must be 1 to 100, got 100000000"},
		{Params{DWU: 1, Dresult: 1, NError: 1001, Ndet: 1, Nredundancy: 1}, "NError: must be 1 to 1000"},
		{Params{DWU: 1, Dresult: 1, NError: 1, Ndet: 1 << 40, Nredundancy: 1}, "Ndet: must be 1 to 1000"},
	} {
		if err := c.p.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	d := func(id int64, digest string) Result {
		return Result{ID: id, ServerState: ServerStateOver, Outcome: OutcomeSuccess, OutputDigest: digest}
	}
	for _, c := range []struct {
		name   string
		rs     []Result
		quorum int
		want   Validation
	}{
		{"quorum 1, one success without digest", []Result{d(5, "")}, 1, Validation{Canonical: 5, Valid: []int64{5}}},
		{"quorum 2, one success: wait", []Result{d(5, "a"), {ID: 6, ServerState: ServerStateInProgress}}, 2, Validation{}},
		{"quorum 2, two agree", []Result{d(6, "a"), d(5, "a")}, 2, Validation{Canonical: 5, Valid: []int64{5, 6}}},
		{"quorum 2, two disagree: both invalid for now", []Result{d(5, "a"), d(6, "b")}, 2, Validation{Invalid: []int64{5, 6}}},
		{"quorum 2, a third agrees with the second", []Result{d(5, "a"), d(6, "b"), d(7, "b")}, 2,
			Validation{Canonical: 6, Valid: []int64{6, 7}, Invalid: []int64{5}}},
		{"no digest agrees with any", []Result{d(5, "a"), d(6, "")}, 2, Validation{Canonical: 5, Valid: []int64{5, 6}}},
		{"no digests at all: every success agrees", []Result{d(5, ""), d(6, ""), d(7, "")}, 3, Validation{Canonical: 5, Valid: []int64{5, 6, 7}}},
		{"errors and lost results take no part", []Result{d(5, "a"), {ID: 6, ServerState: ServerStateOver, Outcome: OutcomeClientError},
			{ID: 7, ServerState: ServerStateOver, Outcome: OutcomeNoReply}}, 2, Validation{}},
		{"tie between groups: the oldest wins", []Result{d(8, "b"), d(5, "a"), d(9, "b"), d(6, "a")}, 2,
			Validation{Canonical: 5, Valid: []int64{5, 6}, Invalid: []int64{8, 9}}},
		{"quorum 0 counts as 1", []Result{d(5, "")}, 0, Validation{Canonical: 5, Valid: []int64{5}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, Validate(c.rs, c.quorum)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestKinds: how the rules count each server state and outcome (decisions.md, "Kinds of
// result"): never sent is unsent or inactive; an error is over with client_error,
// validate_error or couldnt_send; done is over with success; a lost result (no_reply)
// and one withdrawn (didnt_need) are neither.
func TestKinds(t *testing.T) {
	for _, c := range []struct {
		name                  string
		r                     Result
		notSent, isErr, isOne bool
	}{
		{"unsent", Result{ServerState: ServerStateUnsent}, true, false, false},
		{"inactive", Result{ServerState: ServerStateInactive}, true, false, false},
		{"in progress", Result{ServerState: ServerStateInProgress, ReportDeadline: now + 1}, false, false, false},
		{"success", Result{ServerState: ServerStateOver, Outcome: OutcomeSuccess}, false, false, true},
		{"client error", Result{ServerState: ServerStateOver, Outcome: OutcomeClientError}, false, true, false},
		{"validate error", Result{ServerState: ServerStateOver, Outcome: OutcomeValidateError}, false, true, false},
		{"couldn't send", Result{ServerState: ServerStateOver, Outcome: OutcomeCouldntSend}, false, true, false},
		{"no reply", Result{ServerState: ServerStateOver, Outcome: OutcomeNoReply}, false, false, false},
		{"didn't need", Result{ServerState: ServerStateOver, Outcome: OutcomeDidntNeed}, false, false, false},
	} {
		if got := [3]bool{NotSent(c.r), IsError(c.r), Done(c.r)}; got != [3]bool{c.notSent, c.isErr, c.isOne} {
			t.Errorf("%s: not sent, error, done = %v, want %v", c.name, got, [3]bool{c.notSent, c.isErr, c.isOne})
		}
	}
}

// TestDecideLifeOfAWorkunit walks one workunit through the seed's list, by hand, with
// DWU 200, Dresult 100, NError 3, Ndet 4, Nredundancy 2, created at 0 (check time 0 +
// DWU = 200).
func TestDecideLifeOfAWorkunit(t *testing.T) {
	sent := func(deadline float64) Result {
		return Result{ServerState: ServerStateInProgress, ReportDeadline: deadline}
	}
	over := func(outcome int) Result { return Result{ServerState: ServerStateOver, Outcome: outcome} }
	steps := []struct {
		now  float64
		rs   []Result
		want Decision
	}{
		// 201: its two results were sent; one is past its deadline (lost), the other not.
		// n = 0 results done: 2 − 0 = 2 new, deadline 201 + 100, next check 201 + 200.
		{201, []Result{sent(150), sent(250)}, Decision{NewResults: 2, NewDeadline: 301, RetryCheckTime: 401, Lost: 1}},
		// 402: the lost one is over (no reply), the second succeeded, the first new one
		// failed, the other is in progress. 1 error < 3; n = 1 done < Ndet 4: 2 − 1 = 1
		// new, deadline 502, check 602.
		{402, []Result{over(OutcomeNoReply), over(OutcomeSuccess), over(OutcomeClientError), sent(450)},
			Decision{NewResults: 1, NewDeadline: 502, RetryCheckTime: 602, Errors: 1, Done: 1, Lost: 1}},
		// 603: the other new one failed too and so did the last: 3 errors, at least
		// NError: give up (check time 0).
		{603, []Result{over(OutcomeNoReply), over(OutcomeSuccess), over(OutcomeClientError), over(OutcomeClientError), over(OutcomeClientError)},
			Decision{GiveUp: TooManyErr, Errors: 3, Done: 1, Lost: 1}},
	}
	for _, s := range steps {
		got := Decide(s.rs, p, Limits{}, s.now)
		got.Message = ""
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("at %g (-want +got)\n%s", s.now, diff)
		}
	}
}
