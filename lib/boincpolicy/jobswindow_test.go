package boincpolicy

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestJobsWindowAgainstSlice: on random sequences of refresh's drops (dropJob, at any
// place, most at the front as a queue run in order drops them) and additions
// (addJob), with a view's start (w.jobs from jobsFull, jobsBase set) now and then, the
// jobs are those of a plain slice with the same drops and additions, in the same
// order, and the jobs from the dropped one on at the same places; the array is
// replaced only where it has no room left before or after the jobs. It wants many
// drops at the front, many in the middle, many moves of the jobs back to the array's
// start and some arrays replaced; it fails with the jobs before a dropped one not
// moved on, and with addJob's move back dropping the first job.
func TestJobsWindowAgainstSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 4211))
	var front, middle, slid, grown int
	for trial := range 2000 {
		var w Workspace
		var model []int
		id := 0
		add := func() {
			full, l := w.jobsFull(), len(w.jobs)
			var end *job // the array's last element
			if len(full) > 0 {
				end = &full[len(full)-1]
			}
			toStart := l == cap(w.jobs) && len(full) > l
			w.addJob()
			same := end != nil && &w.jobs[:cap(w.jobs)][cap(w.jobs)-1] == end
			switch {
			case !same && len(full) > l:
				t.Fatalf("trial %d: the array replaced with room for %d jobs, %d held", trial, len(full), l)
			case !same:
				grown++
			case toStart:
				slid++
			}
			w.jobs[len(w.jobs)-1].task = id
			model = append(model, id)
			id++
		}
		for range rng.IntN(30) {
			add()
		}
		for range 200 {
			switch r := rng.IntN(10); {
			case r < 4 && len(w.jobs) > 0:
				i := 0
				if rng.IntN(3) == 0 {
					i = rng.IntN(len(w.jobs))
				}
				if i < len(w.jobs)-1-i {
					front++
				} else {
					middle++
				}
				w.jobs = dropJob(w.jobs, i)
				model = slices.Delete(model, i, i+1)
			case r < 9:
				add()
			default: // a view's start: its jobs built again from the array's start
				w.jobs = w.jobsFull()[:0]
				w.jobsBase = w.jobs
				model = model[:0]
			}
			if len(w.jobs) != len(model) {
				t.Fatalf("trial %d: %d jobs, want %d", trial, len(w.jobs), len(model))
			}
			for k := range model {
				if w.jobs[k].task != model[k] {
					t.Fatalf("trial %d: job %d is %d, want %d", trial, k, w.jobs[k].task, model[k])
				}
			}
		}
	}
	if front < 10000 || middle < 10000 || slid < 1000 || grown < 1000 {
		t.Errorf("%d drops at the front, %d in the middle, %d moves back to the start, %d arrays replaced: want more", front, middle, slid, grown)
	}
	t.Logf("%d drops at the front, %d in the middle, %d moves back to the start, %d arrays replaced", front, middle, slid, grown)
}
