#!/bin/sh
# bench-bserver.sh: scheduler RPCs per second of bserver on loopback, each RPC reporting
# one result and receiving one job (16 hosts at once), with p50 and p99 latency and the
# SQL statements and round trips (statements, BEGIN, COMMIT) per RPC, for each engine
# and durability setting: SQLite as bserver opens it (synchronous=FULL: every
# acknowledged report survives a power cut), SQLite with synchronous=NORMAL (may lose the
# last commits in a power cut; for comparison), and, when BKIT_TEST_MYSQL_DSN is set,
# MariaDB with the server's innodb_flush_log_at_trx_commit (1: durable, as SQLite FULL).
# Then the same with 10 reports and 10 jobs per RPC (BenchmarkSchedulerRPC10: the
# statements per RPC do not grow with them). Then at a real project's size
# (BenchmarkSchedulerRPCScale): tables of 10,000 and 1,000,000 workunits (WORKUNITS),
# all but the benchmark's jobs finished work, per engine, side by side, each size also
# with bretry passes running beside the RPCs (a tenth of the workunits due; "busy" is
# the share of the run a pass was running). Then uploads per second of 1 MB output
# files (BenchmarkUpload1MB, SQLite). Beside each figure: the CPU per RPC of the
# benchmark's process ("proc": front end, 16 simulated clients and, on SQLite, the
# database engine) and, on MariaDB on this machine, of the server threads serving its
# connections ("db"), from which docs/scaling.md estimates the hosts each configuration
# serves. The machine's load average is printed with each table, and the run's length
# at the end: on a shared machine read the ratios within one run.
#
#   bash scripts/bench-bserver.sh               # 3 runs of 5000 RPCs
#   RPCS=20000 RUNS=1 bash scripts/bench-bserver.sh
#   SCALE_ONLY=1 RUNS=1 RPCS=2000 bash scripts/bench-bserver.sh   # the scale table alone
#   WORKUNITS=10000,100000 bash scripts/bench-bserver.sh
#   NO_BRETRY=1 bash scripts/bench-bserver.sh   # the scale table without bretry running
set -eu
cd "$(dirname "$0")/.."
began=$(date +%s)
RPCS=${RPCS:-5000}
# bench runs go test with these arguments into $out; when it fails, it prints the test's
# output (a failing benchmark's log says why) and stops here, rather than leaving a table
# cut short with nothing said.
bench() {
	if ! out=$(go test "$@" 2>&1); then
		printf '%s\n' "$out" >&2
		echo "bench-bserver.sh: go test $* failed (its output is above)" >&2
		exit 1
	fi
}
RUNS=${RUNS:-3}
pattern='^BenchmarkSchedulerRPC(SQLiteNormal|10)?$'
if [ -n "${BKIT_TEST_MYSQL_DSN:-}" ]; then pattern='^BenchmarkSchedulerRPC(SQLiteNormal|MySQL|10)?$'; fi
if [ -z "${SCALE_ONLY:-}" ]; then
bench -run '^$' -bench "$pattern" -benchtime "${RPCS}x" -count "$RUNS" ./lib/server/
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$out" | awk -v rpcs="$RPCS" '
BEGIN { printf "%-62s %8s %9s %9s %9s %9s %9s %9s %9s\n", "figure (loopback, 16 hosts)", "RPCs", "RPC/s", "p50 ms", "p99 ms", "stmts/RPC", "trips/RPC", "proc ms", "db ms" }
/^BenchmarkSchedulerRPC/ {
	flush = ""; tr = 0; pc = 0; dc = "-"
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "rpc/s") r = $i
		if ($(i+1) == "p50-ms") p50 = $i
		if ($(i+1) == "p99-ms") p99 = $i
		if ($(i+1) == "stmts/rpc") st = $i
		if ($(i+1) == "trips/rpc") tr = $i
		if ($(i+1) == "trx-flush") flush = $i
		if ($(i+1) == "proc-cpu-ms/rpc") pc = $i
		if ($(i+1) == "db-cpu-ms/rpc") dc = sprintf("%.2f", $i)
	}
	if ($1 ~ /RPC10\/engine=mysql/) name = "bserver RPC of 10 reports + 10 jobs, MariaDB"
	else if ($1 ~ /RPC10\//) name = "bserver RPC of 10 reports + 10 jobs, SQLite FULL"
	else if ($1 ~ /MySQL/) name = sprintf("bserver RPC, MariaDB flush_log_at_trx_commit=%d%s", flush, (flush == 1 ? " (durable)" : ""))
	else if ($1 ~ /SQLiteNormal/) name = "bserver RPC, SQLite synchronous=NORMAL (not durable)"
	else name = "bserver RPC, SQLite synchronous=FULL (durable, default)"
	printf "%-62s %8d %9.0f %9.2f %9.2f %9.1f %9.1f %9.2f %9s\n", name, rpcs, r, p50, p99, st, tr, pc, dc
	n++
}
END { if (n == 0) { print "benchmark did not run" > "/dev/stderr"; exit 1 } }'
fi

# The same at scale: 10,000 and 1,000,000 workunits per engine, each also with bretry
# running (making the million takes minutes on MariaDB; RPC/s at the two sizes should
# stay within 2x).
bretry=1
if [ -n "${NO_BRETRY:-}" ]; then bretry=; fi
export BKIT_BENCH_BRETRY="$bretry" BKIT_BENCH_WORKUNITS="${WORKUNITS:-10000,1000000}"
bench -run '^$' -bench '^BenchmarkSchedulerRPCScale$' -benchtime "${RPCS}x" -count "$RUNS" -timeout 0 ./lib/server/
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$out" | awk -v rpcs="$RPCS" '
BEGIN { printf "%-66s %8s %9s %9s %9s %9s %9s %9s %9s\n", "figure at scale (loopback, 16 hosts)", "RPCs", "RPC/s", "p50 ms", "p99 ms", "stmts/RPC", "trips/RPC", "proc ms", "db ms" }
/^BenchmarkSchedulerRPCScale\// {
	split($1, part, "/"); sub(/^engine=/, "", part[2]); sub(/^workunits=/, "", part[3]); sub(/-[0-9]+$/, "", part[3])
	busy = ""; pc = 0; dc = "-"
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "rpc/s") r = $i
		if ($(i+1) == "p50-ms") p50 = $i
		if ($(i+1) == "p99-ms") p99 = $i
		if ($(i+1) == "stmts/rpc") st = $i
		if ($(i+1) == "trips/rpc") tr = $i
		if ($(i+1) == "bretry-busy") busy = $i
		if ($(i+1) == "proc-cpu-ms/rpc") pc = $i
		if ($(i+1) == "db-cpu-ms/rpc") dc = sprintf("%.2f", $i)
	}
	name = sprintf("bserver RPC, %s, %d workunits", (part[2] == "mysql" ? "MariaDB" : "SQLite"), part[3])
	if (busy != "") name = sprintf("%s, bretry running (busy %.0f%%)", name, 100 * busy)
	printf "%-66s %8d %9.0f %9.2f %9.2f %9.1f %9.1f %9.2f %9s\n", name, rpcs, r, p50, p99, st, tr, pc, dc
	if (busy == "") {
		e = part[2]; size = part[3] + 0; plain[e, size] = r
		if (!(e in small) || size < small[e]) small[e] = size
		if (size > large[e]) large[e] = size
	}
	n++
}
END {
	if (n == 0) { print "scale benchmark did not run" > "/dev/stderr"; exit 1 }
	# issue 33: RPC/s at the largest size within 2x of the smallest, per engine
	for (e in small) if (large[e] != small[e] && plain[e, large[e]] > 0)
		printf "%s: RPC/s at %d workunits / at %d: %.2f\n", (e == "mysql" ? "MariaDB" : "SQLite"), small[e], large[e], plain[e, small[e]] / plain[e, large[e]]
}'

# Output uploads of 1 MB files (BOINC's upload protocol, 4 uploaders at once, each file
# checked, synced, renamed and recorded), SQLite.
UPLOADS=${UPLOADS:-200}
bench -run '^$' -bench '^BenchmarkUpload1MB$' -benchtime "${UPLOADS}x" -count "$RUNS" ./lib/server/
echo "$out" | awk -v n="$UPLOADS" '
BEGIN { printf "%-40s %8s %10s %10s\n", "figure (loopback, 4 uploaders)", "files", "uploads/s", "MB/s" }
/^BenchmarkUpload1MB/ {
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "uploads/s") u = $i
		if ($(i+1) == "MB/s") m = $i
	}
	printf "%-40s %8d %10.1f %10.1f\n", "bserver upload of 1 MB files, SQLite", n, u, m
	k++
}
END { if (k == 0) { print "upload benchmark did not run" > "/dev/stderr"; exit 1 } }'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); the run took $(( $(date +%s) - began )) s"
