#!/bin/sh
# bench-lifecycle.sh: one assimilate (--to), one delete-files and one purge pass over
# 1,000,000 workunits of which 100,000 are ready for each (one result, one 100-byte
# output file each; the other 900,000 assimilated and cleaned lately, too young to
# purge), each run as bserver's cron job (bserver assimilate / delete-files / purge
# --once, a process of its own, in the jobs' default batches), while four hosts make
# scheduler RPCs to a bserver endpoint on the same database: each pass's wall time,
# its CPU seconds (the job's: on a shared machine much of the wall time is waiting for
# a processor), workunits per second, and the RPCs' p50/p99 latency during it and
# with no pass running (idle: 10 s before the passes and 10 s after), and what a mkdir costs
# on the files' file system just before the passes (assimilation's main kernel cost,
# which the file system's state moves more than the code does). Runs lib/lifecycle's
# BenchmarkLifecycle (SQLite) and, when BKIT_TEST_MYSQL_DSN is set,
# BenchmarkLifecycleMySQL. Building the million rows and the 100,000 files takes
# longer than the passes.
#
# The four hosts are a closed loop: each asks again 5 ms after its reply, some 500
# RPCs a second here, the scheduler saturated. BKIT_BENCH_RPC_RATE=N makes the load an
# open loop instead: N RPCs a second from 100 hosts as a Poisson process, each RPC's
# latency counted from when it was due, what a project's volunteers send (issue 33: a
# project of 100,000 hosts sends tens a second, a few hundred at peaks).
#
#   bash scripts/bench-lifecycle.sh
#   LIFECYCLE_BENCH_WUS=200000 bash scripts/bench-lifecycle.sh
#   BKIT_BENCH_RPC_RATE=50 bash scripts/bench-lifecycle.sh
#   LIFECYCLE_BENCH_INPROCESS=1 bash scripts/bench-lifecycle.sh   # the passes as calls in the benchmark's process
#   LIFECYCLE_BENCH_LAYOUT=flat bash scripts/bench-lifecycle.sh   # assimilation's --layout flat
#
# LIFECYCLE_BENCH_INPROCESS=1 also reports each pass's transactions' hold p99 and, with
# LIFECYCLE_BENCH_PROFILE=DIR, writes a CPU profile of each pass; the passes then share
# one Go scheduler with the endpoint, which lengthens the RPCs' tail.
set -eu
cd "$(dirname "$0")/.."
pattern='^BenchmarkLifecycle$'
if [ -n "${BKIT_TEST_MYSQL_DSN:-}" ]; then pattern='^BenchmarkLifecycle(MySQL)?$'; fi
out=$(go test -run '^$' -bench "$pattern" -benchtime 1x -timeout 90m ./lib/lifecycle/)
echo "$out" | awk '
BEGIN { printf "%-44s %10s %10s %12s %10s %10s\n", "figure (1M workunits, 100k ready)", "pass s", "CPU s", "wu/s", "RPC p50", "RPC p99 ms" }
/^BenchmarkLifecycle/ {
	engine = ($1 ~ /MySQL/) ? "MariaDB" : "SQLite"
	delete v
	for (i = 3; i < NF; i++) v[$(i+1)] = $i
	if (v["rpc-rate"] > 0) print "load: an open loop of " v["rpc-rate"] " RPCs a second (BKIT_BENCH_RPC_RATE)"
	else print "load: four hosts in a closed loop (the scheduler saturated)"
	printf "%-44s %10s %10s %12s %10.2f %10.2f\n", "no pass (idle), " engine, "", "", "", v["idle-rpc-p50-ms"], v["idle-rpc-p99-ms"]
	split("assimilate delete purge", passes, " ")
	for (k = 1; k <= 3; k++) {
		p = passes[k]
		printf "%-44s %10.2f %10.2f %12.0f %10.2f %10.2f\n", p " pass, " engine, v[p "-s"], v[p "-cpu-s"], v[p "-wu/s"], v[p "-rpc-p50-ms"], v[p "-rpc-p99-ms"]
	}
	if (v["fs-mkdir-us"] != "") printf "file system: %.1f us a mkdir just before the passes (a quiet ext4: 30-40; other jobs deleting many files raise it)\n", v["fs-mkdir-us"]
	n++
}
END { if (n == 0) { print "benchmark did not run" > "/dev/stderr"; exit 1 } }'
