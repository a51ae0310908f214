#!/usr/bin/env bash
# Issue 30's speed figure by instructions, which do not depend on what else the machine
# is doing: the sum over SEEDS of the instructions (valgrind's cachegrind, "I refs") of
# `bsim run SCENARIO --duration 10d --policy POLICY --seed N`, under bsim's conventions
# (CONV bsim) or BOINC's emulator's (CONV boinc: --emulate boinc). One line per seed,
# then "SCENARIO POLICY CONV total N". policy boinc's total over policy seed's, with the
# same build, is the ratio docs/decisions.md records.
#
#   bash scripts/bsim-instructions.sh /tmp/bsim boinc bsim "1 2 3 4 5" scenarios/part-time-4cpu
#
# GOMAXPROCS=1 keeps the runtime's own threads out of the count; GODEBUG=cpu.rdtscp=off
# keeps valgrind 3.19 from stopping at RDTSCP (docs/decisions.md, speed65). A run that
# valgrind did not finish cleanly stops the script: its count would be short.
set -euo pipefail
if [ $# -lt 5 ] || [ ! -x "$1" ]; then
  echo "usage: bash scripts/bsim-instructions.sh BSIM POLICY bsim|boinc \"SEEDS\" SCENARIO..." >&2
  exit 2
fi
command -v valgrind >/dev/null || { echo "bsim-instructions.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
bsim=$1 policy=$2 conv=$3 seeds=$4
shift 4
emulate=()
case $conv in
bsim) ;;
boinc) emulate=(--emulate boinc) ;;
*) echo "bsim-instructions.sh: CONV must be bsim or boinc, got $conv" >&2; exit 2 ;;
esac
for s in "$@"; do
  total=0
  for n in $seeds; do
    rc=0
    out=$(GODEBUG=cpu.rdtscp=off GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
      "$bsim" run "$s" --duration 10d --policy "$policy" --seed "$n" "${emulate[@]}" 2>&1 >/dev/null) || rc=$?
    if [ "$rc" -ne 0 ] || grep -q -e 'Unrecognised instruction' -e SIGILL -e panic <<<"$out"; then
      echo "bsim-instructions.sh: $s seed $n: the run did not finish cleanly (exit $rc):" >&2
      tail -5 <<<"$out" >&2
      exit 1
    fi
    i=$(grep 'I *refs' <<<"$out" | sed 's/.*refs: *//; s/,//g')
    total=$((total + i))
    echo "  $(basename "$s") $policy $conv seed $n $i"
  done
  echo "$(basename "$s") $policy $conv total $total"
done
