#!/usr/bin/env bash
# bench_geometry.sh: `supkit audit geometry` on a depth-8-shaped checkpoint
# with random weights (bench/geometry_ref.py write), against numpy's
# svd-based computation of the same figures on the same file (load, convert,
# np.linalg.svd per matrix), as a speed ratio, with the largest relative
# difference between the two (equal accuracy). Also supkit's other methods,
# --method gram-evr (Gram + dsyevr) and --method svd (dgesdd), which show why
# the Gram + certified Lanczos route is the default.
# GEOM_BENCH_NO_OE=1 leaves the four OE tables out. Prints figures only.
set -uo pipefail
ROOT=${SUPKIT_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
AUDIT=${SUPKIT_BIN:-$ROOT/bin}/supkit-audit
PY=/usr/bin/python3
if ! "$PY" -c 'import numpy' 2>/dev/null; then echo "skipped: no numpy for $PY"; exit 0; fi
[[ -x "$AUDIT" ]] || { echo "skipped: $AUDIT not built"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
ck=$T/d8.safetensors
"$PY" "$ROOT/bench/geometry_ref.py" write "$ck" ${GEOM_BENCH_NO_OE:+--no-oe} || exit 1
echo "checkpoint: depth 8, d 512, V 8192$([[ -n ${GEOM_BENCH_NO_OE:-} ]] || echo ', OE 4 x 150855 x 128'), $(du -m "$ck" | cut -f1) MiB"
# wall seconds; CPU seconds (user + system, all threads) into $T/cpu.<tag>
secs() { # tag command...
	local tag=$1 t0 t1; shift
	t0=$(date +%s.%N)
	if [[ -x /usr/bin/time ]]; then /usr/bin/time -f '%U %S' -o "$T/cpu.$tag" "$@" >/dev/null || return 1
	else "$@" >/dev/null || return 1; fi
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN{print b - a}'
}
cpu() { [[ -f "$T/cpu.$1" ]] && awk '{print $1 + $2}' "$T/cpu.$1" || echo nan; }
g=$(secs gram "$AUDIT" geometry --json -q -o "$T/gram.json" "$ck") || exit 1
v=$(secs evr "$AUDIT" geometry --json -q --method gram-evr -o "$T/evr.json" "$ck") || exit 1
s=$(secs svd "$AUDIT" geometry --json -q --method svd -o "$T/svd.json" "$ck") || exit 1
ref=$("$PY" "$ROOT/bench/geometry_ref.py" audit "$ck" "$T/gram.json") || exit 1
echo "$ref"
n=$(awk '/numpy_svd_seconds/{print $2}' <<<"$ref")
printf 'supkit_gram_seconds %.3f (Lanczos, Cholesky-certified)\nsupkit_gram_evr_seconds %.3f (dsyevr)\nsupkit_svd_seconds %.3f (dgesdd)\n' "$g" "$v" "$s"
nc=$(awk '/numpy_svd_cpu_seconds/{print $2}' <<<"$ref")
printf 'supkit_gram_cpu_seconds %s\n' "$(cpu gram)"
awk -v n="$n" -v g="$g" -v s="$s" -v v="$v" -v nc="$nc" -v gc="$(cpu gram)" 'BEGIN{
	printf "speedup_vs_numpy %.1fx wall (goal >= 10x), %.1fx CPU time\n", n / g, (gc > 0 ? nc / gc : 0)
	printf "speedup_vs_gram_evr %.2fx\nspeedup_vs_dgesdd %.1fx\n", v / g, s / g}'
echo "(wall-clock ratios move with the machine's load: $(cut -d' ' -f1-3 /proc/loadavg))"
