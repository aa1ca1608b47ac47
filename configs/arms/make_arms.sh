#!/usr/bin/env bash
# make_arms.sh: write configs/arms/d6/<arm>.cfg and configs/arms/d8/<arm>.cfg, one per
# named arm (trainer/config.c, `supkit audit compute --list-arms`), each baseline.cfg with
# the arm's lines edited (and depth = 6 for d6), and the GNU diff of each against
# baseline.cfg as <arm>.diff (diff -u with fixed labels, so the output is reproducible).
#   bash configs/arms/make_arms.sh          (needs bin/supkit-audit and GNU diff)
# tests/cli/audit_compute.sh checks that every .cfg is baseline.cfg plus its .diff
# (with supkit replay) and that it parses to the same config as --depth N --arm NAME.
set -euo pipefail
cd "$(dirname "$0")/../.."
AUDIT=${AUDIT:-bin/supkit-audit}
base=configs/baseline.cfg
for depth in 6 8; do
	out=configs/arms/d$depth
	rm -rf "$out"
	mkdir -p "$out"
	"$AUDIT" compute --list-arms --json | /usr/bin/python3 -c '
import json, sys
for a in json.load(sys.stdin)["arms"]:
    print(a["name"] + "\t" + a["overrides"].replace("\n", ";"))' |
	while IFS=$'\t' read -r name overrides; do
		cfg=$out/$name.cfg
		cp "$base" "$cfg"
		edits=("arm = $name")
		[[ $depth == 8 ]] || edits+=("depth = $depth")
		IFS=';' read -ra ov <<<"$overrides"
		edits+=("${ov[@]}")
		for kv in "${edits[@]}"; do
			[[ -n "$kv" ]] || continue
			key=${kv%% =*}
			grep -q "^$key = \|^$key =\$" "$cfg" || { echo "make_arms: '$key' not in $base" >&2; exit 1; }
			sed -i "s|^$key =.*\$|$kv|" "$cfg"
		done
		sed -i "1s|.*|# $name at depth $depth: baseline.cfg with this arm's switches (make_arms.sh).|" "$cfg"
		diff -u --label a/configs/baseline.cfg --label "b/$cfg" "$base" "$cfg" >"$out/$name.diff" || [[ $? == 1 ]]
	done
done
echo "wrote $(ls configs/arms/d6/*.cfg configs/arms/d8/*.cfg | wc -l) arm configs and their diffs"
