#!/bin/sh
# bench-bretry.sh: one bretry pass over 1,000,000 workunits of which 100,000 are due
# (each retried with one new result), in batches of 1000, while four hosts make
# scheduler RPCs to a bserver endpoint on the same database: the pass's wall time,
# rows per second, and the RPCs' p50/p99 latency during the pass. Runs
# lib/programs/bretry's BenchmarkPass (SQLite) and, when BKIT_TEST_MYSQL_DSN is set,
# BenchmarkPassMySQL. Building the million rows takes longer than the pass.
#
#   bash scripts/bench-bretry.sh                        # 1 run each
#   RUNS=3 BRETRY_BENCH_WUS=200000 bash scripts/bench-bretry.sh
set -eu
cd "$(dirname "$0")/.."
RUNS=${RUNS:-1}
pattern='^BenchmarkPass$'
if [ -n "${BKIT_TEST_MYSQL_DSN:-}" ]; then pattern='^BenchmarkPass(MySQL)?$'; fi
out=$(go test -run '^$' -bench "$pattern" -benchtime 1x -count "$RUNS" -timeout 60m ./lib/programs/bretry/)
echo "$out" | awk '
BEGIN { printf "%-40s %10s %12s %12s %10s %10s\n", "figure (1M workunits, 100k due)", "pass s", "due wu/s", "all wu/s", "RPC p50", "RPC p99 ms" }
/^BenchmarkPass/ {
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "s/pass") s = $i
		if ($(i+1) == "due-wu/s") d = $i
		if ($(i+1) == "wu/s") w = $i
		if ($(i+1) == "rpc-p50-ms") p50 = $i
		if ($(i+1) == "rpc-p99-ms") p99 = $i
	}
	name = ($1 ~ /MySQL/) ? "bretry --once pass, MariaDB" : "bretry --once pass, SQLite"
	printf "%-40s %10.2f %12.0f %12.0f %10.2f %10.2f\n", name, s, d, w, p50, p99
	n++
}
END { if (n == 0) { print "benchmark did not run" > "/dev/stderr"; exit 1 } }'
