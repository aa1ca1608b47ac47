#!/usr/bin/env bash
# audit_geometry.sh: `supkit audit geometry` and `supkit audit digest` end to
# end on the committed fixtures (tests/fixtures/geometry, made with numpy by
# make.py; tests/fixtures/safetensors, made byte by byte by make.py).
source "$(dirname "$0")/lib.sh"
G=$FIX/geometry
S=$FIX/safetensors
A=$G/runs/oe_joint_a/model.safetensors
B=$G/runs/oe_joint_b/model.safetensors
C=$G/runs/00_dense_native_seed41.safetensors

run supkit-audit geometry --help
expect_rc 0 "geometry --help exits 0"
expect_out_contains "--allow-missing" "geometry --help lists its options"

run supkit-audit geometry "$A" "$B" "$C"
expect_rc 0 "geometry on three checkpoints"
expect_out_contains "Table 4" "Table 4 printed"
expect_out_contains "Table 5a" "Table 5a printed"
expect_out_contains "Table 8b" "Table 8b printed"
expect_out_contains "12_oe_joint (n=2)" "arm from result.json and config averaged"
expect_out_contains "00_dense_native (n=1)" "arm from the file name, seed removed"
expect_out_contains "bands: planes c in [0, 3], [4, 11], [12, 15]" "q_tau bands for 16 planes"
# progress lines appear only after the progress interval (a loaded machine
# can get there): stderr holds nothing but such lines
noise=$(grep -v '^geometry: checkpoint [0-9]*/[0-9]*, matrix [0-9]*/[0-9]* [^ ]*$' <<<"$errout" | grep -c .)
[[ $noise == 0 ]] && ok "small checkpoints: nothing on stderr but progress lines" ||
	bad "small checkpoints: nothing on stderr but progress lines"

run supkit-audit geometry --json "$A" "$B" "$C"
expect_rc 0 "geometry --json"
cp "$TMP/.out" "$TMP/j1"
expect_out_contains '"arms"' "JSON has per-arm means"
expect_out_contains '"arm_source": "config"' "JSON says where the arm came from"
# options after the checkpoints, and -o writes the same record atomically
run supkit-audit geometry "$A" "$B" "$C" --json -o "$TMP/report.json"
expect_rc 0 "options after operands"
expect_same_file "$TMP/.out" "$TMP/j1" "--json is deterministic"
expect_same_file "$TMP/report.json" "$TMP/j1" "-o writes the --json record"
run supkit-audit geometry --json --method svd "$A"
expect_rc 0 "--method svd"
expect_out_contains '"method": "svd"' "method recorded"

# refusals: one line, the file and the tensor named, exit 2 (4 for system errors)
run supkit-audit geometry "$S/bad_overlap.safetensors"
expect_rc 2 "overlapping tensors refused"
expect_one_line_err "overlap: one line"
expect_err_contains "tensor 'b'" "overlap: tensor named"
run supkit-audit geometry "$S/bad_dtype.safetensors"
expect_rc 2 "unknown dtype refused"
expect_err_contains "bad_dtype.safetensors" "dtype: file named"
run supkit-audit geometry "$S/ref_small.safetensors"
expect_rc 2 "a file without the model's tensors refused"
expect_err_contains "needs it" "missing tensor: the table that needs it is named"
run supkit-audit geometry "$TMP/none.safetensors"
expect_rc 4 "missing file is a system error"
expect_one_line_err "missing file: one line"
run supkit-audit geometry --method fast "$A"
expect_rc 2 "bad --method refused"
run supkit-audit geometry
expect_rc 2 "no checkpoint is a usage error"
run supkit-audit geometry --json -o "$TMP/no/such/dir/r.json" "$A"
expect_rc 4 "unwritable -o is a system error"
expect_no_file "$TMP/no/such/dir/r.json" "no half-written report"

# a checkpoint of our own trainer (names drift between trainer and audit shows here)
if command -v supkit-train >/dev/null && [[ -f "$FIX/train/tiny.cfg" ]]; then
	sets=(--set oe=1 --set oe_m=101 --set qk_scale=pair --set wte_lambdas=1 --set out_lambdas=1 --set depth=4)
	run supkit-train "$FIX/train/tiny.cfg" --set data_dir="$FIX/train/data" "${sets[@]}" --set steps=3 \
		--set arm=12do_oe_decoupled_x0_out --quiet -o "$TMP/run"
	expect_rc 0 "trainer run for the geometry audit"
	run supkit-audit geometry --json "$TMP/run/model.safetensors"
	expect_rc 0 "geometry of a trainer checkpoint"
	expect_out_contains '"arm_source": "metadata"' "arm from the checkpoint's metadata"
	expect_out_contains '"layout": "pair"' "q_tau profile of a trainer checkpoint"
	expect_out_contains '"oe_tables": {' "OE tables of a trainer checkpoint"
else
	skip "geometry of a trainer checkpoint" "supkit-train not built"
fi

# digest: same weights, same digest (header order, layout, padding ignored);
# the value is the one make.py computed in Python
want=$(grep -o '"digest": "[0-9a-f]*"' "$S/expected.json" | head -1 | cut -d'"' -f4)
run supkit-audit digest "$S/ref_small.safetensors" "$S/ref_reordered.safetensors"
expect_rc 0 "digest of two files"
d1=$(sed -n 1p <<<"$out" | cut -d' ' -f1)
d2=$(sed -n 2p <<<"$out" | cut -d' ' -f1)
[[ -n "$want" && "$d1" == "$want" ]] && ok "digest equals Python's" || bad "digest equals Python's" "$d1 vs $want"
[[ "$d1" == "$d2" ]] && ok "reordered file: same digest" || bad "reordered file: same digest"
run supkit-audit digest "$A" "$B"
[[ $(cut -d' ' -f1 <<<"$out" | sort -u | wc -l) == 2 ]] && ok "different weights: different digests" || bad "different weights: different digests"
run supkit-audit digest --json "$S/ref_small.safetensors"
expect_rc 0 "digest --json"
expect_out_contains "\"digest\": \"$want\"" "digest --json carries the digest"
run supkit-audit digest "$S/bad_truncated.safetensors" "$S/ref_small.safetensors"
expect_rc 2 "digest: a bad file makes the exit 2"
expect_out_contains "$want" "digest: the good file is still digested"
expect_err_contains "beyond the data" "digest: the bad file's error"
run supkit-audit digest --help
expect_rc 0 "digest --help exits 0"
finish
