#!/usr/bin/env bash
# link.sh: the GPU-side C drivers compile and link on a machine without a
# GPU, so that a GPU machine does not meet a build error first. Builds
# the GPU=1 libraries (make GPU=1: build/gpu, nvcc for kernels/*.cu) and
# links tests/gpu/test_cuda_ops.c (tests/gpu/cuda.sh) and tests/gpu/gpu_bench.c
# (bench/bench_gpu.sh) against them with -Werror, as those scripts do;
# runs neither (tests/gpu/cuda.sh runs the first where a device exists).
# Skips when nvcc is missing. Reference: scripts/gpu-check.sh.
set -u
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
need_nvcc
B=build/gpu
pass=0 fail=0
# SAN= : under make test SAN=1 the variable reaches this make from the
# environment and would move the build to build/san/gpu, where $B has no rule
if ! make -s GPU=1 SAN= "$B/libkernels.a" "$B/libtrainer.a" "$B/libdata.a" "$B/liblib.a" >"$B.link.log" 2>&1; then
	echo "FAIL make GPU=1 libraries (log: $B.link.log)"
	tail -n 5 "$B.link.log"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
for src in tests/gpu/test_cuda_ops.c tests/gpu/gpu_bench.c; do
	exe="$B/gpu/link_$(basename "$src" .c)"
	if gpu_cc "$exe" "$src" "$B" 1 -Werror -DSUPKIT_CUDA=1; then
		echo "ok   $src links against the GPU=1 build"
		pass=$((pass + 1))
	else
		echo "FAIL $src does not build against the GPU=1 build"
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed, 0 skipped"
[[ $fail == 0 ]]
