#!/usr/bin/env bash
# The full loop's figures (issue 13): wall and CPU time per simulated day with 10
# clients and the RPCs the server answered, then how the cost grows with the number of
# clients (10, 50, 200; an hour simulated each, CPU time of all the programs per
# simulated client-hour). Usage: bash scripts/bench-fullloop.sh [DAY_DURATION]
# (DAY_DURATION, default 1d, the simulated time of the first run; GROWTH=D, default 1h,
# that of the runs with 10, 50 and 200 clients). Say the machine's
# load (uptime) beside the figures: the programs are processes, and wall time depends on
# what else runs.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/" ./cmd/... ./scripts/fullloop
day=${1:-1d}
echo "load before: $(uptime | sed 's/.*load average: //')"
row() { # row LABEL FLAGS...: one run's wall, CPU, program runs and server RPCs
	local label=$1
	shift
	{ "$tmp/fullloop" --bin "$tmp" -o json "$@" 2>/dev/null || true; } | python3 -c '
import json, sys
s = json.load(sys.stdin)
hours = s["simulated_seconds"] / 3600
ch = s["clients"] * hours
print("%-44s wall %7.1f s, CPU %7.1f s (%.2f s per client-hour), %6d program runs, %5d server RPCs (p50 %.1f ms, p99 %.1f ms), invariants %s" % (
    sys.argv[1], s["wall_seconds"], s["cpu_seconds"], s["cpu_seconds"] / ch, s["program_runs"], s["server"]["rpcs"],
    s["server"]["p50_ms"], s["server"]["p99_ms"], "hold" if not s["broken_invariants"] else "BROKEN"))' "$label"
}
row "full loop, 10 clients, $day" --clients 10 --duration "$day"
growth=${GROWTH:-1h}
for n in 10 50 200; do
	row "full loop, $n clients, $growth" --clients "$n" --duration "$growth"
done
echo "load after: $(uptime | sed 's/.*load average: //')"
