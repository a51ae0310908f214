#!/usr/bin/env bash
# Issue 30's speed figure: policy boinc's 10-day run over policy seed's, per scenario and
# convention (bsim's own, and BOINC's emulator's: --emulate boinc).
#
#   bash scripts/bench-policy-speed.sh            # the six public scenarios and noisy
#   CORPUS=1 bash scripts/bench-policy-speed.sh   # and the 200 corpus scenarios
#
# Two measures, both printed:
#   run   sim.Run alone (the scenario loaded outside the timer): BenchmarkTenDays in
#         lib/sim, median over COUNT rounds (default 5) of BENCHTIME runs (default 10x);
#   wall  the whole program, `bsim run SCENARIO --duration 10d --policy P --seed N`, median
#         of RUNS (default 11) runs, seed and boinc alternating; with SEEDS="1 2 3 4 5"
#         each run is one at every seed of SEEDS (default 1) and its time their sum.
# The machine should be quiet: the figures are times. WALL_ONLY=1 leaves out the first.
#
# Why SEEDS: under --emulate boinc the host's availability and the RPCs' outcomes come
# from one random stream, as in BOINC's emulator, so at one seed two policies whose
# RPCs differ emulate different hosts: part-time-4cpu at seed 1 is on for 2,832 of
# 14,400 steps under seed and 6,106 under boinc, and boinc's time over seed's is 1.81×
# by instructions there, 0.91–1.52× at seeds 2–6 (docs/decisions.md, "thirty-ninth
# round (speed55"). The issue's figures of merit are means over seeds 1–5; so is the
# time when SEEDS says so.
#
#   SEEDS="1 2 3 4 5" WALL_ONLY=1 RUNS=3 CORPUS=1 bash scripts/bench-policy-speed.sh
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5} BENCHTIME=${BENCHTIME:-10x} RUNS=${RUNS:-11} SEEDS=${SEEDS:-1}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# ratio TABLE: "scenario convention seed-ms boinc-ms ratio" lines in, the table and a
# summary per convention out.
summarize() {
  sort -k2,2 -k1,1 | awk -v what="$1" '
    { printf "%-24s %-14s %9.2f %9.2f %7.2f\n", $1, $2, $3, $4, $5
      r[$2] = r[$2] " " $5; n[$2]++; if ($5 <= 1.5) w[$2]++ }
    END {
      for (c in n) {
        k = split(r[c], x, " "); asort(x)
        printf "%s, %s: %d scenarios, median boinc/seed %.2f, largest %.2f, within 1.5x: %d of %d\n",
          what, c, k, (k % 2 ? x[(k + 1) / 2] : (x[k / 2] + x[k / 2 + 1]) / 2), x[k], w[c] + 0, k
      }
    }'
}

if [ "${WALL_ONLY:-0}" != 1 ]; then
BKIT_BENCH_CORPUS=${CORPUS:-0} go test -run '^$' -bench '^BenchmarkTenDays$' -benchtime "$BENCHTIME" \
  -count "$COUNT" -timeout 0 ./lib/sim/ > "$tmp/bench.txt" || { cat "$tmp/bench.txt" >&2; exit 1; }
printf '%-24s %-14s %9s %9s %7s\n' scenario convention "seed ms" "boinc ms" ratio
awk '/^BenchmarkTenDays\// {
    name = $1; sub(/^BenchmarkTenDays\//, "", name); sub(/-[0-9]+$/, "", name)
    split(name, p, "/"); key = p[1] " " p[2]
    v[key, p[3]] = v[key, p[3]] " " $3; keys[key] = 1
  }
  function median(s,   x, k) { k = split(s, x, " "); asort(x); return k % 2 ? x[(k + 1) / 2] : (x[k / 2] + x[k / 2 + 1]) / 2 }
  END { for (k in keys) { s = median(v[k, "seed"]); b = median(v[k, "boinc"]); printf "%s %.3f %.3f %.3f\n", k, s / 1e6, b / 1e6, b / s } }' \
  "$tmp/bench.txt" | summarize "run (sim.Run alone)"
echo
fi

go build -o "$tmp/" ./cmd/bsim
printf '%-24s %-14s %9s %9s %7s\n' scenario convention "seed ms" "boinc ms" ratio
scens=(scenarios/{example-2cpu-2to1,deadlines-4cpu,down-2cpu,part-time-4cpu,seed002-gpu,share-75-25} lib/sim/testdata/noisy)
[ "${CORPUS:-0}" = 1 ] && scens+=(scenarios/corpus/c*)
for s in "${scens[@]}"; do
  for conv in bsim emulate-boinc; do
    flag=(); [ "$conv" = emulate-boinc ] && flag=(--emulate boinc)
    for _ in $(seq "$RUNS"); do
      for p in seed boinc; do
        a=$(date +%s%N)
        for n in $SEEDS; do "$tmp/bsim" run "$s" --duration 10d --policy "$p" --seed "$n" "${flag[@]}" > /dev/null; done
        e=$(date +%s%N)
        echo "$p $(( (e - a) / 1000 ))"
      done
    done | awk -v s="$(basename "$s")" -v c="$conv" '
      { t[$1] = t[$1] " " $2 }
      function median(s,   x, k) { k = split(s, x, " "); asort(x); return k % 2 ? x[(k + 1) / 2] : (x[k / 2] + x[k / 2 + 1]) / 2 }
      END { a = median(t["seed"]); b = median(t["boinc"]); printf "%s %s %.3f %.3f %.3f\n", s, c, a / 1000, b / 1000, b / a }'
  done
done | summarize "wall (whole program)"
