// Package prsc implements the client side of seed 002 ("work fetch and GPUs"): the
// processing resources (PRSCs: the CPU and each coprocessor type), the long-term debt
// per (project, resource) with its D(P,R) flags, the per-(project, resource) work-fetch
// backoff, the round-robin simulation over the work-buffer period that gives each
// resource's shortfall and idle instances, select_project, the seed's decision order
// (idle GPU, idle CPU, GPU shortfall, CPU shortfall) with the per-resource request, and
// the effect of a scheduler reply on backoffs and D flags.
//
// Everything here is a pure function over a validated *state.Document: the time comes
// in as now (Unix seconds) and randomness as a *rand.Rand, so a program, a shell loop
// of programs and the emulator give the same result for the same input and seed.
//
// Units: long-term debts per resource are instance-seconds of that resource; the
// overall debt is "CPU seconds": the sum of the resource debts weighted by each
// resource's FLOPS per instance relative to one CPU (seed 002: "expressed in terms of
// CPU seconds"). Shortfalls are instance-seconds.
package prsc
