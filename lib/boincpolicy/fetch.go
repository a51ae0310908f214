package boincpolicy

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// ProjectReason is why a project may not be asked for work (work_fetch.cpp
// compute_project_reason); "" when it may.
type ProjectReason string

// Reason is why a project may not be asked for work of one resource
// (RSC_PROJECT_WORK_FETCH::compute_rsc_project_reason); "" when it may.
type Reason string

// The reasons bkit's documents can give (BOINC's others need state bkit does not keep:
// suspension, stalled downloads, max_concurrent, GPU exclusions).
const (
	ProjectMinRPCTime ProjectReason = "scheduler RPC backoff"
	ProjectTooMany    ProjectReason = "too many runnable tasks"
	ReasonNoApps      Reason        = "no applications"
	ReasonZeroShare   Reason        = "zero resource share"
	ReasonBackedOff   Reason        = "project is backed off"
)

// Choice is a work-fetch decision: the project to ask (-1: none) and the request.
type Choice struct {
	Project int
	Request state.WorkRequest
	// Priority is each project's work-fetch priority (by index in doc.Projects). It
	// and the reasons below, and the request's Coprocs, are the workspace's: good
	// until its next call.
	Priority []float64
	// ProjectReasons and Reasons say why a project or (project, resource) may not be
	// asked (Reasons by project × host resource).
	ProjectReasons []ProjectReason
	Reasons        []Reason
}

// setup is WORK_FETCH::setup after the simulation: the reasons, the fetchable shares
// and the work-fetch priorities, and the projects in decreasing priority (w.order).
func (w *Workspace) setup(doc *state.Document, now float64) {
	nR, versions := w.nRes, w.versionTable(doc)
	for p := range doc.Projects {
		pr := &doc.Projects[p]
		var nRun int
		for r := 0; r < nR; r++ {
			nRun += w.nRunnable[p*nR+r]
		}
		// A pending master fetch does not stop a request here: the loop reads the master
		// file at the RPC (BOINC's emulator clears the flag, client/sim.cpp
		// simulate_rpc).
		switch {
		case nRun > MaxRunnableJobs:
			w.projReason[p] = ProjectTooMany
		case pr.MinRPCTime > now:
			w.projReason[p] = ProjectMinRPCTime
		default:
			w.projReason[p] = ""
		}
		for r, res := range doc.Host.Resources {
			k := p*nR + r
			w.reason[k] = ""
			switch {
			case !doc.BOINCEmulator && !versions[k]:
				// BOINC's client asks for no work of a resource the project has said it
				// has no apps for (compute_rsc_project_reason: no_rsc_apps, from the
				// scheduler's reply); bkit's documents hold the project's app versions
				// instead. BOINC's emulator's servers never say (client/sim.cpp
				// simulate_rpc), so its client asks every project for every resource.
				w.reason[k] = ReasonNoApps
			case pr.ResourceShare == 0 && w.Sim[r].Saturated > min(doc.Preferences.WorkBufMinDays*86400, EstFetchTime):
				w.reason[k] = ReasonZeroShare
			case backoffUntil(pr, res.Type) > now:
				w.reason[k] = ReasonBackedOff
			}
		}
	}
	// compute_shares.
	clear(w.fetchShare)
	for r := 0; r < nR; r++ {
		var total float64
		for p := range doc.Projects {
			if w.projReason[p] == "" && w.reason[p*nR+r] == "" {
				total += doc.Projects[p].ResourceShare
			}
		}
		for p := range doc.Projects {
			if w.projReason[p] == "" && w.reason[p*nR+r] == "" {
				w.fetchShare[p*nR+r] = 1
				if total > 0 {
					w.fetchShare[p*nR+r] = doc.Projects[p].ResourceShare / total
				}
			}
		}
	}
	// project_priority_init(true): the shares and RECs are summed over the projects
	// that can request work (project.cpp PROJECT::can_request_work): in bkit's
	// documents none is suspended or set to no new tasks, so those not waiting out an
	// RPC backoff (min_rpc_time > now). Under bsim's own convention every project
	// still counts (its figures are kept; docs/decisions.md).
	for p := range w.eligible {
		w.eligible[p] = !doc.BOINCEmulator || !(doc.Projects[p].MinRPCTime > now)
	}
	copy(w.recTemp, w.rec)
	Priorities(doc, w.recTemp, w.eligible, w.prio, w.shareFrac)
	// Projects with work queued come lower: the FLOPs queued ÷ the FLOPs of a full
	// buffer of the whole host.
	if maxQueued := WorkBufTotal(&doc.Preferences) * w.totalPeak; maxQueued > 0 {
		for i := range w.jobs {
			j := &w.jobs[i]
			w.prio[j.proj] -= j.left / maxQueued
		}
		if doc.BOINCEmulator {
			// BOINC's setup takes every result the client holds, a computed one
			// not yet reported too, and in its emulator a result's FLOPs left are
			// sim_flops_left (client/result.h estimated_flops_remaining, #ifdef SIM),
			// which the step a task ends in takes below 0 (client/sim.cpp
			// ACTIVE_TASK_SET::poll): until it is reported, that overshoot raises
			// its project's priority (state.Task.EmulatorFlopsLeft of a done task).
			for i := range doc.Tasks {
				if t := &doc.Tasks[i]; t.State == state.TaskDone && t.EmulatorFlopsLeft < 0 {
					if p := w.pIx.Index(t.Project); p >= 0 {
						w.prio[p] -= t.EmulatorFlopsLeft / maxQueued
					}
				}
			}
		}
	}
	w.order = w.order[:0]
	for p := range doc.Projects {
		w.order = append(w.order, p)
	}
	slices.SortStableFunc(w.order, func(a, b int) int {
		switch {
		case w.prio[a] > w.prio[b]:
			return -1
		case w.prio[a] < w.prio[b]:
			return 1
		}
		return 0
	})
}

// ChooseProject is BOINC's work-fetch choice at now (work_fetch.cpp
// WORK_FETCH::choose_project), after the round-robin simulation: the projects in
// decreasing work-fetch priority (REC priority over every project, minus the FLOPs
// each has queued ÷ a full buffer's FLOPs of the whole host); the first that may be
// asked (no RPC backoff) and has a resource it may be asked
// for (an app version for it, not backed off) whose saturated time is below
// work_buf_min is asked for that resource, and for each other resource whose
// saturated time is below work_buf_total and for which no higher-priority project may
// be asked (even when backed off for it). A resource's request (set_request): its
// shortfall in seconds (1 for a project with a wacky correction factor, and 1 job per
// idle instance for a project with no share), and instances enough for the project's
// share of the resource (minus what its queued jobs use) or the idle ones, whichever
// is more.
func (w *Workspace) ChooseProject(doc *state.Document, now float64) Choice {
	if w.Quiet && w.quietNoFetch(doc, now) {
		return Choice{Project: -1}
	}
	return w.chooseProject(doc, now)
}

// chooseProject is ChooseProject past its skips.
func (w *Workspace) chooseProject(doc *state.Document, now float64) Choice {
	w.Simulate(doc, now)
	w.setup(doc, now)
	nR := w.nRes
	bufMin, bufTotal := WorkBufMin(&doc.Preferences), WorkBufTotal(&doc.Preferences)
	w.found = scratch.Grow(w.found, nR)
	found := w.found
	for r := range found {
		found[r] = -1
	}
	c := w.choice(doc)
	for _, p := range w.order {
		if w.projReason[p] != "" {
			continue
		}
		rsc := -1
		for r := 0; r < nR; r++ {
			if w.reason[p*nR+r] != "" {
				continue
			}
			if found[r] < 0 {
				found[r] = p
			}
			if w.Sim[r].Saturated < bufMin {
				rsc = r
				break
			}
		}
		if rsc < 0 {
			continue
		}
		req := state.WorkRequest{Time: now, Project: doc.Projects[p].Name, Coprocs: w.coprocReq[:0]}
		any := false
		for r := 0; r < nR; r++ {
			if r != rsc {
				if found[r] >= 0 && found[r] != p || !(w.Sim[r].Saturated < bufTotal) {
					continue
				}
				if x := w.reason[p*nR+r]; x != "" && x != ReasonBackedOff {
					continue
				}
			}
			secs, inst := w.setRequest(doc, p, r)
			if secs > 0 {
				any = true
			}
			setReq(&req, doc.Host.Resources[r].Type, secs, inst)
		}
		w.coprocReq = req.Coprocs
		if any && w.Quiet {
			c.Project, c.Request = p, req
			return c
		}
		if any {
			req.Reason = fmt.Sprintf("highest-priority project (%.3f) that can be asked for %s, whose work buffer is low (saturated %.0f s < work_buf_min %.0f s)",
				w.prio[p], doc.Host.Resources[rsc].Type, w.Sim[rsc].Saturated, bufMin)
			c.Project, c.Request = p, req
			return c
		}
	}
	return c
}

// Piggyback is the work request BOINC adds to an RPC made to project p for another
// reason, reporting results (WORK_FETCH::piggyback_work_request): for each resource p
// may be asked for (even if backed off) whose saturated time is below work_buf_total
// and for which no project of higher priority may be asked, the same request as
// ChooseProject's. A project in RPC backoff may still piggyback.
func (w *Workspace) Piggyback(doc *state.Document, p int, now float64) Choice {
	return w.piggyback(doc, p, now, false)
}

// piggyback is Piggyback; set says that setup was made at now on the same document
// with nothing since (quietPiggybackNone's): where the simulation is then replayed,
// which writes nothing setup writes and changes nothing it reads (the runnable jobs'
// counts are the same; the saturated time it reads only where a project has a zero
// share, where quietPiggybackNone makes no setup), setup is not made again.
func (w *Workspace) piggyback(doc *state.Document, p int, now float64, set bool) Choice {
	replayed := w.Quiet && w.simulateReplayed(doc, now)
	if !replayed {
		w.Simulate(doc, now)
	}
	if !replayed || !set {
		w.setup(doc, now)
	}
	c := w.choice(doc)
	c.Project = p
	c.Request = state.WorkRequest{Time: now, Project: doc.Projects[p].Name, Reason: piggybackReason, Coprocs: w.coprocReq[:0]}
	defer func() { w.coprocReq = c.Request.Coprocs }()
	if x := w.projReason[p]; x != "" && x != ProjectMinRPCTime {
		return c
	}
	nR := w.nRes
	bufTotal := WorkBufTotal(&doc.Preferences)
	for r := 0; r < nR; r++ {
		if x := w.reason[p*nR+r]; x != "" && x != ReasonBackedOff {
			continue
		}
		if !(w.Sim[r].Saturated < bufTotal) {
			continue
		}
		if w.betterAskable(p, r) {
			continue
		}
		secs, inst := w.setRequest(doc, p, r)
		setReq(&c.Request, doc.Host.Resources[r].Type, secs, inst)
	}
	return c
}

// piggybackReason is a piggybacked request's Reason.
const piggybackReason = "reporting results; work piggybacked"

// betterAskable reports whether a project of higher work-fetch priority than p may be
// asked for resource r (setup done): Piggyback then leaves r out.
func (w *Workspace) betterAskable(p, r int) bool {
	for _, p2 := range w.order {
		if p2 == p {
			return false
		}
		if w.prio[p2] == w.prio[p] || w.projReason[p2] != "" {
			continue
		}
		if w.reason[p2*w.nRes+r] == "" {
			return true
		}
	}
	return false
}

// choice is an empty choice with the workspace's priorities and reasons (good until
// the workspace's next call).
func (w *Workspace) choice(doc *state.Document) Choice {
	return Choice{Project: -1, Priority: w.prio[:len(doc.Projects)], ProjectReasons: w.projReason, Reasons: w.reason}
}

// setRequest is RSC_WORK_FETCH::set_request for project p and resource r.
func (w *Workspace) setRequest(doc *state.Document, p, r int) (secs, inst float64) {
	pr := &doc.Projects[p]
	s := &w.Sim[r]
	if pr.ResourceShare == 0 {
		if s.IdleNow > 0 {
			return 1, 1
		}
		return 0, 0
	}
	if s.Shortfall > 0 {
		secs = s.Shortfall
		if dcf := pr.DCF(); dcf < WackyDCFLow || dcf > WackyDCFHigh {
			secs = 1
		}
	}
	n := float64(doc.Host.Resources[r].Instances)
	share := n*w.fetchShare[p*w.nRes+r] - w.nusedTotal[p*w.nRes+r]
	inst = max(s.IdleNow, share)
	if inst > 0 && secs == 0 {
		secs = 1
	}
	return secs, max(0, inst)
}

// setReq records the request for resource type t in req, and work_req_seconds as the
// CPU's (WORK_FETCH::write_request).
func setReq(req *state.WorkRequest, t string, secs, inst float64) {
	if secs <= 0 {
		inst = 0 // a resource not asked for: nothing sent
	}
	if t == state.ResourceCPU {
		req.CPUReqSecs, req.CPUReqInstances = secs, inst
		req.WorkReqSeconds = secs
		return
	}
	if secs > 0 {
		req.Coprocs = append(req.Coprocs, state.CoprocRequest{Type: t, ReqSecs: secs, ReqInstances: inst})
	}
}

// hasVersionFor reports whether the project has an app version for resource type t.
func hasVersionFor(doc *state.Document, project, t string) bool {
	return slices.ContainsFunc(doc.AppVersions, func(av state.AppVersion) bool {
		return av.Project == project && av.ResourceType() == t
	})
}

// hasVersion is hasVersionFor for project p and host resource r, from a table of
// every project and resource (p*len(Resources) + r) kept while the document's app
// versions, projects and resources are the slices it was made from (their identity
// and lengths: a reply that adds app versions lengthens theirs) and no view has been
// built since (view: the caller changed the document). Under bsim's conventions the
// work fetch's walks (setup, resAsked, noneAskable, fullPast) look at every project
// and resource at most steps, each look a walk of every app version comparing
// project names, of one length on the emulator's projects (their master URLs): a
// twentieth of corpus c105's run (16 CPUs and a GPU, 5 projects; issue 30,
// forty-third round).
func (w *Workspace) hasVersion(doc *state.Document, p, r int) bool {
	return w.versionTable(doc)[p*len(doc.Host.Resources)+r]
}

// versionTable is hasVersion's table for doc, for a caller that walks every project
// and resource.
func (w *Workspace) versionTable(doc *state.Document) []bool {
	h := &doc.Host
	k := &w.versionsKey
	// (Field by field: == on the struct calls memequal.)
	if w.versionsOK && k.avs == unsafe.SliceData(doc.AppVersions) && k.nAV == len(doc.AppVersions) &&
		k.projects == unsafe.SliceData(doc.Projects) && k.nP == len(doc.Projects) &&
		k.resources == unsafe.SliceData(h.Resources) && k.nR == len(h.Resources) {
		return w.versions
	}
	nR := len(h.Resources)
	w.versions = scratch.Grow(w.versions, len(doc.Projects)*nR)
	for q := range doc.Projects {
		for s := range h.Resources {
			w.versions[q*nR+s] = hasVersionFor(doc, doc.Projects[q].Name, h.Resources[s].Type)
		}
	}
	w.versionsOK = true
	*k = versionsKey{unsafe.SliceData(doc.AppVersions), len(doc.AppVersions), unsafe.SliceData(doc.Projects),
		len(doc.Projects), unsafe.SliceData(h.Resources), len(h.Resources)}
	return w.versions
}

// versionsKey is what hasVersion's table was made from.
type versionsKey struct {
	avs       *state.AppVersion
	nAV       int
	projects  *state.Project
	nP        int
	resources *state.Resource
	nR        int
}

func backoffUntil(p *state.Project, t string) float64 {
	for i := range p.Resources {
		if p.Resources[i].Type == t {
			return p.Resources[i].BackoffUntil
		}
	}
	return 0
}

// HandleReply is WORK_FETCH::handle_reply for a successful RPC to project p that
// asked for req and got jobs[type] jobs per resource type: a resource asked for
// (req_secs > 0) without a job is backed off unless it already is (a piggybacked
// request to a backed-off resource does not lengthen it); one with a job has its
// backoff cleared. Backoff (RSC_PROJECT_WORK_FETCH::resource_backoff): the interval
// starts at MinBackoff and doubles up to MaxBackoff; the resource is not asked again
// before now + interval × uniform[0.5, 1.5), drawn from rng (a math/rand source, or
// BOINC's own rand() stream: lib/glibcrand's drand, under bsim's --emulate boinc).
func HandleReply(doc *state.Document, p int, req *state.WorkRequest, jobs map[string]int, now float64, rng interface{ Float64() float64 }) {
	pr := &doc.Projects[p]
	for _, res := range doc.Host.Resources {
		asked := reqSecs(req, res.Type) > 0
		got := jobs[res.Type] > 0
		switch {
		case got:
			if s := findRes(pr, res.Type); s != nil {
				s.BackoffInterval, s.BackoffUntil = 0, 0
			}
		case asked && backoffUntil(pr, res.Type) < now:
			s := pr.ResourceState(res.Type)
			if s.BackoffInterval > 0 {
				s.BackoffInterval = min(2*s.BackoffInterval, MaxBackoff)
			} else {
				s.BackoffInterval = MinBackoff
			}
			s.BackoffUntil = now + (0.5+rng.Float64())*s.BackoffInterval
		}
	}
}

func findRes(p *state.Project, t string) *state.ProjectResource {
	for i := range p.Resources {
		if p.Resources[i].Type == t {
			return &p.Resources[i]
		}
	}
	return nil
}

func reqSecs(req *state.WorkRequest, t string) float64 {
	if t == state.ResourceCPU {
		return req.CPUReqSecs
	}
	for _, c := range req.Coprocs {
		if c.Type == t {
			return c.ReqSecs
		}
	}
	return 0
}
