#!/usr/bin/env bash
# run.sh: run every unit-test binary ($BUILD/tests/*/test_*), every CLI test
# (tests/cli/*.sh) and every GPU test script (tests/gpu/*.sh), each into a log
# under $BUILD/test-logs. Each prints a last line "N passed, N failed[, N
# skipped]"; a suite that crashes or prints no such line counts as one failure.
# Closes with the sum: "N passed, N failed, N skipped". Exit 0 only when none failed.
# The suites on the emulated CUDA device (names with "emu") run one after
# another in the background beside the others (two cores).
#   ONLY=pattern  run the suites whose name contains pattern
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

# The suites, as "name command..." lines. Those on the emulated CUDA device
# (tests/emu, minutes of one core) run one after another beside the rest,
# so that the two cores of this project's machines both work.
suites=() emu=()
for t in $(find "$BUILD/tests" -type f -name 'test_*' ! -name '*.d' 2>/dev/null | sort); do
	suites+=("unit/${t#$BUILD/tests/} $t")
done
for t in tests/cli/*.sh tests/gpu/*.sh; do
	[[ -f "$t" && "$(basename "$t")" != lib.sh ]] || continue
	suites+=("${t#tests/} bash $t")
done
fg=()
for e in "${suites[@]}"; do
	name=${e%% *}
	skip_name "$name" && continue
	if [[ "$name" == *emu* ]]; then emu+=("$e"); else fg+=("$e"); fi
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
