#!/usr/bin/env bash
# full-loop.sh [flags]: the main job, bkit's client and server programs together on
# one machine over simulated time.
#
# Two projects (SQLite databases in a temporary directory, or --db / --db2) behind
# 'bserver serve'; emulated clients of several kinds, each a chain of the real
# programs over its own state document (bsim clock, bfetch, bdevices request, brpc
# poll, brpc session over HTTP, bsched, bsim settle, bsim advance); the cron jobs
# between steps (bretry, bretry validate, blocality generate, transition, credit,
# bserver work create, assimilate, delete-files, purge); one simulated clock for all (--now, and the front ends'
# --clock-file: testing features, off by default). At the end: one summary, with a
# legend (counts read from each database and its purge archive together; rows and
# bytes at the end of each simulated day), and the loop's invariants. Progress goes to standard error. The same flags
# and seed give the same summary (wall-clock figures aside).
#
# Flags:
#   --clients N      emulated clients, kinds in turn: quad, gpu, offline, two-projects,
#                    small, big (default 6)
#   --duration D     simulated time: seconds or with a unit, 6h, 1d (default 6h)
#   --delta D        a client step, simulated (default 15m)
#   --seed N         seed of the clients' random streams (default 1)
#   --front-ends N   'bserver serve' processes on project A's database (default 1)
#   --kill-at D      SIGKILL project A's first front end this long after the start,
#                    between two clients' sessions, and restart it a step later
#   --db DSN         project A's database, e.g. mysql://root@127.0.0.1:3306/loopa: an
#                    existing database, empty or made by an earlier run of the loop
#                    (which is emptied first); default SQLite in the work directory
#   --db2 DSN        project B's, likewise (two databases: not the same as --db)
#   --purge-after D  bserver purge's --older-than: how long a workunit's rows stay in the
#                    database after its files are deleted (default 1h; purge runs hourly)
#   --plot DIR       draw the jobs in each state over time into DIR (SVG, PNG, index.html), and
#                    save each project's status page there at the end (status-A.html, .json, .png)
#   --keep DIR       work in DIR and leave it (databases, documents, worlds, logs)
#   -o table|json    the summary's format (default table)
#   --bin DIR        the programs' directory (default: built into a temporary one)
#
# Examples:
#   bash scripts/full-loop.sh
#   bash scripts/full-loop.sh --clients 12 --duration 1d --plot loop-plots
#   bash scripts/full-loop.sh --clients 50 --duration 7d --delta 1h   # a week: rows level off
#   bash scripts/full-loop.sh --delta 5m --kill-at 2h --front-ends 2
#   bash scripts/full-loop.sh --db mysql://root@127.0.0.1:3306/loopa --db2 mysql://root@127.0.0.1:3306/loopb
#
# EXIT STATUS: 0 the loop ran and every invariant holds; 1 an invariant is broken (the
# summary lists it) or the loop could not run; 2 bad usage (the message names the flag).
#
# The programs are built into a temporary directory first (Go and gcc are all it
# needs); with BKIT_BIN=DIR, those in DIR are used (go build -o DIR ./cmd/... ./scripts/fullloop).
set -euo pipefail
cd "$(dirname "$0")/.."
for a in "$@"; do
	case "$a" in
	-h | -help | --help)
		sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"
		exit 0
		;;
	esac
done
if [ -n "${BKIT_BIN:-}" ]; then
	bin=$BKIT_BIN
else
	bin=$(mktemp -d)
	trap 'rm -rf "$bin"' EXIT
	echo "full-loop.sh: building the programs" >&2
	go build -o "$bin/" ./cmd/... ./scripts/fullloop
fi
"$bin/fullloop" --bin "$bin" "$@"
