#!/usr/bin/env bash
# bench_data.sh: encoding throughput of `supkit data encode` against
# js-tiktoken (the pure-JS tiktoken port) on the same text, with the same
# cl100k_base ranks and split pattern, as MB/s and a ratio. js-tiktoken is
# installed with npm into $BUILD/bench/node_modules at bench time (skipped
# with a message when npm or the registry is unreachable). Text: the Brown
# demo corpus when it is in the cache, else tests/fixtures/data/sample.txt
# repeated to ~4 MB. Our time excludes loading the ranks (an empty file is
# encoded first and its time subtracted). Asserts nothing.
set -uo pipefail
BUILD=${BUILD:-build}
ROOT=${SUPKIT_ROOT:-$(pwd)}
mkdir -p "$BUILD/bench"
BUILD=$(cd "$BUILD" && pwd)
W=$(mktemp -d "$BUILD/bench/data.XXXXXX")
trap 'rm -rf "$W"' EXIT
RANKS=$ROOT/tests/fixtures/data/cl100k_base.tiktoken.gz
cache=${SUPKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/supkit}
if compgen -G "$cache/brown/text/c*.txt" >/dev/null; then
	cat "$cache"/brown/text/c*.txt >"$W/text.txt"; src="Brown corpus"
else
	for ((i = 0; i < 2000; i++)); do cat "$ROOT/tests/fixtures/data/sample.txt"; echo; done >"$W/text.txt"; src="sample.txt x2000"
fi
bytes=$(stat -c %s "$W/text.txt")
PAT="(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
ns() { date +%s%N; }
: >"$W/empty.txt"
t0=$(ns); supkit-data encode --ranks "$RANKS" --pattern "$PAT" -o "$W/e.ids" "$W/empty.txt" || { echo "bench_data: encode failed"; exit 1; }
t1=$(ns); supkit-data encode --ranks "$RANKS" --pattern "$PAT" -o "$W/ours.ids" "$W/text.txt" || { echo "bench_data: encode failed"; exit 1; }
t2=$(ns)
ours_s=$(awk -v a=$((t2 - t1)) -v b=$((t1 - t0)) 'BEGIN { s = (a - b) / 1e9; if (s < 1e-3) s = 1e-3; print s }')
ours_mbs=$(awk -v n="$bytes" -v s="$ours_s" 'BEGIN { printf "%.2f", n / 1e6 / s }')
echo "text: $src, $bytes bytes; ours: $(wc -l <"$W/ours.ids") ids, ${ours_s}s, $ours_mbs MB/s"
NM=$BUILD/bench
if [[ ! -d "$NM/node_modules/js-tiktoken" ]]; then
	if ! command -v npm >/dev/null || ! (cd "$NM" && { [[ -f package.json ]] || npm init -y >/dev/null; } &&
		timeout 120 npm install --no-audit --no-fund js-tiktoken@1.0.21 >/dev/null 2>&1); then
		echo "bench_data: skipped js-tiktoken comparison (npm or the registry unreachable)"
		exit 0
	fi
fi
cat >"$W/js.cjs" <<'JS'
const { getEncoding } = require(process.argv[2] + "/node_modules/js-tiktoken");
const fs = require("fs");
const text = fs.readFileSync(process.argv[3], "utf8");
const enc = getEncoding("cl100k_base");
enc.encode("warm up");
const t0 = process.hrtime.bigint();
const ids = enc.encode(text);
const s = Number(process.hrtime.bigint() - t0) / 1e9;
console.log(ids.length, s);
JS
read -r js_n js_s < <(node "$W/js.cjs" "$NM" "$W/text.txt") || { echo "bench_data: js-tiktoken failed"; exit 0; }
js_mbs=$(awk -v n="$bytes" -v s="$js_s" 'BEGIN { printf "%.2f", n / 1e6 / s }')
echo "js-tiktoken: $js_n ids, ${js_s}s, $js_mbs MB/s"
awk -v a="$ours_mbs" -v b="$js_mbs" 'BEGIN { printf "ratio ours / js-tiktoken: %.2f\n", a / b }'
