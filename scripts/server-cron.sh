#!/usr/bin/env bash
# server-cron.sh: one round of a project's server-side cron jobs on the wall clock, as
# a project runs them for real beside 'bserver serve' (scripts/bserver.service).
# scripts/crontab.example calls it every few minutes; scripts/full-loop.sh runs the
# same jobs on simulated time.
#
#   BSERVER_DB=/var/lib/project/project.db APPS="uppercase einstein" bash scripts/server-cron.sh [validate|retry|locality|credit|assimilate|delete-files|purge|all]
#
# validate  bretry validate for each app (lost results marked, canonical results chosen)
# retry     bretry --no-validate for each app (seed 003's rules: retry or give up)
# locality  blocality generate, then blocality transition (when LOCALITY=1)
# credit    blocality credit (when LOCALITY=1)
# assimilate    bserver assimilate --to $RESULTS_DIR --layout ${RESULTS_LAYOUT:-dirs} (or --exec "$ASSIMILATE_EXEC" when set)
# delete-files  bserver delete-files --delay ${DELETE_DELAY:-1h}
# purge     bserver purge --older-than ${PURGE_AGE:-30d} --archive $ARCHIVE_DIR
# all       all of them, in that order (the default)
#
# The lifecycle jobs take the project directory from BSERVER_PROJECT_DIR (default: the
# SQLite database's directory); assimilate needs RESULTS_DIR or ASSIMILATE_EXEC, purge
# needs ARCHIVE_DIR.
#
# Every job is safe to overlap with itself and with bserver serve (row claims,
# short transactions; two passes never handle a row twice), and to kill at any moment;
# flock only keeps passes of one job from piling up when one is slow. Programs come
# from PATH (go install ./cmd/...) or BKIT_BIN=DIR. Output is one line per pass on
# standard output (for the log); errors on standard error and a non-zero status.
set -euo pipefail
: "${BSERVER_DB:?set BSERVER_DB to the project database DSN (sqlite:PATH, PATH or mysql://...)}"
: "${APPS:?set APPS to the app names of the project, space separated}"
LOCK_DIR=${LOCK_DIR:-/tmp}
bin() { if [ -n "${BKIT_BIN:-}" ]; then echo "$BKIT_BIN/$1"; else echo "$1"; fi; }
locked() { # locked NAME COMMAND...: run COMMAND unless the previous NAME is still running
	local name=$1
	shift
	local s=0
	flock -n -E 75 "$LOCK_DIR/bkit-$name.lock" "$@" || s=$?
	case $s in
	0) ;;
	75) echo "$name: previous pass still running, skipped" ;;
	*) return $s ;;
	esac
}
what=${1:-all}
case "$what" in
validate | retry | locality | credit | assimilate | delete-files | purge | all) ;;
*) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2 ;;
esac
stamp() { date -u +%FT%TZ; }
for app in $APPS; do
	if [ "$what" = validate ] || [ "$what" = all ]; then
		out=$(locked "validate-$app" "$(bin bretry)" validate --app "$app" --once)
		echo "$(stamp) validate $app: $out"
	fi
	if [ "$what" = retry ] || [ "$what" = all ]; then
		out=$(locked "retry-$app" "$(bin bretry)" --app "$app" --once --no-validate)
		echo "$(stamp) retry $app: $out"
	fi
done
if [ "${LOCALITY:-0}" = 1 ]; then
	if [ "$what" = locality ] || [ "$what" = all ]; then
		locked generate "$(bin blocality)" generate --once
		locked transition "$(bin blocality)" transition --once
	fi
	if [ "$what" = credit ] || [ "$what" = all ]; then
		locked credit "$(bin blocality)" credit --once
	fi
fi
if [ "$what" = assimilate ] || [ "$what" = all ]; then
	if [ -n "${ASSIMILATE_EXEC:-}" ]; then
		out=$(locked assimilate "$(bin bserver)" assimilate --once --exec "$ASSIMILATE_EXEC")
	else
		: "${RESULTS_DIR:?set RESULTS_DIR (the tree assimilate writes) or ASSIMILATE_EXEC (a command per workunit)}"
		out=$(locked assimilate "$(bin bserver)" assimilate --once --to "$RESULTS_DIR" --layout "${RESULTS_LAYOUT:-dirs}")
	fi
	echo "$(stamp) assimilate: $out"
fi
if [ "$what" = delete-files ] || [ "$what" = all ]; then
	out=$(locked delete-files "$(bin bserver)" delete-files --once --delay "${DELETE_DELAY:-1h}")
	echo "$(stamp) delete-files: $out"
fi
if [ "$what" = purge ] || [ "$what" = all ]; then
	: "${ARCHIVE_DIR:?set ARCHIVE_DIR (where bserver purge writes the rows it moves out of the database)}"
	out=$(locked purge "$(bin bserver)" purge --once --older-than "${PURGE_AGE:-30d}" --archive "$ARCHIVE_DIR")
	echo "$(stamp) purge: $out"
fi
