#!/usr/bin/env bash
# The main job on the shipped examples: each client program decides on the example state
# documents and explains itself. Programs run through `go run`, so nothing needs
# installing first. As more programs land, they join this tour.
set -euo pipefail
cd "$(dirname "$0")/.."
now=1700003600

step() { printf '\n== %s\n' "$*"; }

step "bsched: which tasks run (seed 001 CPU scheduling)"
go run ./cmd/bsched --now "$now" -o table < examples/two-projects.yaml

step "bfetch: does the client need work, and how much from whom (seed 001 work fetch)"
go run ./cmd/bfetch --now "$now" -o table < examples/two-projects.yaml

step "bdevices: per-resource shortfall and the request (seed 002), on the seed's GPU example"
go run ./cmd/bdevices request --now 1700000000 -o table < examples/gpu-seed-example.yaml

step "bsched then bfetch, piped: the document flows through the stages"
go run ./cmd/bsched --now "$now" < examples/two-projects.yaml | go run ./cmd/bfetch --now "$now" -o table
