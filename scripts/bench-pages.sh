#!/bin/sh
# bench-pages.sh: what an operator and volunteers read from bserver serve (issue 31),
# over a SQLite database (and a MariaDB one when BKIT_TEST_MYSQL_DSN is set, e.g.
# mysql://root@127.0.0.1:3306/test: a new database beside it, dropped after) of RESULTS results (1,000,000 by default; lib/server's
# BenchmarkPages: 90 % finished and reported in the last hour, 5 % in progress, 5 %
# unsent, 10,000 hosts and users with credit): p50 and p99 of each page, to the last
# byte over loopback, as serve answers by default (the status figures read at most once
# a minute, ahead of the views) and with the figures read at every view; then scheduler
# RPCs per second with the metrics on and off, side by side in one run
# (BenchmarkSchedulerRPCMetrics: RUNS rounds of off then on).
#
#   bash scripts/bench-pages.sh
#   RESULTS=100000 VIEWS=50 RUNS=1 RPCS=2000 bash scripts/bench-pages.sh
set -eu
cd "$(dirname "$0")/.."
RESULTS=${RESULTS:-1000000}
VIEWS=${VIEWS:-100}
RPCS=${RPCS:-3000}
RUNS=${RUNS:-3}
out=$(BKIT_BENCH_RESULTS="$RESULTS" go test -run '^$' -bench '^BenchmarkPages$' -benchtime "${VIEWS}x" -timeout 0 ./lib/server/)
echo "$out" | awk -v n="$RESULTS" -v views="$VIEWS" '
BEGIN { printf "%-62s %8s %10s %10s\n", sprintf("page over %d results (loopback)", n), "views", "p50 ms", "p99 ms" }
/^BenchmarkPages\/engine=[a-z]+\/page=/ {
	name = $1; sub(/^BenchmarkPages\/engine=/, "", name); sub(/\/page=/, ": ", name); sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i++) { if ($(i+1) == "p50-ms") p50 = $i; if ($(i+1) == "p99-ms") p99 = $i }
	printf "%-62s %8d %10.2f %10.2f\n", name, views, p50, p99; k++
}
END { if (k == 0) { print "benchmark did not run" > "/dev/stderr"; exit 1 } }'

out=$(BKIT_BENCH_ROUNDS="$RUNS" go test -run '^$' -bench '^BenchmarkSchedulerRPCMetrics$' -benchtime "${RPCS}x" ./lib/server/)
echo "$out" | awk -v rpcs="$RPCS" '
BEGIN { printf "\n%-62s %8s %10s %10s %10s\n", "scheduler RPCs (SQLite FULL, 16 hosts), run by run", "RPCs", "RPC/s", "p50 ms", "p99 ms" }
/^BenchmarkSchedulerRPCMetrics\// {
	name = $1; sub(/^BenchmarkSchedulerRPCMetrics\/round=[0-9]+\//, "", name); sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i++) { if ($(i+1) == "rpc/s") r = $i; if ($(i+1) == "p50-ms") p50 = $i; if ($(i+1) == "p99-ms") p99 = $i }
	round = $1; sub(/^BenchmarkSchedulerRPCMetrics\/round=/, "", round); sub(/\/.*/, "", round)
	printf "%-62s %8d %10.0f %10.2f %10.2f\n", "round " round ", " name, rpcs, r, p50, p99
	sum[name] += r; cnt[name]++
}
END {
	if (cnt["metrics=on"] == 0) { print "benchmark did not run" > "/dev/stderr"; exit 1 }
	on = sum["metrics=on"] / cnt["metrics=on"]; off = sum["metrics=off"] / cnt["metrics=off"]
	printf "%-62s %8s %10.0f\n%-62s %8s %10.0f\n%-62s %8s %+9.1f%%\n", "mean, metrics=off", "", off, "mean, metrics=on", "", on, "metrics on vs off", "", 100 * (on - off) / off
}'
