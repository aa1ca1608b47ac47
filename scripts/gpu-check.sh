#!/usr/bin/env bash
# gpu-check.sh OUTDIR: every GPU check in one go on a machine with an NVIDIA
# GPU (made for a lent H200; under 9 minutes): build with GPU=1 into
# build/gpu, run the GPU tests (tests/gpu/cuda.sh: every backend op and the
# optimizer's passes against the CPU backend, 20 training steps on both;
# tests/gpu/select.sh; tests/gpu/train_cli.sh: supkit train --backend cuda
# end to end; the build itself compiles every kernels/*.cu), then the GPU
# benchmark (bench/bench_gpu.sh: op timings,
# tokens/s and MFU at depth 6 and 8, B 64, T 2048, PyTorch side by side when
# importable). Logs and OUTDIR/summary.txt are written under OUTDIR; each
# phase runs under a time limit (150 + 120 + 30 + 45 + 170 s at most) so the
# whole stays under 9 minutes; a benchmark cut short keeps its RESULT lines.
# The tensor-core attention is timed in the benchmark's op section, tested
# in cuda_ops and used by the benchmark's training runs; the tests' training
# runs use the backend's default fp32 attention.
# A machine without the build's libraries (the lent GPU machine: no package
# registry) unpacks the .debs of .gpu-deps first (scripts/gpu-deps.sh fetch
# here, then carry .gpu-deps with the run).
# Exit 0 when the build and the tests passed (the benchmark asserts nothing),
# 1 when a test failed, 4 when the build failed, 2 on bad usage.
set -u
if [[ $# -ne 1 || "$1" == -* ]]; then
	echo "usage: scripts/gpu-check.sh OUTDIR" >&2
	exit 2
fi
mkdir -p "$1" || exit 4
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH="$CUDA_HOME/bin:$PATH"
jobs=$(nproc 2>/dev/null || echo 4)
summary="$out/summary.txt"
t_start=$SECONDS
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

note "supkit gpu-check $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
{
	nvidia-smi 2>&1
	nvcc --version 2>&1
	/usr/bin/python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1
} >"$out/env.txt"
note "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"

# 0. the build's libraries: a machine without them (the lent GPU machine has
# no package registry) unpacks the .debs carried in .gpu-deps
# (scripts/gpu-deps.sh fetch, run beforehand on a Debian machine)
probe() {
	printf '%s\n' '#include <cjson/cJSON.h>' '#include <cblas.h>' '#include <lapacke.h>' \
		'#include <gsl/gsl_statistics_double.h>' '#include <openssl/evp.h>' \
		'#define PCRE2_CODE_UNIT_WIDTH 8' '#include <pcre2.h>' |
		${CC:-cc} $(make -s --no-print-directory dep-flags | sed -n 1p) -E -x c - >/dev/null 2>&1
}
if probe; then
	note "libraries: found on this machine"
elif compgen -G ".gpu-deps/*.deb" >/dev/null; then
	eval "$(bash scripts/gpu-deps.sh env .gpu-deps 2>>"$out/deps.log")"
	if probe; then note "libraries: unpacked from .gpu-deps"; else note "libraries: still missing after unpacking .gpu-deps"; fi
else
	note "libraries: missing, and no .gpu-deps/*.deb to unpack (scripts/gpu-deps.sh fetch; carry .gpu-deps)"
fi

# 1. build (GPU=1 into its own folder, so the CPU build is untouched)
t0=$SECONDS
timeout -k 5 150 make -j"$jobs" GPU=1 BUILD=build/gpu BIN=build/gpu/bin \
	build/gpu/liblib.a build/gpu/libtrainer.a build/gpu/libkernels.a build/gpu/bin/supkit-audit \
	build/gpu/bin/supkit-train \
	>"$out/build.log" 2>&1
brc=$?
note "build: exit $brc ($((SECONDS - t0)) s; log build.log)"
if ((brc != 0)); then
	tail -n 20 "$out/build.log" | tee -a "$summary"
	exit 4
fi

# 2. tests
failed=0
suite() { # name limit command...
	local name=$1 lim=$2
	shift 2
	local t=$SECONDS
	timeout -k 5 "$lim" "$@" >"$out/$name.log" 2>&1
	local rc=$?
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/$name.log" | tail -n 1)
	note "test $name: ${line:-no result line} (exit $rc, $((SECONDS - t)) s; log $name.log)"
	if [[ $rc -ne 0 || -z "$line" || ! "$line" =~ ^[0-9]+\ passed,\ 0\ failed ]]; then
		failed=1
		grep -E 'FAIL|CHECK|error|skipped' "$out/$name.log" | head -n 20 | sed 's/^/    /' | tee -a "$summary"
	fi
}
suite cuda_ops 120 env GPU_BUILD=build/gpu bash tests/gpu/cuda.sh
suite select 30 env BUILD=build/gpu bash tests/gpu/select.sh
suite train_cli 45 env GPU_BIN=build/gpu/bin bash tests/gpu/train_cli.sh
# on a GPU machine the op tests must run, not skip
if grep -q '^0 passed' "$out/cuda_ops.log"; then
	note "test cuda_ops: nothing ran on a machine meant to have a GPU"
	failed=1
fi
grep -E '^skip|skipped:|^  step|^memory|^device' "$out/cuda_ops.log" >>"$summary" 2>/dev/null

# 3. benchmark (figures only)
t0=$SECONDS
timeout -k 5 170 env GPU=1 BUILD=build/gpu BIN=build/gpu/bin GPU_BENCH_STEPS=2 GPU_BENCH_BUDGET=30 \
	bash bench/bench_gpu.sh >"$out/bench.log" 2>"$out/bench.err"
note "bench: exit $? ($((SECONDS - t0)) s; log bench.log, bench.err)"
sed -n '/^device:/p; /^matmul/p; /^attention/p; /^note/p; /^model runs/p; /^RESULT/p; /^skipped/p; /^== summary/,$p' \
	"$out/bench.log" >>"$summary"
note "total: $((SECONDS - t_start)) s; tests $( ((failed)) && echo FAILED || echo passed)"
exit $((failed ? 1 : 0))
