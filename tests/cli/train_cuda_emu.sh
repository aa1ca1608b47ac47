#!/usr/bin/env bash
# train_cuda_emu.sh: tests/gpu/train_cli.sh (`supkit train --backend cuda`
# end to end: completes, result.json, bit-identical reruns, supkit eval
# giving the run's BPB, BPB within 2% of the CPU run) on the emulated CUDA
# device of tests/emu/cudart.h: the supkit-train and supkit-eval that make
# builds in $BUILD/emu/bin (the CUDA backend's source compiled as host C++,
# its kernels on the SIMT emulator). Needs no GPU.
set -u
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
if [[ ! -x "$B/emu/bin/supkit-train" ]]; then
	echo "FAIL no $B/emu/bin/supkit-train (make tests builds it)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
SUPKIT_EMU=1 GPU_BIN="$B/emu/bin" exec bash tests/gpu/train_cli.sh
