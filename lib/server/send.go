package server

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/store"
)

// Speeds assumed when neither the app version nor the host says: a modest CPU core and
// a modest GPU, so that a job still has a finite duration estimate.
const (
	defaultCPUFlops = 1e9
	defaultGPUFlops = 1e11
)

// hostCaps is what the host can run on: its CPU count and speed and its coprocessors.
type hostCaps struct {
	ncpus   int
	cpuFpop float64
	coprocs boincxml.Coprocs
}

// resourceOf is the processing resource an app version's jobs are counted against
// (seed 002: a job uses some CPU and at most one coprocessor type; a GPU job belongs
// to its GPU).
func resourceOf(av store.AppVersion) string {
	if av.CoprocType == "" {
		return boincxml.ResourceCPU
	}
	return boincxml.CanonicalType(av.CoprocType)
}

// instancesOf is how many instances of its resource one job of av occupies.
func instancesOf(av store.AppVersion) float64 {
	if av.CoprocType == "" {
		return av.AvgNCPUs
	}
	return av.CoprocCount
}

// instances is how many instances of resource the host has; +Inf when it does not
// say (a CPU count of 0).
func (h hostCaps) instances(resource string) float64 {
	if resource == boincxml.ResourceCPU {
		if h.ncpus <= 0 {
			return math.Inf(1)
		}
		return float64(h.ncpus)
	}
	if cp := h.coprocs.Find(resource); cp != nil && cp.Count > 0 {
		return float64(cp.Count)
	}
	return math.Inf(1)
}

// canRun reports whether the host has what av needs.
func (h hostCaps) canRun(av store.AppVersion) bool {
	if instancesOf(av) <= 0 {
		return false // a version that occupies nothing would fill no request
	}
	if av.CoprocType == "" {
		return h.ncpus == 0 || av.AvgNCPUs <= float64(h.ncpus)
	}
	cp := h.coprocs.Find(av.CoprocType)
	return cp != nil && av.CoprocCount <= float64(cp.Count) && (h.ncpus == 0 || av.AvgNCPUs <= float64(h.ncpus))
}

// flops is the speed a job of av runs at on this host: the version's own figure, else
// the host's per-CPU speed times the CPUs it uses, else the GPU's peak times its share.
func (h hostCaps) flops(av store.AppVersion) float64 {
	if av.Flops > 0 {
		return av.Flops
	}
	if av.CoprocType == "" {
		f := h.cpuFpop
		if f <= 0 {
			f = defaultCPUFlops
		}
		return f * max(av.AvgNCPUs, 1e-3)
	}
	f := defaultGPUFlops
	if cp := h.coprocs.Find(av.CoprocType); cp != nil && cp.PeakFlops > 0 {
		f = cp.PeakFlops
	}
	return f * av.CoprocCount
}

// better reports whether a is preferable to b for the host: faster, then newer.
func (h hostCaps) better(a, b store.AppVersion) bool {
	if fa, fb := h.flops(a), h.flops(b); fa != fb {
		return fa > fb
	}
	return a.VersionNum > b.VersionNum
}

// need is what is still to fill for one resource (seed 002's n*_jobs_sending and
// n*_seconds_to_fill).
type need struct {
	resource  string
	secs      float64 // instance-seconds still wanted
	instances float64 // instances still to occupy
}

func (n need) more() bool { return n.secs > 0 || n.instances > 0 }

// fill counts a job of av against the need: it occupies instancesOf(av) instances
// for its estimated duration on this host.
func (n *need) fill(av store.AppVersion, fpopsEst float64, caps hostCaps) {
	inst := instancesOf(av)
	n.secs -= fpopsEst / caps.flops(av) * inst
	n.instances -= inst
}

// sendState is what one reply has sent so far, and what adding a job needs: the
// transaction (for the jobs' files), the host, and the URL clients reach the project by.
type sendState struct {
	maxJobs  int
	apps     map[int64]bool
	versions map[int64]bool
	files    map[string]bool
	tx       *store.Tx
	host     *store.Host
	base     string // the project's URL, ending in "/"
	// uploadKey signs upload permissions (UploadToken); nil: the project takes no
	// uploads and sends no jobs with output files.
	uploadKey []byte
	quotas    *hostQuotas    // what the host may still be sent of each version
	wus       map[int64]bool // workunits this reply carries a result of

	// Read ahead for the jobs being added (prefetch): their workunits' files and
	// outputs, and the batch files of a run of locality jobs by batch and number.
	wuIn      map[int64][]store.WUFile
	wuOut     map[int64][]store.WUOutput
	fetched   map[int64]bool
	batchFile map[[2]int64]store.BatchFile
}

// prefetch reads what adding the claimed locality jobs needs in three queries: their
// batch files (one contiguous run per batch) and their workunits' input files and
// outputs, instead of three queries per job.
func (st *sendState) prefetch(jobs []store.LocalityCandidate) error {
	if st.fetched == nil {
		st.wuIn, st.wuOut, st.fetched, st.batchFile = map[int64][]store.WUFile{}, map[int64][]store.WUOutput{}, map[int64]bool{}, map[[2]int64]store.BatchFile{}
	}
	type run struct{ first, last int64 }
	runs := map[int64]run{}
	var order []int64
	ids := make([]int64, 0, len(jobs))
	for _, c := range jobs {
		ids = append(ids, c.WUID)
		if c.LastFileNum < c.FirstFileNum {
			continue
		}
		r, ok := runs[c.BatchID]
		if !ok {
			order = append(order, c.BatchID)
			r = run{c.FirstFileNum, c.LastFileNum}
		}
		runs[c.BatchID] = run{min(r.first, c.FirstFileNum), max(r.last, c.LastFileNum)}
	}
	for _, b := range order {
		files, err := st.tx.BatchFiles(b, runs[b].first, runs[b].last)
		if err != nil {
			return err
		}
		for _, f := range files {
			st.batchFile[[2]int64{b, f.FileNum}] = f
		}
	}
	return st.prefetchWUs(ids)
}

// claim hands the candidates to the host, all or none (store.Tx.ClaimResults: the
// candidate query locked them on MySQL, and SQLite's write lock is held), in one UPDATE
// per app version and deadline (one, mostly: the delay bound, or a retry's Dresult),
// and reads their files ahead.
func (st *sendState) claim(cands []store.Candidate, best map[int64]store.AppVersion, now float64) error {
	type group struct {
		av       int64
		deadline float64
	}
	ids := map[group][]int64{}
	var order []group
	wus := make([]int64, 0, len(cands))
	for _, c := range cands {
		g := group{best[c.AppID].ID, c.Deadline(now)}
		if _, ok := ids[g]; !ok {
			order = append(order, g)
		}
		ids[g] = append(ids[g], c.ResultID)
		wus = append(wus, c.WUID)
	}
	for _, g := range order {
		if err := st.tx.ClaimResults(ids[g], st.host.ID, g.av, now, g.deadline); err != nil {
			return err
		}
	}
	return st.prefetchWUs(wus)
}

// prefetchWUs reads the input files and outputs of workunits ids (store.Tx.WUFilesOf)
// for addJob.
func (st *sendState) prefetchWUs(ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if st.fetched == nil {
		st.wuIn, st.wuOut, st.fetched, st.batchFile = map[int64][]store.WUFile{}, map[int64][]store.WUOutput{}, map[int64]bool{}, map[[2]int64]store.BatchFile{}
	}
	in, out, err := st.tx.WUFilesOf(ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		st.wuIn[id], st.wuOut[id], st.fetched[id] = in[id], out[id], true
	}
	return nil
}

// batchFiles returns a prefetched locality job's batch files, in order.
func (st *sendState) batchFiles(c store.LocalityCandidate) []store.BatchFile {
	var out []store.BatchFile
	for n := c.FirstFileNum; n <= c.LastFileNum; n++ {
		if f, ok := st.batchFile[[2]int64{c.BatchID, n}]; ok {
			out = append(out, f)
		}
	}
	return out
}

func (st *sendState) full(reply *boincxml.SchedulerReply) bool {
	return len(reply.ResultsSent) >= st.maxJobs
}

// sendWork implements seed 002's scheduler side: for each resource with a nonzero
// request, send jobs of app versions the host can run for that resource until both the
// requested seconds and the requested instances are filled, or the project runs out of
// jobs, or the reply reaches MaxJobsPerRPC. An old client's request (work_req_seconds
// alone: boincxml.AnyResource) is filled by the versions of every resource the host
// can run, the fastest per app. Jobs of locality-scheduled apps (seed 004) come first,
// from the host's cursors; then the other apps' jobs, oldest first. Last, the host is
// told which of its sticky files no unfinished job of its cursors uses (seed 004):
// after the jobs, since sending locality jobs may have moved it to another cursor,
// whose jobs may use files the old one no longer needs.
func (s *Server) sendWork(tx *store.Tx, host *store.Host, book *quotaBook, req *boincxml.SchedulerRequest, reply *boincxml.SchedulerReply, now float64, base string) error {
	if err := s.sendJobs(tx, host, book, req, reply, now, base); err != nil {
		return err
	}
	return deleteStickyFiles(tx, host, req, reply)
}

// sendJobs is sendWork's job sending.
func (s *Server) sendJobs(tx *store.Tx, host *store.Host, book *quotaBook, req *boincxml.SchedulerRequest, reply *boincxml.SchedulerReply, now float64, base string) error {
	requests := req.ResourceRequests()
	if len(requests) == 0 && req.OtherResults == nil {
		return nil
	}
	ncpus, coprocs := capClaims(req.HostInfo.PNCPUs, req.HostCoprocs())
	caps := hostCaps{ncpus: ncpus, cpuFpop: req.HostInfo.PFpops, coprocs: coprocs}
	versions, err := book.appVersions()
	if err != nil {
		return err
	}
	versions = forPlatforms(versions, req.Platforms())
	quotas, err := loadQuotas(book, versions, caps, now)
	if err != nil {
		return err
	}
	st := &sendState{maxJobs: orDefault(s.Config.MaxJobsPerRPC, DefaultMaxJobsPerRPC),
		apps: map[int64]bool{}, versions: map[int64]bool{}, files: map[string]bool{},
		wus: map[int64]bool{}, tx: tx, host: host, base: base, uploadKey: s.Config.UploadKey, quotas: quotas}
	held := map[string]bool{} // why versions the host could have used were held by a quota
	var resent map[string]need
	if req.OtherResults != nil {
		if resent, err = s.resendLost(tx, host, req, reply, versions, caps, st, now); err != nil {
			return err
		}
	}
	for _, rr := range requests {
		// The best version of each app for this resource on this host.
		best := map[int64]store.AppVersion{}
		for _, av := range versions {
			if (rr.Resource != boincxml.AnyResource && resourceOf(av) != rr.Resource) || !caps.canRun(av) {
				continue
			}
			if !quotas.mayTake(av) {
				held[quotas.why[av.ID]] = true
				continue
			}
			if cur, ok := best[av.AppID]; !ok || caps.better(av, cur) {
				best[av.AppID] = av
			}
		}
		if len(best) == 0 {
			if rr.Resource == boincxml.AnyResource {
				continue // no version the host can run: there is no one resource to name
			}
			if s.Config.NoRscApps && !slices.ContainsFunc(versions, func(av store.AppVersion) bool { return resourceOf(av) == rr.Resource }) {
				reply.NoRscApps = append(reply.NoRscApps, rr.Resource)
			}
			if rr.Resource != boincxml.ResourceCPU && caps.coprocs.Find(rr.Resource) == nil {
				s.log().Warn("impossible request: work for a coprocessor the host does not report", "host", host.ID, "resource", rr.Resource)
				reply.Messages = append(reply.Messages, boincxml.Message{Priority: boincxml.PriorityLow,
					Text: fmt.Sprintf("work requested for %s, which this host does not report", rr.Resource)})
			}
			continue
		}
		var plain, local []int64
		for id, av := range best {
			if av.Locality {
				local = append(local, id)
			} else {
				plain = append(plain, id)
			}
		}
		slices.Sort(plain)
		slices.Sort(local)
		n := need{resource: rr.Resource, secs: rr.Secs, instances: min(rr.Instances, caps.instances(rr.Resource))}
		if n.instances < rr.Instances {
			// More idle instances than the host has: fill what it has.
			s.log().Warn("impossible request: more instances than the host has", "host", host.ID,
				"resource", rr.Resource, "req_instances", rr.Instances, "has", n.instances)
		}
		// The client asked without counting the tasks resent to it.
		for r, f := range resent {
			if r == rr.Resource || rr.Resource == boincxml.AnyResource {
				n.secs -= f.secs
				n.instances -= f.instances
			}
		}
		if len(local) > 0 {
			if err := s.sendLocality(tx, host, best, local, caps, &n, reply, st, now); err != nil {
				return err
			}
		}
		var after int64
		for len(plain) > 0 && n.more() && !st.full(reply) {
			limit := min(batchSize(n, best), st.maxJobs-len(reply.ResultsSent))
			cands, err := tx.UnsentCandidates(plain, host.ID, after, limit)
			if err != nil {
				return err
			}
			if len(cands) == 0 {
				break // no more jobs for this resource
			}
			// The jobs the need calls for are picked first, then claimed in one UPDATE
			// (per app version and delay bound) and their files read in one query,
			// instead of an UPDATE and two queries per job (issue 33).
			var take []store.Candidate
			for _, c := range cands {
				after = c.ResultID
				if !n.more() || len(reply.ResultsSent)+len(take) >= st.maxJobs {
					break
				}
				av := best[c.AppID]
				if st.wus[c.WUID] || !quotas.mayTake(av) {
					continue // a second replica of a job this reply already carries, or the host's quota is spent
				}
				quotas.took(av)
				st.wus[c.WUID] = true
				n.fill(av, c.FpopsEst, caps)
				take = append(take, c)
			}
			if err := st.claim(take, best, now); err != nil {
				return err
			}
			for _, c := range take {
				if err := st.addJob(reply, c, best[c.AppID], c.Deadline(now), nil); err != nil {
					return err
				}
			}
			plain = slices.DeleteFunc(plain, func(id int64) bool { return !quotas.mayTake(best[id]) })
		}
	}
	if len(reply.ResultsSent) == 0 && len(held) > 0 {
		// Why no work, as BOINC's scheduler says it (the client logs it).
		for _, why := range slices.Sorted(maps.Keys(held)) {
			reply.Messages = append(reply.Messages, boincxml.Message{Priority: boincxml.PriorityLow, Text: why})
			s.log().Info("no work sent: quota", "host", host.ID, "reason", why)
		}
	}
	quotas.save(now)
	return nil
}

// resendLost puts back in the reply the results in progress on this host that the
// client neither reports nor lists in <other_results> (which a BOINC client always
// sends, with every task it holds): it lost them, by a reply that never reached it, a
// project reset, or a detach before it attached again (newUserHost gives it back its
// host). This is BOINC's resend_lost_results. A result is resent with its deadline
// unchanged, if that is still ahead and its app version still offered to the host;
// otherwise it stays in progress until the retry job marks it lost at its deadline.
// A locality job goes again with its run of batch files (sticky, as when it was first
// sent: the client fetches those it no longer has); the host's place in the cursor's
// team is unchanged. It returns what the resent jobs fill per resource, which the
// client did not count in its request.
func (s *Server) resendLost(tx *store.Tx, host *store.Host, req *boincxml.SchedulerRequest, reply *boincxml.SchedulerReply,
	versions []store.AppVersion, caps hostCaps, st *sendState, now float64) (map[string]need, error) {
	held, err := tx.ResultsInProgress(host.ID)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	listed := make(map[string]bool, len(req.OtherResults)+len(req.Results))
	for _, o := range req.OtherResults {
		listed[o.Name] = true
	}
	for _, r := range req.Results {
		listed[r.Name] = true
	}
	filled := map[string]need{}
	var names []string
	var lost []store.HeldResult
	var locality []store.LocalityCandidate
	for _, h := range held {
		if listed[h.ResultName] || h.ReportDeadline <= now || len(lost) >= st.maxJobs-len(reply.ResultsSent) ||
			!slices.ContainsFunc(versions, func(av store.AppVersion) bool { return av.ID == h.AppVersionID }) {
			continue
		}
		lost = append(lost, h)
		if h.CursorID != 0 {
			locality = append(locality, h.LocalityCandidate)
		}
	}
	if len(locality) > 0 {
		if err := st.prefetch(locality); err != nil {
			return nil, err
		}
	}
	for _, h := range lost {
		av := versions[slices.IndexFunc(versions, func(av store.AppVersion) bool { return av.ID == h.AppVersionID })]
		var files []store.BatchFile
		if h.CursorID != 0 {
			files = st.batchFiles(h.LocalityCandidate)
		}
		if err := st.addJob(reply, h.Candidate, av, h.ReportDeadline, files); err != nil {
			return nil, err
		}
		f := filled[resourceOf(av)]
		f.fill(av, h.FpopsEst, caps)
		filled[resourceOf(av)] = f
		names = append(names, h.ResultName)
	}
	if len(names) > 0 {
		s.log().Info("resending tasks the client no longer holds", "host", host.ID, "results", names)
	}
	for r, f := range filled {
		filled[r] = need{secs: -f.secs, instances: -f.instances} // fill subtracts: make them amounts
	}
	return filled, nil
}

// batchSize is how many candidates to fetch at once: about as many jobs as the need
// calls for, within [1, 32], taking a job of unknown size as one instance-hour.
// Fetching far more would lock (on MySQL) rows other hosts could have had; fetching
// too few costs only another query.
func batchSize(n need, best map[int64]store.AppVersion) int {
	minInst := math.Inf(1)
	for _, av := range best {
		minInst = min(minInst, instancesOf(av))
	}
	jobs := max(1, n.instances/minInst, n.secs/(3600*minInst))
	if !(jobs <= 32) { // also catches NaN
		return 32
	}
	return int(math.Ceil(jobs))
}

// forPlatforms keeps the app versions a host of these platforms can run: those of
// one of its platforms, and platform-free ones (which carry no files: for bkit's own
// and emulated clients). A platform listed earlier wins among otherwise equal versions,
// since versions are compared by speed, then number, then this order.
func forPlatforms(versions []store.AppVersion, platforms []string) []store.AppVersion {
	var out []store.AppVersion
	for _, av := range versions {
		if av.Platform == "" || slices.Contains(platforms, av.Platform) {
			out = append(out, av)
		}
	}
	rank := func(av store.AppVersion) int {
		if i := slices.Index(platforms, av.Platform); i >= 0 {
			return i
		}
		return len(platforms)
	}
	slices.SortStableFunc(out, func(a, b store.AppVersion) int { return rank(a) - rank(b) })
	return out
}

// addJob puts a claimed result into the reply with its workunit, app, app version and
// files (each app, version and file once per reply): the version's files (signed),
// the workunit's input files and batch files, and the result's output files with
// their upload permissions.
func (st *sendState) addJob(reply *boincxml.SchedulerReply, c store.Candidate, av store.AppVersion, deadline float64, files []store.BatchFile) error {
	if !st.apps[av.AppID] {
		st.apps[av.AppID] = true
		reply.Apps = append(reply.Apps, boincxml.ReplyApp{Name: av.AppName})
	}
	if !st.versions[av.ID] {
		st.versions[av.ID] = true
		rv := boincxml.ReplyAppVersion{AppName: av.AppName, VersionNum: av.VersionNum, Platform: av.Platform, PlanClass: av.PlanClass,
			AvgNCPUs: av.AvgNCPUs, Flops: av.Flops}
		if av.CoprocType != "" {
			rv.Coproc = &boincxml.ReplyCoproc{Type: boincxml.CanonicalType(av.CoprocType), Count: av.CoprocCount}
		}
		avFiles, err := st.tx.AppVersionFiles(av.ID)
		if err != nil {
			return err
		}
		for _, f := range avFiles {
			ref := boincxml.ReplyFileRef{FileName: f.Name, OpenName: f.OpenName}
			if f.MainProgram {
				ref.MainProgram = true
			}
			rv.FileRefs = append(rv.FileRefs, ref)
			st.addFile(reply, boincxml.ReplyFileInfo{Name: f.Name, URL: st.base + "download/" + f.Name, MD5: f.MD5,
				NBytes: f.NBytes, Executable: true, FileSignature: f.Signature})
		}
		reply.AppVersions = append(reply.AppVersions, rv)
	}
	wu := boincxml.ReplyWorkunit{Name: c.WUName, AppName: av.AppName, RscFpopsEst: c.FpopsEst, RscFpopsBound: c.FpopsBound}
	for _, f := range files {
		wu.FileRefs = append(wu.FileRefs, boincxml.ReplyFileRef{FileName: f.Name})
		st.addFile(reply, boincxml.ReplyFileInfo{Name: f.Name, URL: f.URL, NBytes: f.NBytes, Sticky: true})
	}
	inputs, outputs := st.wuIn[c.WUID], st.wuOut[c.WUID]
	if !st.fetched[c.WUID] {
		var err error
		if inputs, outputs, err = st.tx.WUFiles(c.WUID); err != nil {
			return err
		}
	}
	for _, f := range inputs {
		wu.FileRefs = append(wu.FileRefs, boincxml.ReplyFileRef{FileName: f.Name, OpenName: f.OpenName})
		st.addFile(reply, boincxml.ReplyFileInfo{Name: f.Name, URL: st.base + "download/" + f.Name, MD5: f.MD5, NBytes: f.NBytes})
	}
	res := boincxml.ReplyResult{Name: c.ResultName, WUName: c.WUName, ReportDeadline: boincxml.UnixTime(deadline),
		VersionNum: av.VersionNum, Platform: av.Platform, PlanClass: av.PlanClass}
	for k, o := range outputs {
		name := OutputFileName(c.ResultName, k)
		res.FileRefs = append(res.FileRefs, boincxml.ReplyFileRef{FileName: name, OpenName: o.OpenName})
		st.addFile(reply, boincxml.ReplyFileInfo{Name: name, URL: st.base + UploadPath, MaxNBytes: o.MaxNBytes,
			XMLSignature: UploadToken(st.uploadKey, name, st.host.ID), GeneratedLocally: true, UploadWhenPresent: true})
	}
	st.wus[c.WUID] = true
	reply.Workunits = append(reply.Workunits, wu)
	reply.ResultsSent = append(reply.ResultsSent, res)
	return nil
}

func (st *sendState) addFile(reply *boincxml.SchedulerReply, fi boincxml.ReplyFileInfo) {
	if !st.files[fi.Name] {
		st.files[fi.Name] = true
		reply.FileInfos = append(reply.FileInfos, fi)
	}
}
