#!/usr/bin/env bash
# dev_cuda_emu.sh: the attention variant of dev/cuda (wg, not in the
# product: dev/cuda/README.md) on the emulated CUDA device, as make builds
# its mains in $BUILD/emu/dev/bin: check_attention (wg against the CPU
# backend and the product's mma kernels, forward and backward), kernels_emu
# (its kernels launched one by one against the CPU in fp64 and against
# mma's), and bench_attention at a small shape (wg timed beside mma, each
# one's RESULT line and wg's ratio printed; the figures are the emulator's,
# meaningless as speeds), and bench_attention's refusal of bad arguments.
# Run by make test-emu (tests/run.sh EMU=1), not by make test. Needs no GPU.
source "$(dirname "$0")/lib.sh"
cd "$SUPKIT_ROOT"
d=${BUILD:-build}/emu/dev/bin
for x in check_attention kernels_emu bench_attention; do
	if [[ ! -x "$d/$x" ]]; then
		bad "no $d/$x (make tests, or make dev-cuda, builds it)"
		finish
	fi
done

# the checks: each binary's own closing line, its failures shown
for x in check_attention kernels_emu; do
	run "$d/$x"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<<"$out" | tail -n 1)
	if [[ $rc == 0 && "$line" =~ ^([0-9]+)\ passed,\ 0\ failed,\ 0\ skipped ]] && ((BASH_REMATCH[1] > 0)); then
		ok "$x on the emulated device: $line"
	else
		bad "$x on the emulated device (exit status $rc)" "$(grep -E 'FAIL|failed' <<<"$out" | head -n 20)"
	fi
done

# the benchmark at B 1, T 128, H 2, window 64, one timed call
run "$d/bench_attention" 1 128 2 64 1
expect_rc 0 "bench_attention runs on the emulated device"
for v in mma wg; do
	if grep -qE "^RESULT variant=$v B=1 T=128 H=2 window=64 fwd_ms=[0-9.]+ bwd_ms=[0-9.]+ fwd_tflops=[0-9.]+ bwd_tflops=[0-9.]+\$" <<<"$out"; then
		ok "bench_attention: $v timed"
	else
		bad "bench_attention: $v timed" "$(grep RESULT <<<"$out")"
	fi
done
# mma and wg are the entries, and no other
results=$(grep -oE '^RESULT variant=[a-z0-9]+' <<<"$out" | cut -d= -f2 | tr '\n' ' ')
[[ "$results" == "mma wg " ]] && ok "bench_attention: mma and wg, no other variant" ||
	bad "bench_attention: mma and wg, no other variant" "RESULT lines for: $results"
expect_out_contains "wg    time / mma's: forward" "bench_attention: wg's ratio to mma"
run "$d/bench_attention" 1 128 2
expect_rc 2 "bench_attention with three arguments: usage"
run "$d/bench_attention" 1 0 2 64
expect_rc 2 "bench_attention with T 0"
expect_err_contains "bench_attention: T: '0' is not a positive integer" "the bad argument named"
finish
