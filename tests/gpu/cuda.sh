#!/usr/bin/env bash
# cuda.sh: the GPU test entry that tests/run.sh runs. Builds
# tests/gpu/test_cuda_ops.c against a GPU=1 build (the CUDA backend in
# libkernels.a) and runs it: every backend op against the CPU backend, then
# 20 training steps on both backends.
#
# Skips (one skip, nothing passed) when there is no CUDA device, or when no
# GPU=1 build exists: $GPU_BUILD, else $BUILD, else build/gpu holding
# libkernels.a (make GPU=1 BUILD=build/gpu BIN=build/gpu/bin, as
# scripts/gpu-check.sh does). Reference: shared/DESIGN.md (Tests, Backends).
set -u
cd "$(dirname "$0")/../.."

skip_all() { echo "skipped: $1"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }

has_device() {
	if command -v nvidia-smi >/dev/null 2>&1; then
		nvidia-smi -L 2>/dev/null | grep -q '^GPU '
	else
		[[ -e /dev/nvidia0 ]]
	fi
}
has_device || skip_all "no CUDA device"

B=""
for d in "${GPU_BUILD:-}" "${BUILD:-build}" build/gpu; do
	if [[ -n "$d" && -f "$d/libkernels.a" && -f "$d/libtrainer.a" && -f "$d/libdata.a" && -f "$d/liblib.a" ]]; then
		B=$d
		break
	fi
done
[[ -n "$B" ]] || skip_all "no GPU=1 build (make GPU=1 BUILD=build/gpu BIN=build/gpu/bin)"

source tests/gpu/lib.sh
exe="$B/gpu/test_cuda_ops"
if ! gpu_cc "$exe" tests/gpu/test_cuda_ops.c "$B" 1 -DSUPKIT_CUDA=1; then
	echo "FAIL build of tests/gpu/test_cuda_ops.c against $B"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
gpu_run "$exe"
