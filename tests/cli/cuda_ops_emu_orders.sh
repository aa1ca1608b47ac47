#!/usr/bin/env bash
# cuda_ops_emu_orders.sh: the op-by-op checks of tests/gpu/test_cuda_ops.c
# on the emulated CUDA device (build/tests/emu/test_cuda_ops_emu, which make
# test and make test-emu also run in the usual order) twice more, with every
# launch's blocks and threads in two other orders (EMU_ORDER,
# tests/emu/simt.cc): last to first (reverse), and interleaved (shuffle). A
# kernel whose result depends on the order its threads run in (a missing
# __syncthreads, a block reading another block's output) fails in some
# order. The training checks and the head's big-chunk evaluation are left
# out (4 minutes; they run the same kernels). Part of make test-emu. Closes
# with the two runs' sum.
set -u
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
exe="$B/tests/emu/test_cuda_ops_emu"
if [[ ! -x "$exe" ]]; then
	echo "FAIL no $exe (make tests builds it)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
p=0 f=0 s=0 rc=0
for order in reverse shuffle; do
	out=$(EMU_ORDER=$order T_EXCEPT=train_,curve_,head_big_ "$exe" 2>&1) || rc=1
	sed "s/^/$order: /" <<<"$out"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<<"$out" | tail -n 1)
	if [[ -z "$line" ]]; then
		echo "FAIL $order: no result line (the run stopped)"
		f=$((f + 1)) rc=1
		continue
	fi
	read -r np _ nf _ ns _ <<<"${line//,/}"
	p=$((p + np)) f=$((f + nf)) s=$((s + ${ns:-0}))
done
echo "$p passed, $f failed, $s skipped"
exit $rc
