#!/usr/bin/env bash
# bench_gpu_emu.sh: bench/bench_gpu.sh, the GPU benchmark a GPU machine runs
# (scripts/gpu-check.sh), whole on the emulated CUDA device: the gpu_bench
# that make builds in $BUILD/emu/bin (GPU_BENCH_EXE), at a small shape (B 1,
# T 64 or 128, depth 2, one timed step, no PyTorch side), so that an error
# in the script or in gpu_bench's code paths shows here, without a GPU. Checks that every op section and every extra row of the
# default GPU_BENCH_ALT ran and says what it ran; the figures are the
# emulator's, meaningless as speeds. Needs no GPU.
source "$(dirname "$0")/lib.sh"
cd "$SUPKIT_ROOT"
B=${BUILD:-build}
exe="$B/emu/bin/gpu_bench"
if [[ ! -x "$exe" ]]; then
	bad "no $exe (make tests builds it)"
	finish
fi

# bench VAR=VALUE...: bench_gpu.sh on the emulated device at B 1, T 64, one
# timed step, no PyTorch side
bench() {
	run env GPU=1 GPU_BENCH_EXE="$exe" GPU_BENCH_BATCH=1 GPU_BENCH_SEQ=64 GPU_BENCH_TORCH=0 \
		GPU_BENCH_STEPS=1 "$@" bash bench/bench_gpu.sh
}

# the ops alone at T 128 (the attention's two windows, T / 2 and T)
run "$exe" ops --batch 1 --seq 128
expect_rc 0 "gpu_bench ops runs on the emulated device"
for what in "matmul bf16     q/k/v/proj" "matmul fast16bf lm_head chunk (16384,C)" \
	"matmul matmul_n q,k,v dW" "elem mix_rmsnorm_fwd fused, out bf16" "elem relu2_bwd bf16" \
	"elem embed_scatter_add bf16, uniform" "elem embed_scatter_add bf16, Zipf"; do
	expect_out_contains "$what" "ops: $what"
done
for k in f32 mma; do
	n=$(grep -cE "^attention $k +B1 T128 H4 D128 window (64|128) +fwd .* bwd " <<<"$out")
	if [[ "$n" == 2 ]]; then ok "ops: attention $k, both windows"; else bad "ops: attention $k" "$n lines"; fi
done
expect_out_contains "elem mix_bwd separate" "ops: the mixing's backward as separate ops"
# Zipf's law puts its most frequent index on more rows than uniform draws
zu=$(sed -nE 's/.*uniform \(index 0: ([0-9]+) rows\).*/\1/p' <<<"$out")
zz=$(sed -nE 's/.*Zipf \(index 0: ([0-9]+) rows\).*/\1/p' <<<"$out")
if [[ -n "$zu" && -n "$zz" ]] && ((zz > 5 * (zu + 1))); then
	ok "ops: the Zipf indices' most frequent row ($zz rows, uniform $zu)"
else
	bad "ops: the Zipf indices" "index 0: ${zz:-?} rows, uniform ${zu:-?}"
fi

# the whole script: the side-by-side rows and every default extra row
# (depths 2 and 1: the extra rows at depth 2 come before depth 1's row)
bench GPU_BENCH_DEPTHS="2 1" GPU_BENCH_TORCH_REF="2:500" GPU_BENCH_BUDGET=60 SUPKIT_PEAK_TFLOPS=0.0001
expect_rc 0 "bench_gpu.sh runs whole on the emulated device"
expect_out_contains "device: emulated device" "the device line says the emulator"
summary=$(sed -n '/^== summary/,$p' <<<"$out")
# MFU against the peak gpu_bench peak gives (here SUPKIT_PEAK_TFLOPS: the
# emulator has none): row 2's from its RESULT's tokens/s and audit's FLOPs
expect_out_contains "bf16 dense peak: 0.0001 TFLOP/s" "the peak from gpu_bench peak (SUPKIT_PEAK_TFLOPS)"
f2=$(supkit-audit compute --depth 2 --json 2>/dev/null | grep -o '"per_token": *[0-9.e+]*' | sed 's/.*: *//')
tk=$(sed -nE 's/^RESULT .* depth=2 .* tokens_per_s=([0-9]+) .*/\1/p' <<<"$out" | head -n 1)
wmfu=$(awk -v t="$tk" -v f="$f2" 'BEGIN { printf "%.1f%%", 100 * t * f / (0.0001 * 1e12) }')
if [[ -n "$f2" && -n "$tk" ]] && grep -qE "^2 +$tk +${wmfu//./\\.} " <<<"$summary"; then
	ok "row 2's MFU against that peak ($wmfu)"
else
	bad "row 2's MFU" "want '$tk $wmfu' in: $(grep -E '^2 ' <<<"$summary")"
fi
items=$(sed -nE 's/^default_alt="([^"]*)"$/\1/p' bench/bench_gpu.sh)
[[ -n "$items" ]] || bad "the default GPU_BENCH_ALT" "no default_alt= line in bench_gpu.sh"
for label in 2 1 $(printf '2/%s ' $items); do
	if grep -qE "^$(sed 's/[+.]/\\&/g' <<<"$label") +[0-9]+ " <<<"$summary"; then
		ok "summary row $label has a figure"
	else
		bad "summary row $label" "$(head -c 600 <<<"$summary")"
	fi
done
# each row ran what its label says: a RESULT line a run, in order
mapfile -t res < <(grep '^RESULT' <<<"$out")
labels=(2 $items 1)
if [[ ${#res[@]} == "${#labels[@]}" ]]; then
	ok "a RESULT line a row (${#res[@]})"
	for i in "${!labels[@]}"; do
		# the emulated device has concurrent managed access: ops run on
		l=${labels[$i]} a=mma d=2
		[[ "$l" == [12] ]] && d=$l || a=${l%%:*}
		if [[ "${res[$i]}" == *" attn=$a "* && "${res[$i]}" == *" async=1 "* &&
			"${res[$i]}" == *" depth=$d "* ]]; then
			ok "row $l ran depth=$d attn=$a async=1"
		else
			bad "row $l" "${res[$i]}"
		fi
	done
else
	bad "a RESULT line a row" "${#res[@]} lines for ${#labels[@]} rows"
fi
# the ratio column: row 2 against the given PyTorch figure, the extra rows
# against row 2, each as its RESULT lines' tokens/s make it
t2=$(sed -nE 's/^RESULT .* depth=2 .* tokens_per_s=([0-9]+) .*/\1/p' <<<"$out" | head -n 1)
# the extra row mma:32's RESULT line: the rows' lines are in order
trc=
for i in "${!labels[@]}"; do
	[[ "${labels[$i]}" == mma:32 ]] && trc=$(sed -nE 's/.* tokens_per_s=([0-9]+) .*/\1/p' <<<"${res[$i]:-}")
done
want2=$(awk -v a="$t2" 'BEGIN { printf "%.2fx torch 500 (GPU_BENCH_TORCH_REF)", a / 500 }')
wantrc=$(awk -v a="$trc" -v b="$t2" 'BEGIN { printf "%.2fx row 2", a / b }')
if grep -qE "^2 .* $(sed 's/[().]/\\&/g' <<<"$want2")\$" <<<"$summary"; then
	ok "row 2's ratio against GPU_BENCH_TORCH_REF ($want2)"
else
	bad "row 2's ratio" "want '$want2' in: $(grep -E '^2 ' <<<"$summary")"
fi
if [[ -n "$trc" ]] && grep -qE "^2/mma:32 .* ${wantrc//./\\.}\$" <<<"$summary"; then
	ok "row 2/mma:32's ratio against row 2 ($wantrc)"
else
	bad "row 2/mma:32's ratio" "want '$wantrc' in: $(grep -E '^2/mma:32 ' <<<"$summary")"
fi
expect_out_contains "profile d2/" "the profiled step's lines"
expect_out_contains "profile d1/" "the profiled step's lines at the second depth"
if grep -q "(skipped)" <<<"$out"; then bad "no skipped row" "$(grep '(skipped)' <<<"$out")"; else ok "no skipped row"; fi
# the time limits: the ops stopped, then a training run stopped, and the
# script goes on to the next row each time
bench GPU_BENCH_DEPTHS=1 GPU_BENCH_ALT="mma:32 mma+async" GPU_BENCH_OPS_TIMEOUT=1
expect_rc 0 "bench_gpu.sh with the ops stopped"
expect_out_contains "bf16 dense peak: unknown for this device" "no peak for the emulator by itself"
expect_out_contains "== ops: stopped after 1 s" "the ops' time limit"
if grep -qE '^1/mma:32 +[0-9]+ ' <<<"$out"; then ok "the training rows ran after the ops stopped"; else bad "the rows after the ops stopped" "$(tail -n 4 <<<"$out")"; fi
# a row with a removed switch (+async: asynchronous ops are the backend's
# only mode) is skipped with a line saying so, and no row is made for it
if grep -q '^== mma+async: not ATTN or ATTN:PASS_ROWS (skipped)' <<<"$out" &&
	! grep -qE '^1/mma\+async ' <<<"$out"; then ok "a row with a switch is skipped"
else bad "a row with a switch is skipped" "$(grep -E 'async' <<<"$out" | head -n 3)"; fi
bench GPU_BENCH_DEPTHS=1 GPU_BENCH_ALT= GPU_BENCH_OPS_TIMEOUT=1 GPU_BENCH_RUN_TIMEOUT=0.01
expect_rc 0 "bench_gpu.sh with a training run stopped"
expect_out_contains "== depth 1, attention mma: stopped after 0.01 s" "a training run's time limit"
if grep -qE '^1 +- ' <<<"$out"; then ok "the stopped run's row has no figure"; else bad "the stopped run's row" "$(tail -n 3 <<<"$out")"; fi
finish
