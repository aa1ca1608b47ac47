#!/usr/bin/env bash
# bench_verify.sh: supkit verify throughput on a 1 GiB supplement of random
# data (8 files of 128 MiB, packed by supkit pack: deflated, as pack always
# does), against sha256sum over the same file bytes. Reports MB/s for both and
# their ratio (verify time / sha256sum time; verify also inflates and checks
# CRCs). Asserts nothing.
#   BENCH_VERIFY_MB=256 bash bench/bench_verify.sh    a smaller run (MiB in all)
set -euo pipefail
BUILD=${BUILD:-build}
PATH="${SUPKIT_BIN:-$(cd "$(dirname "$0")/.." && pwd)/bin}:$PATH"
mb=${BENCH_VERIFY_MB:-1024}
nfiles=8
mkdir -p "$BUILD/bench"
work=$(mktemp -d "$BUILD/bench/verify.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/supp"
per=$((mb / nfiles))
for i in $(seq 1 $nfiles); do
	head -c "${per}M" /dev/urandom >"$work/supp/part-$i.bin"
done
bytes=$((per * nfiles * 1048576))
t0=$(date +%s.%N)
supkit-pack -q "$work/supp" -o "$work/supp.zip" >/dev/null
t1=$(date +%s.%N)
(cd "$work/supp" && sha256sum part-*.bin >/dev/null)   # warm the page cache
t2=$(date +%s.%N)
(cd "$work/supp" && sha256sum part-*.bin >/dev/null)
t3=$(date +%s.%N)
supkit-verify -q "$work/supp.zip" >"$work/verify.out"
t4=$(date +%s.%N)
tail -n 1 "$work/verify.out"
awk -v b="$bytes" -v p="$t0 $t1" -v s="$t2 $t3" -v v="$t3 $t4" -v z="$(stat -c %s "$work/supp.zip")" 'BEGIN {
	split(p, P, " "); split(s, S, " "); split(v, V, " ")
	tp = P[2] - P[1]; ts = S[2] - S[1]; tv = V[2] - V[1]
	printf "data: %.0f MiB in 8 files, zip %.0f MiB (deflated)\n", b / 1048576, z / 1048576
	printf "supkit pack:    %7.2f s  %7.1f MB/s\n", tp, b / tp / 1e6
	printf "sha256sum:      %7.2f s  %7.1f MB/s\n", ts, b / ts / 1e6
	printf "supkit verify:  %7.2f s  %7.1f MB/s\n", tv, b / tv / 1e6
	printf "verify / sha256sum time ratio: %.2f\n", tv / ts
}'
