// Package sim is bsim's emulator: the whole BOINC client loop over simulated time, in
// one process, scored with the figures of merit of BOINC's own client emulator
// (../shared/boinc-emulator.md) so that a run of bsim and a run of BOINC's emulator on
// one scenario can be put side by side.
//
// A run (New, then Step until it returns false, then Result) starts from a scenario
// (lib/scenario's model, read from a BOINC directory by lib/boincxml or from a bkit
// scenario file) and advances a clock by delta seconds per step. The world
// around the client is the loop's: the host's availability processes (on, active, GPU
// active, connected), each project's emulated server (up or down; when up it makes up
// jobs to fill each request), the real work of each task, task progress, completion,
// reporting and deadline accounting. The client's decisions are a Policy's: "seed"
// runs seeds 000, 001 and 002 through the very functions bsched, bfetch, bdevices and
// brpc call (lib/cpusched, lib/prsc, lib/rpc); "rr" is the round-robin baseline. A
// policy is one file that registers itself; a third policy is a third file.
//
// Everything is a plain function of the document, the time and seeded random streams
// (math/rand/v2 PCG, one stream per process; under --emulate boinc BOINC's emulator's
// one glibc rand() stream, seed N being its srand(N): boincstream.go), so a scenario and
// a seed always give the same figures, to the last bit.
package sim
