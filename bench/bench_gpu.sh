#!/usr/bin/env bash
# bench_gpu.sh: the CUDA backend at the benchmark's real size: tokens/s and
# MFU of training steps at depth 6 and 8 (B 64, T 2048, grad_accum from the
# config), side by side with a PyTorch rendering of the same model
# (bench/gpu_torch_ref.py) when torch with CUDA is importable, and a summary
# table, after op timings (matmul, attention fwd/bwd: first, their buffers
# filled from a pool of draws, so that a time limit cutting the training
# runs short keeps them). MFU = FLOPs/token (supkit audit compute)
# x tokens/s / the device's bf16 dense peak (gpu_bench peak: supkit train's
# figure, SUPKIT_PEAK_TFLOPS for a device it does not know).
# Runs only with GPU=1 and a CUDA device; otherwise says why it did nothing.
# Figures only, nothing asserted.
#   GPU_BENCH_STEPS (3) timed steps per depth after one warm-up step
#   GPU_BENCH_DEPTHS ("6 8") the depths, in this order
#   GPU_BENCH_BUDGET (150) seconds per depth and side
#   GPU_BENCH_COMPILE (1)   PyTorch side under torch.compile, as the
#                         original trains (0: eager)
#   GPU_BENCH_TORCH_BUDGET  seconds per depth for the PyTorch side (default
#                         GPU_BENCH_BUDGET + 120 with compile: its first step
#                         compiles)
#   GPU_BENCH_PASS_ROWS (0) config pass_rows of supkit's runs (0: the
#                         backend's choice, the most rows whose activations
#                         fit 15 GiB: at depth 8 one pass of 64 (bf16
#                         storage and shared buffers: 15,462 MiB planned
#                         in all); --pass-rows 32 is the
#                         extra row mma:32 below)
#   GPU_BENCH_TORCH (1)   0: leave the PyTorch side out
#   GPU_BENCH_TORCH_REF   "DEPTH:TOKENS_PER_S ..." PyTorch figures measured
#                         before on the same GPU, for the summary's ratio
#                         where the PyTorch side is not run (e.g. the H200
#                         figures of 2026-11-29: "8:1287982 6:2324930"); the
#                         summary's last column: a side-by-side row's supkit
#                         against PyTorch, an extra row's against its
#                         depth's side-by-side supkit run
#   SUPKIT_CUDA_ATTN (mma) attention kernels of supkit's training runs:
#                         mma (bf16 tensor cores through mma.sync, fp32
#                         accumulation, the backend's default: the
#                         comparison with PyTorch's bf16 attention) or f32
#                         (fp32 CUDA cores); the variants not in the
#                         product are timed by dev/cuda/bench_attention
#   GPU_BENCH_ALT (default_alt below) supkit-only runs at the first depth
#                         after its side-by-side run and before the other
#                         depths (the likeliest gains first), each
#                         ATTN or ATTN:PASS_ROWS (e.g. "f32 mma:32"; a row
#                         "DEPTH/ITEM"; "" for none; an item with anything
#                         else is skipped with a line saying so)
#   GPU_BENCH_OPS_TIMEOUT (240) seconds for the op timings, and
#   GPU_BENCH_RUN_TIMEOUT (GPU_BENCH_BUDGET + 120) for each training run:
#                         a hang in a kernel never run on a GPU costs
#                         its own line or row alone
#   GPU_BENCH_BATCH (64), GPU_BENCH_SEQ (2048) the shape (smaller ones for
#                         the emulated device's smoke run)
#   GPU_BENCH_EXE         a gpu_bench to run instead of building one with
#                         the GPU=1 build (build/emu/bin/gpu_bench: the
#                         emulated device of tests/emu, no GPU needed;
#                         tests/cli/bench_gpu_emu.sh)
set -u
export SUPKIT_CUDA_ATTN=${SUPKIT_CUDA_ATTN:-mma}
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=${BIN:-bin}
steps=${GPU_BENCH_STEPS:-3}
depths=${GPU_BENCH_DEPTHS:-6 8}
budget=${GPU_BENCH_BUDGET:-150}
pass_rows=${GPU_BENCH_PASS_ROWS:-0}
compile_on=${GPU_BENCH_COMPILE:-1}
torch_budget=${GPU_BENCH_TORCH_BUDGET:-$((budget + (compile_on ? 120 : 0)))}
default_alt="mma:32 f32"
batch=${GPU_BENCH_BATCH:-64}
seq=${GPU_BENCH_SEQ:-2048}

if [[ "${GPU:-}" != 1 ]]; then
	echo "bench_gpu: nothing done: not a GPU=1 run (make bench GPU=1)"
	exit 0
fi
source tests/gpu/lib.sh
if [[ -n "${GPU_BENCH_EXE:-}" ]]; then
	# a gpu_bench built elsewhere: the emulated device's (make tests:
	# build/emu/bin/gpu_bench; tests/cli/bench_gpu_emu.sh), no GPU needed
	exe=$GPU_BENCH_EXE
	name="emulated device ($exe)"
else
	if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
		echo "bench_gpu: nothing done: no CUDA device"
		exit 0
	fi
	B=""
	for d in "${GPU_BUILD:-}" "$BUILD" build/gpu; do
		[[ -n "$d" && -f "$d/libkernels.a" && -f "$d/libtrainer.a" ]] && { B=$d; break; }
	done
	if [[ -z "$B" ]]; then
		echo "bench_gpu: nothing done: no GPU=1 build with libkernels.a"
		exit 0
	fi
	exe="$B/gpu/gpu_bench"
	gpu_cc "$exe" tests/gpu/gpu_bench.c "$B" 1 -DSUPKIT_CUDA=1 || {
		echo "bench_gpu: nothing done: tests/gpu/gpu_bench.c does not build against $B"
		exit 0
	}
	export LD_LIBRARY_PATH="$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
fi
# the device's dense bf16 peak as supkit train reckons MFU (H100, H200, A100
# by name, or SUPKIT_PEAK_TFLOPS; none elsewhere)
peak=$(gpu_run "$exe" peak 2>/dev/null | sed -n 's/^peak_tflops: //p')
[[ "$peak" == 0 ]] && peak=""
echo "device: $name; bf16 dense peak: ${peak:-unknown for this device (no MFU; SUPKIT_PEAK_TFLOPS sets one)} TFLOP/s"


flops_token() { # depth
	"$BIN/supkit-audit" compute --depth "$1" --json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["arms"][0]["flops"]["per_token"])' 2>/dev/null
}
field() { sed -nE "s/.*$1=([0-9.]+).*/\1/p" <<<"$2" | head -n 1; }
mfu() { # tokens/s flops/token
	[[ -n "$peak" && -n "$1" && -n "$2" ]] || { echo "-"; return; }
	awk -v t="$1" -v f="$2" -v p="$peak" 'BEGIN { printf "%.1f%%", 100 * t * f / (p * 1e12) }'
}

torch_ok=0
((${GPU_BENCH_TORCH:-1})) && tpy=$(torch_py) &&
	"$tpy" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() and hasattr(torch.nn.functional, "scaled_dot_product_attention") else 1)' 2>/dev/null &&
	torch_ok=1
compile=()
((compile_on)) && compile=(--compile)
((torch_ok)) && echo "torch: $tpy, $("$tpy" -c 'import torch; print(torch.__version__)' 2>/dev/null); ${compile[*]:-eager (GPU_BENCH_COMPILE=0)}, budget $torch_budget s a depth (torch.compile's first step included)"

# limited SECONDS WHAT COMMAND...: COMMAND under a time limit, and a line
# saying so when it was stopped, so that a hang in a kernel never run on a
# GPU costs its own line or row alone
limited() {
	local lim=$1 what=$2 rc
	shift 2
	timeout -k 5 "$lim" "$@"
	rc=$?
	((rc == 124 || rc == 137)) && echo "== $what: stopped after $lim s (a hang?)"
	return $rc
}
# supkit_run DEPTH ATTN PASS_ROWS: one supkit training run with the
# backend's defaults but the attention kernels and pass size given,
# printed; sets s_tps and s_mem from its RESULT line
supkit_run() {
	local d=$1 attn=$2 rows=$3
	echo "== training, depth $d (B $batch, T $seq; supkit attention: $attn, GEMMs: autocast, pass_rows $rows)"
	local out
	# (a time limit a run: its budget and two minutes for the model's setup
	# and the profiled step)
	out=$(limited "${GPU_BENCH_RUN_TIMEOUT:-$((budget + 120))}" "depth $d, attention $attn" \
		env SUPKIT_CUDA_ATTN="$attn" "$exe" train --depth "$d" --batch "$batch" \
		--seq "$seq" --steps "$steps" --budget "$budget" --pass-rows "$rows")
	echo "$out"
	s_tps=$(field tokens_per_s "$(grep '^RESULT' <<<"$out")")
	s_mem=$(field peak_mib "$(grep '^RESULT' <<<"$out")")
}
# row LABEL DEPTH [TORCH_TPS TORCH_MEM]: a line of the summary table
# (ratio: a side-by-side row's supkit against PyTorch, an extra row's supkit
# against its depth's side-by-side supkit run)
declare -A base_tps=() torch_ref=()
for kv in ${GPU_BENCH_TORCH_REF:-}; do
	[[ "$kv" =~ ^([0-9]+):([0-9.]+)$ ]] && torch_ref[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]} ||
		echo "bench_gpu: GPU_BENCH_TORCH_REF item '$kv' is not DEPTH:TOKENS_PER_S (ignored)"
done
ratio() { # a b -> "a/b" as 0.00x, or -
	[[ -n "$1" && -n "$2" && "$2" != 0 ]] || { echo "-"; return; }
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'
}
row() {
	local ft r
	ft=$(flops_token "$2")
	if [[ "$1" == */* ]]; then
		r=$(ratio "${s_tps:-}" "${base_tps[$2]:-}")
		[[ "$r" == - ]] || r="$r row $2"
	else
		base_tps[$2]=${s_tps:-}
		r=$(ratio "${s_tps:-}" "${3:-}")
		if [[ "$r" != - ]]; then
			r="$r torch"
		elif [[ -n "${torch_ref[$2]:-}" ]]; then   # no PyTorch run: the given figure
			r=$(ratio "${s_tps:-}" "${torch_ref[$2]}")
			[[ "$r" == - ]] || r="$r torch ${torch_ref[$2]} (GPU_BENCH_TORCH_REF)"
		fi
	fi
	rows+=("$(printf '%-16s %-14s %-8s %-10s %-14s %-8s %-10s %s' "$1" "${s_tps:--}" \
		"$(mfu "$s_tps" "$ft")" "${s_mem:--}" "${3:--}" "$(mfu "${3:-}" "$ft")" "${4:--}" "$r")")
}

# op timings first (the kernels' own figures, kept when a time limit cuts
# the training runs short)
echo "== ops (managed buffers, each op synchronised)"
limited "${GPU_BENCH_OPS_TIMEOUT:-240}" ops "$exe" ops --batch "$batch" --seq "$seq"

rows=()
# side_by_side DEPTH: supkit, and PyTorch beside it when importable
side_by_side() {
	local depth=$1 t_tps="" t_mem="" tout
	supkit_run "$depth" "$SUPKIT_CUDA_ATTN" "$pass_rows"
	if ((torch_ok)); then
		tout=$("$tpy" bench/gpu_torch_ref.py --depth "$depth" --batch "$batch" --seq "$seq" \
			--steps "$steps" --budget "$torch_budget" "${compile[@]}")
		echo "$tout"
		t_tps=$(field tokens_per_s "$(grep '^RESULT' <<<"$tout")")
		t_mem=$(field peak_mib "$(grep '^RESULT' <<<"$tout")")
	fi
	row "$depth" "$depth" "$t_tps" "$t_mem"
}
# supkit alone again at the first depth: other attention kernels or pass
# sizes; run right after the first depth's side-by-side row, before
# the other depths, so that a time limit cutting the benchmark short keeps
# the rows that decide the backend's defaults
alt_rows() {
	local d=${depths%% *} alt a_attn a_rows
	for alt in ${GPU_BENCH_ALT-$default_alt}; do
		if [[ ! "$alt" =~ ^(mma|f32)(:[0-9]+)?$ ]]; then
			echo "== $alt: not ATTN or ATTN:PASS_ROWS (skipped)"
			continue
		fi
		a_attn=${alt%%:*} a_rows=$pass_rows
		[[ "$alt" == *:* ]] && a_rows=${alt#*:}
		[[ "$a_attn" == "$SUPKIT_CUDA_ATTN" && "$a_rows" == "$pass_rows" ]] &&
			continue   # the side-by-side run's own settings
		supkit_run "$d" "$a_attn" "$a_rows"
		row "$d/$alt" "$d"
	done
}
first=1
for depth in $depths; do
	side_by_side "$depth"
	((first)) && alt_rows
	first=0
done
echo "== summary (FLOPs/token from supkit audit compute; MFU against ${peak:-unknown} TFLOP/s)"
printf '%-16s %-14s %-8s %-10s %-14s %-8s %-10s %s\n' depth supkit_tok/s MFU peak_MiB torch_tok/s MFU peak_MiB ratio
printf '%s\n' "${rows[@]}"
((torch_ok)) || echo "PyTorch reference: not run (GPU_BENCH_TORCH=0, or torch >= 2 with CUDA not importable)"
