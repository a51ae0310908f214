// Package state owns the client state document (version 1): the one format that every
// client-side stage (bsched, bfetch, bdevices, brpc, bsim) reads, decides on and writes
// back. It decodes JSON or YAML strictly (unknown fields, wrong types, out-of-range
// values and dangling references are errors naming the file and field path), encodes in
// either format, and generates the document's JSON Schema from the Go types below, so
// the schema shipped in schema/ cannot drift from the code.
//
// Units: times are Unix seconds, durations and CPU times are seconds, work is FLOPs,
// speeds are FLOPS. Struct tags carry the schema: doc (description), min/max (inclusive
// bounds), gt (exclusive lower bound), enum, and required.
package state

// Version is the only document version this package reads and writes.
const Version = 1

// ResourceCPU is the type name of the CPU processing resource; every other type is a
// coprocessor (NVIDIA, ATI, intel_gpu or any other name).
const ResourceCPU = "cpu"

// Document is the client state document.
type Document struct {
	Version     int          `json:"version" yaml:"version" doc:"document format version; must be 1" required:"true" min:"1" max:"1"`
	Host        Host         `json:"host" yaml:"host" doc:"the machine: its processing resources and availability" required:"true"`
	Preferences Preferences  `json:"preferences" yaml:"preferences" doc:"the user's preferences; absent fields take their defaults"`
	Projects    []Project    `json:"projects" yaml:"projects" doc:"attached projects"`
	Apps        []App        `json:"apps,omitempty" yaml:"apps,omitempty" doc:"applications of the projects"`
	AppVersions []AppVersion `json:"app_versions" yaml:"app_versions" doc:"app versions: what a task of each uses (CPUs, coprocessor instances) and how fast it runs"`
	Tasks       []Task       `json:"tasks" yaml:"tasks" doc:"results the client holds, from ready to reported"`
	CPUSched    *CPUSched    `json:"cpu_sched,omitempty" yaml:"cpu_sched,omitempty" doc:"written by bsched: when the last CPU scheduling pass ran and when the next is due"`
	WorkFetch   *WorkFetch   `json:"work_fetch,omitempty" yaml:"work_fetch,omitempty" doc:"written by bfetch: the outcome of the last work fetch decision (seed 001)"`
	Request     *WorkRequest `json:"request,omitempty" yaml:"request,omitempty" doc:"written by bdevices request: the project chosen and the per-resource request (seed 002)"`
	DebtTime    float64      `json:"debt_time,omitempty" yaml:"debt_time,omitempty" doc:"written by bdevices debt: when the seed 002 long-term debts were last brought up to date, Unix seconds (0: never)" min:"0"`
	RPCSession  *RPCSession  `json:"rpc_session,omitempty" yaml:"rpc_session,omitempty" doc:"written by brpc (seed 000): the scheduler RPC session in progress; absent when none is active"`
	// BOINCEmulator: the client runs inside BOINC's emulator's conventions (bsim
	// --emulate boinc), where what a client learns from real servers it never
	// learns: policy boinc then asks every project for every resource, as BOINC's
	// emulator's client does (its servers never send no_rsc_apps).
	BOINCEmulator bool `json:"boinc_emulator,omitempty" yaml:"boinc_emulator,omitempty" doc:"set by bsim --emulate boinc: the client runs under BOINC's emulator's conventions (client/sim.cpp), whose servers never say which resources a project has no apps for, so policy boinc asks every project for every resource; absent: it asks a project only for resources it has app versions for"`
	// GPUsSuspended: the client's GPU computing is suspended now, as BOINC's client
	// knows it (gpu_suspend_reason). bsim --emulate boinc sets it for policies boinc
	// and goals as BOINC's emulator does, from the GPUs' activity of the step before
	// (client/sim.cpp simulate); policy boinc then runs no coprocessor job and counts
	// no coprocessor job's CPUs in its round-robin simulation, policy goals runs no
	// coprocessor task.
	GPUsSuspended bool `json:"gpus_suspended,omitempty" yaml:"gpus_suspended,omitempty" doc:"set by bsim --emulate boinc for policies boinc and goals: GPU computing is suspended now, as BOINC's emulator's client sees it (client/sim.cpp sets gpu_suspend_reason from the GPUs' activity of the step before); policy boinc then schedules no coprocessor job and counts no coprocessor job's CPUs in its round-robin simulation (cpu_sched.cpp, rr_sim.cpp), policy goals runs no coprocessor task; absent: not suspended"`
}

// Host describes the machine.
type Host struct {
	Resources []Resource `json:"resources" yaml:"resources" doc:"processing resources: exactly one of type cpu, and one entry per coprocessor type" required:"true"`
	TimeStats TimeStats  `json:"time_stats" yaml:"time_stats" doc:"availability fractions; absent fields mean always available"`
}

// Resource is a processing resource (the seeds' PRSC): the CPU or a coprocessor type.
type Resource struct {
	Type      string  `json:"type" yaml:"type" doc:"cpu, or a coprocessor type such as NVIDIA, ATI, intel_gpu" required:"true"`
	Instances int     `json:"instances" yaml:"instances" doc:"number of instances (CPUs or devices)" min:"0"`
	Flops     float64 `json:"flops" yaml:"flops" doc:"peak FLOPS of one instance" min:"0"`
}

// TimeStats holds the fractions of time the client is on, allowed to compute, allowed to
// use GPUs and connected.
type TimeStats struct {
	OnFrac        float64 `json:"on_frac" yaml:"on_frac" doc:"fraction of time the client runs" min:"0" max:"1"`
	ActiveFrac    float64 `json:"active_frac" yaml:"active_frac" doc:"fraction of time the client runs and may compute (seed 001's active fraction)" min:"0" max:"1"`
	GPUActiveFrac float64 `json:"gpu_active_frac" yaml:"gpu_active_frac" doc:"fraction of time GPUs may be used" min:"0" max:"1"`
	ConnectedFrac float64 `json:"connected_frac" yaml:"connected_frac" doc:"fraction of time the host is connected" min:"0" max:"1"`
}

// Preferences are the user's scheduling preferences.
type Preferences struct {
	WorkBufMinDays        float64 `json:"work_buf_min_days" yaml:"work_buf_min_days" doc:"low-water mark of the work buffer, days (default 0.1)" min:"0"`
	WorkBufAdditionalDays float64 `json:"work_buf_additional_days" yaml:"work_buf_additional_days" doc:"high-water mark minus low-water mark, days (default 0.5)" min:"0"`
	ConnectionPeriodDays  float64 `json:"connection_period_days" yaml:"connection_period_days" doc:"seed 001's connection period T, days: keep enough work not to starve for T days (default 0.1)" min:"0"`
	CPUSchedulingPeriod   float64 `json:"cpu_scheduling_period" yaml:"cpu_scheduling_period" doc:"seed 001's scheduling period MV, seconds (default 3600)" gt:"0"`
}

// Project is an attached project with the client's bookkeeping for it.
type Project struct {
	Name          string   `json:"name" yaml:"name" doc:"project name, unique in the document" required:"true"`
	MasterURL     string   `json:"master_url,omitempty" yaml:"master_url,omitempty" doc:"master URL"`
	SchedulerURLs []string `json:"scheduler_urls,omitempty" yaml:"scheduler_urls,omitempty" doc:"scheduler URLs from the master file, tried in order"`
	ResourceShare float64  `json:"resource_share" yaml:"resource_share" doc:"resource share (any scale)" min:"0"`

	Debt        float64 `json:"debt" yaml:"debt" doc:"seed 001: CPU scheduling debt, CPU seconds owed to the project"`
	WorkRequest float64 `json:"work_request" yaml:"work_request" doc:"seed 001: CPU seconds of work to request, set by bfetch" min:"0"`

	ExpAvgCPU          float64 `json:"exp_avg_cpu" yaml:"exp_avg_cpu" doc:"seed 000: exponentially averaged CPU time, seconds (decays by e per week)" min:"0"`
	ExpAvgTime         float64 `json:"exp_avg_time" yaml:"exp_avg_time" doc:"seed 000: when exp_avg_cpu was last brought up to date, Unix seconds" min:"0"`
	MinRPCTime         float64 `json:"min_rpc_time" yaml:"min_rpc_time" doc:"seed 000: earliest time of the next scheduler RPC, Unix seconds (0: any time)" min:"0"`
	NRPCFailures       int     `json:"nrpc_failures" yaml:"nrpc_failures" doc:"seed 000: consecutive failed scheduler RPCs" min:"0"`
	MasterFetchPending bool    `json:"master_fetch_pending" yaml:"master_fetch_pending" doc:"seed 000: the master file must be fetched again (fetch_master_flag)"`

	REC     float64 `json:"rec,omitempty" yaml:"rec,omitempty" doc:"policy boinc: recent estimated credit, the project's processing decayed with a half-life of 10 days (BOINC's pwf.rec, <rec> in client_state.xml), credits per day" min:"0"`
	RECTime float64 `json:"rec_time,omitempty" yaml:"rec_time,omitempty" doc:"policy boinc: when rec was last brought up to date, Unix seconds (BOINC's <rec_time>; 0: never, rec starts from the next accounting)" min:"0"`

	Authenticator string `json:"authenticator,omitempty" yaml:"authenticator,omitempty" doc:"the host's authenticator at this project, from its first scheduler reply (brpc session); empty before the first contact"`
	HostID        int    `json:"hostid,omitempty" yaml:"hostid,omitempty" doc:"the host's id at this project, from a scheduler reply" min:"0"`
	RPCSeqno      int    `json:"rpc_seqno,omitempty" yaml:"rpc_seqno,omitempty" doc:"scheduler RPCs made to this project so far (sent as rpc_seqno)" min:"0"`

	Resources []ProjectResource `json:"resources,omitempty" yaml:"resources,omitempty" doc:"seed 002: per-resource state of this project; a missing entry means all zero"`

	DurationCorrectionFactor float64 `json:"duration_correction_factor,omitempty" yaml:"duration_correction_factor,omitempty" doc:"how much longer than estimated this project's tasks run, learned when each completes (BOINC's duration correction factor, duration_correction_factor in client_state.xml); every estimate of a task's run time is multiplied by it; 0 or absent: none learned yet, 1" min:"0" max:"100"`
}

// ProjectResource is the per-(project, resource) state of seed 002.
type ProjectResource struct {
	Type            string  `json:"type" yaml:"type" doc:"a host resource type" required:"true"`
	SchedDebt       float64 `json:"sched_debt,omitempty" yaml:"sched_debt,omitempty" doc:"no longer used: the coprocessor scheduling debt older bsched versions kept; still accepted (and passed through unchanged) so that their documents read, but neither read nor written by any program: a coprocessor is scheduled by long_term_debt (DESIGN section 5)"`
	LongTermDebt    float64 `json:"long_term_debt" yaml:"long_term_debt" doc:"seed 002: long-term debt on this resource, instance-seconds"`
	AccumulateDebt  bool    `json:"accumulate_debt" yaml:"accumulate_debt" doc:"seed 002: the flag D(P,R), whether the project accumulates debt for this resource"`
	BackoffInterval float64 `json:"backoff_interval" yaml:"backoff_interval" doc:"seed 002: current work-fetch backoff interval for this resource, seconds (0: none)" min:"0"`
	BackoffUntil    float64 `json:"backoff_until" yaml:"backoff_until" doc:"seed 002: no work of this type is asked for before this time, Unix seconds" min:"0"`
}

// App is an application of a project.
type App struct {
	Name          string `json:"name" yaml:"name" doc:"application name, unique within its project" required:"true"`
	Project       string `json:"project" yaml:"project" doc:"the project's name" required:"true"`
	MaxConcurrent int    `json:"max_concurrent,omitempty" yaml:"max_concurrent,omitempty" doc:"at most this many tasks of the app run at once (0: no limit)" min:"0"`
}

// AppVersion is what a task runs: its CPU and coprocessor usage and its speed.
type AppVersion struct {
	Name       string       `json:"name" yaml:"name" doc:"app version name, unique in the document; tasks refer to it" required:"true"`
	Project    string       `json:"project" yaml:"project" doc:"the project's name" required:"true"`
	App        string       `json:"app,omitempty" yaml:"app,omitempty" doc:"the app's name (optional)"`
	VersionNum int          `json:"version_num,omitempty" yaml:"version_num,omitempty" doc:"version number" min:"0"`
	PlanClass  string       `json:"plan_class,omitempty" yaml:"plan_class,omitempty" doc:"plan class"`
	AvgNCPUs   float64      `json:"avg_ncpus" yaml:"avg_ncpus" doc:"CPUs a task uses, possibly fractional; above 0 unless the version uses a coprocessor" min:"0"`
	Coproc     *CoprocUsage `json:"coproc,omitempty" yaml:"coproc,omitempty" doc:"the coprocessor a task uses, if any (at most one type)"`
	Flops      float64      `json:"flops,omitempty" yaml:"flops,omitempty" doc:"FLOPS a task achieves; 0 means avg_ncpus x CPU flops + coprocessor count x its flops" min:"0"`
}

// CoprocUsage is a possibly fractional number of instances of one coprocessor type.
type CoprocUsage struct {
	Type  string  `json:"type" yaml:"type" doc:"a coprocessor type of the host" required:"true"`
	Count float64 `json:"count" yaml:"count" doc:"instances used, possibly fractional" gt:"0"`
}

// TaskState is where a task is in its life.
type TaskState string

// Task states. Ready tasks have no slot yet; running and preempted tasks are active;
// done tasks wait to be reported.
const (
	TaskReady     TaskState = "ready"
	TaskRunning   TaskState = "running"
	TaskPreempted TaskState = "preempted"
	TaskDone      TaskState = "done"
	TaskReported  TaskState = "reported"
)

// Runnable reports whether a task in state s can still be given a processor.
func (s TaskState) Runnable() bool {
	return s == TaskReady || s == TaskRunning || s == TaskPreempted
}

// Task is a result the client holds.
type Task struct {
	Name           string    `json:"name" yaml:"name" doc:"result name, unique in the document" required:"true"`
	Project        string    `json:"project" yaml:"project" doc:"the project's name" required:"true"`
	AppVersion     string    `json:"app_version" yaml:"app_version" doc:"the app version's name; it must belong to the same project" required:"true"`
	State          TaskState `json:"state" yaml:"state" doc:"ready, running, preempted, done or reported" required:"true" enum:"ready,running,preempted,done,reported"`
	EstimatedFlops float64   `json:"estimated_flops" yaml:"estimated_flops" doc:"estimated work, FLOPs (rsc_fpops_est); 0: no estimate" min:"0"`
	FlopsDone      float64   `json:"flops_done,omitempty" yaml:"flops_done,omitempty" doc:"work done so far, FLOPs" min:"0"`
	FractionDone   float64   `json:"fraction_done,omitempty" yaml:"fraction_done,omitempty" doc:"the fraction of its work done, as the running app reports it (fraction_done of BOINC's active task); a started task's remaining time is estimated from it; 0 or absent: flops_done ÷ estimated_flops" min:"0" max:"1"`
	// EmulatorFlopsLeft is an emulator's oracle, not a client's knowledge: BOINC's
	// emulator gives its client a started task's true remaining run time
	// (client/result.cpp RESULT::estimated_runtime_remaining, #ifdef SIM), and bsim
	// --emulate boinc does the same through this field (RemainingWork); its client's
	// round-robin simulation reads every task's true work, started or not
	// (client/result.h estimated_flops_remaining, #ifdef SIM), so the emulator sets it
	// on every task it makes (policy boinc reads it there; RemainingWork does not
	// for a task not started). A task that has ended has what its last step did past
	// its end, below 0, as BOINC's sim_flops_left (client/sim.cpp
	// ACTIVE_TASK_SET::poll), which its work fetch reads until the result is reported
	// (client/work_fetch.cpp WORK_FETCH::setup).
	EmulatorFlopsLeft      float64 `json:"emulator_flops_left,omitempty" yaml:"emulator_flops_left,omitempty" doc:"set only by bsim --emulate boinc (BOINC's emulator's convention): the work a task really has left, FLOPs at its app version's speed; a started task's remaining-time estimates then use it instead of its progress, and policy boinc's round-robin simulation uses it for every task; a done task's is at most 0, minus the work its last step would have done past its end, which policy boinc's work-fetch priority counts until it is reported; 0 or absent: estimated"`
	EmulatorActiveSeq      int     `json:"emulator_active_seq,omitempty" yaml:"emulator_active_seq,omitempty" doc:"set only by bsim --emulate boinc (BOINC's emulator's convention): the task's place in BOINC's client's list of active tasks, the order tasks first started (1 the first); policy boinc takes a project's started CPU jobs in that order; 0 or absent: never started" min:"0"`
	EmulatorRunStart       float64 `json:"emulator_run_start,omitempty" yaml:"emulator_run_start,omitempty" doc:"set only by bsim --emulate boinc (BOINC's emulator's convention): when the task last started or resumed, Unix seconds (run_interval_start_wall_time); policy boinc ends its time slice once emulator_checkpoint is more than a scheduling period after it; 0 or absent: by the elapsed time" min:"0"`
	EmulatorCheckpoint     float64 `json:"emulator_checkpoint,omitempty" yaml:"emulator_checkpoint,omitempty" doc:"set only by bsim --emulate boinc (BOINC's emulator's convention): the end of the last step in which the task computed, Unix seconds (checkpoint_wall_time)" min:"0"`
	ReportDeadline         float64 `json:"report_deadline" yaml:"report_deadline" doc:"report deadline, Unix seconds" min:"0"`
	ReceivedTime           float64 `json:"received_time,omitempty" yaml:"received_time,omitempty" doc:"when the client received the task, Unix seconds" min:"0"`
	CompletedTime          float64 `json:"completed_time,omitempty" yaml:"completed_time,omitempty" doc:"when the task finished computing, Unix seconds" min:"0"`
	CPUTime                float64 `json:"cpu_time" yaml:"cpu_time" doc:"CPU time so far, seconds (seed 001's current_cpu_time)" min:"0"`
	CPUTimeAtLastSched     float64 `json:"cpu_time_at_last_sched" yaml:"cpu_time_at_last_sched" doc:"CPU time at the last scheduling pass, seconds" min:"0"`
	ElapsedTime            float64 `json:"elapsed_time,omitempty" yaml:"elapsed_time,omitempty" doc:"wall time spent running, seconds (coprocessor work is measured by it)" min:"0"`
	ElapsedTimeAtLastSched float64 `json:"elapsed_time_at_last_sched,omitempty" yaml:"elapsed_time_at_last_sched,omitempty" doc:"elapsed time at the last scheduling pass, seconds" min:"0"`
	OutputDigest           string  `json:"output_digest,omitempty" yaml:"output_digest,omitempty" doc:"a hash of the task's output (e.g. sha256:HEX), reported to the server for validation (bkit extension); empty: none"`
}

// CPUSched is bsched's record of its passes.
type CPUSched struct {
	LastPass       float64 `json:"last_pass" yaml:"last_pass" doc:"when the last pass ran, Unix seconds" min:"0"`
	NextPass       float64 `json:"next_pass" yaml:"next_pass" doc:"when the next pass is due at the latest, Unix seconds" min:"0"`
	NextPassReason string  `json:"next_pass_reason" yaml:"next_pass_reason" doc:"why the next pass is due then"`
}

// WorkFetch is bfetch's record of its decision.
type WorkFetch struct {
	Time    float64 `json:"time" yaml:"time" doc:"when the decision was made, Unix seconds" min:"0"`
	Urgency string  `json:"urgency" yaml:"urgency" doc:"seed 001's urgency" enum:"dont_need_work,need_work,need_work_immediately"`
}

// WorkRequest is bdevices' record of the request it chose (BOINC's tag names).
type WorkRequest struct {
	Time            float64         `json:"time" yaml:"time" doc:"when the request was decided, Unix seconds" min:"0"`
	Project         string          `json:"project" yaml:"project" doc:"the project to ask; empty when no request is to be made"`
	Reason          string          `json:"reason" yaml:"reason" doc:"why this project and these amounts"`
	WorkReqSeconds  float64         `json:"work_req_seconds" yaml:"work_req_seconds" doc:"the largest of the per-resource requests, for old servers" min:"0"`
	CPUReqSecs      float64         `json:"cpu_req_secs" yaml:"cpu_req_secs" doc:"CPU seconds requested" min:"0"`
	CPUReqInstances float64         `json:"cpu_req_instances" yaml:"cpu_req_instances" doc:"send enough jobs to occupy this many CPUs" min:"0"`
	Coprocs         []CoprocRequest `json:"coprocs,omitempty" yaml:"coprocs,omitempty" doc:"per coprocessor type"`
}

// CoprocRequest is the request for one coprocessor type.
type CoprocRequest struct {
	Type         string  `json:"type" yaml:"type" doc:"coprocessor type" required:"true"`
	ReqSecs      float64 `json:"req_secs" yaml:"req_secs" doc:"instance-seconds requested" min:"0"`
	ReqInstances float64 `json:"req_instances" yaml:"req_instances" doc:"send enough jobs to occupy this many instances" min:"0"`
}

// RPCSession is brpc's record of the scheduler RPC session in progress (seed 000), so
// that the poll decision, the session's RPCs and its end can be separate stages.
type RPCSession struct {
	Kind      string   `json:"kind" yaml:"kind" doc:"get_work (contact projects by resource debt until the high-water mark) or report (report one project's overdue results)" required:"true" enum:"get_work,report"`
	Project   string   `json:"project,omitempty" yaml:"project,omitempty" doc:"report sessions: the project whose results are reported"`
	AskWork   bool     `json:"ask_work,omitempty" yaml:"ask_work,omitempty" doc:"report sessions: also ask for work up to the high-water mark (the project has the greatest resource debt)"`
	Started   float64  `json:"started" yaml:"started" doc:"when the session started, Unix seconds" min:"0"`
	Contacted []string `json:"contacted,omitempty" yaml:"contacted,omitempty" doc:"get_work sessions: projects already asked in this session, in order (each at most once)"`
}

// defaults is the document every decode starts from: fields absent from the input keep
// these values.
func defaults() Document {
	return Document{
		Host: Host{TimeStats: TimeStats{OnFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1, ConnectedFrac: 1}},
		Preferences: Preferences{
			WorkBufMinDays:        0.1,
			WorkBufAdditionalDays: 0.5,
			ConnectionPeriodDays:  0.1,
			CPUSchedulingPeriod:   3600,
		},
	}
}
