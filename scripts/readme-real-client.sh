#!/usr/bin/env bash
# readme-real-client.sh: runs README.md's section "A project real BOINC clients join"
# as written, its two command blocks line by line in one shell, with Debian's
# boinc-client: a project on SQLite, a real client attached to it, every job reported
# and validated (issue 32: the section must work pasted on such a machine). It runs in a
# fresh directory that holds a copy of the repository, with the programs installed
# there, on the section's own ports (8080 and 31418), and fails when a line fails, when
# the run takes more than --timeout, or when the project does not end with the ten
# workunits validated and their outputs uploaded. .ci/run runs it after the tests.
#
# Usage: bash scripts/readme-real-client.sh [--keep] [--timeout SECONDS]
#   --keep      leave the directory (its serve.log, client.log) for a look
#   --timeout   the whole run's limit (default 900)
#
# EXIT STATUS: 0 the section worked; 1 a line failed or the project did not end as the
# section says; 2 bad usage; 3 no boinc/boinccmd here (nothing was run).
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0 limit=900
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	--keep) keep=1 ;;
	--timeout) limit=${2:?--timeout needs SECONDS}; shift ;;
	*) echo "readme-real-client.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if ! command -v boinc >/dev/null || ! command -v boinccmd >/dev/null; then
	echo "readme-real-client.sh: SKIPPED: Debian's boinc-client (boinc, boinccmd) is not installed" >&2
	exit 3
fi
repo=$PWD
dir=$(mktemp -d)
cleanup() {
	# Whatever the section left running when a line failed: the client, then serve.
	boinccmd --host 127.0.0.1:31418 --passwd secret --quit >/dev/null 2>&1 || true
	[ -f "$dir/pids" ] && kill $(cat "$dir/pids") >/dev/null 2>&1 || true
	if [ "$keep" = 1 ]; then echo "readme-real-client.sh: left $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT
git archive --format=tar HEAD | tar -x -C "$dir"
echo "readme-real-client.sh: installing the programs in $dir/bin" >&2
GOBIN=$dir/bin go install ./cmd/...
# The section's blocks: the fenced sh blocks just below the doctest markers that name
# boinc-client, in order.
awk '/<!-- doctest: skip: .*boinc-client/ {want=1; next}
     want && /^```sh$/ {inblock=1; next}
     inblock && /^```$/ {inblock=0; want=0; next}
     inblock {print}' README.md >"$dir/section.sh"
[ "$(grep -c . "$dir/section.sh")" -ge 15 ] || { echo "readme-real-client.sh: found only these lines of the section in README.md:" >&2; cat "$dir/section.sh" >&2; exit 1; }
cd "$dir"
# One shell, as a terminal would run the pasted lines, except that a failing line ends
# the run (errexit) and each line is echoed first (xtrace); the pids of what it leaves
# in the background are recorded for the clean-up.
{
	echo 'set -eo pipefail; set -x; PATH=$PWD/bin:$PATH'
	cat section.sh
	echo 'set +x; jobs -p > pids'
} >run.sh
if ! timeout "$limit" bash run.sh; then
	echo "readme-real-client.sh: FAILED: a line of the section failed or it took more than $limit s" >&2
	tail -20 serve.log client.log >&2 2>/dev/null || true
	exit 1
fi
export BSERVER_DB=$dir/project/project.db
PATH=$dir/bin:$PATH
status=$(bserver status -o json)
valid=$(grep -o '"validated": *[0-9]*' <<<"$status" | head -1 | grep -o '[0-9]*$' || true)
outputs=$(find project/upload -type f | wc -l)
echo "readme-real-client.sh: validated workunits $valid, output files $outputs" >&2
if [ "${valid:-0}" -lt 10 ] || [ "$outputs" -lt 10 ]; then
	echo "readme-real-client.sh: FAILED: want 10 validated workunits and 10 output files" >&2
	echo "$status" >&2
	exit 1
fi
echo "readme-real-client.sh: ok: the section ran as written" >&2
