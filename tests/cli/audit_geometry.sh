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

# edges (tests/fixtures/geometry/edge, make.py edge()): a step-0 checkpoint's
# zero c_proj (64 x 64: dsyevr fills 64 eigenvalues) by every method, its
# group averaged over the other members and the count left out said
E=$G/edge
for m in gram gram-evr svd; do
	run supkit-audit geometry --method $m "$E/step0_d64.safetensors"
	expect_rc 0 "step-0 checkpoint (zero c_proj), --method $m"
	expect_out_contains "(3 of 4)" "--method $m: attn_square over the 3 nonzero of 4"
	expect_out_contains "(1 of 2)" "--method $m: mlp_rect over the 1 nonzero of 2"
done
run supkit-audit geometry --json "$E/zero_groups.safetensors"
expect_rc 0 "zero wte, OE table and value_embeds"
expect_out_contains '"n_undefined": 1' "--json: n_undefined"
tr -d ' \n' <"$TMP/.out" | grep -q '"oe_tables":{"mean_row_energy":[0-9.e-]*,"n":4,"n_undefined":1,"stable_rank":[0-9.]' &&
	ok "--json: oe_tables averaged over 3 of 4" || bad "--json: oe_tables averaged over 3 of 4"
tr -d ' \n' <"$TMP/.out" | grep -q '"wte":{"mean_row_energy":null,"n":1,"n_undefined":1,"stable_rank":null' &&
	ok "--json: a zero wte is null, 1 of 1 undefined" || bad "--json: a zero wte is null, 1 of 1 undefined"
run supkit-audit geometry "$E/zero_groups.safetensors"
expect_out_contains "n/a (n/a) 0 of 1" "table: zero wte"
expect_out_contains "k of n: the mean over the k" "table: the k of n note"
run supkit-audit geometry --json "$E/scaled_model.safetensors"
expect_rc 0 "matrices near 1e200 and 1e-170"
expect_out_contains '"fro_sq": null' "--json: an energy beyond float64 is null"
grep -q '"stable_rank": null' "$TMP/.out" && bad "--json: every stable rank defined" || ok "--json: every stable rank defined"
# finite q_tau whose exp() overflows: n/a, not nan
run supkit-audit geometry "$E/huge_qtau.safetensors"
expect_rc 0 "q_tau of 800"
grep -qi 'nan' <<<"$out" && bad "exp(q_tau) overflow: no nan printed" "$(grep -i nan <<<"$out" | head -2)" ||
	ok "exp(q_tau) overflow: no nan printed"
expect_out_contains "n/a" "exp(q_tau) overflow: n/a printed"

# NaN and infinities are bad input (exit 2): the tensor, how many, where the
# first is; every method; nothing written
for c in "nan_cfc transformer.h.1.mlp.c_fc.weight 3 [2, 5]" "inf_wte transformer.wte.weight 1 [4, 3]" \
	"nan_qtau q_tau 1 [1, 0, 2]" "neginf_x0 x0_lambdas 1 [1]"; do
	read -r f t k at <<<"$c"
	for m in gram gram-evr svd; do
		run supkit-audit geometry --json --method $m -o "$TMP/nf.json" "$E/$f.safetensors"
		expect_rc 2 "$f --method $m refused"
		expect_one_line_err "$f --method $m: one line"
		expect_err_contains "'$E/$f.safetensors': tensor '$t': $k non-finite value" "$f --method $m: file, tensor, count"
		expect_err_contains "the first at $at" "$f --method $m: where the first is"
		[[ -z "$out" ]] && ok "$f --method $m: nothing on stdout" || bad "$f --method $m: nothing on stdout"
		expect_no_file "$TMP/nf.json" "$f --method $m: no report written"
	done
done

# names and metadata that are not UTF-8 or hold a NUL (read as "a", a name
# "a\u0000evil" would digest as one named "a"): refused, the position named
run supkit-audit digest "$S/bad_name_nul.safetensors"
expect_rc 2 "digest: a name holding \\u0000 refused"
expect_err_contains "tensor name at byte 1 of the header holds a NUL character" "digest: the NUL name's position"
run supkit-audit geometry --json "$S/bad_metadata_utf8.safetensors"
expect_rc 2 "geometry: __metadata__ not UTF-8 refused"
expect_err_contains "__metadata__ value at byte 25 of the header is not valid UTF-8" "geometry: the value's position"
[[ -z "$out" ]] && ok "geometry: no JSON with invalid UTF-8" || bad "geometry: no JSON with invalid UTF-8"

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
