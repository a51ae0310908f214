package boincpolicy

import (
	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// job is a runnable task as the policy sees it.
type job struct {
	task                int     // index in doc.Tasks
	project, appVersion string  // its task's: with deadline, the key of refresh
	proj                int     // index in doc.Projects
	res                 int     // host resource it is scheduled on (index in doc.Host.Resources)
	cpus                float64 // CPUs it takes (avg_ncpus)
	inst                float64 // instances of res it takes (its coprocessor count, or cpus)
	speed               float64 // FLOPS
	left                float64 // FLOPs still to do as the simulation and work fetch take them (remaining)
	est                 float64 // FLOPs still to do as the scheduler estimates them (remaining)
	deadline            float64
	peak                float64 // the peak FLOPS it takes (cpu_sched.cpp peak_flops)
	bump                float64 // SchedBump of it at the simulation's REC sum (prepare)

	// the round-robin simulation's; simT is simLeft ÷ simRate, found again wherever
	// either is set (prepareJobs, the simulation's steps), for the bounds that read
	// it several times a pass (issue 30, seventeenth round), and for the simulation
	// its active jobs' time to their finish (RESULT::rrsim_finish_delay)
	simLeft, simRate, simT float64

	// The flags last, side by side: one word for the four, not one each between
	// the floats (a job of 160 bytes, not 184: every pass walks the jobs, and
	// refresh moves them; issue 30, thirty-first round).
	started         bool // it has an active task: running or preempted
	running         bool
	simDone, misses bool // the round-robin simulation's
	// known: left is its task's true remaining work (remaining: under BOINC's
	// emulator, state.Task.EmulatorFlopsLeft > 0), as the view found it; prepareJobs'
	// fall reads it, not the task (knownCheck).
	known bool
}

// Workspace holds one document's view and the buffers of every step, kept from call
// to call so that a long emulated run allocates little. The zero value is ready.
type Workspace struct {
	// Quiet leaves the requests' reasons unsaid (an emulated run reads none; putting
	// them into words at every step is most of what it would allocate).
	Quiet bool
	// Overestimate bounds a task's estimated work ÷ its real work, as the caller
	// knows it (the emulator: the largest of the jobs it made; below 1 counts as 1):
	// how much faster than the work done a started task's estimated remaining work
	// may fall, which the work fetch's hold (workBound) must allow for.
	Overestimate float64

	avIx, pIx state.Names
	jobs      []job
	relSpeed  []float64
	totalPeak float64
	nRes      int
	cpuRes    int

	// hasVersion's table, what it was made from, whether it may stand
	versions    []bool
	versionsKey versionsKey
	versionsOK  bool
	// namesDistinct's answer, the projects it was found for, whether it may stand
	distinct, distinctOK bool
	distinctAt           *state.Project
	distinctN            int

	// per project
	rec, recTemp, prio, shareFrac []float64
	prioBase                      []float64 // the simulation's priority from REC (prepare)
	pickRecSum                    float64   // the REC sum of the simulation's picks (pick)
	eligible                      []bool
	// per project × resource (p*nRes + r)
	nusedTotal, simNused, fetchShare []float64
	missed, missedCopy, nRunnable    []int
	edfProj                          []bool // earliestMiss's, per project
	rh                               []int  // runHold's, per project
	// earliestMiss's: how many projects edfProj looks at, the project of the job it
	// returned last (−1: none)
	edfProjN, edfLast int
	// earliestMiss's walk at a pass (edfOrder): r's jobs by deadline (kept per
	// resource from pass to pass: edfOrds), the resource
	// (−1: none yet), the next to look at, and whether it goes through every job
	edfOrd        []int
	edfOrds       [][]int
	edfRes, edfAt int
	edfFull       bool
	// earliestMiss's jobs of one deadline in earliest_deadline_result's order
	// (edfTies): the place of the first not passed over, and the end of their run in
	// edfOrd (edfAt below it: they are the run edfAt is in)
	edfTie              []int
	edfTieAt, edfTieEnd int
	reason              []Reason
	projReason          []ProjectReason
	pending             [][]int // per project × resource: job indices in arrival order
	pendBase            [][]int // pending's arrays from their starts (simulateFrom takes a first job off the front)
	pendingAt           []int
	// pickSeq: the projects pick took jobs from, in order, and whether it stopped
	// because they used the CPUs (pickBroke), for pickAgain; pickSame: each
	// project's CPU jobs of the same CPUs and bump (prepare); cpuSeqAt, cpuActAt:
	// where the CPUs' picks start in pickSeq and w.active (after the coprocessors').
	pickSeq            []int
	cpuSeqAt, cpuActAt int
	// segAt, segBroke: per resource, where its picks start in pickSeq and w.active
	// (the CPUs' at cpuSeqAt), and whether they stopped at its instances (pickDrop).
	segAt    []int
	segBroke []bool
	edfList  []RunEntry // edfKeeps' run list
	keepCo   []float64  // edfKeeps': per resource, the instances its entries take
	edfCPUs  int        // the CPU jobs the last listing listed for their misses (edfListingSure)
	edfOut   bool       // one of the last listing's first n CPU jobs listed for a miss was not running (sliceFree)
	sliceEnd float64    // the first slice's end a hold set by setKeepHold or setEDFHold lasts past (sliceFree; sliceChecks')
	// keepFree, keepRuns, keepAt: the CPUs edfKeeps' entries leave free, how many
	// of them run, and the first entry of the pass's list keepsMore has not seen.
	keepFree            float64
	keepRuns, keepAt    int
	pickSame, pickBroke bool
	// pickShift: pickAgain's last pick took every CPU pick from the project whose job
	// ended, so the active jobs are the others in their order, then one new at the
	// end (simulateFrom's first to finish: nextBest over the others, then the new
	// one; a scan after c143's 210,942 picks a 10-day run under BOINC's emulator, 2 %
	// of it: issue 30, thirty-eighth round). cpuOne: the project every one of pick's
	// CPU picks is of (-1: none such, or not known after pickDrop's and pickResume's),
	// for pickAgain.
	pickShift bool
	cpuOne    int

	// per resource: the simulation's results
	Sim      []ResourceSim
	simUsed  []float64 // the instances the simulation's active jobs use (pick)
	resOrder []int     // the order pick takes the resources in (resourceOrder)

	simAt float64 // when the simulation last ran (BOINC's rr_simulation runs once a moment)
	// missOrder: the jobs' tasks the last whole simulation saw miss, as it finished them
	missOrder []int
	// missStarted: whether each of missOrder's tasks had started when the simulation
	// saw it (BOINC's client then has its ACTIVE_TASK; MissStarted).
	missStarted []bool
	simDone     bool
	// viewAt, viewDone: when the quiet paths last built the view; within one moment
	// the document changes only where the caller says so (Reset), so the work
	// fetch's view serves the pass that follows it.
	viewAt   float64
	viewDone bool
	// riseAt, riseUntil: noRiseUntil at that moment, while riseKept (box.go).
	riseAt, riseUntil float64
	riseKept          bool
	// viewKept: the jobs were built since the last Reset (refresh brings them up to
	// date; TasksChanged keeps them); from viewTasks tasks, none received or dropped
	// since unless received (TasksReceived).
	viewKept, received bool
	viewTasks          int
	dcf                []float64 // per project: the last view's or refresh's
	dcfSame            []bool    // per project: dcf the same at refresh as before
	dcfOf              []float64 // per project: prepare's
	// hold, holdUntil: passes change nothing before holdUntil (setHold); slack and
	// anyMiss are missesKnown's: how long from its now no job that does not miss its
	// deadline can come to (nor one that misses by missBounds' bound come not to), and
	// whether some job misses.
	hold             bool
	holdUntil, slack float64
	anyMiss          bool
	boundMiss        bool // some job misses by missBounds' bound (setEDFHold)
	holdMiss         bool // the hold is setEDFHold's: the passes' miss counts are passMissed
	// fetchHold, fetchHoldUntil: no resource is short of work before fetchHoldUntil
	// (workBound, computed at boundAt); a Reset or a pass that starts or stops a
	// job ends it.
	fetchHold               bool
	fetchHoldUntil, boundAt float64
	// fetchBoxed, fetchEps, fetchF: lowHold's hold where the served CPUs it rests on
	// read the RECs holds only while the REC fractions stay within fetchEps of
	// fetchF (fetchHeld; box.go).
	fetchBoxed bool
	fetchEps   float64
	fetchF     []float64
	// askHold, askHoldUntil: no project may be asked before askHoldUntil
	// (noneAskable); a Reset ends it.
	askHold      bool
	askHoldUntil float64
	// noAsk, noAskUntil: the resources no project may be asked for, until the
	// first moment that may end (resAsked); workBound passes over them.
	noAsk      []bool
	noAskUntil float64
	// passMissed, passAt: the deadline-miss counts (as w.missed) of the last pass and
	// its moment; keep: the next pass at that moment keeps them (Arrived).
	passMissed []int
	passAt     float64
	keep       bool

	changed bool // the last Schedule started or stopped a task (Changed)

	// reportHold, reportHoldUntil: OverdueReport finds no project before
	// reportHoldUntil (overdueReport's from); Reset and TasksChanged end it.
	reportHold      bool
	reportHoldUntil float64

	reportCounts        []int // OverdueReport's
	active, order, heap []int
	resumeCo            []float64 // pickResume's: per project, the CPUs of its coprocessor picks
	bound               []float64 // per resource: missesKnown's
	// prepareJobs': per resource the bounds' sums (sumsPer each), the coprocessor
	// jobs' CPUs and how fast a remaining work may fall (workBound)
	sums             []float64
	coprocCPUs, fall float64
	found            []int
	list             []RunEntry
	keys             []runKey // sortRunList's
	// rankCPUJobs': the CPU jobs by project and rank (ranked), each list's start
	// (rankAt) and next job (rankNext); per project its first job not chosen
	// (rankHead), and the project bestCPUByPriority answered last (rankLast; −1
	// none, −2 every head to find)
	ranked, rankAt, rankNext []int
	rankHead                 []int
	rankLast                 int
	coprocReq                []state.CoprocRequest
	chosen                   []bool
	coprocUsed               []float64
	coUse, coPend            []float64 // assignShared's, per resource
	pruned                   []bool    // assignShared's, per run-list entry
	// projectBounds' and saturatedBound's (bounds.go)
	gServed, gPrev                   []float64 // gPrev: projectServed's last, before it
	servedSame                       bool      // projectServed served the same CPUs as before
	gCPUs, gBump, gPrio, gShare, cum []float64
	gSums                            []float64
	gRecSum, gCPUSecs                float64
	gCoCPUs, gCoSecs                 float64   // projectStats': the coprocessor jobs' CPUs at once (coCPUsOnce), CPU-seconds
	coOnce                           []float64 // coCPUsOnce's, per resource
	coServed                         []float64 // listUpper's beside coprocessor jobs (coExactBlocked)
	coExactUsed                      bool      // listUpper's last: its exact case beside coprocessor jobs (coOnceCheck's)
	gRECFree                         bool
	perJobFails, perJobSkip          int       // missesKnown's (perJobFailed)
	listFirst                        int       // passes at which missesListedPick comes before missesKnown
	shortFails, shortSkip            int       // missesKnown's (shortFailed)
	longFails, longSkip              int       // missesKnown's (firstLevel)
	listFree, listRel                []float64 // listLower's and listUpper's (listsched.go)
	listNow                          []bool    // listLower's: per project, its CPUs all free from now
	lowCopy                          []float64 // lowCheck's
	edfStarted                       []int     // edfListingSure's: the started jobs

	// projectServed's priorities of each project before each of its CPU jobs
	// (served.go): sPrio; per project, its figures for the walks (sQ)
	sPrio []float64
	sQ    []servedQ

	// simGen counts the changes of the jobs' simulated times (prepareJobs, the
	// simulation, the view); ownEnd: listUpper's ends of the only project's jobs on
	// all n CPUs from now (ownOK), project ownP, at simGen ownGen, for listLower
	simGen, ownGen int
	ownP           int
	ownOK          bool
	ownEnd         []float64
	listUp         bool // w.cum has listUpper's since projectServed
	top, low       []float64
	lowK, lowRunP  []float64 // lowFall's per job, and its running jobs per project

	// prepareJobs' last work (prepSame): whether it may stand (prepOK), simGen and
	// the availabilities it was done at
	prepOK           bool
	prepGen          int
	prepCPU, prepGPU float64

	// coprocBounds': per resource whether its every job takes all its instances; per
	// job the bounds; per resource and project its sums
	// and coAheads': the order's times per resource and project, and per job the end
	// (when coOrdered); its priorities
	coWhole                       []bool
	coUp, coLow, coSums, coOthers []float64
	coOrdered                     bool
	coAhead, coEx, coPrio         []float64
	lowSlack, restSlack           float64 // missesKnown's slack: its misses by missBounds', the rest
	capSlack                      float64 // missesKnown's slack: its horizons' part (restSlack's but the jobs' margins)
	// missesKnown's answer kept (keepMisses): good until mkUntil, in a box of
	// mkEps about the REC fractions mkF (the served CPUs mkServed's); each job's
	// misses, the counts.
	mkKept            bool
	mkUntil, mkEps    float64
	mkRest            float64 // mkUntil but for the misses by missBounds' bound (relow)
	mkF, mkServed     []float64
	mkMisses          []bool
	mkMissed          []int
	mkAny, mkBound    bool
	lowList           bool      // w.low is listLower's
	satFree           []float64 // saturatedList's
	lowFails, lowSkip int       // saturatedLow's

	// missBounds' last work (lowSame): whether it may stand (lowOK), the simGen it was
	// done at, the CPUs each project was served and the projects with jobs then
	lowOK     bool
	lowGen    int
	lowServed []float64
	lowElig   []bool
	// lowFall's: each job's d, and its last work (fallSame): whether it may stand
	// (fallOK), the jobsGen, the d's, whether the bounds were the list schedules',
	// the CPUs each project was served and the projects with jobs it was done with
	lowD, fallD, fallServed []float64
	fallKept, lowKept       []float64 // (lowCheck's)
	fallOK, fallList        bool
	fallGen                 uint64
	fallElig                []bool
	// tiedEnds': per job its start, end and end's fall (3 a job), per project its
	// CPUs' free times and its e and jobs placed; T and the greatest e
	tied, tiedFree, tiedRun []float64
	tiedT, tiedE            float64
	tiedOK                  bool // they tie (tiedEnds)

	// keepMisses' answer carried by the project's list schedule (missesRelist):
	// whether it may be, whether it was, the rest's cap (its horizons'), the first
	// moment a running job's work may grow; the CPUs' free times
	mkRelist, mkRelisted bool
	mkRebound            bool // the answer carried by missesRebound (its tests' check)
	mkStayed             bool // missesStay carried the misses (the tests' check)
	mkCapAt, mkRiseAt    float64
	relistFree           []float64
	// the order of the jobs judgeList places (empty: theirs)
	listOrder []int
	// replayEnds': each job's end (by index); the buffer whose window holds the jobs
	// running, with their work left and rate
	replayEnd []float64
	replayRun []replayJob
	// the array of jobs from its start (jobsFull)
	jobsBase []job
	// emulatorOrder's, kept while the jobs are (emuGen: jobsGen): whether it holds
	// (emuOK), its order
	emuKept, emuOK bool
	emuGen         uint64
	// relistable's, kept while the jobs are (relGen: jobsGen): whether it is kept,
	// its answer
	relKept, relOK bool
	relGen         uint64
	emuOrder       []int
	// priorityBlocks': the projects' priorities and temporary RECs, their jobs left,
	// the projects in pick's order
	blockPrio             []float64
	blockLeft, blockOrder []int
	blockFails, blockSkip int   // missesListedPick's (perJobFailed's rule)
	fetchOrder            []int // pickBlocks' order (the work fetch's)
	// missesListedCo's, per resource: its queue's end, CPUs and fall (coqT), its
	// jobs (coqN), whether it has jobs left (coqLeft); the coprocessors by end (coqOrd)
	coqT    []float64
	coqN    []int
	coqLeft []bool
	coqOrd  []int
	// missesListed gave the answer at this pass (listedNow), the answer kept is
	// one it gave (mkListed): the tests' check
	listedNow, mkListed bool

	// The box of REC fractions a hold is good in (box.go): servedEps, projectServed's
	// at now; recEps, missesKnown's (+Inf: its answer and slack read no REC, or the
	// horizon's); boxEps and boxF, the hold's half-width (+Inf: none) and centre.
	servedEps, recEps, boxEps float64
	boxF                      []float64
	// kept: the last pass was cut short (keptPass); listEps: the box its listing by
	// priority holds in (setKeepHold).
	kept    bool
	listEps float64
	// The last keep hold's listing, carried past the hold (rehold): good before
	// khUntil (its slices' ends, its ties' and a rise), with misses khMissed (khAny,
	// khBound) and the RECs within khEps of the fractions khF.
	khCarry, khAny, khBound bool
	khUntil, khEps          float64
	khF                     []float64
	khMissed                []int
	khPicks                 []int // per project and resource, its jobs listed for their misses (missesAlike)
	reheld                  int   // passes rehold made (the tests count them)
	// A hold ended by TasksChanged, carried across an RPC's new jobs (arrived.go):
	// arrLost, a hold was in force at the change (until arrUntil, the counts
	// arrMissed), no pass since; arrRecv, an RPC reported or received tasks since the
	// last pass (TasksReceived: a settle alone is not tried); arrCarry, the next pass
	// may set it again, with the arrK old jobs first.
	arrLost, arrRecv, arrCarry bool
	arrUntil                   float64
	arrMissed                  []int
	arrK                       int
	// viewN counts the views built or brought up to date (view, refresh); arrViewN,
	// the count when the hold was lost: the jobs are still the hold's while equal.
	viewN, arrViewN int

	// projectStats' figures of the jobs alone (statsTimes): gCPUs with zero
	// CPU-seconds and gBump's peaks, then w.eligible, kept from the walk made at
	// jobsGen statsGen; jobsGen counts the changes of the jobs (view, and refresh
	// where one is dropped or a task received).
	statsJobs         []float64
	statsElig         []bool
	statsKept         bool
	statsGen, jobsGen uint64

	// checkCopy's copy of a document, when this is a check's workspace
	copyDoc      state.Document
	copyTasks    []state.Task
	copyProjects []state.Project
}

// ResourceSim is what the round-robin simulation says about one host resource.
type ResourceSim struct {
	Type string
	// Shortfall is the instance-seconds the resource would stand idle within the work
	// buffer (now to now + work_buf_total).
	Shortfall float64
	// Saturated is how long from now all its instances stay busy.
	Saturated float64
	// IdleNow is the instances idle at once.
	IdleNow float64
	// Misses counts the jobs on it projected to miss their deadline.
	Misses int
}

// view builds the jobs of doc at now: the runnable tasks, in document order (BOINC's
// results are in arrival order, and bsim's documents keep tasks so).
func (w *Workspace) view(doc *state.Document) {
	w.viewN++
	w.jobsGen++ // (statsTimes)
	w.riseKept = false
	w.simGen++
	w.avIx.SetAppVersions(doc.AppVersions)
	w.pIx.SetProjects(doc.Projects)
	w.versionsOK, w.distinctOK = false, false
	h := &doc.Host
	w.nRes = len(h.Resources)
	w.cpuRes = 0
	for r := range h.Resources {
		if h.Resources[r].Type == state.ResourceCPU {
			w.cpuRes = r
		}
	}
	w.resourceOrder()
	w.relSpeed = RelativeSpeeds(h, w.relSpeed)
	cpuFlops := h.CPU().Flops
	w.totalPeak = 0
	// BOINC's total_peak_flops (cpu_sched.cpp): a coprocessor's relative speed counts
	// its instances and is multiplied by them again, as BOINC does (the same for one
	// device; the corpus's hosts have one of each type).
	for r, res := range h.Resources {
		w.totalPeak += w.relSpeed[r] * cpuFlops * float64(res.Instances)
	}
	nP := len(doc.Projects)
	w.rec = scratch.Grow(w.rec, nP)
	w.recTemp = scratch.Grow(w.recTemp, nP)
	w.prio = scratch.Grow(w.prio, nP)
	w.shareFrac = scratch.Grow(w.shareFrac, nP)
	w.eligible = scratch.Grow(w.eligible, nP)
	w.dcf = scratch.Grow(w.dcf, nP) // (build's, which refresh compares with)
	for i := range doc.Projects {
		w.rec[i] = doc.Projects[i].REC
		w.dcf[i] = doc.Projects[i].DCF()
	}
	n := nP * w.nRes
	w.nusedTotal = scratch.Grow(w.nusedTotal, n)
	w.simNused = scratch.Grow(w.simNused, n)
	w.fetchShare = scratch.Grow(w.fetchShare, n)
	w.missed = scratch.Grow(w.missed, n)
	w.missedCopy = scratch.Grow(w.missedCopy, n)
	w.nRunnable = scratch.Grow(w.nRunnable, n)
	if cap(w.reason) < n {
		w.reason = make([]Reason, n)
	}
	w.reason = w.reason[:n]
	if cap(w.projReason) < nP {
		w.projReason = make([]ProjectReason, nP)
	}
	w.projReason = w.projReason[:nP]
	for len(w.pending) < n {
		w.pending = append(w.pending, nil)
	}
	w.pendingAt = scratch.Grow(w.pendingAt, n)
	w.boundsScratch(nP, h.CPU().Instances)
	if cap(w.Sim) < w.nRes {
		w.Sim = make([]ResourceSim, w.nRes)
	}
	w.Sim = w.Sim[:w.nRes]

	w.jobs = w.jobsFull()[:0]
	if cap(w.jobs) < len(doc.Tasks) {
		// At most a job a task, in one allocation: a job is large, and a new
		// workspace's slice grown by append was copied over and over (most of what the
		// package's tests, which make one per queue, allocate). Doubled at least, as
		// append would, so that a queue growing a task at a time seldom reallocates.
		w.jobs = make([]job, 0, max(len(doc.Tasks), 2*cap(w.jobs)))
	}
	w.jobsBase = w.jobs // (the appends below fit)
	for i := range doc.Tasks {
		if !doc.Tasks[i].State.Runnable() {
			continue
		}
		// Built in place: a job is large, and copying it in was most of view's time.
		w.jobs = append(w.jobs, job{})
		w.build(doc, i, &w.jobs[len(w.jobs)-1])
	}
}

// build builds in j the job of task i (view done for doc's host; w.avIx and w.pIx
// doc's).
func (w *Workspace) build(doc *state.Document, i int, j *job) {
	h := &doc.Host
	cpuFlops := h.CPU().Flops
	t := &doc.Tasks[i]
	v := w.avIx.Index(t.AppVersion)
	av := &doc.AppVersions[v]
	p := w.pIx.Index(t.Project)
	{
		*j = job{task: i, project: t.Project, appVersion: t.AppVersion, proj: p, cpus: av.AvgNCPUs, inst: av.Instances(), speed: av.Speed(h),
			deadline: t.ReportDeadline, started: t.State != state.TaskReady, running: t.State == state.TaskRunning}
		j.res = w.cpuRes
		if av.Coproc != nil {
			for r := range h.Resources {
				if h.Resources[r].Type == av.Coproc.Type {
					j.res = r
				}
			}
		}
		if av.Coproc == nil {
			j.inst = av.AvgNCPUs
		}
		j.left, j.est, j.known = remaining(doc, t, doc.Projects[p].DCF())
		j.peak = cpuFlops * av.AvgNCPUs
		if j.res != w.cpuRes {
			j.peak += cpuFlops * j.inst * w.relSpeed[j.res]
		}
	}
}

// quietView is view, built at most once a moment until Reset; from one moment to the
// next, and after TasksChanged, the jobs already built are brought up to date
// (refresh).
func (w *Workspace) quietView(doc *state.Document, now float64) {
	if w.viewDone && w.viewAt == now {
		return
	}
	if w.viewKept {
		w.refresh(doc)
		if viewCheck {
			w.checkView(doc)
		}
	} else {
		w.view(doc)
		w.viewKept, w.received, w.viewTasks = true, false, len(doc.Tasks)
	}
	w.viewDone, w.viewAt = true, now
}

// refresh brings the jobs of the last view up to date with the tasks: the projects'
// REC, each job's state (the passes') and estimated remaining work (the step's
// progress); the jobs whose tasks are no longer runnable or gone (settled, reported)
// leave, and the tasks received are built (build). What the rest of a job is worked
// out from, its task's project, app version and deadline (the key), does not change
// (nor do the host, the projects and their app versions, which a view reads once), so
// a job is kept for a runnable task of the same key, whichever task of that key it
// was built for: the tasks and the jobs are walked in order side by side, and a job
// whose key is not the task's is dropped. (A task received in the middle would drop
// the jobs after it, to be built again; the loop only drops tasks and adds new ones
// at the end, keeping the others' order.)
func (w *Workspace) refresh(doc *state.Document) {
	w.viewN++
	w.riseKept = false
	w.simGen++
	nP := len(doc.Projects)
	same := len(w.dcf) == nP // w.dcf the last view's or refresh's
	w.dcfSame = scratch.Grow(w.dcfSame, nP)
	if !same {
		w.dcf = scratch.Grow(w.dcf, nP)
	}
	for i := range doc.Projects {
		w.rec[i] = doc.Projects[i].REC
		d := doc.Projects[i].DCF()
		w.dcfSame[i] = same && d == w.dcf[i]
		w.dcf[i] = d
	}
	if !w.received && len(doc.Tasks) == w.viewTasks {
		// No task received or dropped since the jobs were built (TasksReceived):
		// each job's task is where it was, and only its state changed.
		// (The slices in locals: the loop read them through w and doc at every job.)
		jobs, tasks, dcf, dcfSame := w.jobs, doc.Tasks, w.dcf, w.dcfSame
		dropped := false
		for i := 0; i < len(jobs); {
			t := &tasks[jobs[i].task]
			runnable, started, running := runState(t.State)
			if !runnable {
				jobs = dropJob(jobs, i)
				dropped = true
				continue
			}
			j := &jobs[i]
			i++
			if !started && !j.started && dcfSame[j.proj] {
				// Not started then and now: only a running task's work moves, so
				// its remaining work is as it was at the same correction factor
				// (most of a queue's jobs wait; remaining was half of refresh's
				// time: issue 30, fortieth round).
				continue
			}
			j.started, j.running = started, running
			j.left, j.est, j.known = remaining(doc, t, dcf[j.proj])
		}
		if dropped {
			w.jobsGen++ // a job dropped (statsTimes)
		}
		w.jobs = jobs
		return
	}
	w.jobsGen++ // (statsTimes)
	w.received, w.viewTasks = false, len(doc.Tasks)
	n := len(w.jobs)
	k, out := 0, 0 // the next job to walk, the next to keep
	indexed := false
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if !t.State.Runnable() {
			continue
		}
		for k < n && !w.jobs[k].is(t) {
			k++
		}
		if k < n {
			if out != k {
				w.jobs[out] = w.jobs[k]
			}
			k++
			j := &w.jobs[out]
			out++
			j.task = i
			j.started, j.running = t.State != state.TaskReady, t.State == state.TaskRunning
			j.left, j.est, j.known = remaining(doc, t, w.dcf[j.proj])
			continue
		}
		// A task received (every job walked: the slots from out on are free).
		if !indexed {
			w.avIx.SetAppVersions(doc.AppVersions)
			w.pIx.SetProjects(doc.Projects)
			indexed = true
		}
		if out == len(w.jobs) {
			w.addJob()
		}
		w.build(doc, i, &w.jobs[out])
		out++
	}
	w.jobs = w.jobs[:out]
}

// dropJob is jobs without job i, the others' order kept: the jobs after it move up,
// in one copy (moved one by one behind refresh's walk, the 160-byte jobs were an
// eighth of refresh's time in example-2cpu-2to1's profile: issue 30, forty-first
// round); or, where fewer jobs are before it than after, those before it move on one
// place instead and the slice starts a place later (its room at the end is addJob's),
// as a queue run in order drops its first jobs (c143 under the emulator at seed 1:
// typedslicecopy 2.9 M at 5,973 drops: issue 30, forty-fourth round). The jobs from
// i on are then at the same places in the slice returned. (Not inlined: in refresh's
// body it moved the inlining of remaining's estimate out, 0.7 M dearer on c143.)
//
//go:noinline
func dropJob(jobs []job, i int) []job {
	if i < len(jobs)-1-i {
		if i > 0 {
			copy(jobs[1:i+1], jobs[:i])
		}
		return jobs[1:]
	}
	return jobs[:i+copy(jobs[i:], jobs[i+1:])]
}

// jobsFull is w.jobs' array from its start, to its capacity, where w.jobsBase holds
// it (refresh's drops of the first jobs move w.jobs' start on), else w.jobs to its
// capacity.
func (w *Workspace) jobsFull() []job {
	b, j := w.jobsBase[:cap(w.jobsBase)], w.jobs[:cap(w.jobs)]
	if len(j) > 0 && len(b) >= len(j) && &b[len(b)-1] == &j[len(j)-1] {
		return b
	}
	return j
}

// addJob adds a zero job at w.jobs' end: where the array has no room past w.jobs but
// has some before it (jobs dropped at the front), the jobs move back to its start
// first, so that the array is not replaced (and collected) for it.
func (w *Workspace) addJob() {
	if len(w.jobs) == cap(w.jobs) {
		if full := w.jobsFull(); len(full) > len(w.jobs) {
			w.jobs = full[:copy(full, w.jobs)]
		}
	}
	c := cap(w.jobs)
	w.jobs = append(w.jobs, job{})
	if cap(w.jobs) != c {
		w.jobsBase = w.jobs // a new array, w.jobs at its start
	}
}

// runState is what refresh reads of a task's state, in one switch: whether it is
// runnable (state.TaskState.Runnable), started (not ready) and running. (The three
// tests took up to five comparisons of strings, a fifth of refresh's time in
// part-time-4cpu's profile: issue 30, eighteenth round.)
func runState(s state.TaskState) (runnable, started, running bool) {
	switch s {
	case state.TaskReady:
		return true, false, false
	case state.TaskRunning:
		return true, true, true
	case state.TaskPreempted:
		return true, true, false
	}
	return false, false, false
}

// is reports whether j is a job for task t: the same key (refresh).
func (j *job) is(t *state.Task) bool {
	return j.deadline == t.ReportDeadline && state.SameName(j.project, t.Project) && state.SameName(j.appVersion, t.AppVersion)
}

// remaining is a job's remaining FLOPs as BOINC's client takes them: est, its
// estimate (RESULT::estimated_runtime_remaining × FLOPS: a started task's from its
// progress, an unstarted one's its estimate × the project's duration correction
// factor; state.Task.RemainingWork), which earliest-deadline-first's ties read; and
// left, which the round-robin simulation and the work-fetch priority read
// (RESULT::estimated_flops_remaining), the same in a real client. In BOINC's emulator
// (client/result.h, #ifdef SIM) left is every task's true remaining work, started or
// not (sim_flops_left), which bsim --emulate boinc gives as
// state.Task.EmulatorFlopsLeft: the simulation there never sees the correction
// factor, whose emulated value is about twice the truth (Sim.Settle).
//
// known is whether left is the true remaining work (prepareJobs' fall reads it).
func remaining(doc *state.Document, t *state.Task, dcf float64) (left, est float64, known bool) {
	est = t.RemainingWork(dcf)
	if doc.BOINCEmulator && t.EmulatorFlopsLeft > 0 {
		return t.EmulatorFlopsLeft, est, true
	}
	return est, est, false
}

// WorkBufMin is BOINC's work_buf_min in seconds (client_state.h): the low-water mark,
// at least EstFetchTime.
func WorkBufMin(p *state.Preferences) float64 { return max(p.WorkBufMinDays*86400, EstFetchTime) }

// WorkBufTotal is BOINC's work_buf_total in seconds: work_buf_min + work_buf_additional,
// at least 1.
func WorkBufTotal(p *state.Preferences) float64 {
	return max(WorkBufMin(p)+p.WorkBufAdditionalDays*86400, 1)
}

// availFrac is the fraction of time the host computes on a resource (work_fetch.cpp
// overall_cpu_frac, overall_gpu_frac): on × active (GPU active), within [0.01, 1].
func availFrac(ts *state.TimeStats, gpu bool) float64 {
	a := ts.ActiveFrac
	if gpu {
		a = ts.GPUActiveFrac
	}
	return min(1, max(0.01, ts.OnFrac*a))
}
