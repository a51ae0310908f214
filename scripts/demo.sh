#!/usr/bin/env bash
# The main job on the shipped examples: each client program decides on the example state
# documents and explains itself. Programs run through `go run`, so nothing needs
# installing first. As more programs land, they join this tour.
set -euo pipefail
cd "$(dirname "$0")/.."
now=1700003600

step() { printf '\n== %s\n' "$*"; }

step "bsched: which tasks run (seed 001 CPU scheduling)"
go run ./cmd/bsched --now "$now" -o table < examples/two-projects.yaml

step "bfetch: does the client need work, and how much from whom (seed 001 work fetch)"
go run ./cmd/bfetch --now "$now" -o table < examples/two-projects.yaml

step "bdevices: per-resource shortfall and the request (seed 002), on the seed's GPU example"
go run ./cmd/bdevices request --now 1700000000 -o table < examples/gpu-seed-example.yaml

step "bsim: the whole client loop over simulated time (a 75/25 scenario, then BOINC's public example against BOINC's own client)"
go run ./cmd/bsim run scenarios/share-75-25 --duration 10d -o table
go run ./cmd/bsim compare scenarios/example-2cpu-2to1 --duration 10d
cat <<'EOF'
Each row is one policy on the same emulated host and projects; the BOINC row is BOINC's own
client (8.3) in BOINC's emulator on that scenario (scenarios/example-2cpu-2to1/boinc_figures.txt).
Lower is better in every column: wf wasted (work reported after its deadline) and if idle,
as fractions of the processors' time; sv how far the projects' use is from their resource
shares (2:1 here); m monotony (how long a project waits between turns); r scheduler RPCs
per job. "vs BOINC" says ok when wf, if and sv are each within 0.01 of BOINC's: a smaller
sv means the debts of seed 001 keep the 2:1 split closer than BOINC's client does; rr,
which ignores shares, splits the CPUs evenly and misses it.
EOF

step "bsim import: a real BOINC client's client_state.xml as a state document, then what bsched would run on it"
go run ./cmd/bsim import examples/client_state.xml > "${TMPDIR:-/tmp}/bkit-demo-mine.yaml"
go run ./cmd/bsched --now "$now" -o table < "${TMPDIR:-/tmp}/bkit-demo-mine.yaml"
rm -f "${TMPDIR:-/tmp}/bkit-demo-mine.yaml"

step "bsim: a bkit scenario file (seed 002's GPU example: 30 days, the file's default), drawn with --plot"
# The pictures stay after the demo (the path printed is where to look); the next demo
# replaces them.
pictures=${TMPDIR:-/tmp}/bkit-demo-pictures
bin=$(mktemp -d)
# bsim has bsim-plot draw (so that bsim need not link the plotting library): both are
# built into one directory, as go install puts them.
go build -o "$bin/" ./cmd/bsim ./cmd/bsim-plot
rm -rf "$pictures"
"$bin/bsim" run scenarios/seed002-gpu.yaml --plot "$pictures"
ls "$pictures"
rm -rf "$bin"

step "bserver: a project on SQLite: schema, an app and its version, work, the counts"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
db=$work/project.db
go build -o "$(dirname "$db")/bserver" ./cmd/bserver
srv="$(dirname "$db")/bserver"
"$srv" init --db "$db"
"$srv" app add --db "$db" uppercase
"$srv" app-version add --db "$db" --app uppercase --version 1 --avg-ncpus 1
"$srv" work create --db "$db" --app uppercase --count 5 --fpops-est 1e12 --delay-bound 2d
"$srv" status --db "$db"

step "bsched then bfetch, piped: the document flows through the stages"
go run ./cmd/bsched --now "$now" < examples/two-projects.yaml | go run ./cmd/bfetch --now "$now" -o table

step "scripts/client-loop.sh: the client loop of the real programs over 2 simulated hours, then bsim run: the same figures"
go build -o "$work/bin/" ./cmd/bsim ./cmd/bfetch ./cmd/bdevices ./cmd/bsched ./cmd/brpc
BKIT_BIN=$work/bin bash scripts/client-loop.sh scenarios/share-75-25 --duration 2h -o json > "$work/loop.json"
"$work/bin/bsim" run scenarios/share-75-25 --duration 2h -o json > "$work/run.json"
cmp "$work/loop.json" "$work/run.json" && echo "client-loop.sh and bsim run agree to the last digit:" && grep -E '"(share_violation|monotony|rpcs_per_job)"' "$work/run.json"
