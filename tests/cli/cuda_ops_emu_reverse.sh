#!/usr/bin/env bash
# cuda_ops_emu_reverse.sh: the op-by-op checks of tests/gpu/test_cuda_ops.c
# on the emulated CUDA device (build/tests/emu/test_cuda_ops_emu, which make
# test also runs whole, in the usual order) once more with every launch's
# blocks and threads run last to first (EMU_ORDER=reverse, tests/emu/simt.h):
# a kernel whose result depends on the order its threads run in (a missing
# __syncthreads, a block reading another block's output) passes one order
# only. The training checks are left out (4 minutes; they run the same
# kernels).
set -u
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
exe="$B/tests/emu/test_cuda_ops_emu"
if [[ ! -x "$exe" ]]; then
	echo "FAIL no $exe (make tests builds it)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
EMU_ORDER=reverse T_EXCEPT=train_,curve_ exec "$exe"
