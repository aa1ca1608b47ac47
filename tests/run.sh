#!/usr/bin/env bash
# run.sh: run every unit-test binary ($BUILD/tests/*/test_*), every CLI test
# (tests/cli/*.sh) and every GPU test script (tests/gpu/*.sh), each into a log
# under $BUILD/test-logs. Each prints a last line "N passed, N failed[, N
# skipped]"; a suite that crashes or prints no such line counts as one failure.
# Closes with the sum: "N passed, N failed, N skipped". Exit 0 only when none failed.
# The suites on the emulated CUDA device (names with "emu") run one after
# another in the background beside the others (two cores).
# make test runs the emulator's kernel-level checks (its own tests, and
# test_cuda_ops_emu's op checks); the whole-runtime and whole-training
# emulation (EMU_WHOLE_SUITES, EMU_WHOLE_TESTS below) runs under make
# test-emu (EMU=1) instead.
#   ONLY=pattern  run the suites whose name contains pattern
#   EMU=1         run only the whole-runtime and whole-training emulation
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
BUILD=${BUILD:-build}
export BIN BUILD
export SUPKIT_BIN=$(cd "$BIN" && pwd)
export PATH="$SUPKIT_BIN:$PATH"
export SUPKIT_ROOT=$(pwd)
logs="$BUILD/test-logs"
mkdir -p "$logs"
P=0 F=0 S=0
failed_suites=()

skip_name() { [[ -n "${ONLY:-}" && "$1" != *"$ONLY"* ]]; }
logof() { echo "$logs/${1//\//_}.log"; }

run_cmd() { # name, command...: the suite's output into its log, its exit status and time beside
	local name=$1; shift
	local log t0=$SECONDS
	log=$(logof "$name")
	"$@" >"$log" 2>&1
	echo "$? $((SECONDS - t0))" >"$log.rc"
}

tally() { # name: its closing line counted, a line printed
	local name=$1 log rc sec line p=0 f=0 s=0
	log=$(logof "$name")
	read -r rc sec <"$log.rc"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [[ -n "$line" ]]; then
		p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")
		f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
		[[ "$line" =~ ([0-9]+)\ skipped ]] && s=${BASH_REMATCH[1]}
	fi
	if [[ -z "$line" || ( $rc -ne 0 && $f -eq 0 ) ]]; then
		f=$((f + 1))
		echo "  $name: exit status $rc without a failure count (crash?)" >>"$log"
	fi
	P=$((P + p)) F=$((F + f)) S=$((S + s))
	printf '%-40s %4d passed %3d failed %3d skipped  (%ds)\n' "$name" "$p" "$f" "$s" "$sec"
	if ((f > 0)); then
		failed_suites+=("$name")
		sed -n '/FAIL\|failed\|error\|Error\|ERROR/p' "$log" | head -n 30 | sed 's/^/    | /'
	fi
}

# make test-emu's part: these suites whole, and test_cuda_ops_emu's tests
# whose names contain one of EMU_WHOLE_TESTS' words (training runs, the
# PyTorch curves, the head's big logit chunks, the benchmark's model); make
# test runs test_cuda_ops_emu's other tests.
EMU_WHOLE_SUITES=" cli/train_cuda_emu.sh cli/cuda_ops_emu_orders.sh
	cli/bench_gpu_emu.sh cli/dev_cuda_emu.sh gpu/check_dry.sh "
EMU_WHOLE_TESTS=train_,curve_vs_torch,head_big_chunks,benchmark_pass_rows
emu_whole() { [[ "$EMU_WHOLE_SUITES" =~ [[:space:]]"$1"[[:space:]] ]]; }

# The suites, as "name command..." lines. Those on the emulated CUDA device
# (tests/emu, minutes of one core) run one after another beside the rest,
# so that the two cores of this project's machines both work.
suites=() emu=()
for t in $(find "$BUILD/tests" -type f -name 'test_*' ! -name '*.d' 2>/dev/null | sort); do
	name=unit/${t#$BUILD/tests/}
	if [[ $name == unit/emu/test_cuda_ops_emu ]]; then
		if [[ ${EMU:-} == 1 ]]; then
			suites+=("$name env T_ONLY=$EMU_WHOLE_TESTS T_EXCEPT= $t")
		else
			suites+=("$name env T_ONLY= T_EXCEPT=$EMU_WHOLE_TESTS $t")
		fi
	elif [[ ${EMU:-} != 1 ]]; then
		suites+=("$name $t")
	fi
done
for t in tests/cli/*.sh tests/gpu/*.sh; do
	[[ -f "$t" && "$(basename "$t")" != lib.sh ]] || continue
	name=${t#tests/}
	if emu_whole "$name"; then
		[[ ${EMU:-} == 1 ]] || continue
	else
		[[ ${EMU:-} != 1 ]] || continue
	fi
	suites+=("$name bash $t")
done
fg=()
for e in "${suites[@]}"; do
	name=${e%% *}
	skip_name "$name" && continue
	# make test-emu: test_cuda_ops_emu (the longest) beside the other suites
	if [[ ${EMU:-} == 1 && $name == unit/emu/test_cuda_ops_emu ]] ||
		[[ ${EMU:-} != 1 && $name == *emu* ]]; then
		emu+=("$e")
	else
		fg+=("$e")
	fi
done
(
	for e in "${emu[@]}"; do
		# shellcheck disable=SC2086
		run_cmd ${e}
	done
) &
bg=$!
for e in "${fg[@]}"; do
	# shellcheck disable=SC2086
	run_cmd ${e}
	tally "${e%% *}"
done
wait "$bg"
for e in "${emu[@]}"; do
	tally "${e%% *}"
done

if ((${#failed_suites[@]})); then
	echo "failed suites: ${failed_suites[*]} (logs in $logs)"
fi
echo "$P passed, $F failed, $S skipped"
((F == 0))
