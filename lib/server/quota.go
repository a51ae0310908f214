package server

import (
	"math"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/quota"
	"github.com/bkit/bkit/lib/store"
)

// hostQuotas is what the quotas (lib/quota) let one request send the host of each app
// version: read once per request, counted down as jobs are claimed, and saved at the
// end (the day's count of each version sent).
type hostQuotas struct {
	states map[int64]quota.State // the host's host_app_version rows
	left   map[int64]int         // jobs still allowed per version; absent: no limit
	why    map[int64]string      // for a version with none left, BOINC's message
	sent   map[int64]int         // jobs sent per version by this request
}

// loadQuotas reads the host's quota states and jobs in progress and works out what
// each of versions may still send (caps: the host's capped instance counts).
func loadQuotas(tx *store.Tx, hostID int64, versions []store.AppVersion, caps hostCaps, now float64) (*hostQuotas, error) {
	states, err := tx.QuotaStates(hostID)
	if err != nil {
		return nil, err
	}
	busy, err := tx.InProgressByVersion(hostID)
	if err != nil {
		return nil, err
	}
	q := &hostQuotas{states: states, left: map[int64]int{}, why: map[int64]string{}, sent: map[int64]int{}}
	for _, av := range versions {
		most := quota.MaxCPUs
		if resourceOf(av) != boincxml.ResourceCPU {
			most = quota.MaxGPUs
		}
		inst := most // a host that does not say counts as the most a host may claim
		if n := caps.instances(resourceOf(av)); !math.IsInf(n, 1) {
			inst = quota.CapInstances(int(n), most)
		}
		n, why := quota.Left(av.Quota, states[av.ID], inst, busy[av.ID], now)
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

// save records the day's counts of the versions this request sent jobs of.
func (q *hostQuotas) save(tx *store.Tx, hostID int64, now float64) error {
	for id, k := range q.sent {
		s, exists := q.states[id]
		if err := tx.SaveQuotaState(hostID, id, quota.Sent(s, k, now), exists); err != nil {
			return err
		}
	}
	return nil
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

// adjustQuotas applies the reported results to the host's daily quotas, as BOINC's
// scheduler does when it handles them: a success doubles its version's quota up to the
// app's, an error (not an abort by the project) takes one off (quota.AfterSuccess,
// quota.AfterError).
func adjustQuotas(tx *store.Tx, hostID int64, recorded []store.Report, now float64) error {
	if len(recorded) == 0 {
		return nil
	}
	names := make([]string, len(recorded))
	for i, r := range recorded {
		names[i] = r.Name
	}
	avs, err := tx.ResultVersions(hostID, names)
	if err != nil {
		return err
	}
	versions, err := tx.AppVersions()
	if err != nil {
		return err
	}
	limits := map[int64]quota.Limits{}
	for _, av := range versions {
		limits[av.ID] = av.Quota
	}
	states, err := tx.QuotaStates(hostID)
	if err != nil {
		return err
	}
	changed := map[int64]bool{}
	next := map[int64]quota.State{}
	for _, r := range recorded {
		id, ok := avs[r.Name]
		l, known := limits[id]
		if !ok || !known || (!r.Success && r.ExitStatus == exitAbortedByProject) {
			continue
		}
		s, seen := next[id]
		if !seen {
			s = states[id]
		}
		if r.Success {
			s = quota.AfterSuccess(l, s)
		} else {
			s = quota.AfterError(l, s)
		}
		next[id], changed[id] = s, true
	}
	for id := range changed {
		_, exists := states[id]
		if err := tx.SaveQuotaState(hostID, id, next[id], exists); err != nil {
			return err
		}
	}
	return nil
}
