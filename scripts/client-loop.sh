#!/usr/bin/env bash
# client-loop.sh SCENARIO [--duration D] [--delta S] [--seed N] [--policy seed|goals|boinc] [--three-state] [-o table|json] [--keep DIR] [--server URL [--authenticator KEY] [--clock-file FILE]]
#
# The BOINC client loop made of bkit's real programs, over simulated time: the state
# document goes through bfetch, bdevices, brpc poll and bsched at every step, all with
# --now, and bsim's subcommands stand in for the world around the client: the emulated
# project servers (bsim serve) and the passing of time (bsim settle, bsim advance). It prints the figures of merit exactly as
# 'bsim run SCENARIO --policy P' prints them for the same flags, to the last digit.
# --policy (seed by default, goals or boinc) is passed to every stage that decides, and to bsim
# init, whose world file makes bsim advance account for the steps as that policy does.
# --three-state: replies are seed 002's proposed three-state ones (bsim run --three-state):
# given to bsim init and to bdevices reply (brpc session with --server).
#
# --server URL: the same loop against a live project server (bserver serve, or any
# BOINC-style scheduler) at master URL URL, reached over HTTP by 'brpc session' in place
# of bsim serve. SCENARIO is then a live scenario (no emulated apps, one project:
# scenarios/live-2cpu.yaml), started with 'bsim init --live' and attached to URL with
# 'brpc attach' (--authenticator KEY: the account key it presents, 'bserver user add';
# bserver serve requires one unless started with --anonymous-hosts); bsim keeps only
# the host and the passing of time. --clock-file FILE
# writes each step's time to FILE before the step's RPCs, for a server started with
# 'bserver serve --clock-file FILE', so the server's clock (deadlines, request_delay)
# follows the loop's; without it the server keeps its own clock. The figures are then
# the client's, not comparable with 'bsim run'.
#
# The programs are taken from PATH (go install ./cmd/... puts them there); with
# BKIT_BIN=DIR, from DIR. --keep DIR leaves the run's state document and world file in
# DIR (state.json, world.json) for a look afterwards. A step costs about ten program
# runs, so keep runs short: hours, not weeks ('bsim run' is the fast way).
set -euo pipefail

usage() {
	sed -n '2,2s/^# //p' "$0" >&2
	exit 2
}

scenario="" duration=1d delta=60 seed=1 policy=seed out=table keep="" server="" clock="" three=() key=()
while [ $# -gt 0 ]; do
	case "$1" in
	--duration) duration=${2:?--duration needs a value}; shift 2 ;;
	--delta) delta=${2:?--delta needs a value}; shift 2 ;;
	--seed) seed=${2:?--seed needs a value}; shift 2 ;;
	--policy) policy=${2:?--policy needs a value}; shift 2 ;;
	--three-state) three=(--three-state); shift ;;
	-o | --output) out=${2:?-o needs table or json}; shift 2 ;;
	--keep) keep=${2:?--keep needs a directory}; shift 2 ;;
	--server) server=${2:?--server needs a master URL}; shift 2 ;;
	--clock-file) clock=${2:?--clock-file needs a file}; shift 2 ;;
	--authenticator) key=(--authenticator "${2:?--authenticator needs an account key}"); shift 2 ;;
	-h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	-*) echo "client-loop.sh: unknown flag $1" >&2; usage ;;
	*) [ -z "$scenario" ] || { echo "client-loop.sh: one SCENARIO only" >&2; usage; }; scenario=$1; shift ;;
	esac
done
[ -n "$scenario" ] || usage
[ -z "$clock" ] || [ -n "$server" ] || { echo "client-loop.sh: --clock-file needs --server" >&2; usage; }
[ ${#key[@]} -eq 0 ] || [ -n "$server" ] || { echo "client-loop.sh: --authenticator needs --server" >&2; usage; }

bin() { if [ -n "${BKIT_BIN:-}" ]; then echo "$BKIT_BIN/$1"; else echo "$1"; fi; }
bsim=$(bin bsim) bfetch=$(bin bfetch) bdevices=$(bin bdevices) bsched=$(bin bsched) brpc=$(bin brpc)

if [ -n "$keep" ]; then
	mkdir -p "$keep"
	work=$keep
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
doc=$work/state.json world=$work/world.json
st=(--state "$doc" --in-place)
pol=(--policy "$policy")

if [ -n "$server" ]; then
	"$bsim" init "$scenario" --live --world "$world" --duration "$duration" --delta "$delta" --seed "$seed" "${pol[@]}" >"$doc"
	"$brpc" attach "$server" ${key[@]+"${key[@]}"} "${st[@]}"
else
	"$bsim" init "$scenario" --world "$world" --duration "$duration" --delta "$delta" --seed "$seed" "${pol[@]}" ${three[@]+"${three[@]}"} >"$doc"
fi

steps=0
while :; do
	steps=$((steps + 1))
	step=$("$bsim" clock --world "$world")
	[ -n "$step" ] || break
	# (whether the host is active and its GPUs are is the world's business: bsim advance)
	read -r now on _ _ connected <<<"$step"
	if [ "$on" = 1 ]; then
		if [ "$connected" = 1 ]; then
			asked=()
			while :; do
				"$bfetch" --now "$now" "${st[@]}" "${pol[@]}"
				"$bdevices" request --now "$now" "${st[@]}" "${pol[@]}" ${asked[@]+"${asked[@]}"}
				project=$("$brpc" poll --now "$now" "${st[@]}" "${pol[@]}" -o project ${asked[@]+"${asked[@]}"})
				[ -n "$project" ] || break
				asked+=(--asked "$project")
				if [ -n "$server" ]; then
					# The session's RPCs over HTTP; its backoff jitter is drawn from the
					# run's seed and the step, so a run is repeatable against the same server.
					if [ -n "$clock" ]; then printf '%s\n' "$now" >"$clock.tmp" && mv "$clock.tmp" "$clock"; fi
					"$brpc" session --now "$now" --seed "$((seed * 1000003 + steps * 64 + ${#asked[@]}))" "${st[@]}" ${three[@]+"${three[@]}"}
					continue
				fi
				read -r status jobs replyseed <<<"$("$bsim" serve --world "$world" --now "$now" "${st[@]}")"
				if [ "$status" = ok ]; then
					"$bdevices" reply --now "$now" --jobs "$jobs" --seed "$replyseed" "${st[@]}" "${pol[@]}" ${three[@]+"${three[@]}"}
				fi
			done
		fi
		"$bsched" --if-due --now "$now" "${st[@]}" "${pol[@]}"
		if [ "$("$bsim" settle --world "$world" --now "$now" "${st[@]}")" != 0 ]; then
			"$bsched" --if-due --now "$now" "${st[@]}" "${pol[@]}"
		fi
	fi
	"$bsim" advance --world "$world" --now "$now" "${st[@]}"
done

"$bsim" figures --world "$world" --state "$doc" -o "$out"
