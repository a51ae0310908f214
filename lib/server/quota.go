package server

import (
	"maps"
	"math"
	"slices"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/quota"
	"github.com/bkit/bkit/lib/store"
)

// quotaBook is one request's view of the host's quota states (its host_app_version
// rows) and of the project's app versions: read once, however many of the request's
// reports and jobs touch them, changed in memory as reports are recorded and jobs
// claimed, and written once at the end of the request (flush), a row per changed
// version. The request's transaction holds the host's row, so no other request of the
// host changes the rows meanwhile.
type quotaBook struct {
	tx       *store.Tx
	hostID   int64
	loaded   bool
	states   map[int64]quota.State
	existing map[int64]bool // versions with a row when read
	dirty    map[int64]bool
	versions []store.AppVersion // nil until read
}

func newQuotaBook(tx *store.Tx, hostID int64) *quotaBook {
	return &quotaBook{tx: tx, hostID: hostID, dirty: map[int64]bool{}}
}

// load reads the host's quota states, once.
func (b *quotaBook) load() error {
	if b.loaded {
		return nil
	}
	states, err := b.tx.QuotaStates(b.hostID)
	if err != nil {
		return err
	}
	b.states, b.existing, b.loaded = states, map[int64]bool{}, true
	for id := range states {
		b.existing[id] = true
	}
	return nil
}

// appVersions reads the project's app versions, once.
func (b *quotaBook) appVersions() ([]store.AppVersion, error) {
	if b.versions == nil {
		v, err := b.tx.AppVersions()
		if err != nil {
			return nil, err
		}
		b.versions = v
	}
	return b.versions, nil
}

// set changes version id's state.
func (b *quotaBook) set(id int64, s quota.State) {
	b.states[id], b.dirty[id] = s, true
}

// flush writes the changed states.
func (b *quotaBook) flush() error {
	for _, id := range slices.Sorted(maps.Keys(b.dirty)) {
		if err := b.tx.SaveQuotaState(b.hostID, id, b.states[id], b.existing[id]); err != nil {
			return err
		}
	}
	return nil
}

// hostQuotas is what the quotas (lib/quota) let one request send the host of each app
// version: worked out once per request from its quotaBook, counted down as jobs are
// claimed, and the day's count of each version sent put back in the book (save).
type hostQuotas struct {
	book *quotaBook
	left map[int64]int    // jobs still allowed per version; absent: no limit
	why  map[int64]string // for a version with none left, BOINC's message
	sent map[int64]int    // jobs sent per version by this request
}

// loadQuotas reads the host's jobs in progress and works out, from the book's states,
// what each of versions may still send (caps: the host's capped instance counts).
func loadQuotas(book *quotaBook, versions []store.AppVersion, caps hostCaps, now float64) (*hostQuotas, error) {
	if err := book.load(); err != nil {
		return nil, err
	}
	busy, err := book.tx.InProgressByVersion(book.hostID)
	if err != nil {
		return nil, err
	}
	q := &hostQuotas{book: book, left: map[int64]int{}, why: map[int64]string{}, sent: map[int64]int{}}
	for _, av := range versions {
		most := quota.MaxCPUs
		if resourceOf(av) != boincxml.ResourceCPU {
			most = quota.MaxGPUs
		}
		inst := most // a host that does not say counts as the most a host may claim
		if n := caps.instances(resourceOf(av)); !math.IsInf(n, 1) {
			inst = quota.CapInstances(int(n), most)
		}
		n, why := quota.Left(av.Quota, book.states[av.ID], inst, busy[av.ID], now)
		if n >= 0 {
			q.left[av.ID] = n
		}
		if why != "" {
			q.why[av.ID] = why
		}
	}
	return q, nil
}

// mayTake reports whether one more job of av may be sent.
func (q *hostQuotas) mayTake(av store.AppVersion) bool {
	n, limited := q.left[av.ID]
	return !limited || n > 0
}

// took counts a job of av sent.
func (q *hostQuotas) took(av store.AppVersion) {
	if n, limited := q.left[av.ID]; limited {
		q.left[av.ID] = n - 1
	}
	q.sent[av.ID]++
}

// save puts the day's counts of the versions this request sent jobs of in the book.
func (q *hostQuotas) save(now float64) {
	for id, k := range q.sent {
		q.book.set(id, quota.Sent(q.book.states[id], k, now))
	}
}

// capClaims caps the CPU and GPU counts a request claims at quota.MaxCPUs and
// quota.MaxGPUs, as BOINC's scheduler does: a host claiming 65,536 CPUs is filled,
// and held to its quotas, as one with 64.
func capClaims(ncpus int, coprocs boincxml.Coprocs) (int, boincxml.Coprocs) {
	ncpus = min(ncpus, quota.MaxCPUs)
	out := make(boincxml.Coprocs, len(coprocs))
	copy(out, coprocs)
	for i := range out {
		out[i].Count = min(out[i].Count, quota.MaxGPUs)
	}
	return ncpus, out
}

// EXIT_ABORTED_BY_PROJECT (BOINC's lib/error_numbers.h): a task the project told the
// client to abort, which is not the host's fault and costs it no quota.
const exitAbortedByProject = 202

// adjustQuotas applies the reported errors to the host's daily quotas in the book, as
// BOINC's scheduler does when it handles them (sched_result.cpp, got_bad_result): an
// error, not an abort by the project, takes one off its version's quota
// (quota.AfterError). An abort by the project is the client's word, so it is taken
// only where the project had told the client to abort (store.Report.AbortAsked): a
// host that reported its every error as one kept its whole quota (issue 27's
// adversarial probe; docs/decisions.md). A reported success changes nothing here:
// the quota rises when bretry's validator finds the result valid (quota.AfterSuccess;
// docs/decisions.md, issue 27), once per result.
func adjustQuotas(book *quotaBook, recorded []store.Report) error {
	var errs []store.Report
	for _, r := range recorded {
		if !r.Success && !(r.ExitStatus == exitAbortedByProject && r.AbortAsked) {
			errs = append(errs, r)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	versions, err := book.appVersions()
	if err != nil {
		return err
	}
	limits := map[int64]quota.Limits{}
	for _, av := range versions {
		limits[av.ID] = av.Quota
	}
	if err := book.load(); err != nil {
		return err
	}
	for _, r := range errs {
		// The version the result was sent with (RecordReports read it with the
		// report): no statement of its own.
		if l, known := limits[r.AppVersionID]; known {
			book.set(r.AppVersionID, quota.AfterError(l, book.states[r.AppVersionID]))
		}
	}
	return nil
}
