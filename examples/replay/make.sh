#!/usr/bin/env bash
# make.sh: make the demo's diffs file, examples/replay/diffs.json, with GNU
# diff, sha256sum and python3's json module (independent of supkit). Four runs,
# each a small edit of baseline/train.py, made in a temporary folder:
#   muon_lr          a larger matrix learning rate and a longer cooldown
#   no_value_embeds  the value-embedding arm switched off (a comment removed)
#   relu2_to_gelu    the MLP activation changed, a comment line added
#   seed42_windows   another seed, saved with CRLF line endings and no final newline
# Labels are fixed with --label so that the file is the same on every run.
# Replay it with:
#   supkit replay run --baseline examples/replay/baseline/train.py examples/replay/diffs.json -o /tmp/runs
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base=$here/baseline/train.py
mkdir -p "$tmp/baseline" "$tmp/muon_lr" "$tmp/no_value_embeds" "$tmp/relu2_to_gelu" "$tmp/seed42_windows"
cp "$base" "$tmp/baseline/train.py"
sed -e 's/    lr_matrix: float = 0.02/    lr_matrix: float = 0.04/' \
	-e 's/    cooldown_frac: float = 0.4/    cooldown_frac: float = 0.5/' "$base" >"$tmp/muon_lr/train.py"
sed -e 's/    value_embeds: bool = True/    value_embeds: bool = False/' \
	-e '/# constant after warmup, linear cooldown/d' "$base" >"$tmp/no_value_embeds/train.py"
sed -e 's/return self.c_proj(F.relu(self.c_fc(x)).square())/return self.c_proj(F.gelu(self.c_fc(x)))/' \
	-e '/^class MLP(nn.Module):/a\    # GELU instead of ReLU squared (the activation arm)' "$base" >"$tmp/relu2_to_gelu/train.py"
sed -e 's/    seed: int = 0/    seed: int = 42/' -e 's/$/\r/' "$base" | head -c -1 >"$tmp/seed42_windows/train.py"
cd "$tmp"
for r in muon_lr no_value_embeds relu2_to_gelu seed42_windows; do
	cmp -s baseline/train.py $r/train.py && { echo "make.sh: $r is not an edit" >&2; exit 1; }
	{ diff -U 0 --label baseline/train.py --label $r/train.py baseline/train.py $r/train.py >$r.diff || (($? == 1)); }
	sha256sum $r/train.py | cut -d' ' -f1 >$r.sha
done
python3 - "$here/diffs.json" <<'PY'
import json, sys
runs = {}
for r in ['muon_lr', 'no_value_embeds', 'relu2_to_gelu', 'seed42_windows']:
    runs[r] = {'diff': open(r + '.diff', newline='').read(), 'sha256': open(r + '.sha').read().strip()}
with open(sys.argv[1], 'w', newline='') as f:
    json.dump(runs, f, indent=2, sort_keys=True)
    f.write('\n')
PY
echo "wrote $here/diffs.json"
