#!/usr/bin/env bash
# bench_train.sh: tokens/s of one training step (grad_accum
# micro-steps of forward+backward, then the MuonAdamW step) on the CPU
# backend, against the same step of the PyTorch reference
# (bench/train_step_torch.py: tests/reference/torch_model.py's forward,
# autograd, torch_optim.py's AdamW and Muon with bf16 Polar Express) at the
# same config and thread count, printed as a ratio (goal >= 1.5), with the
# peak RSS of each. Ours: bench/bench_step.c (built here against the
# trainer's archives), random tokens, median of STEPS timed steps after
# WARM warm-up steps. The two sides run alternately ROUNDS times and each
# keeps its best median, so that a load spike from other work on a shared
# machine hurts both alike. Asserts nothing.
# Environment: BENCH_THREADS (thread counts to compare at, default: nproc
# then 1), BENCH_STEPS (3), BENCH_WARM (1),
# BENCH_ROUNDS (2), BENCH_CONFIG (key=value list, default below).
set -uo pipefail
BUILD=${BUILD:-build}
ROOT=${SUPKIT_ROOT:-$(pwd)}
cd "$ROOT"
PY=/usr/bin/python3
THREADS=${BENCH_THREADS:-"$(nproc) 1"}
STEPS=${BENCH_STEPS:-3}
WARM=${BENCH_WARM:-1}
ROUNDS=${BENCH_ROUNDS:-2}
CFG=${BENCH_CONFIG:-"depth=4 model_dim=256 head_dim=128 vocab_size=2048 seq_len=256 batch_rows=8 grad_accum=1"}
step=$(bash bench/build_step.sh) || { echo "bench_train: cannot build bench_step"; exit 1; }
get() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b + 0 > a + 0) ? b : a }'; }
have_torch=1
$PY -c 'import torch' 2>/dev/null || { have_torch=0; echo "bench_train: skipped the PyTorch comparison (/usr/bin/python3 has no torch)"; }
echo "config: $CFG (fp32, dense arm), $STEPS timed steps after $WARM warm-up, best of $ROUNDS rounds, threads: $THREADS"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
for th in $THREADS; do
	ours_tok=; ours_rss=; ours_rss0=; torch_tok=; torch_rss=; torch_rss0=
	echo "-- threads $th (ours: BLAS threads; PyTorch: torch.set_num_threads)"
	for ((r = 1; r <= ROUNDS; r++)); do
		# shellcheck disable=SC2086
		o=$("$step" -w "$WARM" -n "$STEPS" $CFG threads="$th" steps=1000 warmup_steps=0) ||
			{ echo "bench_train: bench_step failed"; exit 1; }
		echo "  round $r ours:    $o"
		ours_tok=$(best "$ours_tok" "$(get tok_s "$o")"); ours_rss=$(get peak_rss_mib "$o"); ours_rss0=$(get start_rss_mib "$o")
		((have_torch)) || continue
		# shellcheck disable=SC2086
		t=$($PY bench/train_step_torch.py "$th" "$WARM" "$STEPS" $CFG) ||
			{ echo "bench_train: train_step_torch.py failed"; exit 1; }
		echo "  round $r pytorch: $t"
		torch_tok=$(best "$torch_tok" "$(get tok_s "$t")"); torch_rss=$(get peak_rss_mib "$t"); torch_rss0=$(get start_rss_mib "$t")
	done
	echo "ours:    $ours_tok tok/s, peak RSS $ours_rss MiB ($ours_rss0 MiB before the model)"
	[[ -n "$torch_tok" ]] || continue
	echo "pytorch: $torch_tok tok/s, peak RSS $torch_rss MiB ($torch_rss0 MiB before the model: interpreter + libtorch) (torch $($PY -c 'import torch; print(torch.__version__)'))"
	awk -v t="$th" -v a="$ours_tok" -v b="$torch_tok" -v m="$ours_rss" -v n="$torch_rss" -v m0="$ours_rss0" -v n0="$torch_rss0" \
		'BEGIN { printf "threads %d: speed ratio ours/pytorch: %.2fx (goal >= 1.5x); peak RSS ratio ours/pytorch: %.2f, above the start: %.2f (%.1f / %.1f MiB)\n", t, a / b, m / n, (m - m0) / (n - n0), m - m0, n - n0 }'
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (a shared machine: figures vary with other work)"
