package bretry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/retry"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

func forEngine(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			e.Require(t)
			fn(t, storetest.Open(t, e.DSN))
		})
	}
}

const t0 = 1_000_000.0

// fixture is a database with one app and helpers to shape workunits.
type fixture struct {
	t     *testing.T
	s     *store.Store
	appID int64
}

func newFixture(t *testing.T, s *store.Store) *fixture {
	ctx := context.Background()
	appID, err := s.AddApp(ctx, "app", false, t0)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t, s, appID}
}

func (f *fixture) exec(q string, args ...any) {
	f.t.Helper()
	if _, err := f.s.DB.Exec(q, args...); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
}

// wu creates a workunit with min_quorum q, check time check, and results in the given
// (server state, outcome) pairs, sent at t0 with deadline t0+100.
func (f *fixture) wu(name string, q int, check float64, results ...[2]int) int64 {
	f.t.Helper()
	res, err := f.s.DB.Exec(`INSERT INTO workunit (create_time, appid, name, rsc_fpops_est, rsc_fpops_bound, delay_bound, min_quorum, retry_check_time)
		VALUES (?, ?, ?, 1e12, 1e13, 100, ?, ?)`, t0, f.appID, name, q, check)
	if err != nil {
		f.t.Fatal(err)
	}
	id, _ := res.LastInsertId()
	for i, r := range results {
		f.exec(`INSERT INTO result (create_time, workunitid, appid, name, server_state, outcome, sent_time, report_deadline)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, t0, id, f.appID, fmt.Sprintf("%s_%d", name, i), r[0], r[1], t0, t0+100)
	}
	return id
}

var (
	unsent  = [2]int{store.ServerStateUnsent, 0}
	inProg  = [2]int{store.ServerStateInProgress, 0}
	errored = [2]int{store.ServerStateOver, store.OutcomeClientError}
	success = [2]int{store.ServerStateOver, store.OutcomeSuccess}
	noReply = [2]int{store.ServerStateOver, store.OutcomeNoReply}
)

// wuState is what a test checks of a workunit after a pass.
type wuState struct {
	CheckTime float64
	ErrorMask int
	Canonical string
	Results   []string // name:state:outcome:validate
	GiveUp    string
}

func (f *fixture) state() map[string]wuState {
	f.t.Helper()
	out := map[string]wuState{}
	rows, err := f.s.DB.Query(`SELECT w.name, w.retry_check_time, w.error_mask, COALESCE(c.name, ''), COALESCE(g.reason, '')
		FROM workunit w LEFT JOIN result c ON c.id=w.canonical_resultid LEFT JOIN wu_giveup g ON g.workunitid=w.id`)
	if err != nil {
		f.t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var w wuState
		if err := rows.Scan(&name, &w.CheckTime, &w.ErrorMask, &w.Canonical, &w.GiveUp); err != nil {
			f.t.Fatal(err)
		}
		if _, dup := out[name]; dup {
			f.t.Errorf("workunit %s given up twice", name)
		}
		out[name] = w
	}
	rows.Close()
	rows, err = f.s.DB.Query(`SELECT w.name, r.name, r.server_state, r.outcome, r.validate_state, r.report_deadline
		FROM result r JOIN workunit w ON w.id=r.workunitid ORDER BY r.name`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var wu, name string
		var ss, oc, vs int
		var dl float64
		if err := rows.Scan(&wu, &name, &ss, &oc, &vs, &dl); err != nil {
			f.t.Fatal(err)
		}
		w := out[wu]
		w.Results = append(w.Results, fmt.Sprintf("%s:%s:%s:%d@%.0f", name, store.ServerStateName[ss], store.OutcomeName[oc], vs, dl-t0))
		out[wu] = w
	}
	return out
}

func (f *fixture) pass(p retry.Params, now float64, noValidate bool) Summary {
	f.t.Helper()
	ps := &Pass{Store: f.s, AppID: f.appID, App: "app", Params: p, Now: now, Batch: 2, NoValidate: noValidate,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	sum, err := ps.Run(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return sum
}

var params = retry.Params{DWU: 1000, Dresult: 500, NError: 2, Ndet: 3, Nredundancy: 2}

// TestRules: every rule of seed 003 and its boundary, on the database, with batches
// of two so that every step crosses batch boundaries.
func TestRules(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		now := t0 + 200
		f.wu("notsent", 1, t0+1, unsent, errored)
		f.wu("nerror", 1, t0+1, errored, errored, inProg)
		f.wu("nerror_minus1", 1, t0+1, errored, noReply)
		f.wu("ndet", 2, t0+1, success, success, success)
		f.wu("ndet_minus1", 1, t0+1, success, success)
		f.wu("lost", 1, t0+1, inProg, success)
		f.wu("check_is_now", 1, now, inProg)
		f.wu("check_ahead", 1, now+1, inProg)
		canon := f.wu("canonical", 1, 0, success)
		f.exec(`UPDATE workunit SET canonical_resultid=(SELECT id FROM result WHERE workunitid=?) WHERE id=?`, canon, canon)
		f.wu("errored_elsewhere", 1, t0+1, unsent)
		f.exec(`UPDATE workunit SET error_mask=16 WHERE name='errored_elsewhere'`)
		f.wu("validating", 1, t0+1, success)
		f.exec(`UPDATE workunit SET need_validate=1 WHERE name='validating'`)
		// ndet's three successes disagree: invalid, as the validator would leave them.
		f.exec(`UPDATE result SET validate_state=? WHERE name IN ('ndet_0', 'ndet_1', 'ndet_2')`, store.ValidateInvalid)

		sum := f.pass(params, now, true)
		want := Summary{Examined: 6, Retried: 3, NewResults: 2 + 1 + 0, GivenUp: 3, Lost: 4}
		// lost: every in-progress result (deadline t0+100 < now): nerror's, lost's,
		// check_is_now's and check_ahead's (the sweep covers the app's results).
		if d := cmp.Diff(want, sum); d != "" {
			t.Errorf("summary (-want +got)\n%s", d)
		}
		retried := now + params.DWU
		wantState := map[string]wuState{
			"notsent": {ErrorMask: store.WUErrorCouldntSendResult, GiveUp: "not_sent",
				Results: []string{"notsent_0:over:didnt_need:0@100", "notsent_1:over:client_error:0@100"}},
			"nerror": {ErrorMask: store.WUErrorTooManyErrorResults, GiveUp: "errors",
				Results: []string{"nerror_0:over:client_error:0@100", "nerror_1:over:client_error:0@100", "nerror_2:over:no_reply:0@100"}},
			"nerror_minus1": {CheckTime: retried, Results: []string{"nerror_minus1_0:over:client_error:0@100", "nerror_minus1_1:over:no_reply:0@100",
				"nerror_minus1_2:unsent:init:0@700", "nerror_minus1_3:unsent:init:0@700"}},
			"ndet": {ErrorMask: store.WUErrorTooManySuccessResults, GiveUp: "ndet_done",
				Results: []string{"ndet_0:over:success:2@100", "ndet_1:over:success:2@100", "ndet_2:over:success:2@100"}},
			"ndet_minus1":       {CheckTime: retried, Results: []string{"ndet_minus1_0:over:success:0@100", "ndet_minus1_1:over:success:0@100"}},
			"lost":              {CheckTime: retried, Results: []string{"lost_0:over:no_reply:0@100", "lost_1:over:success:0@100", "lost_2:unsent:init:0@700"}},
			"check_is_now":      {CheckTime: now, Results: []string{"check_is_now_0:in_progress:init:0@100"}},
			"check_ahead":       {CheckTime: now + 1, Results: []string{"check_ahead_0:in_progress:init:0@100"}},
			"canonical":         {Canonical: "canonical_0", Results: []string{"canonical_0:over:success:0@100"}},
			"validating":        {CheckTime: t0 + 1, Results: []string{"validating_0:over:success:0@100"}},
			"errored_elsewhere": {CheckTime: t0 + 1, ErrorMask: 16, Results: []string{"errored_elsewhere_0:unsent:init:0@100"}},
		}
		got := f.state()
		// check_is_now and check_ahead's results were in progress past their deadline:
		// lost too, by the sweep over every result of the app.
		wantState["check_is_now"] = wuState{CheckTime: now, Results: []string{"check_is_now_0:over:no_reply:0@100"}}
		wantState["check_ahead"] = wuState{CheckTime: now + 1, Results: []string{"check_ahead_0:over:no_reply:0@100"}}
		if d := cmp.Diff(wantState, got); d != "" {
			t.Errorf("database (-want +got)\n%s", d)
		}

		// A second pass at the same time finds nothing due.
		if sum := f.pass(params, now, true); sum != (Summary{}) {
			t.Errorf("second pass: %+v", sum)
		}
		if d := cmp.Diff(got, f.state()); d != "" {
			t.Errorf("second pass changed the database (-before +after)\n%s", d)
		}
	})
}

// TestValidate: canonical results by output digests, then the retry rules over what
// the validator left.
func TestValidate(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		now := t0 + 50 // no result is past its deadline (t0+100)
		f.wu("agree", 2, t0+1, success, success, unsent)
		f.wu("disagree", 2, t0+1, success, success)
		f.wu("wait", 2, t0+1, success, inProg)
		f.wu("nodigest", 1, t0+1, success)
		f.exec(`UPDATE workunit SET need_validate=1`)
		f.exec(`UPDATE result SET output_digest='sha256:aa' WHERE name IN ('agree_0', 'agree_1', 'disagree_0', 'wait_0')`)
		f.exec(`UPDATE result SET output_digest='sha256:bb' WHERE name='disagree_1'`)

		sum := f.pass(params, now, false)
		// After validation: disagree and wait are due (check time t0+1) and handled.
		want := Summary{Validated: 2, Invalid: 2, Examined: 2, Retried: 2, NewResults: 2 + 1}
		if d := cmp.Diff(want, sum); d != "" {
			t.Errorf("summary (-want +got)\n%s", d)
		}
		retried := now + params.DWU
		wantState := map[string]wuState{
			"agree": {Canonical: "agree_0", Results: []string{"agree_0:over:success:1@100", "agree_1:over:success:1@100", "agree_2:over:didnt_need:0@100"}},
			"disagree": {CheckTime: retried, Results: []string{"disagree_0:over:success:2@100", "disagree_1:over:success:2@100",
				"disagree_2:unsent:init:0@550", "disagree_3:unsent:init:0@550"}},
			"wait":     {CheckTime: retried, Results: []string{"wait_0:over:success:0@100", "wait_1:in_progress:init:0@100", "wait_2:unsent:init:0@550"}},
			"nodigest": {Canonical: "nodigest_0", Results: []string{"nodigest_0:over:success:1@100"}},
		}
		if d := cmp.Diff(wantState, f.state()); d != "" {
			t.Errorf("database (-want +got)\n%s", d)
		}
		var pending int
		if err := s.DB.QueryRow(`SELECT COUNT(*) FROM workunit WHERE need_validate<>0`).Scan(&pending); err != nil || pending != 0 {
			t.Errorf("%d workunits still wait for validation (%v)", pending, err)
		}
	})
}

// TestValidateGrantsCredit: the validator grants each valid result its workunit's
// estimated credit (1e12 FLOPs: 200/86.4 credits) once, and adds it to its host's and
// the host's user's totals and averages (BOINC's update_average over a week's
// half-life); an invalid result gets nothing, and validating again grants nothing more.
func TestValidateGrantsCredit(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		f.exec(`INSERT INTO user (id, create_time, name, authenticator) VALUES (1, ?, 'u', 'k')`, t0-86400)
		f.exec(`INSERT INTO host (id, create_time, userid, authenticator) VALUES (1, ?, 1, 'h1'), (2, ?, 0, 'h2')`, t0-86400, t0-86400)
		f.wu("agree", 2, t0+1, success, success)
		f.wu("odd", 2, t0+1, success, success, success)
		f.exec(`UPDATE workunit SET need_validate=1`)
		f.exec(`UPDATE result SET output_digest='sha256:aa', hostid=1 WHERE name IN ('agree_0', 'odd_0', 'odd_1')`)
		f.exec(`UPDATE result SET output_digest='sha256:aa', hostid=2 WHERE name='agree_1'`)
		f.exec(`UPDATE result SET output_digest='sha256:bb', hostid=2 WHERE name='odd_2'`)
		now := t0 + 50
		f.pass(params, now, false)
		f.exec(`UPDATE workunit SET need_validate=1`) // as if a late result came in
		f.pass(params, now+10, false)

		per := 1e12 * 200 / (86400 * 1e9)
		granted := map[string]float64{}
		rows, err := s.DB.Query(`SELECT name, granted_credit FROM result`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name string
			var c float64
			rows.Scan(&name, &c)
			granted[name] = math.Round(c*1e9) / 1e9
		}
		rows.Close()
		r := math.Round(per*1e9) / 1e9
		if d := cmp.Diff(map[string]float64{"agree_0": r, "agree_1": r, "odd_0": r, "odd_1": r, "odd_2": 0}, granted); d != "" {
			t.Errorf("granted credit (-want +got)\n%s", d)
		}
		// Host 1: three results, the first grants over the day since its creation.
		var total, avg float64
		if err := s.DB.QueryRow(`SELECT total_credit, expavg_credit FROM host WHERE id=1`).Scan(&total, &avg); err != nil {
			t.Fatal(err)
		}
		wantAvg, at := credit.UpdateAverage(now, t0-86400, per, 0, 0)
		wantAvg, at = credit.UpdateAverage(now, t0-86400, per, wantAvg, at)
		wantAvg, _ = credit.UpdateAverage(now, t0-86400, per, wantAvg, at)
		if math.Abs(total-3*per) > 1e-9 || math.Abs(avg-wantAvg) > 1e-9 {
			t.Errorf("host 1: total %g, average %g; want %g, %g", total, avg, 3*per, wantAvg)
		}
		if err := s.DB.QueryRow(`SELECT total_credit FROM user WHERE id=1`).Scan(&total); err != nil || math.Abs(total-3*per) > 1e-9 {
			t.Errorf("user 1: total %g (%v), want %g", total, err, 3*per)
		}
		if err := s.DB.QueryRow(`SELECT total_credit FROM host WHERE id=2`).Scan(&total); err != nil || math.Abs(total-per) > 1e-9 {
			t.Errorf("host 2: total %g (%v), want %g (its invalid result earns nothing)", total, err, per)
		}
	})
}

// TestValidateTwiceAtOnceCreditsOnce: two validators at once over 120 workunits (two
// agreeing results each, on four hosts of two users) credit every valid result once:
// the results' granted credit, the hosts' totals and the users' totals all add up to
// 240 grants.
func TestValidateTwiceAtOnceCreditsOnce(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		f.exec(`INSERT INTO user (id, create_time, name, authenticator) VALUES (1, ?, 'u1', 'k1'), (2, ?, 'u2', 'k2')`, t0-86400, t0-86400)
		f.exec(`INSERT INTO host (id, create_time, userid, authenticator) VALUES (1, ?, 1, 'h1'), (2, ?, 1, 'h2'), (3, ?, 2, 'h3'), (4, ?, 2, 'h4')`,
			t0-86400, t0-86400, t0-86400, t0-86400)
		const n = 120
		for i := range n {
			f.wu(fmt.Sprintf("w%d", i), 2, t0+1, success, success)
		}
		f.exec(`UPDATE workunit SET need_validate=1`)
		f.exec(`UPDATE result SET output_digest='sha256:aa', hostid=1+(id % 4)`)
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ps := &Pass{Store: s, AppID: f.appID, App: "app", Params: params, Now: t0 + 50, Batch: 10,
					Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
				if _, err := ps.Validate(context.Background()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		per := credit.Granted(1e12)
		for _, q := range []string{`SELECT SUM(granted_credit) FROM result`, `SELECT SUM(total_credit) FROM host`, `SELECT SUM(total_credit) FROM user`} {
			var sum float64
			if err := s.DB.QueryRow(q).Scan(&sum); err != nil {
				t.Fatal(err)
			}
			if math.Abs(sum-2*n*per) > 1e-6 {
				t.Errorf("%s = %g, want %d grants of %g = %g", q, sum, 2*n, per, 2*n*per)
			}
		}
		var uncredited int
		if err := s.DB.QueryRow(`SELECT COUNT(*) FROM result WHERE validate_state=? AND granted_credit=0`, store.ValidateValid).Scan(&uncredited); err != nil || uncredited != 0 {
			t.Errorf("%d valid results without credit (%v)", uncredited, err)
		}
	})
}

// TestWorkunitLimits: a workunit's own max_error_results, max_success_results and
// max_total_results (as bserver work create stores them) give it up with their
// reasons and error_mask bits, beside the app's NError, Ndet and Nredundancy; new
// results stop at max_total_results however large Nredundancy is.
func TestWorkunitLimits(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		now := t0 + 200
		limit := func(name string, maxErr, maxSuccess, maxTotal int) {
			f.exec(`UPDATE workunit SET max_error_results=?, max_success_results=?, max_total_results=? WHERE name=?`, maxErr, maxSuccess, maxTotal, name)
		}
		f.wu("errs", 1, t0+1, errored, errored)
		limit("errs", 1, 6, 10)
		f.wu("successes", 2, t0+1, success, success, success)
		limit("successes", 3, 2, 10)
		f.exec(`UPDATE result SET validate_state=? WHERE name LIKE 'successes_%'`, store.ValidateInvalid)
		f.wu("total", 1, t0+1, noReply, noReply, noReply)
		limit("total", 3, 6, 3)
		f.wu("capped", 1, t0+1, noReply)
		limit("capped", 3, 6, 4)
		// The app's limits are loose: only the workunits' own can give up.
		p := retry.Params{DWU: 1000, Dresult: 500, NError: 50, Ndet: 50, Nredundancy: limits.Redundancy}
		sum := f.pass(p, now, true)
		if want := (Summary{Examined: 4, Retried: 1, NewResults: 3, GivenUp: 3}); sum != want {
			t.Errorf("summary %+v, want %+v", sum, want)
		}
		got := f.state()
		for name, want := range map[string]struct {
			mask   int
			reason string
			n      int
		}{
			"errs":      {store.WUErrorTooManyErrorResults, "max_error_results", 2},
			"successes": {store.WUErrorTooManySuccessResults, "max_success_results", 3},
			"total":     {store.WUErrorTooManyTotalResults, "max_total_results", 3},
			"capped":    {0, "", 4},
		} {
			w := got[name]
			if w.ErrorMask != want.mask || w.GiveUp != want.reason || len(w.Results) != want.n {
				t.Errorf("%s: error_mask %d, give-up %q, %d results; want %d, %q, %d", name, w.ErrorMask, w.GiveUp, len(w.Results), want.mask, want.reason, want.n)
			}
		}
		// The next pass: capped's new results were sent and never came back: it has
		// its 4 results, none done, more needed: given up.
		f.exec(`UPDATE result SET server_state=?, outcome=? WHERE name LIKE 'capped_%'`, store.ServerStateOver, store.OutcomeNoReply)
		sum = f.pass(p, now+p.DWU+1, true)
		if sum.GivenUp != 1 || sum.NewResults != 0 {
			t.Errorf("second pass %+v, want capped given up and no new results", sum)
		}
		if w := f.state()["capped"]; w.GiveUp != "max_total_results" || len(w.Results) != 4 {
			t.Errorf("capped: %+v, want given up for max_total_results with 4 results", w)
		}
	})
}

// TestHugeRedundancyStored: an app row whose Nredundancy was set before the bound
// (or by hand) is refused with exit status 2 naming it, before any pass begins.
func TestHugeRedundancyStored(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			e.Require(t)
			f := newFixture(t, storetest.Open(t, e.DSN))
			f.wu("w", 1, t0+1, noReply)
			f.exec(`UPDATE app SET retry_nredundancy=100000000`)
			f.exec(`UPDATE workunit SET max_total_results=2000000000`)
			var stdout, stderr strings.Builder
			code := Main([]string{"bretry", "--db", e.DSN, "--app", "app", "--once", "--now", "2000000"}, strings.NewReader(""), &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), "Nredundancy: must be 1 to 100, got 100000000") {
				t.Errorf("exit %d, stderr %q; want 2 naming Nredundancy", code, stderr.String())
			}
			var n int
			if err := f.s.DB.QueryRow(`SELECT COUNT(*) FROM result`).Scan(&n); err != nil || n != 1 {
				t.Errorf("%d results (%v), want 1: nothing written", n, err)
			}
		})
	}
}
