#!/usr/bin/env bash
# verify.sh: supkit verify re-derives a supplement. A supplement is made the
# demo's way (scripts/demo.sh: two arms, two seeds, every audit with its
# derivation record, claims files for the tables, a baseline plus diffs,
# pack) at the trainer tests' tiny size (tests/fixtures/train), with the
# step-0 audit's shard packed. Untampered it verifies, every number
# re-derived; with one number of each kind of derived entry changed (and
# the supplement repacked so the hashes agree), verify names exactly that
# number and exits 1. Also: records with inputs the supplement lacks, hostile
# records, the --data re-scoring hook, --json.
source "$(dirname "$0")/lib.sh"
D="$FIX/train/data"
CFG="$FIX/train/tiny.cfg"
work=$TMP/demo
supp=$work/supplement
mkdir -p "$supp/configs" "$supp/results" "$supp/audit" "$supp/claims" "$supp/checkpoints" "$supp/data" "$work/runs"
cp -r "$D" "$work/data"
cp "$D/train_0000.bin" "$supp/data/"   # the token sample the step-0 audit reads

# --- the supplement, made the demo's way -------------------------------------
size=(--set depth=2 --set model_dim=64 --set head_dim=32 --set vocab_size=512 --set seq_len=64
	--set batch_rows=4 --set grad_accum=2 --set steps=6 --set warmup_steps=2 --set eval_tokens=2048
	--set heldout_tokens=2048 --set threads=1 --set backend=cpu --set data_dir=data)
made=1
for arm in 00_dense_native 01_dense_opt; do
	supkit train --print-config "$SUPKIT_ROOT/configs/arms/d8/$arm.cfg" "${size[@]}" >"$supp/configs/$arm.cfg" || made=0
	for seed in 42 43; do
		r=${arm}_s$seed
		(cd "$work" && supkit train "$supp/configs/$arm.cfg" --set seed=$seed --quiet -o "runs/$r") 2>/dev/null || made=0
		mkdir -p "$supp/results/$r"
		cp "$work/runs/$r/result.json" "$work/runs/$r/curve.jsonl" "$work/runs/$r/config.cfg" "$supp/results/$r/"
		cp "$work/runs/$r/model.safetensors" "$supp/checkpoints/$r.safetensors"
	done
done
supkit audit compute --json --claims "$supp/claims/compute.json" "$supp/configs/00_dense_native.cfg" \
	"$supp/configs/01_dense_opt.cfg" >"$supp/audit/compute.json" || made=0
(cd "$work" && supkit audit geometry -q --json runs/*/model.safetensors) >"$supp/audit/geometry.json" || made=0
(cd "$work" && supkit audit geometry -q --spectrum --json runs/*/model.safetensors) \
	>"$supp/audit/geometry_spectra.json" || made=0
(cd "$supp" && supkit audit step0 -q --json --tokens 64 --config configs/00_dense_native.cfg --data data) \
	>"$supp/audit/step0.json" || made=0
(cd "$supp" && supkit audit trajectory -q --steps 2 --config configs/00_dense_native.cfg --data data \
	-o audit/trajectory.json) >/dev/null || made=0
supkit audit stats --json -o "$supp/audit/stats.json" --claims "$supp/claims/stats.json" "$work/runs" || made=0
(cd "$supp" && supkit audit digest -o audit/digests.json checkpoints/*.safetensors) >/dev/null || made=0
cp "$supp/configs/00_dense_native.cfg" "$supp/baseline.cfg"
supkit replay diff --relative-to "$supp" "$supp/baseline.cfg" "$supp"/results/*/config.cfg \
	$(for r in "$supp"/results/*/; do printf -- '-n %s ' "$(basename "$r")"; done) -o "$supp/diffs.json" || made=0
((made)) && ok "a supplement made the demo's way" || bad "a supplement made the demo's way"

run supkit pack "$supp" -o "$TMP/s.zip"
expect_rc 0 "pack it"
expect_out_contains "13 derived entries recorded" "pack records 13 derivations (7 audits, 2 claims files, 4 run records)"
[[ -z "$errout" ]] && ok "pack: no note (every input packed)" || bad "pack: no note (every input packed)"
if have_unzip=$(command -v unzip); then
	unzip -p "$TMP/s.zip" manifest.json >"$TMP/m.json"
	grep -q '"format_version": 2' "$TMP/m.json" && ok "the manifest is format 2" || bad "the manifest is format 2"
	grep -q '"entry": "checkpoints/00_dense_native_s42.safetensors"' "$TMP/m.json" &&
		ok "geometry's input runs/00_dense_native_s42/model.safetensors found as its packed copy" ||
		bad "geometry's input found as its packed copy"
	grep -q '"kind": "run"' "$TMP/m.json" && ok "run records recorded" || bad "run records recorded"
	if grep -q '/tmp\|'"$TMP" "$TMP/m.json"; then bad "the manifest holds no path of this machine"
	else ok "the manifest holds no path of this machine"; fi
else skip "the manifest's records" "unzip not installed"; fi

# --- the audits read their own records back ----------------------------------
run supkit audit compute --check "$supp/audit/compute.json"
expect_rc 0 "audit compute --check SUPPLEMENT/audit/compute.json: exit 0"
if grep -qE '^[1-9][0-9]* figures compared, 0 disagree' <<<"$out"; then
	ok "audit compute --check of the demo's record: $(grep -oE '^[0-9]+ figures' <<<"$out") compared, none disagrees"
else bad "audit compute --check of the demo's record: none disagrees" "$out"; fi
run supkit audit stats --check "$supp/audit/stats.json" "$supp/results"
expect_rc 0 "audit stats --check SUPPLEMENT/audit/stats.json SUPPLEMENT/results: exit 0"
if grep -qE '^[0-9]+ figures: [0-9]+ ok, 0 rounding, 0 inconsistent, 0 missing$' <<<"$out"; then
	ok "audit stats --check of the demo's record: every figure ok"
else bad "audit stats --check of the demo's record: every figure ok" "$out"; fi

# --- untampered: every number re-derived, all agree ---------------------------
run supkit verify -q "$TMP/s.zip"
expect_rc 0 "verify the untampered supplement: exit 0"
last=$(tail -n 1 <<<"$out")
if grep -qE '^verified: .*; [0-9]+ numbers re-derived, all agree$' <<<"$last"; then ok "last line: the numbers re-derived, all agree"
else bad "last line: the numbers re-derived, all agree" "$last"; fi
n=$(grep -oE '[0-9]+ numbers re-derived' <<<"$last" | cut -d' ' -f1)
if [[ -n "$n" ]] && ((n > 500)); then ok "hundreds of numbers re-derived ($n)"; else bad "hundreds of numbers re-derived" "$n"; fi
if grep -q '^derived \|^not \|^partly ' <<<"$out"; then bad "nothing disagrees, nothing left out" "$out"
else ok "nothing disagrees, nothing left out"; fi
expect_out_contains "re-scoring: not run: re-scoring needs --data DIR (val_bpb and heldout_bpb of 4 run records)" \
	"the re-scoring is said not run"
run supkit verify -q --no-rederive "$TMP/s.zip"
expect_rc 0 "--no-rederive: exit 0"
grep -q '^re-derived:' <<<"$out" && bad "--no-rederive: no re-derivation" || ok "--no-rederive: no re-derivation"

# --- one number changed in each kind of derived entry ---------------------------
tamper() { # label, entry, sed program, expected "entry  where" of the one finding
	rm -rf "$TMP/t" "$TMP/t.zip"
	cp -r "$supp" "$TMP/t"
	sed -i -e "$3" "$TMP/t/$2"
	if cmp -s "$TMP/t/$2" "$supp/$2"; then bad "$1: the edit changed '$2'"; return; fi
	supkit pack -q "$TMP/t" -o "$TMP/t.zip" >/dev/null 2>&1
	run supkit verify -q "$TMP/t.zip"
	expect_rc 1 "$1: exit 1"
	local lines
	lines=$(grep '^derived ' <<<"$out")
	if [[ $(grep -c '' <<<"$lines") == 1 ]] && grep -qF "derived  $4: published " <<<"$lines"; then
		ok "$1: exactly that number named"
	else bad "$1: exactly that number named" "$(head -c 600 <<<"$lines")"; fi
}
tamper "compute audit" audit/compute.json '0,/"per_token": [0-9]*/s//"per_token": 999/' \
	"audit/compute.json  arms[0].flops.per_token"
tamper "stats audit" audit/stats.json '0,/"mean": [-0-9.e]*/s//"mean": 1.9/' "audit/stats.json  cells[0].heldout.mean"
tamper "geometry audit" audit/geometry.json '0,/"stable_rank": [0-9.e]*/s//"stable_rank": 3.5/' \
	"audit/geometry.json  arms.00_dense_native.table4.attn_square.stable_rank"
tamper "geometry audit with --spectrum" audit/geometry_spectra.json \
	'/"singular_values": \[/{n;s/[0-9][0-9.e+-]*/123.5/;:a;n;ba}' \
	"audit/geometry_spectra.json  checkpoints[0].matrices[\"lm_head.weight\"].singular_values[0]"
tamper "step-0 audit" audit/step0.json '0,/"loss": [0-9.e]*/s//"loss": 5.5/' "audit/step0.json  closed_form[0].loss"
tamper "trajectory audit" audit/trajectory.json '0,/"loss": [0-9.e]*/s//"loss": 5.5/' \
	"audit/trajectory.json  modes[0].steps[0].loss"
tamper "digest audit" audit/digests.json '0,/"digest": "./s//"digest": "X/' \
	'audit/digests.json  checkpoints["checkpoints/00_dense_native_s42.safetensors"].digest'
tamper "run record (curve)" results/01_dense_opt_s43/result.json 's/"final_loss": [0-9.e]*/"final_loss": 4.5/' \
	"results/01_dense_opt_s43/result.json  final_loss"
tamper "run record (accounting)" results/00_dense_native_s43/result.json 's/"num_params": [0-9]*/"num_params": 1000/' \
	"results/00_dense_native_s43/result.json  num_params"
tamper "stats claims" claims/stats.json '0,/"value": "[0-9.]*"/s//"value": "9.999999"/' \
	"claims/stats.json  claims[0] (per-cell table: row d2/00_dense_native, seed 42, validation BPB)"
tamper "compute claims" claims/compute.json '0,/"value": "[0-9,]*"/s//"value": "7"/' \
	"claims/compute.json  claims[0] (compute table: row d2 00_dense_native, column backbone)"
# a checkpoint's digest in the manifest: a folder supplement, its manifest edited
rm -rf "$TMP/f"
mkdir "$TMP/f"
if [[ -n "$have_unzip" ]]; then
	(cd "$TMP/f" && unzip -q "$TMP/s.zip")
	sed -i '0,/"safetensors_digest": "./s//"safetensors_digest": "0/' "$TMP/f/manifest.json"
	run supkit verify -q "$TMP/f"
	expect_rc 1 "checkpoint digest: exit 1"
	lines=$(grep '^derived ' <<<"$out")
	if [[ $(grep -c '' <<<"$lines") == 1 ]] &&
		grep -q '^derived  checkpoints/00_dense_native_s42.safetensors  safetensors_digest: published 0' <<<"$lines"; then
		ok "checkpoint digest: exactly that digest named"
	else bad "checkpoint digest: exactly that digest named" "$lines"; fi
else skip "checkpoint digest" "unzip not installed"; fi

# a reviewer's case: a stats mean, flops.per_token and a val_bpb changed
rm -rf "$TMP/t"
cp -r "$supp" "$TMP/t"
sed -i '0,/"mean": [-0-9.e]*/s//"mean": 1.9/' "$TMP/t/audit/stats.json"
sed -i 's/"per_token": [0-9]*/"per_token": 999/' "$TMP/t/audit/compute.json"
sed -i 's/"val_bpb": [0-9.e]*/"val_bpb": 1.5/' "$TMP/t/results/01_dense_opt_s42/result.json"
supkit pack -q "$TMP/t" -o "$TMP/t.zip" >/dev/null 2>&1
run supkit verify -q --json "$TMP/t.zip"
expect_rc 1 "three numbers changed: exit 1"
grep -q '"where": "cells\[0\].heldout.mean"' <<<"$out" && ok "--json: the stats mean named" || bad "--json: the stats mean named"
grep -q '"where": "arms\[0\].flops.per_token"' <<<"$out" && ok "--json: flops.per_token named" || bad "--json: flops.per_token named"
if grep -q '"published": "2\.[0-9]*",' <<<"$out" && grep -q '"rederived": "1.5"' <<<"$out"; then
	ok "--json: the changed val_bpb shows in the stats it feeds (re-derived 1.5)"
else bad "--json: the changed val_bpb shows in the stats it feeds"; fi
grep -q 'holds other bytes than the derivation read' <<<"$out" && ok "--json: the changed input noted" ||
	bad "--json: the changed input noted"
grep -q '"verified": false' <<<"$out" && ok "--json: not verified" || bad "--json: not verified"

# --- a manifest of format 1 (no records): the derivations found in the entries ----
if [[ -n "$have_unzip" ]] && command -v python3 >/dev/null; then
	rm -rf "$TMP/v1"
	mkdir "$TMP/v1"
	(cd "$TMP/v1" && unzip -q "$TMP/s.zip")
	python3 - "$TMP/v1/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["format_version"] = 1
for e in m["entries"]:
    e.pop("derivation", None)
json.dump(m, open(sys.argv[1], "w"), indent=2, sort_keys=True)
PY
	run supkit verify -q "$TMP/v1"
	expect_rc 0 "a format-1 manifest: exit 0"
	expect_out_contains "(found in the entries: the manifest records none)" "a format-1 manifest: derivations found in the entries"
	grep -qE '; [0-9]+ numbers re-derived, all agree$' <<<"$out" && ok "a format-1 manifest: every number re-derived" ||
		bad "a format-1 manifest: every number re-derived" "$(tail -n 2 <<<"$out")"
	sed -i '0,/"per_token": [0-9]*/s//"per_token": 999/' "$TMP/v1/audit/compute.json"
	run supkit verify -q --no-replay "$TMP/v1"
	grep -q '^derived  audit/compute.json  arms\[0\].flops.per_token: published 999' <<<"$out" &&
		ok "a format-1 manifest: a changed number named (the entry changed too)" ||
		bad "a format-1 manifest: a changed number named" "$out"
else skip "a format-1 manifest" "unzip or python3 not installed"; fi

# --- inputs the supplement lacks ------------------------------------------------
rm -rf "$TMP/t"
cp -r "$supp" "$TMP/t"
rm -r "$TMP/t/data"
run supkit pack "$TMP/t" -o "$TMP/t.zip"
expect_err_contains "'audit/step0.json' was made from 'data/train_0000.bin', which is not in the supplement" \
	"pack notes the step-0 shard not packed"
run supkit verify -q "$TMP/t.zip"
expect_rc 0 "a derivation whose input is not packed: not a failure"
expect_out_contains "not      audit/step0.json  (supkit audit step0: step0: no token sample packed ('data/train_0000.bin'))" \
	"verify says why step0 is not re-derived"
expect_out_contains "not      audit/trajectory.json  (supkit audit trajectory: trajectory: no token sample packed ('data/train_0000.bin'))" \
	"and why trajectory is not"
expect_out_contains "(2 entries not fully re-derived)" "the last line counts them"

# compute claims name their arm, depth and set: re-derived without the config
mkdir -p "$TMP/cc/claims"
supkit audit compute --claims "$TMP/cc/claims/compute.json" "$supp/configs/01_dense_opt.cfg" >/dev/null
supkit pack -q "$TMP/cc" -o "$TMP/cc.zip" >/dev/null 2>&1
run supkit verify -q "$TMP/cc.zip"
expect_rc 0 "compute claims without their config packed: exit 0"
grep -q '; 6 numbers re-derived, all agree$' <<<"$out" && ok "compute claims without their config: all 6 re-derived" ||
	bad "compute claims without their config: all 6 re-derived" "$out"

# --- hostile records: no option verify does not run, no path outside ------------
if [[ -n "$have_unzip" ]]; then
	rm -rf "$TMP/h"
	mkdir "$TMP/h"
	(cd "$TMP/h" && unzip -q "$TMP/s.zip")
	sed -i 's|"args": \[|"args": ["-o", "x.json", |' "$TMP/h/manifest.json"
	run supkit verify -q "$TMP/h"
	expect_out_contains "its argument '-o' is not one supkit verify runs" "an output option in a record is refused"
	expect_no_file "$TMP/h/x.json" "nothing written"
	(cd "$TMP/h" && rm -rf ./* && unzip -q "$TMP/s.zip")
	sed -i '0,/"args": \[/s||"args": ["--runs", "../../etc", |' "$TMP/h/manifest.json"
	run supkit verify -q "$TMP/h"
	expect_out_contains "its path '../../etc' is not a safe relative path" "a path outside the scratch folder is refused"
else skip "hostile records" "unzip not installed"; fi

# --- --data: the re-scoring hook ------------------------------------------------
mkdir -p "$TMP/bin"
cp "$SUPKIT_BIN/supkit-verify" "$SUPKIT_BIN/supkit-audit" "$TMP/bin/"
run env PATH=/usr/bin:/bin "$TMP/bin/supkit-verify" -q --data "$work/data" "$TMP/s.zip"
expect_rc 0 "--data without supkit-eval: exit 0"
expect_out_contains "re-scoring: not run: supkit-eval not found (val_bpb and heldout_bpb of 4 run records)" \
	"--data without supkit-eval: said not run"
cat >"$TMP/bin/supkit-eval" <<EOF
#!/bin/sh
echo "\$*" >>"$TMP/eval.log"
echo '{"heldout_bpb": 3.25, "val_bpb": 2.5}'
EOF
chmod +x "$TMP/bin/supkit-eval"
run env PATH=/usr/bin:/bin "$TMP/bin/supkit-verify" -q --data "$work/data" "$TMP/s.zip"
expect_rc 1 "--data with an evaluation that disagrees: exit 1"
n=$(grep -c '^derived  results/.*/result.json  \(val\|heldout\)_bpb: published .*, re-derived \(2.5\|3.25\) \[within 1e-6 relative: the checkpoint re-scored by supkit eval\]' <<<"$out")
[[ "$n" == 8 ]] && ok "--data: each run's val_bpb and heldout_bpb compared with the re-scored ones" ||
	bad "--data: each run's val_bpb and heldout_bpb compared" "$n lines"
if [[ $(grep -c '' "$TMP/eval.log") == 4 ]] &&
	grep -qx -- "--json --config config.cfg --data $(cd "$work/data" && pwd -P) model.safetensors" "$TMP/eval.log"; then
	ok "--data: supkit-eval run once a checkpoint, on its config and the data folder"
else bad "--data: supkit-eval run once a checkpoint" "$(cat "$TMP/eval.log")"; fi
# the real supkit eval: each checkpoint re-scored on the data folder equals its run record
run supkit verify --json --data "$work/data" "$TMP/s.zip"
expect_rc 0 "--data with supkit eval: exit 0"
if grep -q '"runs_not_rescored":[[:space:]]*0' <<<"$out" && grep -q '"disagreements":[[:space:]]*\[\]' <<<"$out" &&
	[[ $(grep -c '"note":[[:space:]]*"val_bpb' <<<"$out") == 0 ]]; then
	ok "--data with supkit eval: every run re-scored, every val_bpb and heldout_bpb agrees"
else bad "--data with supkit eval: every run re-scored and agrees" "$(grep -n 'rescor\|disagree' <<<"$out" | head -n 5)"; fi
run supkit verify --data "$work/data" --no-rederive "$TMP/s.zip"
expect_rc 2 "--data with --no-rederive: usage error"
finish
