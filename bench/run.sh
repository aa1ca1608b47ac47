#!/usr/bin/env bash
# run.sh: run every benchmark (bench/bench_*.sh) in name order. Each prints its
# figures; results are also collected in $BUILD/bench/results.txt. Nothing is
# asserted: speed is reported, not tested.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}; BUILD=${BUILD:-build}
export SUPKIT_BIN=$(cd "$BIN" && pwd) SUPKIT_ROOT=$(pwd) BUILD
export PATH="$SUPKIT_BIN:$PATH"
mkdir -p "$BUILD/bench"
out="$BUILD/bench/results.txt"
: >"$out"
for b in bench/bench_*.sh; do
	[[ -f "$b" ]] || continue
	[[ -n "${ONLY:-}" && "$b" != *"$ONLY"* ]] && continue
	echo "== $(basename "$b" .sh)" | tee -a "$out"
	bash "$b" 2>&1 | tee -a "$out"
done
echo "benchmark figures collected in $out"
