// Package boincpolicy is today's BOINC client policy (version 7 on, read in BOINC's
// client at c5c6cb79b9), written anew from its documentation and a reading of
// client/cpu_sched.cpp, rr_sim.cpp, work_fetch.cpp and client_state.h, so that bsim
// and the stage programs can put what volunteers really run beside the seeds'
// policies (issue 30). docs/decisions.md cites the file and function behind each rule.
//
// The pipeline, each step a pure function of the state document and the time:
//
//   - REC (recent estimated credit): each project's processing, valued at the
//     host's peak FLOPS and decayed with a half-life of 10 days (UpdateREC, Credit;
//     cpu_sched.cpp update_rec, lib/util.cpp update_average);
//   - priority: minus the project's fraction of all REC over its fraction of the
//     resource shares (Priorities; project_priority_init, compute_sched_priority),
//     lowered by an hour's credit of every job chosen to run (adjust_rec_sched) so
//     that projects mix;
//   - the round-robin simulation (Workspace.Simulate; rr_sim.cpp): the runnable jobs
//     run by priority at their speed × the host's availability; a job whose simulated
//     finish passes its report deadline − work_buf_min misses its deadline; each
//     resource's shortfall, saturated time and idle instances come from it;
//   - scheduling (Workspace.Schedule; make_run_list, enforce_run_list): deadline misses
//     earliest deadline first, then the other jobs by project priority, coprocessors
//     before CPUs; running jobs keep their time slice;
//   - work fetch (Workspace.ChooseProject, Piggyback; work_fetch.cpp): the highest-
//     priority project that may be asked and has a resource whose saturated time is
//     below work_buf_min is asked for that resource's shortfall and enough instances
//     for its share, and for every other resource it is the best project for;
//   - replies (HandleReply): a resource asked for and not sent is backed off
//     (600 s doubling to a day, × uniform[0.5, 1.5)); one sent clears its backoff.
package boincpolicy
