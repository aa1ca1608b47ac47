#!/usr/bin/env bash
# make-figures.sh: the README's example figure, docs/plot-stats.png: supkit
# plot stats on supkit audit stats of the papers' records in
# tests/fixtures/stats (22 paired contrasts at depths 6 and 8). Run after a
# build, from anywhere: BIN=dir (default bin) names the tools' folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BIN/supkit-audit" stats --names "$root/tests/fixtures/stats/paper.rules" --json -o "$tmp/stats.json" \
	"$root/tests/fixtures/stats/paper_results.json" 2>/dev/null
"$BIN/supkit-plot" stats "$tmp/stats.json" --dpi 96 \
	--title "Paired contrasts of the papers' records (tests/fixtures/stats)" -o "$root/docs/plot-stats.png"
