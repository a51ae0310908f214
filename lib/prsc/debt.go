package prsc

import (
	"math"

	"github.com/bkit/bkit/lib/scratch"
	"github.com/bkit/bkit/lib/state"
)

// RelativeSpeed is the weight of resource r in the overall debt: its FLOPS per instance
// divided by one CPU's, so that one second of a GPU twice as fast as a CPU counts as two
// CPU seconds. The CPU's FLOPS are validated to be > 0.
func RelativeSpeed(h *state.Host, r state.Resource) float64 {
	return r.Flops / h.CPU().Flops
}

// OverallDebt is seed 002's overall long-term debt of project p: the sum of its
// resource debts weighted by RelativeSpeed, in CPU seconds. Entries for types the host
// does not have cannot occur in a validated document.
func OverallDebt(h *state.Host, p *state.Project) float64 {
	d := 0.0
	for _, pr := range p.Resources {
		if r, ok := h.Resource(pr.Type); ok {
			d += pr.LongTermDebt * RelativeSpeed(h, r)
		}
	}
	return d
}

// Usage returns, per project (index in doc.Projects) and per host resource (index in
// doc.Host.Resources), the instances used by the project's running tasks. A task uses
// instances of its app version's resource type only (see ResourceType): the small CPU
// fraction of a GPU task feeds the GPU and is not counted as CPU use, the same rule the
// round-robin simulation follows. If the running tasks claim more instances of a
// resource than the host has, each claim is scaled down so they add up to the host's.
func Usage(doc *state.Document) [][]float64 {
	ix := state.NewIndex(doc)
	rIndex := resourceIndex(&doc.Host)
	used := make([][]float64, len(doc.Projects))
	for i := range used {
		used[i] = make([]float64, len(doc.Host.Resources))
	}
	total := make([]float64, len(doc.Host.Resources))
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.State != state.TaskRunning {
			continue
		}
		av := &doc.AppVersions[ix.AppVersion[t.AppVersion]]
		r := rIndex[av.ResourceType()]
		n := av.Instances()
		used[ix.Project[t.Project]][r] += n
		total[r] += n
	}
	for r, res := range doc.Host.Resources {
		if n := float64(res.Instances); total[r] > n {
			for p := range used {
				used[p][r] *= n / total[r]
			}
		}
	}
	return used
}

func resourceIndex(h *state.Host) map[string]int {
	m := make(map[string]int, len(h.Resources))
	for i, r := range h.Resources {
		m[r.Type] = i
	}
	return m
}

// AccumulateDebt brings the long-term debts up to date over an interval of dt seconds
// during which each project used used[p][r] instances of each resource (see Usage).
//
// The seed keeps one debt per (project, resource) so that a project alone on a resource
// does not drift without bound, and compares projects by the speed-weighted sum so
// that its example holds: GPU twice as fast as the CPU, A with GPU jobs only, B with
// both, equal shares: CPU 100% to B and GPU 75%/25% to A/B, i.e. equal processing.
// Both are met by this accounting:
//
//   - A project takes part on resource R when D(P,R) is set and it is not backed off
//     for R at now (the seed's debt accounting: "if P is not backed off for R"), or
//     when it used R in the interval (a running job proves it has work for R, and its
//     use is charged whatever its backoff). A project that keeps asking for R in vain
//     is backed off for it, so it stops accumulating debt for R: the unbounded growth
//     the seed warns of.
//   - Projects and resources linked that way form groups (connected components). Within
//     a group the processing done, U = sum over R of used(R)·dt·speed(R), is owed to its
//     projects by resource share: P is owed share(P)·U. A project in no group with
//     others (e.g. alone on its only resource) is owed exactly what it used, so its
//     debts stay put: the unbounded drift the seed warns about cannot happen.
//   - On each resource R, P is first credited its share among R's participants of R's
//     use (the plain per-resource debt, zero-sum on R), then charged its own use. What
//     the group owes P beyond those per-resource credits (the cross-resource part, which
//     is what gives A more of the GPU in the seed's example) is spread over P's
//     resources in proportion to their capacity (instances × speed).
//
// Within a group the overall debts change by amounts that add up to zero, so they stay
// centred and only their differences matter. Resource shares of zero count as equal
// shares when every participant has zero. dt <= 0 does nothing. now is the end of the
// interval, the time at which a backoff is looked at.
func AccumulateDebt(doc *state.Document, used [][]float64, dt, now float64) {
	var w DebtWork
	w.AccumulateDebt(doc, used, dt, now)
}

// DebtWork keeps AccumulateDebt's buffers from one call to the next, for a caller that
// accounts every step (the emulator). The zero value is ready; w.AccumulateDebt and
// AccumulateDebt compute alike, to the last bit.
//
// Besides the buffers it keeps what changes seldom: where each project's entry for each
// resource is (entry), and the groups with the shares they were made from (linked,
// shares). A call checks them against the document and makes them again when they no
// longer hold, so that a step in which no flag, share or pattern of use changed (almost
// every step of a run) does no union-find and no look-up by name.
type DebtWork struct {
	speed, useR, wR, groupU, groupW, delta []float64
	part                                   []bool // [p*nr+r]: project p takes part on resource r
	parent, nR, groupN                     []int

	entry   []int     // [p*nr+r]: index of resource r's entry in projects[p].Resources, -1 none
	entries []int     // [p]: len(projects[p].Resources) when entry was made
	linked  []bool    // part when the groups (parent, wR, nR, groupW, groupN) were made; nil: never
	shares  []float64 // [p]: the resource shares then
	host    []state.Resource
	root    []int // [p] then [np+r]: each one's group

	// The last interval's changes ([p*nr+r], and whether each was added), its use
	// (float bits) and length: an interval like it, with the groups unchanged, changes
	// the debts by the very same amounts (each is a function of these alone), so they
	// are added again without working them out (most steps of a run use the resources
	// as the last one did).
	last     []float64
	lastAdd  []bool
	lastUse  []uint64
	lastDT   float64
	lastHeld bool

	// stableUntil: the participation found last, which D flags and backoffs decide,
	// holds while time stays before it (the earliest end of a backoff of an entry with
	// D set, +Inf when none), unless a reply changes them.
	stableUntil float64
}

// resize returns b with length n, reusing its storage, its elements as they were: for
// buffers whose every element the caller writes before reading (no clearing).
func resize[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// AccumulateDebt is AccumulateDebt with w's buffers, in the steps of its comment: who
// takes part where, each resource's use, the groups and what each owes, then each
// project's debts.
func (w *DebtWork) AccumulateDebt(doc *state.Document, used [][]float64, dt, now float64) {
	if dt <= 0 {
		return
	}
	if w.repeat(doc, used, dt, now) {
		return
	}
	w.participation(doc, used, now)
	if !w.sameGroups(doc) {
		w.shareSums(doc)
		w.groups(doc)
		w.lastHeld = false
	}
	if w.lastHeld && w.addLast(doc, used, dt) {
		return
	}
	w.resourceUse(doc, used, dt)
	np, nr := len(doc.Projects), len(doc.Host.Resources)
	w.last, w.lastAdd = scratch.Grow(w.last, np*nr), scratch.Grow(w.lastAdd, np*nr)
	w.lastUse = w.lastUse[:0]
	for p := range used[:np] {
		for _, u := range used[p][:nr] {
			w.lastUse = append(w.lastUse, math.Float64bits(u))
		}
	}
	w.lastDT, w.lastHeld = dt, true
	for p := range doc.Projects {
		w.settle(doc, p, used[p], dt)
	}
}

// AccumulateDebtSame is w.AccumulateDebt for a caller that vouches that nothing
// AccumulateDebt reads but the debts changed since its last call on doc: the same
// projects with the same resource entries (types, order), D flags, backoffs and shares,
// and the same host resources. (The emulator's seed policy, which sees every reply, the
// only step of its loop that changes them.) Only the interval's length and use, and
// whether a backoff has ended since (stableUntil), are then compared with the last
// interval's before its changes are added again: what repeat finds after checking
// everything else, which the caller's word makes needless.
func (w *DebtWork) AccumulateDebtSame(doc *state.Document, used [][]float64, dt, now float64) {
	np, nr := len(doc.Projects), len(doc.Host.Resources)
	if dt > 0 && now < w.stableUntil && w.lastHeldFor(np, nr) && len(w.entries) == np && w.sameUseAsLast(used, dt, np, nr) {
		// (an entry settle made is found again by the general path first: entries >= 0)
		known := true
		for _, e := range w.entries[:np] {
			known = known && e >= 0
		}
		if known {
			w.addLastChanges(doc)
			return
		}
	}
	w.AccumulateDebt(doc, used, dt, now)
}

// lastHeldFor reports whether the last interval's changes are kept, for np projects and
// nr resources, with the index of their entries.
func (w *DebtWork) lastHeldFor(np, nr int) bool {
	n := np * nr
	return w.lastHeld && len(w.lastUse) == n && len(w.last) == n && len(w.lastAdd) == n && len(w.entry) == n
}

// sameUseAsLast reports whether an interval of dt seconds with this use is like the
// last one: the same length and use, to the bit (lastHeldFor holds).
func (w *DebtWork) sameUseAsLast(used [][]float64, dt float64, np, nr int) bool {
	if math.Float64bits(dt) != math.Float64bits(w.lastDT) || len(used) < np {
		return false
	}
	lastUse := w.lastUse[:np*nr]
	for p, u := range used[:np] {
		if len(u) < nr {
			return false
		}
		for r, x := range u[:nr] {
			if math.Float64bits(x) != lastUse[p*nr+r] {
				return false
			}
		}
	}
	return true
}

// addLastChanges adds the last interval's changes again, each to the entry it went to
// (lastHeldFor holds, and every change has an entry).
func (w *DebtWork) addLastChanges(doc *state.Document) {
	np, nr := len(doc.Projects), len(doc.Host.Resources)
	n := np * nr
	projects, lastAdd, entry, last := doc.Projects[:np], w.lastAdd[:n], w.entry[:n], w.last[:n]
	for p := range projects {
		prs := projects[p].Resources
		for r := range nr {
			if i := p*nr + r; lastAdd[i] {
				prs[entry[i]].LongTermDebt += last[i]
			}
		}
	}
}

// sameHost reports whether the host's resources are those the groups were made for
// (their speeds and capacities are the groups' too).
func (w *DebtWork) sameHost(doc *state.Document) bool {
	if len(w.host) != len(doc.Host.Resources) {
		return false
	}
	for r, res := range doc.Host.Resources {
		if w.host[r].Instances != res.Instances || w.host[r].Flops != res.Flops {
			return false
		}
	}
	return true
}

// repeat is the steps below when nothing they read changed since the last interval
// (most steps of a run): it adds the last interval's changes again, and reports
// whether it did, when participation would find the same entries and the same
// participation (part equal to linked, which it is after every call), sameGroups would
// hold (host and shares alike) and addLast would add (the same length, the same use to
// the bit, an entry for every change). It changes nothing else: the slow path would
// have left every buffer as it is.
func (w *DebtWork) repeat(doc *state.Document, used [][]float64, dt, now float64) bool {
	h := &doc.Host
	np, nr := len(doc.Projects), len(h.Resources)
	n := np * nr
	if !w.lastHeldFor(np, nr) || len(w.linked) != n || len(w.part) != n || len(w.entries) != np ||
		len(w.shares) != np || !w.sameHost(doc) || !w.sameUseAsLast(used, dt, np, nr) {
		return false
	}
	// (Slices of the lengths checked above: the loop below indexes them without bounds
	// checks.)
	resources := h.Resources[:nr]
	projects, shares, entries, used := doc.Projects[:np], w.shares[:np], w.entries[:np], used[:np]
	lastAdd, linked, entry := w.lastAdd[:n], w.linked[:n], w.entry[:n]
	stable := math.Inf(1)
	for p := range projects {
		prj := &projects[p]
		prs := prj.Resources
		if shares[p] != prj.ResourceShare || entries[p] != len(prs) {
			return false
		}
		for r, u := range used[p][:nr] {
			i := p*nr + r
			d := false
			if k := entry[i]; k >= 0 {
				if !state.SameName(prs[k].Type, resources[r].Type) {
					return false // indexEntries would look again
				}
				d = debtOn(&prs[k], now, &stable)
			} else if lastAdd[i] {
				return false
			}
			if (d || u > 0) != linked[i] {
				return false
			}
		}
	}
	w.addLastChanges(doc)
	w.stableUntil = stable
	return true
}

// addLast adds the last interval's changes again when this one used the resources
// alike (the same float bits) for as long, and every change goes to an entry the
// project has (no entry to make); it reports whether it did.
func (w *DebtWork) addLast(doc *state.Document, used [][]float64, dt float64) bool {
	np, nr := len(doc.Projects), len(doc.Host.Resources)
	if !w.lastHeldFor(np, nr) || !w.sameUseAsLast(used, dt, np, nr) {
		return false
	}
	for i, add := range w.lastAdd {
		if add && w.entry[i] < 0 {
			return false
		}
	}
	w.addLastChanges(doc)
	return true
}

// participation sets part[p*nr+r]: project p takes part on resource r, since its D(P,R)
// is set and it is not backed off for r at now (debtOn), or it used r in the interval;
// and stableUntil.
func (w *DebtWork) participation(doc *state.Document, used [][]float64, now float64) {
	h := &doc.Host
	np, nr := len(doc.Projects), len(h.Resources)
	w.indexEntries(doc)
	if len(w.part) != np*nr {
		w.part = make([]bool, np*nr)
	}
	part := w.part // every element is set below
	stable := math.Inf(1)
	for p := range doc.Projects {
		prs := doc.Projects[p].Resources
		entry, pp, u := w.entry[p*nr:(p+1)*nr], part[p*nr:(p+1)*nr], used[p][:nr]
		for r := range pp {
			d := false
			if k := entry[r]; k >= 0 {
				d = debtOn(&prs[k], now, &stable)
			}
			pp[r] = d || u[r] > 0
		}
	}
	w.stableUntil = stable
}

// debtOn reports whether pr's project accumulates debt on pr's resource at now: D(P,R)
// is set and it is not backed off for the resource (seed 002's debt accounting: "if P
// is not backed off for R"). When the answer changes by time alone (a backoff of an
// entry with D set ends after now), stable is lowered to that end.
func debtOn(pr *state.ProjectResource, now float64, stable *float64) bool {
	if !pr.AccumulateDebt {
		return false
	}
	if pr.BackoffUntil > now {
		*stable = math.Min(*stable, pr.BackoffUntil)
		return false
	}
	return true
}

// indexEntries brings w.entry up to date: a project's entries are found again when
// their count changed or one no longer has the type it had. (A valid document has one
// entry per type at most, so the first match is the only one.)
func (w *DebtWork) indexEntries(doc *state.Document) {
	h := &doc.Host
	np, nr := len(doc.Projects), len(h.Resources)
	if len(w.entry) != np*nr || len(w.entries) != np {
		w.entry, w.entries = make([]int, np*nr), make([]int, np)
		for p := range w.entries {
			w.entries[p] = -1 // never matches a length: found below
		}
	}
	for p := range doc.Projects {
		prs := doc.Projects[p].Resources
		same := w.entries[p] == len(prs)
		for r := 0; same && r < nr; r++ {
			k := w.entry[p*nr+r]
			same = k < 0 || prs[k].Type == h.Resources[r].Type
		}
		if same {
			continue
		}
		for r := range nr {
			w.entry[p*nr+r] = -1
			for k := range prs {
				if prs[k].Type == h.Resources[r].Type {
					w.entry[p*nr+r] = k
					break
				}
			}
		}
		w.entries[p] = len(prs)
	}
}

// sameGroups reports whether the groups made last hold: the same participation and
// the same resource shares.
func (w *DebtWork) sameGroups(doc *state.Document) bool {
	if w.linked == nil || len(w.linked) != len(w.part) || len(w.shares) != len(doc.Projects) || !w.sameHost(doc) {
		return false
	}
	for i, b := range w.part {
		if w.linked[i] != b {
			return false
		}
	}
	for p := range doc.Projects {
		if w.shares[p] != doc.Projects[p].ResourceShare {
			return false
		}
	}
	return true
}

// shareSums sets, per resource r, the resource shares (wR[r]) and count (nR[r]) of the
// projects taking part on it, and each resource's relative speed.
func (w *DebtWork) shareSums(doc *state.Document) {
	h := &doc.Host
	nr := len(h.Resources)
	speed := scratch.Grow(w.speed, nr)
	w.speed = speed
	for r, res := range h.Resources {
		speed[r] = RelativeSpeed(h, res)
	}
	wR, nR := scratch.Grow(w.wR, nr), scratch.Grow(w.nR, nr)
	w.wR, w.nR = wR, nR
	for p := range doc.Projects {
		for r := range nr {
			if w.part[p*nr+r] {
				wR[r] += doc.Projects[p].ResourceShare
				nR[r]++
			}
		}
	}
}

// groups links projects and resources by participation into groups (a union-find over
// projects 0..np-1 and resources np..np+nr-1, w.parent), notes each one's group
// (w.root) and sets, per group (indexed by its root), the resource shares (groupW) and
// count (groupN) of its projects. It records the participation and shares it was made
// from.
func (w *DebtWork) groups(doc *state.Document) {
	np, nr := len(doc.Projects), len(doc.Host.Resources)
	parent := scratch.Grow(w.parent, np+nr)
	w.parent = parent
	for i := range parent {
		parent[i] = i
	}
	for p := range np {
		for r := range nr {
			if w.part[p*nr+r] {
				parent[find(parent, p)] = find(parent, np+r)
			}
		}
	}
	root := scratch.Grow(w.root, np+nr)
	w.root = root
	for i := range root {
		root[i] = find(parent, i)
	}
	groupW, groupN := scratch.Grow(w.groupW, np+nr), scratch.Grow(w.groupN, np+nr)
	w.groupW, w.groupN = groupW, groupN
	for p := range doc.Projects {
		g := root[p]
		groupW[g] += doc.Projects[p].ResourceShare
		groupN[g]++
	}
	w.linked = append(w.linked[:0], w.part...)
	w.host = append(w.host[:0], doc.Host.Resources...)
	w.shares = w.shares[:0]
	for p := range doc.Projects {
		w.shares = append(w.shares, doc.Projects[p].ResourceShare)
	}
}

// resourceUse sets, per resource r, the instances used in the interval (useR[r]), and
// per group the processing done in dt seconds in CPU seconds (groupU).
func (w *DebtWork) resourceUse(doc *state.Document, used [][]float64, dt float64) {
	np, nr := len(doc.Projects), len(doc.Host.Resources)
	if len(w.useR) != nr {
		w.useR = make([]float64, nr)
	}
	useR := w.useR
	for r := range useR {
		u := 0.0 // summed in project order, as the groups' sums are
		for p := range np {
			u += used[p][r]
		}
		useR[r] = u
	}
	groupU := scratch.Grow(w.groupU, np+nr)
	w.groupU = groupU
	root, speed := w.root[np:np+nr], w.speed[:nr]
	for r, u := range useR {
		groupU[root[r]] += u * dt * speed[r]
	}
}

// find is the root of i's group, halving the path on the way.
func find(parent []int, i int) int {
	for parent[i] != i {
		parent[i] = parent[parent[i]]
		i = parent[i]
	}
	return i
}

// settle changes project p's debts for an interval of dt seconds in which it used
// used[r] instances of each resource: on each resource it takes part on, it is credited
// its share of the resource's use and charged its own; what its group owes it beyond
// those credits is spread over its resources by capacity (instances × speed). A
// project that takes part nowhere keeps its debts. w.delta holds the changes.
func (w *DebtWork) settle(doc *state.Document, p int, used []float64, dt float64) {
	h := &doc.Host
	nr := len(h.Resources)
	g := w.root[p]
	pp := w.part[p*nr : (p+1)*nr]
	if g == p && !anyTrue(pp) {
		return // takes part nowhere
	}
	speed, wR, nR, useR, used := w.speed[:nr], w.wR[:nr], w.nR[:nr], w.useR[:nr], used[:nr]
	prj := &doc.Projects[p]
	share := prj.ResourceShare
	owed := w.groupU[g] * frac(share, w.groupW[g], w.groupN[g])
	credited, capacity := 0.0, 0.0
	// The changes, on the stack for a host of a few resources (every step of a run).
	var small [4]float64
	var delta []float64
	if nr <= len(small) {
		delta = small[:nr]
	} else {
		big := scratch.Grow(w.delta, nr) // (not delta into w: small would escape)
		w.delta, delta = big, big
	}
	for r, res := range h.Resources {
		if !pp[r] {
			continue
		}
		local := frac(share, wR[r], nR[r]) * useR[r] * dt
		delta[r] = local - used[r]*dt
		credited += local * speed[r]
		capacity += float64(res.Instances) * speed[r]
	}
	if rest := owed - credited; capacity > 0 {
		for r, res := range h.Resources {
			if pp[r] {
				// rest·(N_r·speed_r/capacity) CPU seconds, in instance-seconds of r.
				delta[r] += rest * float64(res.Instances) / capacity
			}
		}
	}
	for r := range h.Resources {
		if pp[r] || used[r] > 0 {
			if k := w.entry[p*nr+r]; k >= 0 {
				prj.Resources[k].LongTermDebt += delta[r]
			} else {
				prj.ResourceState(h.Resources[r].Type).LongTermDebt += delta[r]
				w.entries[p] = -1 // an entry was added: find them again
			}
			if len(w.last) == len(w.part) { // (the tests call settle alone)
				w.last[p*nr+r], w.lastAdd[p*nr+r] = delta[r], true
			}
		}
	}
}

// frac is share/total, or 1/n when every share is zero.
func frac(share, total float64, n int) float64 {
	if total > 0 {
		return share / total
	}
	if n > 0 {
		return 1 / float64(n)
	}
	return 0
}

func anyTrue(b []bool) bool {
	for _, x := range b {
		if x {
			return true
		}
	}
	return false
}
