#!/usr/bin/env bash
# build_step.sh: builds bench/bench_step.c into $BUILD/bench/bench_step against
# the trainer's archives (make $BUILD/libtrainer.a $BUILD/libdata.a $BUILD/liblib.a first),
# with the Makefile's flags and libraries (make dep-flags); prints the binary's path. Used by
# bench/bench_train.sh and bench/bench_memory.sh (not a benchmark itself).
set -euo pipefail
BUILD=${BUILD:-build}
ROOT=${SUPKIT_ROOT:-$(pwd)}
cd "$ROOT"
make -s "$BUILD/libtrainer.a" "$BUILD/libdata.a" "$BUILD/liblib.a" >&2
mkdir -p "$BUILD/bench"
out=$(cd "$BUILD" && pwd)/bench/bench_step
if [[ ! -x "$out" || bench/bench_step.c -nt "$out" || "$BUILD/libtrainer.a" -nt "$out" || "$BUILD/liblib.a" -nt "$out" ]]; then
	flags=$(make -s --no-print-directory dep-flags)
	# shellcheck disable=SC2046
	${CC:-cc} -std=c11 -Wall -Wextra -O2 -g -I. -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L \
		$(sed -n 1p <<<"$flags") -o "$out" bench/bench_step.c \
		"$BUILD/libtrainer.a" "$BUILD/libdata.a" "$BUILD/liblib.a" $(sed -n 2p <<<"$flags") >&2
fi
echo "$out"
