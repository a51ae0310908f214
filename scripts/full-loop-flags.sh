#!/usr/bin/env bash
# full-loop-flags.sh: runs the main job (scripts/full-loop.sh) with each of its
# documented flags and fails if a run breaks an invariant (issue 32), then checks that
# two runs with one seed print the same summary, wall-clock figures aside. .ci/run runs
# it; 'go test ./scripts/fullloop' keeps a short representative subset.
#
# Usage: bash scripts/full-loop-flags.sh
# With BKIT_TEST_MYSQL_DSN set (mysql://root@127.0.0.1:3306/test), the --db runs use
# two databases made beside it (dropped at the end), each run twice (a reused database).
#
# EXIT STATUS: 0 every run held its invariants and the repeated runs agree; 1 not.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac
tmp=$(mktemp -d)
cleanup() {
	if [ -n "${dbs:-}" ]; then mariadb --protocol=tcp -h "$host" -P "$port" -u "$user" -e "DROP DATABASE IF EXISTS ${dbs}_a; DROP DATABASE IF EXISTS ${dbs}_b" || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
echo "full-loop-flags.sh: building the programs" >&2
go build -o "$tmp/" ./cmd/... ./scripts/fullloop
export BKIT_BIN=$tmp
failed=0
run() { # run FLAGS...: one run of the main job; its summary's last line
	local start=$SECONDS out
	if out=$(bash scripts/full-loop.sh "$@" 2>"$tmp/progress"); then
		echo "ok     $* ($((SECONDS - start)) s): $(tail -1 <<<"$out")"
	else
		echo "FAILED $* ($((SECONDS - start)) s):"
		cat "$tmp/progress"
		echo "$out"
		failed=1
	fi
}
# Each --delta at the default size (6 clients, 6 hours): the offline client comes back
# at a different point of its lost jobs' deadlines with each.
run --delta 5m
run --delta 10m
run --delta 1h --clients 4
# The other flags at half-hour steps.
run --delta 30m --clients 1
run --delta 30m --clients 12
run --delta 30m --kill-at 2h
run --delta 30m --front-ends 2 --kill-at 3h
if [ -n "${BKIT_TEST_MYSQL_DSN:-}" ]; then
	rest=${BKIT_TEST_MYSQL_DSN#mysql://}
	cred=${rest%%@*} hostport=${rest#*@}
	hostport=${hostport%%/*}
	user=${cred%%:*} host=${hostport%%:*} port=${hostport##*:}
	dbs=bkit_loop_$$
	mariadb --protocol=tcp -h "$host" -P "$port" -u "$user" -e "CREATE DATABASE ${dbs}_a; CREATE DATABASE ${dbs}_b"
	base=${BKIT_TEST_MYSQL_DSN%/*}
	for _ in 1 2; do # the second run finds the first's databases
		run --delta 30m --front-ends 2 --db "$base/${dbs}_a" --db2 "$base/${dbs}_b"
	done
else
	echo "SKIPPED --db mysql://…: BKIT_TEST_MYSQL_DSN is not set" >&2
fi
# One seed, two runs, one summary (wall-clock figures aside). The archive's rows
# carry the lifecycle jobs' times, which run on with the wall clock from --now, so
# its compressed size varies by a few bytes (TestFullLoop leaves it out too).
for i in 1 2; do
	bash scripts/full-loop.sh --delta 30m --kill-at 2h --seed 3 -o json 2>/dev/null |
		jq 'del(.wall_seconds, .cpu_seconds, .server.p50_ms, .server.p99_ms, .days[].archive_bytes)' >"$tmp/repeat$i.json" || failed=1
done
if cmp -s "$tmp/repeat1.json" "$tmp/repeat2.json"; then
	echo "ok     two runs with --seed 3 print the same summary"
else
	echo "FAILED two runs with --seed 3 differ:"
	diff "$tmp/repeat1.json" "$tmp/repeat2.json" || true
	failed=1
fi
exit $failed
