#!/usr/bin/env bash
# Regenerates cmd/bsim/default.pgo: the CPU profile that Go's profile-guided
# optimisation builds bsim with ('go build ./cmd/bsim' picks up a default.pgo beside the
# main package by itself). The profile is lib/sim's benchmarks of bsim's runs: the
# public scenarios for 10 days, the example for 1,000 days, the GPU example, and
# BenchmarkTenDays (every public scenario, both conventions, policies seed and boinc:
# issue 30's speed figure). A stale
# profile still works (functions it does not know are built as without one); regenerate
# it after large changes to the step loop. Usage: bash scripts/pgo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go test -run '^$' -bench 'PublicExample10Days$|PublicExample1000Days|Deadlines10Days|Down10Days|PartTime10Days|Seed002GPU10Days|TenDays$' \
	-benchtime 2s -cpuprofile "$tmp/cpu.pprof" -o "$tmp/sim.test" ./lib/sim/ >&2
cp "$tmp/cpu.pprof" cmd/bsim/default.pgo
