#!/usr/bin/env bash
# Runs BOINC's client emulator (client/sim.cpp, built outside this repository: see
# scenarios/corpus/README.md) on scenario directories and writes each one's figures to
# DIR/boinc_figures.txt, with a comment saying the emulator's commit, build flags and
# run (bsim compare reads the run from it). A directory that has its figures is skipped.
#
# Usage: BOINC_SIM=/work/boinc/client/sim bash scripts/boinc-figures.sh DIR...
#   env: BOINC_SIM (the emulator; required), BOINC_COMMIT and BOINC_FLAGS (for the
#   comment), DAYS (10), DELTA (60), JOBS (parallel runs, 2), TIMEOUT (seconds a run, 1800)
# Exit status: 0 all figures written; 1 some run failed or timed out (named on stderr);
# 2 bad usage.
set -uo pipefail
if [[ -z "${BOINC_SIM:-}" || ! -x "$BOINC_SIM" || $# -eq 0 ]]; then
  echo "usage: BOINC_SIM=/path/to/client/sim $0 DIR... (BOINC_SIM must be BOINC's built emulator)" >&2
  exit 2
fi
days=${DAYS:-10} delta=${DELTA:-60} jobs=${JOBS:-2} timeout=${TIMEOUT:-1800}
commit=${BOINC_COMMIT:-unknown commit} flags=${BOINC_FLAGS:-unknown build flags}
export BOINC_SIM days delta timeout commit flags

one() {
  dir=${1%/}
  [[ -s "$dir/boinc_figures.txt" ]] && return 0
  in=$(realpath "$dir") || return 1
  out=$(mktemp -d) || return 1
  start=$(date +%s)
  if ! (cd "$out" && timeout "$timeout" "$BOINC_SIM" --infile_prefix "$in/" --outfile_prefix "$out/" \
        --duration $((days * 86400)) --delta "$delta" > /dev/null 2>&1) || [[ ! -s "$out/results.dat" ]]; then
    echo "$dir: BOINC's emulator failed or ran out of time (${timeout} s)" >&2
    rm -rf "$out"
    return 1
  fi
  {
    echo "# BOINC's client emulator (client/sim.cpp, $commit, $flags), $days simulated days, delta $delta"
    echo "# ($(( $(date +%s) - start )) s of wall time; scripts/boinc-figures.sh)"
    cat "$out/results.dat"
  } > "$dir/boinc_figures.txt.tmp" && mv "$dir/boinc_figures.txt.tmp" "$dir/boinc_figures.txt"
  rm -rf "$out"
}
export -f one
printf '%s\0' "$@" | xargs -0 -n 1 -P "$jobs" bash -c 'one "$1"' _ || exit 1
