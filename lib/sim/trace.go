package sim

import (
	"math"

	"github.com/bkit/bkit/lib/state"
)

// Trace is what a run did over time, for pictures (bsim run --plot): every stretch of
// time a task ran, and per time bucket the peak FLOPs each project used of each
// resource and the FLOPs each resource had available. A run records one when
// Config.Trace is set; recording changes no decision and no figure.
type Trace struct {
	Start, End float64 // the simulated interval, Unix seconds
	Resources  []TraceResource
	Projects   []TraceProject
	// Runs are the stretches tasks ran, in the order they started: a task that runs
	// in consecutive steps gives one run.
	Runs []TaskRun
	// Buckets cover [Start, End) in order, each BucketWidth seconds (the last may be
	// shorter): at most MaxBuckets of them whatever the run's length.
	BucketWidth float64
	Buckets     []Bucket
}

// MaxBuckets bounds a trace's usage series, so that a 1,000-day run's trace stays small.
const MaxBuckets = 1000

// TraceResource is one processing resource of the host.
type TraceResource struct {
	Type      string
	Instances int
	Flops     float64 // per instance
}

// TraceProject is one project and its target: Share is its resource share as a
// fraction of all projects' shares.
type TraceProject struct {
	Name  string
	Share float64
}

// TaskRun is a stretch of time [Start, End) one task ran. Instances is how many
// instances of its resource (index in Trace.Resources) it used: 1 for a CPU task,
// perhaps 0.5; a coprocessor task's coprocessor count.
type TaskRun struct {
	Task      string
	Project   int // index in Trace.Projects
	Resource  int // index in Trace.Resources
	Instances float64
	Start     float64
	End       float64
}

// Bucket is the use in one time bucket starting at Start: Used[project][resource] and
// Available[resource] are peak FLOPs, counted as the figures of merit count them (a
// coprocessor task's CPU part is CPU use).
type Bucket struct {
	Start     float64
	Used      [][]float64
	Available []float64
}

// tracer records a Trace during a run.
type tracer struct {
	t    *Trace
	last map[string]int // task name → index in t.Runs of its latest run
	cur  *Bucket
}

func newTracer(doc *state.Document, start, end, delta float64) *tracer {
	t := &Trace{Start: start, End: end}
	for _, r := range doc.Host.Resources {
		t.Resources = append(t.Resources, TraceResource{Type: r.Type, Instances: r.Instances, Flops: r.Flops})
	}
	var total float64
	for _, p := range doc.Projects {
		total += p.ResourceShare
	}
	for _, p := range doc.Projects {
		tp := TraceProject{Name: p.Name}
		if total > 0 {
			tp.Share = p.ResourceShare / total
		}
		t.Projects = append(t.Projects, tp)
	}
	// A whole number of steps per bucket, so that no step straddles two buckets.
	steps := math.Ceil((end - start) / delta / MaxBuckets)
	t.BucketWidth = max(1, steps) * delta
	return &tracer{t: t, last: map[string]int{}}
}

// bucket returns the bucket the step starting at now falls in.
func (tr *tracer) bucket(now float64) *Bucket {
	t := tr.t
	start := t.Start + math.Floor((now-t.Start)/t.BucketWidth)*t.BucketWidth
	if tr.cur == nil || tr.cur.Start != start {
		b := Bucket{Start: start, Used: make([][]float64, len(t.Projects)), Available: make([]float64, len(t.Resources))}
		for p := range b.Used {
			b.Used[p] = make([]float64, len(t.Resources))
		}
		t.Buckets = append(t.Buckets, b)
		tr.cur = &t.Buckets[len(t.Buckets)-1]
	}
	return tr.cur
}

// ran records that a task ran from start to end.
func (tr *tracer) ran(task string, p, r int, inst, start, end float64) {
	if end <= start {
		return
	}
	if i, ok := tr.last[task]; ok && tr.t.Runs[i].End == start {
		tr.t.Runs[i].End = end
		return
	}
	tr.last[task] = len(tr.t.Runs)
	tr.t.Runs = append(tr.t.Runs, TaskRun{Task: task, Project: p, Resource: r, Instances: inst, Start: start, End: end})
}

// used records peak FLOPs project p used of resource r in the step starting at now.
func (tr *tracer) used(now float64, p, r int, flops float64) {
	if flops > 0 && r >= 0 {
		tr.bucket(now).Used[p][r] += flops
	}
}

// available records what the resources offered in the step starting at now.
func (tr *tracer) available(now, dt float64, active, gpuActive bool) {
	b := tr.bucket(now)
	for r, res := range tr.t.Resources {
		if (res.Type == state.ResourceCPU && active) || (res.Type != state.ResourceCPU && gpuActive) {
			b.Available[r] += dt * float64(res.Instances) * res.Flops
		}
	}
}
