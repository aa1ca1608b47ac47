#!/usr/bin/env bash
# eval.sh: supkit eval end to end. On a run's own checkpoint it gives the
# run's val_bpb and heldout_bpb bit for bit (run folder, model.safetensors,
# a copy named as torch.compile names a state_dict); on a checkpoint PyTorch
# made (tests/fixtures/eval/make.py: names from PyTorch modules, no config)
# it gives PyTorch's own loss and BPB on the same tokens to fp32 rounding;
# torch.compile's _orig_mod. prefix in init_from and audit digest; refusals
# (a PyTorch pickle, mixed names, a config that is not the run's, shards or
# token_bytes of another vocabulary), each one line with its exit status.
source "$(dirname "$0")/lib.sh"
D="$FIX/train/data"
CFG="$FIX/train/tiny.cfg"
E="$FIX/eval"
num() { grep -o "\"$2\": *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//'; }
# a JSON object's member (one level) of stdout: seg_num SEGMENT KEY
seg_num() { tr -d ' \n' <<<"$out" | grep -o "\"$1\":{[^}]*" | grep -o "\"$2\":[-0-9.e+]*" | cut -d: -f2; }

# A copy of safetensors file $1 at $2 whose tensor names matching the
# extended regex $3 (default: all) carry torch.compile's "_orig_mod."
# prefix: the header rewritten (and padded to 8 again), the data as it is.
le64() { local i; for i in 0 1 2 3 4 5 6 7; do printf "\\$(printf %03o $((($1 >> (8 * i)) & 255)))"; done; }
prefix_copy() {
	local LC_ALL=C n hdr new
	n=$(od -An -tu8 -N8 "$1" | tr -d ' ')
	hdr=$(head -c $((8 + n)) "$1" | tail -c "$n")
	new=$(sed -E "s/\"(${3:-[^\"]*})\":\\{\"(data_offsets|dtype)\"/\"_orig_mod.\\1\":{\"\\2\"/g" <<<"$hdr")
	new=$(sed -E 's/ +$//' <<<"$new")
	while ((${#new} % 8)); do new+=" "; done
	{ le64 "${#new}"; printf '%s' "$new"; tail -c +$((9 + n)) "$1"; } >"$2"
}

run supkit eval --help
expect_rc 0 "--help exits 0"
expect_out_contains "CHECKPOINT" "--help names the operand"
run supkit eval
expect_rc 2 "no CHECKPOINT: exit 2"
run supkit eval "$TMP/none"
expect_rc 2 "a missing checkpoint is bad input (2)"
expect_err_contains "cannot open '$TMP/none'" "the error names the file"

# 1. a run's own checkpoint: the run's figures, bit for bit
supkit train "$CFG" --set data_dir="$D" --set steps=20 --quiet -o "$TMP/run" >/dev/null 2>&1
R=$TMP/run
vb=$(num "$R/result.json" val_bpb) hb=$(num "$R/result.json" heldout_bpb) vp=$(num "$R/result.json" val_passes)
run supkit eval -q --json "$R"
expect_rc 0 "eval of a run folder exits 0"
if [[ -n "$vb" && "$(num "$TMP/.out" val_bpb)" == "$vb" && "$(num "$TMP/.out" heldout_bpb)" == "$hb" ]]
then ok "run folder: val_bpb and heldout_bpb equal result.json's ($vb, $hb)"
else bad "run folder: val_bpb and heldout_bpb equal result.json's" "result.json $vb $hb, eval $(num "$TMP/.out" val_bpb) $(num "$TMP/.out" heldout_bpb)"; fi
[[ "$(num "$TMP/.out" val_passes)" == "$vp" ]] && ok "val_passes equals result.json's" || bad "val_passes equals result.json's"
expect_out_contains '"config_from": "run"' "the run folder's config.cfg is used"
if [[ "$(seg_num val targets)" == 2048 && "$(seg_num heldout targets)" == 2048 ]]
then ok "eval_tokens and heldout_tokens targets evaluated"; else bad "eval_tokens and heldout_tokens targets evaluated" "$out"; fi
run supkit eval -q --json "$R/model.safetensors"
[[ "$(num "$TMP/.out" val_bpb)" == "$vb" ]] && ok "model.safetensors named directly: the same val_bpb" \
	|| bad "model.safetensors named directly: the same val_bpb" "$out"
# an fp64 run: model.safetensors holds its exact F64 weights, so its figures too
supkit train "$CFG" --set data_dir="$D" --set steps=6 --set dtype=fp64 --quiet -o "$TMP/run64" >/dev/null 2>&1
vb64=$(num "$TMP/run64/result.json" val_bpb) hb64=$(num "$TMP/run64/result.json" heldout_bpb)
run supkit eval -q --json "$TMP/run64"
if [[ -n "$vb64" && "$(num "$TMP/.out" val_bpb)" == "$vb64" && "$(num "$TMP/.out" heldout_bpb)" == "$hb64" ]]
then ok "fp64 run: val_bpb and heldout_bpb equal result.json's bit for bit ($vb64, $hb64)"
else bad "fp64 run: val_bpb and heldout_bpb equal result.json's" "result.json $vb64 $hb64, eval $(num "$TMP/.out" val_bpb) $(num "$TMP/.out" heldout_bpb)"; fi
SUPKIT_PROGRESS_INTERVAL=0 run supkit eval "$R"
expect_rc 0 "eval with progress exits 0"
expect_err_contains "eval: 4096 targets" "progress lines on stderr, to the last target"
if grep -qE "^val +2048 +[0-9]+ +[0-9.]+ +$(printf %.6f "$vb")\$" <<<"$out"; then ok "the table shows val's targets and BPB to 6 places"
else bad "the table shows val's targets and BPB to 6 places" "$out"; fi

# 2. torch.compile's names: the same figures, the same digest, the same init_from
mkdir -p "$TMP/c"
prefix_copy "$R/model.safetensors" "$TMP/c/compiled.safetensors"
run supkit eval -q --json --config "$R/config.cfg" "$TMP/c/compiled.safetensors"
expect_rc 0 "eval of a _orig_mod. copy exits 0"
if [[ "$(num "$TMP/.out" val_bpb)" == "$vb" && "$(num "$TMP/.out" heldout_bpb)" == "$hb" ]]
then ok "_orig_mod. names: the run's figures bit for bit"; else bad "_orig_mod. names: the run's figures bit for bit" "$out"; fi
run supkit audit digest "$R/model.safetensors" "$TMP/c/compiled.safetensors"
d1=$(sed -n 1p <<<"$out" | cut -c1-64) d2=$(sed -n 2p <<<"$out" | cut -c1-64)
if [[ -n "$d1" && "$d1" == "$d2" ]] && ! cmp -s "$R/model.safetensors" "$TMP/c/compiled.safetensors"
then ok "audit digest: a _orig_mod. copy has the plain file's digest"; else bad "audit digest: a _orig_mod. copy has the plain file's digest" "$out"; fi
for v in plain compiled; do
	f=$R/model.safetensors
	[[ $v == compiled ]] && f=$TMP/c/compiled.safetensors
	supkit train "$CFG" --set data_dir="$D" --set steps=3 --set init_from="$f" --quiet -o "$TMP/init_$v" >/dev/null 2>&1
done
run supkit audit digest "$TMP/init_plain/model.safetensors" "$TMP/init_compiled/model.safetensors"
d1=$(sed -n 1p <<<"$out" | cut -c1-64) d2=$(sed -n 2p <<<"$out" | cut -c1-64)
if [[ "$rc" == 0 && -n "$d1" && "$d1" == "$d2" ]]; then ok "init_from: a _orig_mod. copy trains the same weights"
else bad "init_from: a _orig_mod. copy trains the same weights" "$out"; fi
prefix_copy "$R/model.safetensors" "$TMP/c/mixed.safetensors" 'transformer\.h\.[^"]*'
run supkit eval -q --config "$R/config.cfg" "$TMP/c/mixed.safetensors"
expect_rc 2 "eval: a file mixing _orig_mod. and plain names exits 2"
expect_err_contains "mixes a compiled model's names with plain ones" "the refusal says the names are mixed"
expect_one_line_err "mixed names: one line"
run supkit train "$CFG" --set data_dir="$D" --set steps=3 --set init_from="$TMP/c/mixed.safetensors" --quiet -o "$TMP/init_mixed"
expect_rc 2 "init_from: a file mixing _orig_mod. and plain names exits 2"
expect_err_contains "mixed.safetensors': tensor '_orig_mod.transformer.h." "the refusal names the file and a tensor"
expect_no_file "$TMP/init_mixed" "init_from refused: no run folder"

# 3. a checkpoint PyTorch wrote, without a config: PyTorch's own figures
sets=()
while read -r kv; do sets+=(--set "$kv"); done < <(tr -d ' \n' <"$E/expected.json" | grep -o '"set":\[[^]]*' | cut -d[ -f2 | tr -d '"' | tr , '\n')
run supkit data batches -q --seed 0 --seq-len 64 --batch-rows 4 --count 16 -o "$TMP/b.bin" "$D/val_0000.bin"
want=$(tr -d ' \n' <"$E/expected.json" | grep -o '"batches_sha256":"[0-9a-f]*' | cut -d'"' -f4)
[[ -n "$want" && "$(sha256sum "$TMP/b.bin" | cut -c1-64)" == "$want" ]] && ok "PyTorch's rows are the loader's (supkit data batches)" \
	|| bad "PyTorch's rows are the loader's (supkit data batches)"
close() { # a b: |a - b| <= 1e-5 |b|
	awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(a != "" && d <= 1e-5 * m) }'
}
tjson() { tr -d ' \n' <"$E/expected.json" | grep -o "\"$1\":{[^}]*" | grep -o "\"$2\":[-0-9.e+]*" | cut -d: -f2; }
# the PyTorch reference with the benchmark's bf16 logits (the default) and
# with fp32 logits (logits=fp32): each against its own figures
for f in torch_model compiled torch_model/fp32; do
	src=$E/torch_model.safetensors lg=() sfx=""
	[[ $f == compiled ]] && { prefix_copy "$src" "$TMP/c/torch_compiled.safetensors"; src=$TMP/c/torch_compiled.safetensors; }
	[[ $f == */fp32 ]] && { lg=(--set logits=fp32); sfx=_fp32; }
	run supkit eval -q --json --data "$D" --threads 1 "${sets[@]}" "${lg[@]}" "$src"
	expect_rc 0 "eval of the PyTorch checkpoint ($f) exits 0"
	expect_out_contains '"config_from": "inferred"' "$f: the model's shape inferred from the tensors"
	for s in val heldout; do
		for k in loss bpb; do
			a=$(seg_num "$s" "$k") b=$(tjson "$s$sfx" "$k")
			if close "$a" "$b"; then ok "$f: $s $k equals PyTorch's to fp32 rounding ($a vs $b)"
			else bad "$f: $s $k equals PyTorch's to fp32 rounding" "supkit '$a', PyTorch '$b'"; fi
		done
		for k in targets text_targets bytes; do
			a=$(seg_num "$s" "$k") b=$(tjson "$s$sfx" "$k")
			[[ -n "$a" && "$a" == "$b" ]] && ok "$f: $s $k equals PyTorch's ($a)" || bad "$f: $s $k equals PyTorch's" "supkit '$a', PyTorch '$b'"
		done
	done
	[[ $f == torch_model ]] && plain_out=$out
	[[ $f == compiled ]] && compiled_out=$out
done
out=$compiled_out
[[ "$(tr -d ' \n' <<<"$plain_out" | grep -o '"val":{[^}]*')" == "$(tr -d ' \n' <<<"$out" | grep -o '"val":{[^}]*')" ]] \
	&& ok "PyTorch checkpoint: _orig_mod. names give the same figures bit for bit" \
	|| bad "PyTorch checkpoint: _orig_mod. names give the same figures bit for bit"
run supkit eval --print-config --set seq_len=64 "$E/torch_model.safetensors"
expect_rc 0 "--print-config of an inferred config exits 0"
for kv in "depth = 2" "model_dim = 32" "head_dim = 16" "vocab_size = 512" "ve_gate_channels = 32"; do
	grep -qx "$kv" <<<"$out" && ok "inferred: $kv" || bad "inferred: $kv" "$out"
done

# 4. refused
run supkit eval "$FIX/safetensors/torch_zip.pt"
expect_rc 2 "a torch.save file exits 2"
expect_err_contains "this is a PyTorch pickle, not safetensors: save with safetensors.torch.save_file" "a .pt file is named as a PyTorch pickle"
expect_one_line_err "a .pt file: one line"
mkdir -p "$TMP/edited"
cp "$R/model.safetensors" "$TMP/edited/"
{ cat "$R/config.cfg"; echo "# edited"; } >"$TMP/edited/config.cfg"
run supkit eval -q "$TMP/edited"
expect_rc 2 "a run folder whose config.cfg is not the checkpoint's exits 2"
expect_err_contains "config_sha256" "the refusal names the checkpoint's config_sha256"
run supkit eval -q --config "$TMP/edited/config.cfg" "$TMP/edited"
expect_rc 0 "--config takes the config as given"
mkdir -p "$TMP/d300"
cp "$FIX/loader/a.bin" "$TMP/d300/val_0000.bin"
cp "$D/token_bytes.bin" "$TMP/d300/"
run supkit eval -q --data "$TMP/d300" "$R"
expect_rc 2 "shards of another vocabulary exit 2"
expect_err_contains "val_0000.bin': a shard for vocab size 300, the config says 512" "the refusal names the shard and both sizes"
mkdir -p "$TMP/notb"
cp "$D/val_0000.bin" "$TMP/notb/"
run supkit eval -q --data "$TMP/notb" "$R"
expect_rc 2 "no token_bytes.bin exits 2"
expect_err_contains "token_bytes.bin" "the refusal names token_bytes.bin"
run supkit eval -q --data "$TMP/c" "$R"
expect_rc 2 "a folder without val shards exits 2"
expect_err_contains "holds no val_*.bin shards" "the refusal says there are no val shards"
run supkit eval -q --set eval_tokens=0 --set heldout_tokens=0 "$R"
expect_rc 2 "nothing to evaluate exits 2"
run supkit eval -q "$TMP/c"
expect_rc 2 "a folder that is not a run exits 2"
expect_err_contains "holds no model.safetensors" "the refusal says what is missing"
finish
