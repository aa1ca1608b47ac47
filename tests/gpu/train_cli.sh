#!/usr/bin/env bash
# train_cli.sh: `supkit train --backend cuda` end to end through the command
# line (tests/fixtures/train: the tiny config on real text, with the OE arm
# and BiEq): the run completes, result.json names the cuda backend and the
# device's peak memory, two identical runs write bit-identical weights,
# supkit eval of each run's checkpoint on its backend gives the run's
# val_bpb and heldout_bpb bit for bit, and the validation BPB is within 2%
# of the same run on the CPU backend (bf16 GEMM inputs on the GPU, fp32 on
# the CPU); the config key precision: result.json says autocast on cuda and
# fp32 on cpu by default, a cuda run with precision = fp32 stores every
# activation in fp32 and says fp32, and the cpu backend refuses autocast.
# The library-level parity tests are tests/gpu/cuda.sh.
#
# Skips (one skip, nothing passed) without a CUDA device or without a GPU=1
# build's supkit-train ($GPU_BIN, else build/gpu/bin, as scripts/gpu-check.sh
# builds it; supkit-eval beside it). With SUPKIT_EMU=1 it needs no device:
# $GPU_BIN's supkit-train and supkit-eval are the ones built on the emulated
# CUDA device (tests/cli/train_cuda_emu.sh).
set -u
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh

skip_all() { echo "skipped: $1"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
if [[ "${SUPKIT_EMU:-}" == 1 ]]; then
	:
elif command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || skip_all "no CUDA device"
else
	[[ -e /dev/nvidia0 ]] || skip_all "no CUDA device"
fi
BINDIR=${GPU_BIN:-build/gpu/bin}
[[ -x "$BINDIR/supkit-train" ]] || skip_all "no GPU=1 supkit-train in $BINDIR (make GPU=1 BUILD=build/gpu BIN=build/gpu/bin)"

pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1${2:+: $2}"; fail=$((fail + 1)); }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
run() { # backend outdir
	gpu_run "$BINDIR/supkit-train" tests/fixtures/train/tiny.cfg --set data_dir=tests/fixtures/train/data \
		--set steps=30 --set oe=1 --set oe_m=211 --set muoneq=bieq --set bieq_tau=5 \
		--set backend="$1" --quiet -o "$2" >"$2.log" 2>&1
}
num() { grep -o "\"$2\": *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//'; }

# --device N beyond the devices visible: a usage error naming it, nothing written
gpu_run "$BINDIR/supkit-train" tests/fixtures/train/tiny.cfg --set data_dir=tests/fixtures/train/data \
	--backend cuda --device 1000 --quiet -o "$TMP/nodev" >"$TMP/nodev.log" 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q "device 1000: no such CUDA device" "$TMP/nodev.log" && [[ ! -e "$TMP/nodev" ]] &&
	ok "--device 1000: exit 2, the device named, no run folder" ||
	bad "--device 1000: exit 2, the device named, no run folder" "rc $rc: $(head -c 200 "$TMP/nodev.log")"
for r in cpu cuda1 cuda2; do
	be=${r%[12]}
	if run "$be" "$TMP/$r"; then ok "supkit train --backend $be completes"
	else bad "supkit train --backend $be completes" "$(tail -n 3 "$TMP/$r.log" | tr '\n' ' ')"; fi
done
if [[ -f "$TMP/cuda1/result.json" ]]; then
	grep -q '"backend": *"cuda"' "$TMP/cuda1/result.json" && ok "result.json names the cuda backend" ||
		bad "result.json names the cuda backend"
	grep -q '"device_peak_memory_mib"' "$TMP/cuda1/result.json" && ok "result.json has the device's peak memory" ||
		bad "result.json has the device's peak memory"
	m=$(grep -o '"backend_modes": *"[^"]*"' "$TMP/cuda1/result.json")
	# the attention kernels and whether the device lets a pass's ops run on
	[[ "$m" =~ \"attn=${SUPKIT_CUDA_ATTN:-mma}\ async=[01]\"$ ]] &&
		! grep -q '"backend_modes"' "$TMP/cpu/result.json" &&
		ok "result.json: the CUDA backend's modes ($m)" || bad "result.json: the CUDA backend's modes" "'$m'"
	# bf16 GEMMs (precision = autocast, the default) store the MLP's
	# activations in bf16; the CPU's are fp32
	want=bf16
	grep -q "\"mlp_activations\": *\"$want\"" "$TMP/cuda1/result.json" &&
		grep -q '"mlp_activations": *"fp32"' "$TMP/cpu/result.json" &&
		ok "result.json: MLP activations $want on cuda, fp32 on cpu" ||
		bad "result.json: MLP activations $want on cuda, fp32 on cpu" \
			"$(grep -ho '"mlp_activations": *"[a-z0-9]*"' "$TMP/cuda1/result.json" "$TMP/cpu/result.json" | tr '\n' ' ')"
	# the device's index (--device, default 0) on cuda, none on cpu
	grep -q '"device_index": *0\b' "$TMP/cuda1/result.json" &&
		grep -q '"device_index": *null' "$TMP/cpu/result.json" &&
		ok "result.json: device_index 0 on cuda, null on cpu" ||
		bad "result.json: device_index 0 on cuda, null on cpu"
	# the device by name on cuda, none on cpu; MFU where its peak is known
	# (an H100, H200 or A100 by name: on the emulated device, none)
	dv=$(grep -o '"device": *"[^"]*"' "$TMP/cuda1/result.json")
	[[ -n "$dv" ]] && grep -q '"device": *null' "$TMP/cpu/result.json" &&
		ok "result.json: the device ($dv) on cuda, none on cpu" ||
		bad "result.json: the device on cuda, none on cpu" "'$dv'"
	p=$(num "$TMP/cuda1/result.json" peak_flops)
	mf=$(num "$TMP/cuda1/result.json" mfu_percent)
	if [[ -z "$p" ]]; then
		grep -q '"mfu_percent": *null' "$TMP/cuda1/result.json" && ok "result.json: no MFU where the peak is unknown ($dv)" ||
			bad "result.json: no MFU where the peak is unknown" "'$mf'"
	else
		awk -v m="$mf" -v p="$p" -v f="$(num "$TMP/cuda1/result.json" flops_per_token)" \
			-v t="$(num "$TMP/cuda1/result.json" tokens_per_second)" \
			'BEGIN { x = 100 * f * t / p; exit !(m > 0 && (m - x) ^ 2 <= (1e-9 * x) ^ 2) }' &&
			ok "result.json: MFU $mf% against the device's peak $p" || bad "result.json: MFU against the device's peak" "'$mf' '$p'"
	fi
	# the norms' outputs likewise
	want=bf16
	grep -q "\"norm_activations\": *\"$want\"" "$TMP/cuda1/result.json" &&
		grep -q '"norm_activations": *"fp32"' "$TMP/cpu/result.json" &&
		ok "result.json: norm outputs $want on cuda, fp32 on cpu" ||
		bad "result.json: norm outputs $want on cuda, fp32 on cpu" \
			"$(grep -ho '"norm_activations": *"[a-z0-9]*"' "$TMP/cuda1/result.json" "$TMP/cpu/result.json" | tr '\n' ' ')"
	# the attention's q, k, v, y: bf16 only where the mma kernels run (head
	# width 128; tiny.cfg's is 32), so fp32 here on both backends
	grep -q '"attn_activations": *"fp32"' "$TMP/cuda1/result.json" &&
		grep -q '"attn_activations": *"fp32"' "$TMP/cpu/result.json" &&
		ok "result.json: attention activations fp32 at head width 32 on cuda and cpu" ||
		bad "result.json: attention activations fp32 at head width 32 on cuda and cpu" \
			"$(grep -ho '"attn_activations": *"[a-z0-9]*"' "$TMP/cuda1/result.json" "$TMP/cpu/result.json" | tr '\n' ' ')"
fi
# precision: autocast on cuda and fp32 on cpu by default (auto); fp32 on
# cuda multiplies in fp32 and keeps every activation fp32; the cpu backend
# refuses autocast, named, with nothing written
if [[ -f "$TMP/cuda1/result.json" ]]; then
	grep -q '"precision": *"autocast"' "$TMP/cuda1/result.json" &&
		grep -q '"precision": *"fp32"' "$TMP/cpu/result.json" &&
		ok "result.json: precision autocast on cuda, fp32 on cpu" ||
		bad "result.json: precision autocast on cuda, fp32 on cpu" \
			"$(grep -ho '"precision": *"[a-z0-9]*"' "$TMP/cuda1/result.json" "$TMP/cpu/result.json" | tr '\n' ' ')"
fi
gpu_run "$BINDIR/supkit-train" tests/fixtures/train/tiny.cfg --set data_dir=tests/fixtures/train/data \
	--set steps=3 --set precision=fp32 --backend cuda --quiet -o "$TMP/f32" >"$TMP/f32.log" 2>&1
rc=$?
if [[ $rc == 0 ]] && grep -q '"precision": *"fp32"' "$TMP/f32/result.json" &&
	grep -q '"mlp_activations": *"fp32"' "$TMP/f32/result.json" &&
	grep -q '"norm_activations": *"fp32"' "$TMP/f32/result.json"; then
	ok "precision = fp32 on cuda: result.json says fp32, MLP and norm activations fp32"
else
	bad "precision = fp32 on cuda: result.json says fp32, MLP and norm activations fp32" \
		"rc $rc: $(grep -ho '"[a-z_]*\(precision\|activations\)": *"[a-z0-9]*"' "$TMP/f32/result.json" 2>/dev/null | tr '\n' ' ') $(tail -c 200 "$TMP/f32.log")"
fi
gpu_run "$BINDIR/supkit-train" tests/fixtures/train/tiny.cfg --set data_dir=tests/fixtures/train/data \
	--set precision=autocast --backend cpu --quiet -o "$TMP/cpuac" >"$TMP/cpuac.log" 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q "precision = autocast: the cpu backend multiplies in fp32" "$TMP/cpuac.log" &&
	[[ ! -e "$TMP/cpuac" ]] &&
	ok "precision = autocast on cpu: exit 2, said, no run folder" ||
	bad "precision = autocast on cpu: exit 2, said, no run folder" "rc $rc: $(head -c 200 "$TMP/cpuac.log")"
if cmp -s "$TMP/cuda1/model.safetensors" "$TMP/cuda2/model.safetensors"; then ok "two identical CUDA runs: bit-identical weights"
else bad "two identical CUDA runs: bit-identical weights"; fi
# supkit eval of each run's checkpoint on its backend: the run's figures bit
# for bit (the same model, loader and evaluation)
for r in cpu cuda1; do
	be=${r%1}
	if [[ ! -x "$BINDIR/supkit-eval" ]]; then bad "supkit eval --backend $be reproduces the run's BPB" "no $BINDIR/supkit-eval"; continue; fi
	gpu_run "$BINDIR/supkit-eval" -q --json --backend "$be" "$TMP/$r" >"$TMP/$r.eval" 2>"$TMP/$r.eval.err"
	ev=$(num "$TMP/$r.eval" val_bpb) eh=$(num "$TMP/$r.eval" heldout_bpb)
	rv=$(num "$TMP/$r/result.json" val_bpb 2>/dev/null) rh=$(num "$TMP/$r/result.json" heldout_bpb 2>/dev/null)
	if [[ -n "$rv" && "$ev" == "$rv" && "$eh" == "$rh" ]] && grep -q "\"backend\": *\"$be\"" "$TMP/$r.eval"
	then ok "supkit eval --backend $be reproduces the run's val_bpb and heldout_bpb ($rv, $rh)"
	else bad "supkit eval --backend $be reproduces the run's val_bpb and heldout_bpb" "run '$rv' '$rh', eval '$ev' '$eh' $(head -c 300 "$TMP/$r.eval.err")"; fi
done
a=$(num "$TMP/cpu/result.json" val_bpb 2>/dev/null) b=$(num "$TMP/cuda1/result.json" val_bpb 2>/dev/null)
if [[ -n "$a" && -n "$b" ]] && awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.02 * a) }'; then
	ok "validation BPB cuda $b within 2% of cpu $a"
else
	bad "validation BPB cuda within 2% of cpu" "cpu '$a', cuda '$b'"
fi
echo "$pass passed, $fail failed, 0 skipped"
((fail == 0))
