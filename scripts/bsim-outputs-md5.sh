#!/usr/bin/env bash
# The gate of issue 30's speed rounds: a change to policy boinc's speed must leave every
# output of bsim byte-identical. This prints, for each corpus scenario, the six public
# ones and lib/sim/testdata/noisy, seeds 1-3, under both conventions (bsim's and
# --emulate boinc), the md5 of `bsim compare SCENARIO --policy boinc -o csv --seed N
# --duration 10d` (1,242 lines: "scenario seed convention md5"). Compare two builds:
#
#   go build -o /tmp/bsim.old ./cmd/bsim     # (on the commit before)
#   go build -o /tmp/bsim.new ./cmd/bsim
#   bash scripts/bsim-outputs-md5.sh /tmp/bsim.old > /tmp/old.md5
#   bash scripts/bsim-outputs-md5.sh /tmp/bsim.new > /tmp/new.md5
#   diff /tmp/old.md5 /tmp/new.md5           # prints nothing: the same outputs
#
# About 7 minutes on a quiet 2-core machine.
set -euo pipefail
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: bash scripts/bsim-outputs-md5.sh BSIM   (BSIM: a built bsim binary)" >&2
  exit 2
fi
bsim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/.."
for s in scenarios/corpus/c* scenarios/deadlines-4cpu scenarios/down-2cpu scenarios/example-2cpu-2to1 \
  scenarios/part-time-4cpu scenarios/seed002-gpu scenarios/share-75-25 lib/sim/testdata/noisy; do
  for n in 1 2 3; do
    for conv in bsim boinc; do
      emulate=()
      [ "$conv" = boinc ] && emulate=(--emulate boinc)
      m=$("$bsim" compare "$s" --policy boinc -o csv --seed "$n" --duration 10d "${emulate[@]}" 2>&1 | md5sum | cut -c1-32)
      echo "$(basename "$s") $n $conv $m"
    done
  done
done
