package boincpolicy

import (
	"math"
	"slices"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// Bounds per job from a project's list schedule (issue 30, eighth round): where the
// sixth round's bounds per job (projectServed's w.cum, missBounds' w.low) sum a
// project's times and divide by its CPUs, these place its jobs one by one on the CPU
// that frees first, as the simulation does, and are then exact where one project
// holds every CPU it can use (down-2cpu's Q waiting behind P, a host of one project:
// part-time-4cpu).
//
// Why (a project's jobs ordered as pick takes them, each job running at its full
// rate while taken, its simulated time falling a second a second): pick takes a
// project's jobs in their order, so at every moment the jobs of p that run are the
// first of its jobs left. Let c(s) be how many of them may run at moment s, and
// compare the simulation with the list schedule that runs the first c(s) of p's
// jobs left at every moment (a job starts on the CPU that frees first; with c(s)
// never falling, no job stops). When the simulation runs at most c(s) of p's jobs at
// every moment, each of p's jobs ends no sooner than in the list schedule; when at
// least min(c(s), p's jobs left), no later. By induction on the jobs' order: when p's
// jobs before job k end no later in one schedule than in the other, fewer of them are
// left in it at every moment, so whenever the other runs job k (fewer than c(s) of
// them before it left), it does too (until k ends in it): k runs at least as long by
// any moment, and ends no later.
//
//   - A project q served every CPU (projectServed, a host whose jobs each take one
//     CPU) has its first min(n, its jobs left) taken at every pick, and pick stops
//     when n are: its jobs run exactly as its list schedule on n CPUs, each free from
//     now. Every other project then runs at most n − min(n, q's jobs left) jobs: at
//     most its list schedule on the CPUs q's leaves, each free once q's last job on
//     it ends (missBounds: from below); any project at most n (from below).
//   - A project served g CPUs has at least min(g, its jobs left) taken at every pick
//     (projectServed: from above, on g CPUs free from now; fewer than g give a later
//     end, so at most maxTop are taken).
//   - With exactly two projects with jobs, each job one CPU, and one of them, q,
//     served every CPU, pick takes the other's jobs until the CPUs are used: it runs
//     exactly n − min(n, q's jobs left) of them while it has that many, so its list
//     schedule on the CPUs q leaves is exact from above too. So it is when q is
//     served as many CPUs as it has jobs (fewer than n): every job of q left is
//     taken at every pick, each on a CPU of its own from now, and the other project
//     runs exactly n − q's jobs left (issue 30, eleventh round: part-time-4cpu's B
//     with three jobs, all served, and A on the one CPU they leave until they end;
//     A's bound on one CPU left its jobs open, and 303 simulations of a 10-day run
//     fell to 63).
//
// A list schedule's ends only fall when a job's time falls (the CPUs' free times,
// kept in order, each only fall at every job placed), so a bound from above holds for
// the horizon as projectServed's do.

// listEnd places a job of time t on the CPU of free (a heap of CPUs' free times,
// the least first) that frees first, and returns when it ends.
func listEnd(free []float64, t float64) float64 {
	end := free[0] + t
	// Unsigned indices: the compiler then drops two of the five bounds checks made
	// at each level of the heap, the children's compared (listEnd was a twentieth
	// of corpus c192's run: issue 30, forty-second round). It is kept within the
	// compiler's budget for inlining: read once per child, it was not, and cost more.
	i, n := uint(0), uint(len(free))
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && free[c+1] < free[c] {
			c++
		}
		if !(free[c] < end) {
			break
		}
		free[i] = free[c]
		i = c
	}
	free[i] = end
	return end
}

// listFrom readies w.listFree, per project n CPUs' free times (a heap each): from now
// for blocker (or every project, when blocker < 0), and for every other project where
// the blocker's list schedule of its own jobs leaves them.
func (w *Workspace) listFrom(nP, n, blocker int) {
	w.listFree = scratch.Grow(w.listFree, nP*n)
	if blocker < 0 {
		return
	}
	b := w.listFree[blocker*n : blocker*n+n]
	for i := range w.jobs {
		if j := &w.jobs[i]; j.proj == blocker && j.res == w.cpuRes {
			listEnd(b, j.simT)
		}
	}
	for p := range nP {
		if p != blocker {
			copy(w.listFree[p*n:p*n+n], b)
		}
	}
	clear(b)
}

// listLower sets missBounds' w.low to the list schedules' ends from below (each job
// one CPU, n ≤ maxTop CPUs): a project q served g CPUs (w.gServed) runs at least
// min(g, its jobs left) at every moment, and it has at least as many left as on all n
// CPUs from now (its jobs end no sooner there), that is until the CPUs of its list
// schedule there that free last (the g latest) free. Every other project p runs at most
// n less those: its list schedule on n CPUs of which each served q's g free only then
// (when q is served every CPU, exactly where q's jobs leave them), the others from now.
// Where the served CPUs sum past n (they cannot, at every pick at once), p's are all
// from now.
func (w *Workspace) listLower(nP, n int) {
	rel := scratch.Grow(w.listRel, nP*n) // per served project, its CPUs' free times on all n, in order
	w.listRel = rel
	// The only project with jobs, whose ends here listUpper kept (its CPUs' free
	// times are then read by no other project): its ends as they are.
	kept := w.ownOK && w.ownGen == w.simGen && !listLowerAgain
	for p := 0; p < nP && kept; p++ {
		kept = w.eligible[p] == (p == w.ownP)
	}
	for i := range w.jobs {
		if j := &w.jobs[i]; w.gServed[j.proj] >= 1 && j.res == w.cpuRes {
			// Its end in its project's list schedule on n CPUs from now, kept for
			// below.
			if kept {
				w.low[i] = w.ownEnd[i]
				continue
			}
			w.low[i] = listEnd(rel[j.proj*n:j.proj*n+n], j.simT)
		}
	}
	served := 0
	for q := range nP {
		if w.gServed[q] >= 1 {
			// Its g latest free times are copied below, where another project's
			// free times are made: in order, unless g is all n (then every one, and
			// the copy is sorted there).
			if g := min(int(w.gServed[q]), n); g < n || listLowerAgain {
				sortFree(rel[q*n : q*n+n])
			}
			served += min(int(w.gServed[q]), n)
		}
	}
	w.listFree = scratch.Grow(w.listFree, nP*n)
	w.listNow = scratch.Grow(w.listNow, nP)
	for p := range nP {
		w.listNow[p] = true
		if !w.eligible[p] {
			continue
		}
		f := w.listFree[p*n : p*n+n]
		if gp := min(int(w.gServed[p]), n); served-max(gp, 0) <= n {
			k, segs, last := 0, 0, 0
			for q := range nP {
				if g := min(int(w.gServed[q]), n); q != p && g >= 1 {
					k += copy(f[k:], rel[q*n+n-g:q*n+n])
					segs, last = segs+1, g
				}
			}
			switch {
			case listLowerAgain:
				slices.Sort(f)
			case k == 0:
				// Every CPU free from now: zeros, in order.
			case segs == 1 && last < n && f[0] > 0:
				// One other project's g latest free times, in order, each above
				// zero, and n − g zeros: the zeros first, then those (what the sort
				// gives, bit for bit: no NaN, no −0).
				copy(f[n-k:], f[:k])
				clear(f[:n-k])
			default:
				sortFree(f) // in order: a heap
			}
			w.listNow[p] = k == 0
		}
	}
	for i := range w.jobs {
		j := &w.jobs[i]
		t := j.simT
		if j.res != w.cpuRes {
			w.low[i] = t
			continue
		}
		if w.listNow[j.proj] && w.gServed[j.proj] >= 1 && !listLowerAgain {
			// On n CPUs all from now, a served project's list schedule is the one
			// placed above, job by job the same sums: its ends. (Placed again, it
			// was a third of listEnd's time on corpus c143, one project: issue 30,
			// twenty-first round.)
			w.low[i] = max(t, w.low[i])
			continue
		}
		w.low[i] = max(t, listEnd(w.listFree[j.proj*n:j.proj*n+n], t))
	}
}

// sortFree sorts f, a few CPUs' free times, in place as slices.Sort does, bit for
// bit: by insertion, where no element is NaN or −0. Then no two elements of other bits
// compare equal (+0 is the only zero, and other floats are equal only with the same
// bits), so the order is the only one there is, whichever way it is reached; else
// slices.Sort, on f as it came. (slices.Sort's pattern-defeating quicksort was a
// thirtieth of corpus c056's dearest run under bsim's conventions, 910 instructions
// a sort of listLower's 13 free times: issue 30, forty-fourth round.)
func sortFree(f []float64) {
	for _, v := range f {
		if v != v || math.Float64bits(v) == 1<<63 {
			slices.Sort(f)
			return
		}
	}
	for i := 1; i < len(f); i++ {
		v, j := f[i], i
		for ; j > 0 && v < f[j-1]; j-- {
			f[j] = f[j-1]
		}
		f[j] = v
	}
}

// listLowerAgain: listLower places every job again on its project's CPUs, as before
// it kept the served projects' ends (a test's, to check the kept ends against).
var listLowerAgain bool

// listUpper lowers projectServed's w.cum to the list schedules' ends on the CPUs each
// project is served (w.gServed), and, with exactly two projects with jobs, each job
// one CPU and one of them served every CPU or as many as it has jobs, the other's on
// the CPUs that one leaves (beside coprocessor jobs, two projects with CPU jobs, each
// one CPU, and the CPUs the coprocessor jobs may take at once taken out:
// coExactBlocked).
func (w *Workspace) listUpper(doc *state.Document, nP int) {
	w.listUp = true
	n := min(doc.Host.CPU().Instances, maxTop)
	blocker, other, eligible, cpuProjects := -1, -1, 0, 0
	co := w.coprocCPUs > 0 && !noCoExact
	for p := range nP {
		if !w.eligible[p] {
			continue
		}
		eligible++
		if co && w.gCPUs[4*p] == 0 {
			continue // coprocessor jobs only: in none of the CPUs' picks
		}
		cpuProjects++
		if (w.gServed[p] >= float64(doc.Host.CPU().Instances) || w.gServed[p] >= w.gCPUs[4*p]) && blocker < 0 {
			blocker = p
		} else {
			other = p
		}
	}
	// Beside coprocessor jobs the other project runs fewer by their CPUs at once
	// (coExactBlocked).
	exact := cpuProjects == 2 && blocker >= 0 && doc.Host.CPU().Instances <= maxTop
	for i := range w.jobs {
		if exact && (w.jobs[i].res != w.cpuRes && !co || w.jobs[i].res == w.cpuRes && w.jobs[i].cpus != 1) {
			exact = false
		}
	}
	w.coExactUsed = exact && co
	if exact {
		w.listFrom(nP, n, blocker)
		if co {
			w.coExactBlocked(w.listFree[other*n : other*n+n])
			w.coServed = scratch.Grow(w.coServed, n)
			clear(w.coServed)
		}
	} else {
		w.listFree = scratch.Grow(w.listFree, nP*n)
	}
	// On a host of one project (blocker: it is served) served every CPU, its
	// schedule here is the one missBounds' listLower places first, the project's
	// own on n CPUs from now: its ends are kept for it while the jobs' times stay
	// as they are (simGen).
	own := eligible == 1 && blocker >= 0 && n == doc.Host.CPU().Instances && min(int(w.gServed[blocker]), n) == n
	if own {
		w.ownEnd = growJobs(w.ownEnd, len(w.jobs))
	}
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != w.cpuRes {
			continue
		}
		g := min(int(w.gServed[j.proj]), n)
		if exact && j.proj == other {
			if co {
				// No longer exact: the CPUs it is served from now too, on a
				// heap of their own.
				e := listEnd(w.listFree[j.proj*n:j.proj*n+n], j.simT)
				if g >= 1 {
					e = min(e, listEnd(w.coServed[:g], j.simT))
				}
				w.cum[i] = min(w.cum[i], e)
				continue
			}
			g = n
		}
		if g < 1 {
			continue
		}
		e := listEnd(w.listFree[j.proj*n:j.proj*n+g], j.simT)
		w.cum[i] = min(w.cum[i], e)
		if own {
			w.ownEnd[i] = e
		}
	}
	w.ownOK, w.ownP, w.ownGen = own, blocker, w.simGen
}

// saturatedList is how long resource r stays saturated in the simulation, exactly but
// for rounding, and whether it is known so (prepareJobs done): when every job of r
// takes one instance, all of them one project's, r has at least as many jobs as
// instances, and for the CPUs no coprocessor job takes a CPU. Then pick takes that
// project's first jobs left in the jobs' order until the n instances are taken, at
// every pick, whatever the priorities: its jobs run as their list schedule on n
// instances free from now (a job starts when one frees, in order), r is saturated
// exactly while n jobs or more are left, and so until the first instance of the list
// schedule is left with no job: the least of its free times once every job is placed.
// Where coprocessor jobs take CPUs it is a bound from below: they are counted before
// the CPU jobs, so at most n of these run (each ends no sooner than in the list
// schedule: listsched.go), and the CPUs are saturated at least while n are left.
// (saturatedBound's sum of the times but the n − 1 longest ÷ n is a bound from below
// of the same moment. corpus c124, one project on 7 CPUs, ran the simulation for the
// work fetch at 4,879 moments of a 10-day run, 4,623 of which asked for nothing, all
// its jobs' CPUs saturated past work_buf_min.) While the tasks stay as they are it
// falls by at most the sum of what its jobs' times fall (a list schedule's ends do:
// listsched.go), and only the running ones' fall, at most n + 1 of them.
func (w *Workspace) saturatedList(h *state.Host, r int) (float64, bool) {
	n := h.Resources[r].Instances
	if n < 1 {
		return 0, false
	}
	proj, count := -1, 0
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != r {
			continue
		}
		if j.inst != 1 || proj >= 0 && j.proj != proj {
			return 0, false
		}
		proj = j.proj
		count++
	}
	if count < n {
		return 0, false
	}
	free := scratch.Grow(w.satFree, n)
	w.satFree = free
	for i := range w.jobs {
		if j := &w.jobs[i]; j.res == r {
			listEnd(free, j.simT)
		}
	}
	return free[0], true
}

// saturatedLow reports whether the CPUs' saturated time in the simulation is at or past
// bufMin by the list schedules' bounds from below on each job's end (saturatedLowAt),
// for noFetchPossible where its other bounds failed. After perJobTries failures in a
// row it is not tried at the next perJobRest moments (perJobFailed's rule: c063's
// buffer sits where it fails at almost every moment, and trying cost a tenth of its
// run). Whether it is tried changes no decision: the simulation decides what it leaves.
func (w *Workspace) saturatedLow(doc *state.Document, now, bufMin float64) bool {
	if w.lowSkip > 0 {
		w.lowSkip--
		return false
	}
	if low, ok := w.saturatedLowAt(doc, now); ok && low*(1-1e-9)-1e-6 >= bufMin*(1+1e-9)+1e-6 && w.coprocsOver(doc, bufMin) {
		w.lowFails = 0
		if len(doc.Host.Resources) == 1 {
			w.lowHold(doc, now, bufMin)
		}
		if satCoCheck && len(doc.Host.Resources) > 1 {
			w.checkSatCo(doc, now)
		}
		return true
	}
	if w.lowFails++; w.lowFails >= perJobTries {
		w.lowFails, w.lowSkip = 0, perJobRest
	}
	return false
}

// saturatedLowAt is a bound from below on the CPUs' saturated time in the simulation at
// now, and whether there is one: on a host whose jobs are all CPU jobs of one CPU each,
// at least as many as the CPUs, the CPUs are saturated exactly until the (N − n + 1)th
// of the N jobs ends (saturatedBound), which is no sooner than the (N − n + 1)th least
// of the jobs' bounds from below (missBounds, the list schedules on the CPUs the
// projects are served at now: good at now only). (Issue 30, ninth round: corpus c139,
// whose buffer sits within an hour of work_buf_min, A's 12.9-hour jobs beside B's, ran
// the work fetch's simulation at 12,692 moments of a 10-day run, each asking for
// nothing; the bounds that ignore the pick's order were short of it.) On a host with
// coprocessors it reads the CPU jobs only, all of one CPU, at least n: pick counts the
// coprocessor jobs' CPUs first and takes CPU jobs until the CPUs are used, so they are
// saturated at least while n CPU jobs are left, and missBounds serves the CPU jobs the
// CPUs less coCPUsOnce's (issue 30, twenty-eighth round: c122's 11 CPUs beside one GPU
// ran the work fetch's simulation at 13,305 moments of a 10-day run, each asking
// nobody; saturatedLow then checks the coprocessors by workBound's bound).
func (w *Workspace) saturatedLowAt(doc *state.Document, now float64) (float64, bool) {
	n := doc.Host.CPU().Instances
	if n < 1 || n > maxTop || noSatCo && len(doc.Host.Resources) != 1 {
		return 0, false
	}
	count := 0 // the CPU jobs
	for i := range w.jobs {
		if j := &w.jobs[i]; j.res == w.cpuRes {
			if j.cpus != 1 {
				return 0, false
			}
			count++
		}
	}
	if count < n {
		return 0, false
	}
	if !w.projectStats(doc) || !w.projectServed(doc, now, 0) {
		return 0, false
	}
	w.missBounds(doc)
	// The (N − n + 1)th least: the n-th greatest, kept as keepLongest keeps them.
	top := w.top[:0]
	for i := range w.jobs {
		if w.jobs[i].res == w.cpuRes {
			top = keepLongest(top, w.low[i], n)
		}
	}
	w.top = top
	return top[0], true
}

// coprocsOver reports whether workBound's bound (resourceOver) puts every coprocessor
// no project has a reason not to be asked for (resAsked) saturated at or past bufMin,
// for saturatedLow on a host with coprocessors, whose CPUs workBound left open.
func (w *Workspace) coprocsOver(doc *state.Document, bufMin float64) bool {
	for r := range doc.Host.Resources {
		if r == w.cpuRes || r < len(w.noAsk) && w.noAsk[r] {
			continue
		}
		if _, ok := w.resourceOver(&doc.Host, r, bufMin); !ok {
			return false
		}
	}
	return true
}

// saturatedBound is a bound from below on how long resource r stays saturated in the
// simulation (prepareJobs done), where workBound's is too loose, and whether there is
// one: when every job of r takes one instance, pick takes jobs until n (r's
// instances) are in use, so r is saturated while n jobs or more are left, and its
// saturated time is at least when the (N − n + 1)th of its N jobs ends; until then at
// most n jobs run at their full rate, their simulated times falling by n a second in
// all at most, so that the jobs ended then took at least the N − n + 1 shortest times:
// the saturated time is at least the sum of all its jobs' times but the n − 1
// longest, ÷ n. (On the CPUs the coprocessor jobs' CPUs, counted before the CPU jobs,
// only keep them saturated longer and leave fewer CPU jobs running: issue 30, twelfth
// round, where the corpus's GPU hosts ran the work fetch's simulation at almost every
// step for a buffer it found full.) (While the tasks stay as they are it
// falls at most as fast as workBound's: each of at most n + 1 running jobs' times by
// fall ÷ availability a second, ÷ n.)
//
// And at least the n-th longest time (kth): each of the N − n + 1 jobs ended by then
// ran its whole time, and N − n + 1 jobs take at least the (N − n + 1)th shortest, the
// n-th longest (issue 30, ninth round: the corpus's hosts of several projects with
// jobs longer than work_buf_min, c139's 12.9-hour jobs beside 2.9-hour ones, ran the
// work fetch's simulation at almost every step for a buffer it found full). It falls
// at most as fast as one job's time, whatever the priorities.
func (w *Workspace) saturatedBound(h *state.Host, r int) (sum, kth float64, ok bool) {
	n := h.Resources[r].Instances
	if n < 1 || n > maxTop {
		return 0, 0, false
	}
	top := w.top[:0] // the n longest times, shortest first
	count := 0
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.res != r {
			continue
		}
		if j.inst != 1 {
			return 0, 0, false
		}
		t := j.simT
		sum += t
		count++
		top = keepLongest(top, t, n)
	}
	w.top = top
	if count < n {
		return 0, 0, false
	}
	var long float64
	for _, t := range top[1:] {
		long += t
	}
	return (sum - long) / float64(n), top[0], true
}

// maxTop: saturatedBound keeps the n longest times for hosts of up to this many
// instances.
const maxTop = 64

// keepLongest adds t to top, the k longest times so far in increasing order.
//
// t goes before the times equal to it, where slices.BinarySearch puts it, found by a
// walk from the end (k is a few CPUs: the search and slices.Insert cost twice the walk,
// c182's keepLongest 5 % of a run: issue 30, thirty-second round); a NaN, which
// slices.BinarySearch orders first, and any time after one, by the search
// (keepLongestSearch). TestKeepLongest holds it to the search.
func keepLongest(top []float64, t float64, k int) []float64 {
	if k == 0 {
		return top
	}
	if t != t || len(top) > 0 && top[0] != top[0] {
		return keepLongestSearch(top, t, k)
	}
	if len(top) < k {
		x := len(top)
		top = append(top, t)
		for x > 0 && !(top[x-1] < t) {
			top[x] = top[x-1]
			x--
		}
		top[x] = t
		return top
	}
	if t > top[0] {
		x := 1
		for x < len(top) && top[x] < t {
			top[x-1] = top[x]
			x++
		}
		top[x-1] = t
	}
	return top
}

// keepLongestSearch is keepLongest by slices.BinarySearch.
func keepLongestSearch(top []float64, t float64, k int) []float64 {
	if len(top) < k {
		x, _ := slices.BinarySearch(top, t)
		return slices.Insert(top, x, t)
	}
	if t > top[0] {
		x, _ := slices.BinarySearch(top, t)
		copy(top[:x-1], top[1:x])
		top[x-1] = t
	}
	return top
}

// lowHold sets the work fetch's hold (fetchHold) after saturatedLow's bound at now put
// the CPUs' saturated time past bufMin at now. The served CPUs the bound rests
// on read no REC under BOINC's emulator (pick by address) or with one project
// (gRECFree), and otherwise hold while the REC fractions stay in the box of
// projectServed's comparisons at now (servedEps: the box missesKept's answers keep,
// box.go), which the hold then keeps too (fetchHeld); with them, while the tasks stay
// as they are, each job's bound from below on its end, now + w.low[i], comes nearer by
// at most lowFall's rate a second, so w.low[i] falls by at most that rate + 1; the
// hold lasts while the (N − n + 1)th least of them stays past bufMin (lowHoldFor: job
// by job) (and, as workBound's, until a reason not to ask a resource may end). The
// view must show the jobs running as they are (a pass at the moment may have started or
// stopped one since: no hold). (Corpus c029's work fetch found the CPUs saturated past
// work_buf_min by this bound at 4,969 moments of a 10-day run under --emulate boinc,
// each bound found afresh; c139 and c063 likewise: issue 30, nineteenth round. Under
// bsim's conventions, with the served CPUs read from the RECs, c139's found it afresh
// at 12,753 moments of a 10-day run, c060's at 10,511: issue 30, twentieth round.)
func (w *Workspace) lowHold(doc *state.Document, now, bufMin float64) {
	eps := math.Inf(1) // the box of REC fractions the served CPUs hold in
	if !w.gRECFree {
		if eps = w.servedEps; !(eps > 0) {
			return // the served CPUs found at now are good at now only
		}
	}
	for i := range w.jobs {
		if w.jobs[i].running != (doc.Tasks[w.jobs[i].task].State == state.TaskRunning) {
			// A pass at this moment started or stopped it after the view was
			// made: lowFall's rates would read the jobs as they were.
			return
		}
	}
	w.lowFall(doc)
	hold := w.lowHoldFor(doc.Host.CPU().Instances, bufMin*(1+1e-9)+1e-6)
	if len(w.noAsk) == len(doc.Host.Resources) {
		hold = min(hold, w.noAskUntil-now)
	}
	w.fetchHold, w.fetchHoldUntil = hold > 0, now+hold
	if w.fetchBoxed = !math.IsInf(eps, 1); w.fetchBoxed {
		w.fetchEps = eps
		w.fetchF = scratch.Grow(w.fetchF, len(doc.Projects))
		recFractions(doc, w.jobs, w.fetchF)
	}
}

// lowHoldFor is how long the (N − n + 1)th least of the jobs' bounds w.low[i] stays at
// or past x (lowFall done), n the CPUs: while at least n of them do, that is until the
// n-th longest of the jobs' own times to x, job i's margin past x eaten at its own
// rate, w.lowK[i] + 1 a second. (Until issue 30's twenty-fourth round every margin was
// taken at the greatest rate of any job: a job placed after others' running jobs, its
// rate their falls summed, shortened the hold even where its bound was far past x or
// was not among the n deciding ones. Corpus c060 under BOINC's emulator found the bound
// afresh at 2,741 moments of a 10-day run, 1,384 with the rates job by job.)
func (w *Workspace) lowHoldFor(n int, x float64) float64 {
	top := w.top[:0] // the n longest times, shortest first
	for i := range w.jobs {
		h := math.Inf(1)
		if over, rate := w.low[i]*(1-1e-9)-1e-6-x, w.lowK[i]+1; !(over >= 0) {
			h = -1 // short of x already
		} else if rate > 0 {
			h = over / rate
		}
		top = keepLongest(top, h, n)
	}
	w.top = top
	return top[0]
}
