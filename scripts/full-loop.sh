#!/usr/bin/env bash
# full-loop.sh [--clients N] [--duration D] [--delta S] [--plot DIR] [--keep DIR] [-o table|json] [more flags]
#
# The main job: bkit's client and server programs together on one machine over
# simulated time. Two projects (SQLite databases in a temporary directory, or --db /
# --db2 DSNs) behind 'bserver serve'; emulated clients of several kinds, each a chain
# of the real programs over its own state document (bsim clock, bfetch, bdevices
# request, brpc poll, brpc session over HTTP, bsched, bsim settle, bsim advance); the
# cron jobs between steps (bretry, bretry validate, blocality generate, transition,
# credit, bserver work create); one simulated clock for all (--now, and the front
# ends' --clock-file: testing features, off by default). At the end: one summary and
# the loop's invariants (exit status 1 if one is broken). Progress goes to stderr.
#
# Flags (see 'full-loop.sh --help' for all): --clients N (default 6), --duration D
# (6h), --delta S (15m, a client step), --front-ends N, --kill-at D (SIGKILL a front
# end then), --seed N, --plot DIR (jobs in each state over time), --keep DIR.
#
# The programs are built into a temporary directory first (Go and gcc are all it
# needs); with BKIT_BIN=DIR, those in DIR are used (go build -o DIR ./cmd/... ./scripts/fullloop).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
-h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0" ;;
esac
if [ -n "${BKIT_BIN:-}" ]; then
	bin=$BKIT_BIN
else
	bin=$(mktemp -d)
	trap 'rm -rf "$bin"' EXIT
	echo "full-loop.sh: building the programs" >&2
	go build -o "$bin/" ./cmd/... ./scripts/fullloop
fi
"$bin/fullloop" --bin "$bin" "$@"
