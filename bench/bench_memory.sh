#!/usr/bin/env bash
# bench_memory.sh: peak resident memory of the OE arm
# (oe = 1, the default oe_m / oe_n / oe_k) over the dense arm at the same
# size, each measured in its own process (bench/bench_step.c: model +
# optimizer + BENCH_STEPS training steps, peak RSS from getrusage), against
# `supkit audit compute --json`'s analytical delta (memory_mib.total of the
# OE config minus the dense one: 4 bytes per OE parameter + 4 per row),
# printed as a ratio (goal: within 10%). Also prints the model's own count
# of the bytes it allocates (model_peak_mib, which leaves out the visit
# counts). Per OE parameter the trainer holds what the original holds
# (trainer/param.h): a bf16 value and a dense bf16 gradient, 4 B, whatever
# share of the rows a step visits; the backward's scatter needs 8 B a token
# of scratch. Measured 1.00x at 2,048, 16,384, 65,536 and 524,288 tokens a
# step (the last with seq_len 256, grad_accum 32). Asserts nothing.
# Environment: BENCH_THREADS (default: nproc), BENCH_STEPS (2),
# BENCH_CONFIG (key=value list, default below).
set -uo pipefail
BUILD=${BUILD:-build}
ROOT=${SUPKIT_ROOT:-$(pwd)}
cd "$ROOT"
AUDIT=${SUPKIT_BIN:-$ROOT/bin}/supkit-audit
THREADS=${BENCH_THREADS:-$(nproc)}
STEPS=${BENCH_STEPS:-2}
CFG=${BENCH_CONFIG:-"depth=4 model_dim=256 head_dim=128 vocab_size=2048 seq_len=256 batch_rows=8 grad_accum=1"}
step=$(bash bench/build_step.sh) || { echo "bench_memory: cannot build bench_step"; exit 1; }
[[ -x "$AUDIT" ]] || make -s "$AUDIT" >&2 || { echo "bench_memory: cannot build supkit-audit"; exit 1; }
mkdir -p "$BUILD/bench"
W=$(mktemp -d "$BUILD/bench/memory.XXXXXX")
trap 'rm -rf "$W"' EXIT
get() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
tr ' ' '\n' <<<"$CFG" | sed 's/=/ = /' >"$W/dense.cfg"
{ cat "$W/dense.cfg"; echo "oe = 1"; } >"$W/oe.cfg"
audit_mib() {
	"$AUDIT" compute --json "$1" | /usr/bin/python3 -c \
		'import json, sys; a = json.load(sys.stdin)["arms"][0]; print(a["memory_mib"]["total"], a["params"]["oe"], a["params"]["oe_rows_total"])'
}
read -r a_dense _ _ < <(audit_mib "$W/dense.cfg") || { echo "bench_memory: audit compute failed"; exit 1; }
read -r a_oe oe_params oe_rows < <(audit_mib "$W/oe.cfg") || { echo "bench_memory: audit compute failed"; exit 1; }
# shellcheck disable=SC2086
d=$("$step" -w 0 -n "$STEPS" -c "$W/dense.cfg" threads="$THREADS") || { echo "bench_memory: bench_step failed"; exit 1; }
# shellcheck disable=SC2086
o=$("$step" -w 0 -n "$STEPS" -c "$W/oe.cfg" threads="$THREADS") || { echo "bench_memory: bench_step failed"; exit 1; }
echo "config: $CFG, threads $THREADS, $STEPS steps; OE: $oe_params parameters in $oe_rows rows"
echo "  dense: $d"
echo "  oe:    $o"
awk -v rd="$(get peak_rss_mib "$d")" -v ro="$(get peak_rss_mib "$o")" \
	-v md="$(get model_peak_mib "$d")" -v mo="$(get model_peak_mib "$o")" \
	-v ad="$a_dense" -v ao="$a_oe" -v np="$oe_params" -v nr="$oe_rows" 'BEGIN {
	an = ao - ad; rss = ro - rd; mod = mo - md
	printf "analytical OE delta (audit compute): %.1f MiB\n", an
	printf "measured peak RSS delta (oe - dense): %.1f MiB = %.2f bytes per OE parameter (rows at 4 B)\n", rss, (rss * 1048576 - 4 * nr) / np
	printf "model-held delta (model_peak_mib):    %.1f MiB\n", mod
	printf "ratio measured/analytical: RSS %.2f, model-held %.2f (goal: within 10%%, i.e. 0.90-1.10)\n", rss / an, mod / an
}'
