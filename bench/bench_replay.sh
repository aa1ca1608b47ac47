#!/usr/bin/env bash
# bench_replay.sh: time supkit replay on 100 runs against a 40 KB baseline.
# Generates the inputs in a temporary folder under $BUILD: a 40 KB baseline
# (numbered Python-like lines), 100 runs each with 1 to 20 random line edits,
# a diffs file made by `supkit replay diff` (timed: the generator), then
# `supkit replay run` rebuilds and checks all 100 (timed: parse + apply +
# SHA-256 + atomic writes). Prints ms total and per diff; asserts nothing.
set -uo pipefail
BUILD=${BUILD:-build}
mkdir -p "$BUILD/bench"
W=$(mktemp -d "$BUILD/bench/replay.XXXXXX")
trap 'rm -rf "$W"' EXIT
N=${N:-100}
awk 'BEGIN { srand(1); n = 0; while (n < 40960) {
	line = sprintf("    value_%d = compute(step=%d, scale=%.6f)  # line %d", NR + i, i, rand(), i); i++
	print line; n += length(line) + 1 } }' >"$W/base.py"
mkdir -p "$W/runs"
for ((r = 0; r < N; r++)); do
	mkdir -p "$W/runs/run$r"
	awk -v seed=$((r + 7)) 'BEGIN { srand(seed); k = 1 + int(rand() * 20); for (j = 0; j < k; j++) { at[int(rand() * 700)] = 1 + int(rand() * 3) } }
	{ if ($0 ~ /./ && (NR in at)) { if (at[NR] == 1) next; if (at[NR] == 2) { print "    # edited " NR; next } print "    inserted = " NR } print }' \
		"$W/base.py" >"$W/runs/run$r/train.py"
done
ms() { echo $(( $(date +%s%N) / 1000000 )); }
t0=$(ms)
supkit-replay diff "$W/base.py" "$W"/runs/run*/train.py -o "$W/diffs.json" || { echo "bench_replay: diff failed"; exit 1; }
t1=$(ms)
supkit-replay run --baseline "$W/base.py" "$W/diffs.json" -o "$W/out" >"$W/table" || { echo "bench_replay: run failed"; tail -1 "$W/table"; exit 1; }
t2=$(ms)
supkit-replay run --baseline "$W/base.py" "$W/diffs.json" >/dev/null
t3=$(ms)
bytes=$(wc -c <"$W/base.py")
echo "baseline $bytes bytes, $N runs, diffs file $(wc -c <"$W/diffs.json") bytes; $(tail -1 "$W/table")"
awk -v a=$((t1 - t0)) -v b=$((t2 - t1)) -v c=$((t3 - t2)) -v n=$N 'BEGIN {
	printf "replay run (rebuild + sha256 + write): %d ms total, %.2f ms per diff\n", b, b / n
	printf "replay run (check only, no -o):        %d ms total, %.2f ms per diff\n", c, c / n
	printf "replay diff (generate the %d diffs):   %d ms total, %.2f ms per diff\n", n, a, a / n }'
