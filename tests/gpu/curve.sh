#!/usr/bin/env bash
# curve.sh: the CUDA backend's loss curve at depth 8 on the demo corpus
# against the PyTorch reference on the same tokens from the same initial
# weights (the backend should track the PyTorch original's loss curve to
# within bf16 noise; ClimbMix cannot be fetched here, the demo corpus can).
#
#   1. supkit train --stop-after 0: the run's initial weights and config
#      (depth 8, T 2048, B 4 rows, one micro-batch a step, 250 steps: 2M
#      tokens, about one epoch of the demo corpus; init = dense, see below);
#   2. supkit data batches: the run's token stream;
#   3. supkit train --resume: the CUDA run (bf16 GEMM inputs, fp32 elsewhere),
#      while tests/reference/torch_curve.py runs twice beside it on the GPU:
#      --mm fp32 (the reference) and --mm bf16 (its GEMM operands rounded to
#      bf16: the size of bf16 noise on this curve);
#   5. checks, over the last half of the steps: the mean |supkit - fp32| is at
#      most 2 x the mean |bf16 - fp32| + 0.002, and so is the difference of the
#      last 25 steps' mean losses. A table of every 25th step goes to stdout.
#      CPU dry runs (supkit's CPU backend, torch 1.13 on the CPU, init =
#      dense): depth 2, T 256, 4 rows, 60 steps: gap 0.0019, noise 0.0047,
#      bound 0.0114; depth 4, T 256, 8 rows, 100 steps: gap 0.0027, noise
#      0.0031. With 1.5x the embedding and lm_head learning rates in the
#      reference (depth 2) the gap is 0.0192 against a bound of 0.0138, and
#      the check fails (a bound of 3 x noise + 0.005, sized for the
#      benchmark's init, below, lets that through). Very small
#      batches (256 tokens a step) are chaotic early and can exceed the
#      bound: the check is meant for its default size.
#   Why init = dense (random c_proj) and not the benchmark's init: with c_proj
#   zero the loss is invariant to the scale of x (RMSNorm), so the first
#   gradient of resid_lambdas and x0_lambdas is only the norm's eps at work,
#   about 2e-11 at depth 4, below fp32 summation noise (PyTorch fp32 gives
#   3.6e-11; supkit's fp64 dot products the exact value), and AdamW's first
#   step (eps 1e-10, lr 0.5) turns it into an update of up to lr. Runs part
#   there by arithmetic noise, not by the model: on an H200 with the benchmark
#   init supkit sat 0.016-0.023 below PyTorch fp32 over the last half in every
#   arithmetic (full fp32 too) against 0.005 between PyTorch fp32 and bf16,
#   while supkit and PyTorch in fp64 agree to 1e-10 over 8 steps (depth 8, T
#   512; depth 4, T 2048). CPU dry run with init = dense, depth 4, T 256, 8
#   rows, 100 steps: gap 0.0027, noise 0.0031 (benchmark init: 0.0062,
#   0.0039). CURVE_INIT=benchmark runs the benchmark's init.
#
# Skips (one skip, nothing passed) without a CUDA device, without a GPU=1
# supkit-train ($GPU_BIN, else build/gpu/bin), without python3 torch that
# sees the GPU, or without the demo corpus's shards ($CURVE_DATA, default
# demo-out/data, made by make demo; carried along to a GPU machine).
# Knobs (a CPU dry run: CURVE_BACKEND=cpu CURVE_DEVICE=cpu and small sizes):
#   CURVE_STEPS (250) CURVE_DEPTH (8) CURVE_ROWS (4) CURVE_SEQ (2048)
#   CURVE_BACKEND (cuda) CURVE_DEVICE (cuda) CURVE_PY (lib.sh's torch_py)
#   CURVE_INIT (dense) CURVE_KEEP=DIR keep the runs and curves in DIR
set -u
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh

skip_all() { echo "skipped: $1"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
backend=${CURVE_BACKEND:-cuda}
device=${CURVE_DEVICE:-cuda}
steps=${CURVE_STEPS:-250}
depth=${CURVE_DEPTH:-8}
rows=${CURVE_ROWS:-4}
seq=${CURVE_SEQ:-2048}
py=${CURVE_PY:-$(torch_py || echo python3)}
data=${CURVE_DATA:-demo-out/data}
init=${CURVE_INIT:-dense}
if [[ "$backend" == cuda ]]; then
	if command -v nvidia-smi >/dev/null 2>&1; then
		nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || skip_all "no CUDA device"
	else
		[[ -e /dev/nvidia0 ]] || skip_all "no CUDA device"
	fi
	BINDIR=${GPU_BIN:-build/gpu/bin}
else
	BINDIR=${GPU_BIN:-${SUPKIT_BIN:-bin}}
fi
[[ -x "$BINDIR/supkit-train" && -x "$BINDIR/supkit-data" ]] ||
	skip_all "no supkit-train and supkit-data in $BINDIR (make GPU=1 BUILD=build/gpu BIN=build/gpu/bin)"
"$py" -c "import torch, sys; sys.exit(0 if '$device' == 'cpu' or torch.cuda.is_available() else 1)" 2>/dev/null ||
	skip_all "no $py with torch that sees the $device device"
compgen -G "$data/train_*.bin" >/dev/null && [[ -f "$data/token_bytes.bin" ]] ||
	skip_all "no demo corpus shards in $data (make demo makes them)"
vocab=$(grep -o '"vocab_size": *[0-9]*' "$data/data.json" 2>/dev/null | grep -o '[0-9]*$')
[[ -n "$vocab" ]] || skip_all "no vocab_size in $data/data.json"

pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1${2:+: $2}"; fail=$((fail + 1)); }
if [[ -n "${CURVE_KEEP:-}" ]]; then
	W=$CURVE_KEEP
	rm -rf "$W/run"
	mkdir -p "$W"
else
	W=$(mktemp -d)
	trap 'rm -rf "$W"' EXIT
fi

sets=(--set depth="$depth" --set vocab_size="$vocab" --set seq_len="$seq" --set batch_rows="$rows"
	--set grad_accum=1 --set steps="$steps" --set warmup_steps=11 --set eval_tokens=$((rows * seq * 2))
	--set heldout_tokens=0 --set backend="$backend" --set data_dir="$data" --set init="$init")
t0=$SECONDS
if gpu_run "$BINDIR/supkit-train" configs/arms/d8/00_dense_native.cfg "${sets[@]}" --stop-after 0 --quiet \
	-o "$W/run" >"$W/init.log" 2>&1; then ok "initial weights written (supkit train --stop-after 0)"
else bad "initial weights written" "$(tail -n 2 "$W/init.log" | tr '\n' ' ')"; fi
# the resumed run removes its checkpoint when it finishes: keep the start
rm -rf "$W/init"
cp -r "$W/run" "$W/init" 2>/dev/null
seed=$(sed -n 's/^seed *= *//p' "$W/run/config.cfg" 2>/dev/null)
mapfile -t shards < <(ls "$data"/train_*.bin | sort)
if gpu_run "$BINDIR/supkit-data" batches --quiet --seq-len "$seq" --batch-rows "$rows" --seed "${seed:-42}" \
	--count "$steps" -o "$W/batches.bin" "${shards[@]}" 2>"$W/batches.log"; then ok "the run's token stream exported"
else bad "the run's token stream exported" "$(tail -n 1 "$W/batches.log")"; fi
# the two PyTorch runs and the supkit run side by side (small batches leave
# the GPU mostly idle; the results do not depend on the overlap)
pids=()
for mm in fp32 bf16; do
	PYTHONUNBUFFERED=1 "$py" tests/reference/torch_curve.py --run "$W/init" --batches "$W/batches.bin" --mm $mm \
		--device "$device" --steps "$steps" -o "$W/torch_$mm.json" >"$W/torch_$mm.log" 2>&1 &
	pids+=($!)
done
if gpu_run "$BINDIR/supkit-train" --resume "$W/run" --quiet >"$W/train.log" 2>&1; then
	ok "supkit train --backend $backend: $steps steps at depth $depth ($((SECONDS - t0)) s)"
else
	bad "supkit train --backend $backend completes" "$(tail -n 2 "$W/train.log" | tr '\n' ' ')"
fi
for i in 0 1; do
	mm=$([[ $i == 0 ]] && echo fp32 || echo bf16)
	if wait "${pids[$i]}"; then
		ok "PyTorch reference --mm $mm ($((SECONDS - t0)) s)"
	else
		bad "PyTorch reference --mm $mm" "$(tail -n 2 "$W/torch_$mm.log" | tr '\n' ' ')"
	fi
done

# compare (python: the curves are JSON)
"$py" - "$W/run/curve.jsonl" "$W/torch_fp32.json" "$W/torch_bf16.json" "$steps" <<'EOF' >"$W/compare.txt" 2>&1
import json, sys
cp, fp, bp, S = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
try:
    sk = [json.loads(l)["loss"] for l in open(cp) if l.strip()]
    F, Bf = json.load(open(fp)), json.load(open(bp))
    f32, b16 = F["losses"], Bf["losses"]
except (OSError, ValueError, KeyError) as e:
    print("RESULT curve missing: %s" % e)
    sys.exit(1)
if not (len(sk) == len(f32) == len(b16) == S):
    print("RESULT curve lengths supkit %d fp32 %d bf16 %d, want %d" % (len(sk), len(f32), len(b16), S))
    sys.exit(1)
print("step   supkit    torch_fp32 torch_bf16 |sk-fp32| |bf16-fp32|")
for t in list(range(0, S, 25)) + [S - 1]:
    print("%4d  %9.5f  %9.5f  %9.5f  %8.5f  %8.5f" % (t, sk[t], f32[t], b16[t], abs(sk[t] - f32[t]), abs(b16[t] - f32[t])))
h = S // 2
gap = sum(abs(a - b) for a, b in zip(sk[h:], f32[h:])) / (S - h)
noise = sum(abs(a - b) for a, b in zip(b16[h:], f32[h:])) / (S - h)
m = lambda v: sum(v[-25:]) / len(v[-25:])
tail_gap, tail_noise = abs(m(sk) - m(f32)), abs(m(b16) - m(f32))
print("RESULT mean_abs_gap_last_half=%.5f bf16_noise=%.5f bound=%.5f" % (gap, noise, 2 * noise + 0.002))
print("RESULT last25_mean supkit=%.5f fp32=%.5f bf16=%.5f gap=%.5f bound=%.5f" %
      (m(sk), m(f32), m(b16), tail_gap, 2 * tail_noise + 0.002))
print("RESULT step0 supkit=%.6f fp32=%.6f bf16=%.6f" % (sk[0], f32[0], b16[0]))
print("note PyTorch reference (eager, not a speed comparison): fp32 %.0f tok/s, bf16-emulated %.0f tok/s, torch %s on %s"
      % (F["tokens_per_s"], Bf["tokens_per_s"], F["torch"], F["device"]))
ok = gap <= 2 * noise + 0.002 and tail_gap <= 2 * tail_noise + 0.002
sys.exit(0 if ok else 3)
EOF
crc=$?
cat "$W/compare.txt"
case $crc in
0) ok "the supkit curve tracks PyTorch's within bf16 noise" ;;
3) bad "the supkit curve tracks PyTorch's within bf16 noise" "see the RESULT lines" ;;
*) bad "the curves could be compared" "$(tail -n 1 "$W/compare.txt")" ;;
esac
echo "$pass passed, $fail failed, 0 skipped"
((fail == 0))
