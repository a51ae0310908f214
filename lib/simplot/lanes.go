package simplot

import (
	"cmp"
	"math"
	"slices"

	"github.com/bkit/bkit/lib/sim"
)

// eps absorbs rounding in instance counts (three 1/3-CPU tasks fill a lane).
const eps = 1e-9

// slot is where a run is drawn among the lanes of its resource: it starts in lane
// Lane, Off instances down from the lane's top, and is the run's Instances high (a
// run of more than one instance goes on down through the next lanes). In lane units
// counted from the top of the resource's first lane, it covers [Lane+Off,
// Lane+Off+Instances).
type slot struct {
	Lane int
	Off  float64
}

// occupant is a run holding part of a lane until end.
type occupant struct {
	off, size, end float64
}

type lane struct {
	used float64 // the sum of the occupants' sizes
	occ  []occupant
}

// release drops the occupants whose runs ended by t.
func (l *lane) release(t float64) {
	if len(l.occ) == 0 {
		return
	}
	l.occ = slices.DeleteFunc(l.occ, func(o occupant) bool { return o.end <= t })
	l.used = 0
	for _, o := range l.occ {
		l.used += o.size
	}
}

// fit is the lowest offset at which a run of size s (at most one instance) fits in
// the lane beside its occupants, if any.
func (l *lane) fit(s float64) (float64, bool) {
	if l.used+s > 1+eps {
		return 0, false
	}
	cands := []float64{0}
	for _, o := range l.occ {
		cands = append(cands, o.off+o.size)
	}
	slices.Sort(cands)
next:
	for _, c := range cands {
		if c+s > 1+eps {
			break
		}
		for _, o := range l.occ {
			if c < o.off+o.size-eps && o.off < c+s-eps {
				continue next
			}
		}
		return c, true
	}
	return 0, false
}

// runSize is the height a run is drawn with, in instances.
func runSize(r sim.TaskRun) float64 {
	if r.Instances > 0 && !math.IsInf(r.Instances, 0) {
		return r.Instances
	}
	return 1 // a run that claims no instance still ran somewhere: draw it whole
}

// assignLanes places tr's runs (slots parallel to tr.Runs) on the lanes of their
// resources, greedily in order of start time (ties in the order of tr.Runs): a run
// keeps one place for its whole length, in the lowest-numbered lane that has room for
// it when it starts, at the lowest offset in that lane. A run of at most one instance
// (0.5 CPU, say) needs a free stretch of its height inside one lane, so fractional
// runs share lanes; a run of more instances needs that many wholly free consecutive
// lanes. A lane is free again from the moment its run ends. When no lane of the
// resource's Instances has room (the scheduler overcommitted), the run goes on an extra
// lane below them. lanes[r] is the number of lanes of resource r: at least its
// Instances.
func assignLanes(tr *sim.Trace) (slots []slot, lanes []int) {
	order := make([]int, len(tr.Runs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(tr.Runs[a].Start, tr.Runs[b].Start) })

	byRes := make([][]lane, len(tr.Resources))
	for r, res := range tr.Resources {
		byRes[r] = make([]lane, max(0, res.Instances))
	}
	slots = make([]slot, len(tr.Runs))
	for _, i := range order {
		run := tr.Runs[i]
		ls := byRes[run.Resource]
		for l := range ls {
			ls[l].release(run.Start)
		}
		s := runSize(run)
		if s <= 1+eps {
			place := slot{Lane: -1}
			for l := range ls {
				if off, ok := ls[l].fit(s); ok {
					place = slot{Lane: l, Off: off}
					break
				}
			}
			if place.Lane < 0 {
				ls = append(ls, lane{})
				place = slot{Lane: len(ls) - 1}
			}
			l := &ls[place.Lane]
			l.occ = append(l.occ, occupant{off: place.Off, size: s, end: run.End})
			l.used += s
			slots[i] = place
		} else {
			k := int(math.Ceil(s - eps))
			first := 0
			for j := 0; j < k; j++ {
				if first+j < len(ls) && ls[first+j].used > eps {
					first, j = first+j+1, -1
				}
			}
			for len(ls) < first+k {
				ls = append(ls, lane{})
			}
			for j := 0; j < k; j++ {
				size := min(1, s-float64(j))
				ls[first+j].occ = append(ls[first+j].occ, occupant{size: size, end: run.End})
				ls[first+j].used += size
			}
			slots[i] = slot{Lane: first}
		}
		byRes[run.Resource] = ls
	}
	lanes = make([]int, len(tr.Resources))
	for r, ls := range byRes {
		lanes[r] = len(ls)
	}
	return slots, lanes
}
