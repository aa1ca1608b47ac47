#!/usr/bin/env bash
# curve_cpu.sh: tests/gpu/curve.sh, the GPU's loss curve against the PyTorch
# reference (tests/reference/torch_curve.py), run whole on the CPU at a small
# size, so that the script and the reference keep reading the run that
# supkit train writes (a GPU run is the only other place they run): depth 2,
# T 256, 4 rows, 12 steps on the trainer tests' shards, supkit's CPU backend
# and PyTorch on the CPU, the same checks as on a GPU. Then the reference's
# config check: a value written another way (1e-08 for 1e-8) is the same
# number and passes; another number is refused with the key named. Skips
# without a python3 that imports torch.
. "$(dirname "$0")/lib.sh"
cd "$SUPKIT_ROOT"
if ! py=$(source tests/gpu/lib.sh && torch_py); then
	skip "the CPU curve against PyTorch" "no python3 with torch"
	finish
fi
mkdir -p "$TMP/data"
cp "$FIX"/train/data/*.bin "$TMP/data/"
vocab=$(sed -n 's/^vocab_size = //p' "$FIX/train/tiny.cfg")
printf '{ "vocab_size": %s }\n' "$vocab" >"$TMP/data/data.json"
run env CURVE_BACKEND=cpu CURVE_DEVICE=cpu CURVE_DEPTH=2 CURVE_SEQ=256 CURVE_ROWS=4 \
	CURVE_STEPS=12 CURVE_DATA="$TMP/data" CURVE_PY="$py" CURVE_KEEP="$TMP/keep" GPU_BIN="$SUPKIT_BIN" \
	bash tests/gpu/curve.sh
expect_rc 0 "curve.sh on the CPU exits 0"
expect_out_contains "6 passed, 0 failed, 0 skipped" "every check of curve.sh passes (the reference read the run)"
expect_out_contains "RESULT step0 supkit=" "the curves were compared"

# the reference's config check on the run's own config, rewritten
cfg="$TMP/keep/init/config.cfg"
if grep -q '^malt_eps = ' "$cfg" 2>/dev/null; then
	mkdir -p "$TMP/same" "$TMP/other"
	sed 's/^malt_eps = .*/malt_eps = 0.00000001/' "$cfg" >"$TMP/same/config.cfg"
	sed 's/^malt_eps = .*/malt_eps = 2e-8/' "$cfg" >"$TMP/other/config.cfg"
	run "$py" tests/reference/torch_curve.py --run "$TMP/same" --batches "$TMP/none" --mm fp32 \
		--device cpu -o "$TMP/same.json"
	if [[ "$errout" != *"only the baseline arm"* ]]; then ok "0.00000001 is malt_eps = 1e-8, written another way"
	else bad "0.00000001 is malt_eps = 1e-8, written another way" "refused"; fi
	run "$py" tests/reference/torch_curve.py --run "$TMP/other" --batches "$TMP/none" --mm fp32 \
		--device cpu -o "$TMP/other.json"
	expect_rc 2 "another malt_eps is refused"
	expect_err_contains "malt_eps = 2e-8: only the baseline arm is supported" "the refusal names the key and value"
else
	bad "the run's config.cfg holds malt_eps" "$cfg"
fi
finish
