#!/usr/bin/env bash
# make soak: the kernel and sandbox suites ROUNDS times in a row (default
# 10) with two CPU hogs running, then once with -race. Any failure stops
# the soak and fails it. The hogs are this script's children, killed by
# PID when it ends, however it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
ROUNDS="${ROUNDS:-10}"
PKGS="${PKGS:-./kernel/ ./sandbox/}"
hogs=()
stop_hogs() {
	for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${hogs[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_hogs EXIT
for _ in 1 2; do
	( while :; do :; done ) &
	hogs+=("$!")
done
echo "soak: two CPU hogs running (pids ${hogs[*]}); $ROUNDS rounds of $PKGS, then one with -race"
start=$(date +%s)
# Both packages' binaries are built once; each round runs them afresh.
for i in $(seq 1 "$ROUNDS"); do
	t0=$(date +%s)
	# shellcheck disable=SC2086
	"$GO" test -count=1 -p 2 -timeout 20m $PKGS >"/tmp/ctxcode-soak.$$.log" 2>&1 || {
		cat "/tmp/ctxcode-soak.$$.log"; echo "soak: round $i of $ROUNDS failed"; exit 1; }
	echo "soak: round $i of $ROUNDS passed in $(( $(date +%s) - t0 )) s"
done
t0=$(date +%s)
# shellcheck disable=SC2086
"$GO" test -race -count=1 -p 2 -timeout 30m $PKGS >"/tmp/ctxcode-soak.$$.log" 2>&1 || {
	cat "/tmp/ctxcode-soak.$$.log"; echo "soak: the -race round failed"; exit 1; }
echo "soak: the -race round passed in $(( $(date +%s) - t0 )) s"
rm -f "/tmp/ctxcode-soak.$$.log"
echo "soak: passed: $ROUNDS rounds and one with -race in $(( $(date +%s) - start )) s"
