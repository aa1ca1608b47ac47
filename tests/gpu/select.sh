#!/usr/bin/env bash
# select.sh: builds tests/gpu/test_select.c against the current build's
# libtrainer.a ($BUILD, default build; with libkernels.a and -DSUPKIT_CUDA
# when that build is a GPU=1 one) and runs it. Runs without a GPU: it checks
# what backend = cpu | cuda | auto give on this build and machine.
set -u
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
if [[ ! -f "$B/libtrainer.a" || ! -f "$B/liblib.a" ]]; then
	echo "FAIL no $B/libtrainer.a (build first)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
source tests/gpu/lib.sh
san=()
[[ "${SAN:-}" == 1 ]] && san=(-fsanitize=address,undefined -fno-omit-frame-pointer)
kernels=0
if [[ -f "$B/libkernels.a" ]] && nm "$B/libtrainer.a" 2>/dev/null | grep -q ' U backend_cuda$'; then
	kernels=1
fi
exe="$B/gpu/test_select"
if ! gpu_cc "$exe" tests/gpu/test_select.c "$B" "$kernels" "${san[@]}"; then
	echo "FAIL build of tests/gpu/test_select.c against $B"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
gpu_run "$exe"
