#!/usr/bin/env bash
# gpu-check.sh OUTDIR: every GPU check in one go on a machine with an NVIDIA
# GPU (under 9 minutes on an H200): build with GPU=1 into
# build/gpu, run the GPU tests (tests/gpu/cuda.sh: every backend op and the
# optimizer's passes against the CPU backend, 20 training steps on both;
# tests/gpu/select.sh; tests/gpu/train_cli.sh: supkit train --backend cuda
# end to end; the build itself compiles every kernels/*.cu), then the GPU
# benchmark (bench/bench_gpu.sh: op timings,
# tokens/s and MFU at depth 6 and 8, B 64, T 2048, PyTorch side by side when
# importable, under torch.compile), with the depth-8 loss curve against the
# PyTorch reference on the demo corpus (tests/gpu/curve.sh) before the
# benchmark. OUTDIR gets summary.txt and logs.tgz (every log, the curves).
# Each phase runs under min(its cap, what is left of GPU_CHECK_BUDGET,
# default 520 s): build 150, cuda_ops 120, select 30, train_cli 45,
# curve 150, bench 300; a benchmark cut short keeps its RESULT lines.
# The benchmark's GPU_BENCH_* variables pass through (bench/bench_gpu.sh);
# CUDA_ARCHS=90a builds for the H100/H200 alone (a shorter build).
# The backend's attention kernels (mma.sync, the default for head width
# 128; fp32) are timed in the benchmark's op section and tested in
# cuda_ops; the training runs use the defaults (SUPKIT_CUDA_ATTN changes
# them; GPU_BENCH_ALT adds supkit-only runs). The variants of dev/cuda,
# not in the product, are checked and timed by make dev-cuda GPU=1
# (dev/cuda/README.md), not here.
# A machine without the build's libraries (no package registry) unpacks
# the .debs of .gpu-deps first (scripts/gpu-deps.sh fetch on a Debian
# machine, then copy .gpu-deps along); the curve check needs the demo
# corpus's shards (make demo, then copy demo-out/data along).
# Exit 0 when the build and the tests passed (the benchmark asserts nothing),
# 1 when a test failed or a command was not found (a misspelt phase), 4 when
# the build failed, 2 on bad usage.
set -u
# The sources a run checks, as one SHA-256 (the first 16 hex digits) over
# the files of the folders below, sorted by path: the summary records it,
# since a copy of the working tree may carry a .git older than its files;
# `scripts/gpu-check.sh --sources` prints it for a checkout here.
sources_sha() {
	(cd "$(dirname "$0")/.." && find kernels trainer data lib dev/cuda tests/gpu bench scripts \
		-type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cc' \
		-o -name '*.sh' -o -name '*.py' \) -print0 | LC_ALL=C sort -z | xargs -0 sha256sum |
		sha256sum | cut -c1-16)
}
if [[ $# -eq 1 && "$1" == --sources ]]; then
	sources_sha
	exit 0
fi
if [[ $# -ne 1 || "$1" == -* ]]; then
	echo "usage: scripts/gpu-check.sh OUTDIR | --sources" >&2
	exit 2
fi
mkdir -p "$1" || exit 4
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH="$CUDA_HOME/bin:$PATH"
jobs=$(nproc 2>/dev/null || echo 4)
summary="$out/summary.txt"
# logs go to OUTDIR/logs, packed into OUTDIR/logs.tgz at the exit, so that
# two files (summary.txt and logs.tgz) hold everything
log="$out/logs"
rm -rf "$log" "$out/logs.tgz"
mkdir -p "$log" || exit 4
pack() {
	# the curve check's weights, checkpoints and token stream are large and
	# not needed (a run cut short keeps its step-0 checkpoint: 300 MB)
	rm -rf "$log/curve/batches.bin" "$log/curve/init" "$log/curve/run/model.safetensors" \
		"$log/curve/run/optim.bin" "$log/curve/run/checkpoint" "$log/curve/run/checkpoint.old"
	tar -czf "$out/logs.tgz" -C "$out" logs 2>/dev/null
	# a file over 16 MiB does not come back: then without the curve folder
	if [[ $(stat -c %s "$out/logs.tgz" 2>/dev/null || echo 0) -gt 16000000 ]]; then
		rm -rf "$log/curve"
		tar -czf "$out/logs.tgz" -C "$out" logs 2>/dev/null
	fi
	rm -rf "$log" "$out/.not-found"
}
trap pack EXIT
trap 'exit 143' TERM INT
t_start=$SECONDS
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
# A command that is not found (a misspelt phase or helper) fails the run: bash
# calls this in a subshell, so it leaves a mark in OUTDIR for the verdict.
# nvidia-smi, absent on a machine without a GPU driver, goes through smi.
rm -f "$out/.not-found"
command_not_found_handle() {
	echo "gpu-check.sh: command not found: $*" | tee -a "$summary" >&2
	: >"$out/.not-found"
	return 127
}
smi() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi "$@"; }

note "supkit gpu-check $(date -u +%FT%TZ), commit $({ command -v git >/dev/null && git rev-parse --short HEAD 2>/dev/null; } || echo '?'), sources $(sources_sha)"
{
	smi 2>&1
	nvcc --version 2>&1
	tpy=$(source tests/gpu/lib.sh && torch_py) &&
		"$tpy" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1
} >"$log/env.txt"
dev=$(smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
note "device: ${dev:-none (nvidia-smi found no GPU)}"

# 0. the build's libraries: a machine without them (no package registry)
# unpacks the .debs carried in .gpu-deps
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
	eval "$(bash scripts/gpu-deps.sh env .gpu-deps 2>>"$log/deps.log")"
	if probe; then note "libraries: unpacked from .gpu-deps"; else note "libraries: still missing after unpacking .gpu-deps"; fi
else
	note "libraries: missing, and no .gpu-deps/*.deb to unpack (scripts/gpu-deps.sh fetch; carry .gpu-deps)"
fi

# Every phase runs under min(its own cap, the time left of GPU_CHECK_BUDGET);
# one that would get under 20 s is skipped with a note.
budget=${GPU_CHECK_BUDGET:-520}
lim() { # cap -> the limit for the next phase (0: skip it)
	local left=$((budget - (SECONDS - t_start)))
	((left < 20)) && { echo 0; return; }
	echo $(($1 < left ? $1 : left))
}

# 1. build (GPU=1 into its own folder, so the CPU build is untouched)
t0=$SECONDS
l=$(lim 150)
((l > 0)) || { note "build: not run (GPU_CHECK_BUDGET spent)"; exit 4; }
timeout -k 5 "$l" make -j"$jobs" GPU=1 BUILD=build/gpu BIN=build/gpu/bin \
	build/gpu/liblib.a build/gpu/libdata.a build/gpu/libtrainer.a build/gpu/libkernels.a build/gpu/bin/supkit-audit \
	build/gpu/bin/supkit-train build/gpu/bin/supkit-eval build/gpu/bin/supkit-data \
	>"$log/build.log" 2>&1
brc=$?
note "build: exit $brc ($((SECONDS - t0)) s; log build.log)"
if ((brc != 0)); then
	tail -n 20 "$log/build.log" | tee -a "$summary"
	exit 4
fi

# 2. tests
failed=0
has_gpu=0
smi -L 2>/dev/null | grep -q '^GPU ' && has_gpu=1
((has_gpu)) || note "no CUDA device here: the suites skip (a dry run of this script)"
suite() { # name cap command...
	local name=$1 l
	l=$(lim "$2")
	shift 2
	if ((l == 0)); then
		note "test $name: not run (GPU_CHECK_BUDGET spent)"
		failed=1
		return
	fi
	local t=$SECONDS
	timeout -k 5 "$l" "$@" >"$log/$name.log" 2>&1
	local rc=$?
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log/$name.log" | tail -n 1)
	note "test $name: ${line:-no result line} (exit $rc, $((SECONDS - t)) s of $l; log $name.log)"
	# with a GPU present a skip is a failure: something was not shown (a
	# suite's own "skipped:" line, or a test's, indented)
	if ((has_gpu)) && [[ ! "$line" =~ \ 0\ skipped ]]; then
		note "test $name: skipped on a machine with a GPU: $(grep -m1 -E '^ *skipped:' "$log/$name.log")"
		failed=1
	fi
	if [[ $rc -ne 0 || -z "$line" || ! "$line" =~ ^[0-9]+\ passed,\ 0\ failed ]]; then
		failed=1
		grep -E 'FAIL|CHECK|error|skipped' "$log/$name.log" | head -n 20 | sed 's/^/    /' | tee -a "$summary"
	fi
}
suite cuda_ops 120 env GPU_BUILD=build/gpu bash tests/gpu/cuda.sh
suite select 30 env BUILD=build/gpu bash tests/gpu/select.sh
suite train_cli 45 env GPU_BIN=build/gpu/bin bash tests/gpu/train_cli.sh
grep -E '^skip|skipped:|^  step|^memory|^device|^note' "$log/cuda_ops.log" >>"$summary" 2>/dev/null
# the depth-8 loss curve against PyTorch on the demo corpus (carried
# demo-out/data); its table and RESULT lines go to the summary
suite curve 150 env GPU_BIN=build/gpu/bin CURVE_KEEP="$log/curve" bash tests/gpu/curve.sh
grep -E '^step|^ *[0-9]+  |^RESULT|^note|^skipped' "$log/curve.log" >>"$summary" 2>/dev/null

# 3. benchmark (figures only): depth 8 first, where the goal is set
t0=$SECONDS
l=$(lim 300)
if ((l > 0)); then
	timeout -k 5 "$l" env GPU=1 BUILD=build/gpu BIN=build/gpu/bin GPU_BENCH_STEPS=2 GPU_BENCH_BUDGET=30 \
		GPU_BENCH_DEPTHS="${GPU_BENCH_DEPTHS:-8 6}" bash bench/bench_gpu.sh >"$log/bench.log" 2>"$log/bench.err"
	note "bench: exit $? ($((SECONDS - t0)) s of $l; log bench.log, bench.err)"
	sed -n '/^device:/p; /^torch:/p; /^matmul/p; /^attention/p; /^note/p; /^model runs/p; /^RESULT/p; /^profile/p; /^skipped/p; /^== summary/,/^== ops/p' \
		"$log/bench.log" >>"$summary"
else
	note "bench: not run (GPU_CHECK_BUDGET spent)"
fi
verdict=passed
((has_gpu)) || verdict="passed (a dry run: nothing ran on a GPU)"
if [[ -e "$out/.not-found" ]]; then
	note "a command was not found (above): a phase may not have run"
	failed=1
	rm -f "$out/.not-found"
fi
((failed)) && verdict=FAILED
note "total: $((SECONDS - t_start)) s; tests $verdict"
exit $((failed ? 1 : 0))
