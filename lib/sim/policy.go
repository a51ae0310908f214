package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bkit/bkit/lib/cpusched"
	"github.com/bkit/bkit/lib/state"
)

// Policy is what differs between the client policies the emulator compares: when and
// how the processors are scheduled, whom the client asks for how much work, and what
// it learns from a reply. Everything else (availability, task progress, the emulated
// servers, RPC failures and seed 000's RPC backoff, the figures of merit) is the loop's.
//
// A policy is pure in the sense of DESIGN.md: it sees the document and the time, and
// randomness only through the source it is handed. It may keep private state (a
// round-robin pointer) between calls; a fresh policy is made for every run.
type Policy interface {
	// Schedule runs the processor scheduler at now if the policy finds a pass due.
	// It reports whether it ran one (policy boinc, which runs one at every step:
	// whether its pass started or stopped a task). A policy changes task states in
	// a pass only (the loop keeps the running tasks from one pass to the next).
	Schedule(doc *state.Document, now float64) bool
	// NextRPC returns the next scheduler RPC to make at now, or false when there is
	// none. asked lists the projects already contacted at this step (indices in
	// doc.Projects); the loop calls NextRPC again after each RPC, at most once per
	// project and step.
	NextRPC(doc *state.Document, now float64, asked []int) (RPC, bool)
	// Replied takes in the outcome of an RPC the policy asked for. The loop has already
	// recorded it in the project's seed 000 bookkeeping (RPCSucceeded, or RPCFailed or
	// ReportFailed),
	// added the jobs to doc.Tasks and removed the reported ones. Randomness comes from
	// rep.Seed.
	Replied(doc *state.Document, r RPC, rep Reply, now float64)
	// Account is called after every step with what each project used during it.
	Account(doc *state.Document, u *StepUsage)
}

// beginner is a policy that sets up the document once, before a run's first step (New;
// a run carried from program to program starts from the document bsim init wrote).
type beginner interface {
	Begin(doc *state.Document)
}

// RPC is a scheduler RPC a policy asks for: to Project (index in doc.Projects), with the
// per-resource work request (zero: report only). Every RPC reports all of the project's
// done tasks, as BOINC's client does.
type RPC struct {
	Project int
	Request state.WorkRequest
	Why     string
	// Report: the RPC is seed 000's report-result session (rpc.IsReportSession, as
	// brpc poll records it), whose failure sets no master-fetch flag. The loop sets it
	// (Sim.rpcs; bsim serve from the session brpc poll recorded), not the policy.
	Report bool
}

// Reply is what came back: Failed when the project's server was down (no job, nothing
// reported); otherwise the jobs received per resource type, and a seed for what the
// client draws in answer (a shell loop hands it to bdevices reply --seed).
type Reply struct {
	Failed bool
	Jobs   map[string]int // the server's: good until its next reply
	Seed   uint64
	// ThreeState: the server answers with seed 002's proposed three-state reply, so a
	// reply without jobs says "no work, but the resource is supported" and leaves
	// D(P,R) set (Config.ThreeState).
	ThreeState bool
	// tasks: the RPC reported or received a task (Serve), for an rpcWatcher;
	// received: it received one, for a reportWatcher.
	tasks, received bool
}

// StepUsage is what happened in one step of DT seconds ending at Now: per project
// (index in doc.Projects) and host resource (index in doc.Host.Resources) the
// instances its tasks used, averaged over the step, and the CPU seconds it got.
type StepUsage struct {
	Now, DT float64
	Used    [][]float64
	CPUTime []float64
	// Finished counts the tasks that have finished their work since the run began (they
	// left the runnable set), so that a policy can tell that nothing finished since it
	// last looked.
	Finished int
	// Ended counts the tasks whose work ended during the step (compute), before
	// they are settled.
	Ended int
	// ended is, under --emulate boinc, each of those tasks' use (policy boinc's REC:
	// boincPolicy.Account), in the order of the running tasks.
	ended []endedUse
	// stalled is, under --emulate boinc, each running coprocessor task that did not
	// compute in the step because the GPUs were not active (policy boinc's REC:
	// boincPolicy.Account), its run 0.
	stalled []endedUse
	// cpuSecs is, under --emulate boinc, each project's CPU-seconds of the step at its
	// tasks' avg_ncpus, not scaled down when the CPUs are overcommitted (policy
	// boinc's REC: WORK_FETCH::accumulate_inst_sec).
	cpuSecs []float64
}

// endedUse is a task whose work ended during the step: its project, the host resource
// it runs on, its instances of it, its avg_ncpus, and the seconds of the step it ran.
type endedUse struct {
	project, res     int
	inst, ncpus, run float64
	started          int // its place in the order tasks first started (job.started)
}

// runLister is a policy whose last pass ran its tasks in an order (policy boinc's run
// list): runList is the tasks (indices in the document) the last pass that changed
// a task ran, in that order (Sim.noteStarts).
type runLister interface {
	runList() []int
}

// watcher is a policy that keeps answers from step to step which depend on the tasks
// (seed's skips): the loop tells it when it changed them, outside the policy's own
// calls — a task finished its work (compute), was settled, or was reported or received
// (Serve).
type watcher interface {
	tasksChanged()
}

// finishWatcher is a watcher told apart when a task finishes its work in a step
// (compute; the task stays running until the loop settles it), instead of
// tasksChanged (policy boinc: its held pass stays good until the task is settled).
type finishWatcher interface {
	watcher
	taskFinished()
}

// reportWatcher is an rpcWatcher not told tasksChanged either by an RPC that reported
// tasks and received none (Serve): it hears of it in Replied, whose reply says so
// (policy boinc: the tasks reported were done, none of its jobs, so its held pass
// goes on).
type reportWatcher interface {
	rpcWatcher
	reportMade()
}

// gpuWatcher is a watcher told apart when the loop changes whether GPU computing is
// suspended (state.Document.GPUsSuspended, under --emulate boinc), instead of
// tasksChanged (policy boinc: the suspension changes nothing it reads while no task
// can use a coprocessor).
type gpuWatcher interface {
	watcher
	gpusChanged(doc *state.Document)
}

// rpcWatcher is a watcher not told tasksChanged by an RPC that reported and received no
// task (Serve): it hears of every RPC in Replied, whose reply says whether the tasks
// changed (policy boinc: such an RPC changed only what its work fetch reads).
type rpcWatcher interface {
	watcher
	rpcMade()
}

// dueSkip asks cpusched's Due only when its answer may have changed, for a policy that
// runs a pass whenever one is due (the emulator asks at every step, about 1,500 times
// a simulated day). Due reads the tasks' states, receipt and completion times and the
// last pass's record (cpu_sched): after a false answer it is false again until the
// next pass's time, unless the loop changed the tasks (watcher: a task finished its
// work, was settled, reported or received) or an RPC was made (changed).
type dueSkip struct {
	quiet bool // Due said no, and none of its inputs changed since
}

// due is w.Due(doc, now).
func (d *dueSkip) due(w *cpusched.Workspace, doc *state.Document, now float64) bool {
	if d.quiet && !noSkips && doc.CPUSched != nil && now < doc.CPUSched.NextPass {
		return false // Due would say no again: none of its inputs changed
	}
	d.quiet = !w.Due(doc, now)
	return !d.quiet
}

// changed is the word that Due's inputs may have changed: it is asked again.
func (d *dueSkip) changed() { d.quiet = false }

// carried is a policy whose decisions depend on the document alone (the state it keeps
// between calls only skips work that would change no decision), so that a run of it can
// be carried from program to program: each stage program starts it afresh.
type carried interface {
	carried()
}

func (*seedPolicy) carried()  {}
func (*goalsPolicy) carried() {}

// Carried reports whether the policy named name can run in a shell loop of programs
// (scripts/client-loop.sh --policy NAME): a World holds its run.
func Carried(name string) bool {
	mk, ok := policies[name]
	if !ok {
		return false
	}
	_, ok = mk().(carried)
	return ok
}

// CarriedPolicies returns the names of the policies Carried accepts, sorted.
func CarriedPolicies() []string {
	var out []string
	for _, n := range Policies() {
		if Carried(n) {
			out = append(out, n)
		}
	}
	return out
}

// policies are the policies --policy can name, each made fresh for a run.
var policies = map[string]func() Policy{}

// Register makes a policy available by name; each policy's file registers itself, so a
// new policy is a new file.
func Register(name string, make func() Policy) {
	if _, dup := policies[name]; dup {
		panic("sim: policy " + name + " registered twice")
	}
	policies[name] = make
}

// Policies returns the names of the registered policies, sorted.
func Policies() []string {
	names := make([]string, 0, len(policies))
	for n := range policies {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewPolicy returns a fresh policy of the given name.
func NewPolicy(name string) (Policy, error) {
	mk, ok := policies[name]
	if !ok {
		return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(Policies(), ", "))
	}
	return mk(), nil
}

// hasVersionFor reports whether project p has an app version whose tasks run on
// resource type t: only such a project can be asked for work of that type.
func hasVersionFor(doc *state.Document, project, t string) bool {
	return slices.ContainsFunc(doc.AppVersions, func(av state.AppVersion) bool {
		return av.Project == project && av.ResourceType() == t
	})
}
