#!/usr/bin/env bash
# train.sh: supkit train end to end on real text (tests/fixtures/train: licence
# texts, 512-token BPE): BPB falls, the run folder is complete, resume is
# bit-identical (also after kill -9), fast-fail, refusals, the parameter
# accounting equals supkit audit compute, and the run folder: its lock, a
# checkpoint verified on resume, inputs checked before anything is written,
# stale temporaries removed, configs with CR line ends; paper 002's
# model-side arms (and its LeRoPE comparators, their checkpoints read back by
# supkit eval) train at tiny size.
source "$(dirname "$0")/lib.sh"
D="$FIX/train/data"
CFG="$FIX/train/tiny.cfg"
trn() { supkit train "$CFG" --set data_dir="$D" --quiet "$@"; }
num() { grep -o "\"$2\": *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//'; }

# 1. BPB at (almost) the initial weights, then after 200 steps
run trn --set steps=3 --set warmup_steps=0 --set lr_scale=1e-9 -o "$TMP/init"
expect_rc 0 "near-initial run"
run trn -o "$TMP/full"
expect_rc 0 "200-step run"
for f in config.cfg result.json curve.jsonl model.safetensors optim.bin; do
	if [[ -s "$TMP/full/$f" ]]; then ok "run folder has $f"; else bad "run folder has $f"; fi
done
expect_no_file "$TMP/full/checkpoint" "finished run leaves no checkpoint folder"
b0=$(num "$TMP/init/result.json" val_bpb)
b1=$(num "$TMP/full/result.json" val_bpb)
if awk -v a="$b1" -v b="$b0" 'BEGIN{exit !(a < 0.75*b)}'; then ok "val BPB falls well below its start ($b0 -> $b1)"
else bad "val BPB falls well below its start" "$b0 -> $b1"; fi
n=$(grep -c '' "$TMP/full/curve.jsonl")
if [[ "$n" == 200 ]]; then ok "curve has one line a step"; else bad "curve has one line a step" "$n lines"; fi
for k in val_bpb heldout_bpb num_params parameter_accounting training_seconds training_loop_seconds \
	peak_memory_mib pass_rows tokens steps seed config_sha256 supkit_version arm depth mlp_activations attn_activations norm_activations precision; do
	grep -q "\"$k\"" "$TMP/full/result.json" || { bad "result.json has $k"; continue; }
	ok "result.json has $k"
done
if grep -q '"pass_rows": *4\b' "$TMP/full/result.json"; then ok "pass_rows = 0 on the CPU: one pass of the micro-batch's 4 rows"
else bad "pass_rows = 0 on the CPU: one pass of the micro-batch's 4 rows" "$(grep -o '"pass_rows": *[0-9]*' "$TMP/full/result.json")"; fi
# tokens_per_second: the timed steps' (from warmup_steps on) tokens over training_seconds
tps_check() { # run_dir label
	local w s t ts r
	w=$(grep -o '^warmup_steps *= *[0-9]*' "$1/config.cfg" | grep -o '[0-9]*$')
	s=$(num "$1/result.json" steps)
	t=$(num "$1/result.json" tokens_per_step)
	ts=$(num "$1/result.json" training_seconds)
	r=$(num "$1/result.json" tokens_per_second)
	if [[ -n "$w" && -n "$r" ]] && awk -v r="$r" -v w="$w" -v s="$s" -v t="$t" -v ts="$ts" \
		'BEGIN { x = t * (s - w) / ts; exit !(r > 0 && (r - x) ^ 2 <= (1e-9 * x) ^ 2) }'; then
		ok "result.json: tokens_per_second is the timed steps' rate ($2: $r)"
	else
		bad "result.json: tokens_per_second is the timed steps' rate ($2)" "warmup '$w' steps '$s' tokens/step '$t' seconds '$ts' -> '$r'"
	fi
}
tps_check "$TMP/full" "200 steps"
tps_check "$TMP/init" "3 steps, none untimed"
sha=$(sha256sum "$TMP/full/config.cfg" | cut -c1-64)
if grep -q "\"config_sha256\": \"$sha\"" "$TMP/full/result.json"; then ok "config_sha256 is the SHA-256 of config.cfg"
else bad "config_sha256 is the SHA-256 of config.cfg"; fi

# 2. accounting equals supkit audit compute on the same config
run supkit audit compute --json "$TMP/full/config.cfg"
for k in backbone total wte value_embeds lm_head block_matrices scalars oe; do
	a=$(tr -d ' \n' <<<"$out" | grep -o "\"params\":{[^}]*" | grep -o "\"$k\":[0-9]*" | cut -d: -f2)
	b=$(tr -d ' \n' <"$TMP/full/result.json" | grep -o "\"parameter_accounting\":{[^}]*" | grep -o "\"$k\":[0-9]*" | cut -d: -f2)
	if [[ -n "$a" && "$a" == "$b" ]]; then ok "accounting $k equals audit compute ($a)"
	else bad "accounting $k equals audit compute" "audit '$a', train '$b'"; fi
done
a=$(tr -d ' \n' <<<"$out" | grep -o '"per_token":[0-9.e+]*' | cut -d: -f2)
b=$(num "$TMP/full/result.json" flops_per_token)
if [[ -n "$a" ]] && awk -v a="$a" -v b="$b" 'BEGIN { exit !(a == b) }'; then ok "flops_per_token equals audit compute's ($a)"
else bad "flops_per_token equals audit compute's" "audit '$a', train '$b'"; fi
# MFU: none on the CPU; against SUPKIT_PEAK_TFLOPS when given; a bad one refused before the run
if grep -q '"mfu_percent": *null' "$TMP/full/result.json" && grep -q '"peak_flops": *null' "$TMP/full/result.json"
then ok "result.json: no MFU on the CPU"; else bad "result.json: no MFU on the CPU" "$(grep -o '"mfu_percent": *[^,]*' "$TMP/full/result.json")"; fi
SUPKIT_PEAK_TFLOPS=0.002 run trn --set steps=4 -o "$TMP/mfu"
expect_rc 0 "a run with SUPKIT_PEAK_TFLOPS"
m=$(num "$TMP/mfu/result.json" mfu_percent)
if awk -v m="$m" -v f="$(num "$TMP/mfu/result.json" flops_per_token)" -v t="$(num "$TMP/mfu/result.json" tokens_per_second)" \
	-v p="$(num "$TMP/mfu/result.json" peak_flops)" 'BEGIN { x = 100 * f * t / 2e9; exit !(p == 2e9 && m > 0 && (m - x) ^ 2 <= (1e-9 * x) ^ 2) }'
then ok "result.json: mfu_percent against SUPKIT_PEAK_TFLOPS ($m%)"; else bad "result.json: mfu_percent against SUPKIT_PEAK_TFLOPS" "'$m'"; fi
SUPKIT_PEAK_TFLOPS=fast run trn --set steps=4 -o "$TMP/mfubad"
expect_rc 2 "a bad SUPKIT_PEAK_TFLOPS refused"
expect_err_contains "SUPKIT_PEAK_TFLOPS 'fast'" "the refusal names SUPKIT_PEAK_TFLOPS"
expect_no_file "$TMP/mfubad/result.json" "no result from a refused run"

# 3. resume: 20 steps straight vs 8 + resume, bit-identical
run trn --set steps=20 -o "$TMP/a"
expect_rc 0 "20-step run"
run trn --set steps=20 --stop-after 8 -o "$TMP/b"
expect_rc 0 "stop after 8 steps"
expect_out_contains "--resume" "stopped run says how to continue"
if [[ -f "$TMP/b/checkpoint/state.json" && ! -e "$TMP/b/result.json" ]]; then ok "stopped run has a checkpoint, no result"
else bad "stopped run has a checkpoint, no result"; fi
run supkit train --resume "$TMP/b" --quiet
expect_rc 0 "resume to the end"
tps_check "$TMP/b" "resumed"
expect_same_file "$TMP/a/model.safetensors" "$TMP/b/model.safetensors" "resumed weights bit-identical"
expect_same_file "$TMP/a/optim.bin" "$TMP/b/optim.bin" "resumed optimizer state bit-identical"
run supkit train --resume "$TMP/b" --quiet
expect_rc 2 "resume of a finished run refused"
# 3a. --stop-after 0: a checkpoint of the initial weights, then the whole run
run trn --set steps=20 --stop-after 0 -o "$TMP/z"
expect_rc 0 "stop after 0 steps"
if grep -q '"step": *0' "$TMP/z/checkpoint/state.json" 2>/dev/null && [[ -f "$TMP/z/checkpoint/params.safetensors" ]]
then ok "--stop-after 0 leaves a step-0 checkpoint with the weights"
else bad "--stop-after 0 leaves a step-0 checkpoint with the weights"; fi
run supkit train --resume "$TMP/z" --quiet
expect_rc 0 "resume from step 0 to the end"
expect_same_file "$TMP/a/model.safetensors" "$TMP/z/model.safetensors" "resumed-from-0 weights bit-identical"
# 3b. the same with OE tables (bf16 values and gradient, saved as bf16)
run trn --set steps=12 --set oe=1 --set oe_m=211 -o "$TMP/oa"
expect_rc 0 "12-step OE run"
run trn --set steps=12 --set oe=1 --set oe_m=211 --stop-after 5 -o "$TMP/ob"
expect_rc 0 "OE run stopped after 5 steps"
run supkit train --resume "$TMP/ob" --quiet
expect_rc 0 "OE run resumed to the end"
expect_same_file "$TMP/oa/model.safetensors" "$TMP/ob/model.safetensors" "resumed OE weights bit-identical"
expect_same_file "$TMP/oa/optim.bin" "$TMP/ob/optim.bin" "resumed OE optimizer state bit-identical"
# 3c. Zeta (zeta = 1): its second moment goes through the checkpoint
# (the CUDA backend's refusal: tests/unit/trainer/test_backend.c)
run trn --set steps=12 --set zeta=1 -o "$TMP/za"
expect_rc 0 "12-step Zeta run"
run trn --set steps=12 --set zeta=1 --stop-after 5 -o "$TMP/zb"
expect_rc 0 "Zeta run stopped after 5 steps"
run supkit train --resume "$TMP/zb" --quiet
expect_rc 0 "Zeta run resumed to the end"
expect_same_file "$TMP/za/model.safetensors" "$TMP/zb/model.safetensors" "resumed Zeta weights bit-identical"
expect_same_file "$TMP/za/optim.bin" "$TMP/zb/optim.bin" "resumed Zeta optimizer state bit-identical"
# 3d. MALT (malt = 1): its row and column EMAs the same way
run trn --set steps=12 --set malt=1 -o "$TMP/ma"
expect_rc 0 "12-step MALT run"
run trn --set steps=12 --set malt=1 --stop-after 5 -o "$TMP/mb"
expect_rc 0 "MALT run stopped after 5 steps"
run supkit train --resume "$TMP/mb" --quiet
expect_rc 0 "MALT run resumed to the end"
expect_same_file "$TMP/ma/model.safetensors" "$TMP/mb/model.safetensors" "resumed MALT weights bit-identical"
expect_same_file "$TMP/ma/optim.bin" "$TMP/mb/optim.bin" "resumed MALT optimizer state bit-identical"
# 3e. Muon2-F (muon2f = 1): its factored second moment the same way
run trn --set steps=12 --set muon2f=1 -o "$TMP/m2a"
expect_rc 0 "12-step Muon2-F run"
run trn --set steps=12 --set muon2f=1 --stop-after 5 -o "$TMP/m2b"
expect_rc 0 "Muon2-F run stopped after 5 steps"
run supkit train --resume "$TMP/m2b" --quiet
expect_rc 0 "Muon2-F run resumed to the end"
expect_same_file "$TMP/m2a/model.safetensors" "$TMP/m2b/model.safetensors" "resumed Muon2-F weights bit-identical"
expect_same_file "$TMP/m2a/optim.bin" "$TMP/m2b/optim.bin" "resumed Muon2-F optimizer state bit-identical"
# 3f. the named arms of papers 002 and 004's optimizer comparisons train at
# tiny size (4 steps each, a finite loss)
for a in muon2_f_prepolar_v published_normpre_g noguard_normpre_g_fp32 \
	natural_grad_geodesic metric_plus_fp32_postpolar_only metric_plus_bieq_bf16_postpolar \
	metric_plus_homotopy_bieq homotopy_bieq_only undamped_bieq_bf16 one_sided_row_rms_bf16 \
	square_attn_only_bieq_bf16 turbo_muon_aol_precond noguard_fp32norm_control published_muoneq_r \
	published_muoneq_rc noguard_muoneq_rc_fp32 noguard_homotopy_bieq_fp32 noguard_homotopy_bieq_tau25 \
	noguard_bieq_cooldown_fp32 muoneq_r_full_pkg muoneq_rc_full_pkg noguard_full noguard_full_bieq_tau25 \
	noguard_neumann_no_bieq noguard_cooldown_fp32norm noguard_neumann_cooldown_no_bieq noguard_neumann_only \
	exp13_rope_only exp13_joint_rope_bieq exp15_tau25_joint exp15_bieq_tau25_only_joint exp16_head_temp_bieq \
	exp16_ngpt_coord_bieq \
	noguard_malt_fp32 baseline_pure_adamw; do
	run supkit train --arm "$a" "$CFG" --set data_dir="$D" --set steps=4 --quiet -o "$TMP/arm_$a"
	expect_rc 0 "arm $a trains 4 steps at tiny size"
	l=$(num "$TMP/arm_$a/result.json" final_loss)
	if awk -v l="$l" 'BEGIN { exit !(l + 0 == l && l > 0 && l < 100) }'; then ok "arm $a: final loss $l"
	else bad "arm $a: final loss" "'$l'"; fi
done
# 3g. AdamW on the block matrices (matrix_optim = adamw): their m, v and
# counters travel in optim.bin, so 12 steps straight and 5 + --resume agree
run trn --set steps=12 --set matrix_optim=adamw -o "$TMP/aw_a"
expect_rc 0 "12-step matrix_optim = adamw run"
run trn --set steps=12 --set matrix_optim=adamw --stop-after 5 -o "$TMP/aw_b"
expect_rc 0 "matrix_optim = adamw run stopped after 5 steps"
run supkit train --resume "$TMP/aw_b" --quiet
expect_rc 0 "matrix_optim = adamw run resumed to the end"
expect_same_file "$TMP/aw_a/model.safetensors" "$TMP/aw_b/model.safetensors" "resumed matrix AdamW weights bit-identical"
expect_same_file "$TMP/aw_a/optim.bin" "$TMP/aw_b/optim.bin" "resumed matrix AdamW optimizer state bit-identical"
if grep -aq 'c_q.weight.exp_avg_sq' "$TMP/aw_a/optim.bin" && ! grep -aq 'c_q.weight.momentum_buffer' "$TMP/aw_a/optim.bin"
then ok "matrix AdamW state: exp_avg_sq records for the block matrices, no Muon buffers"
else bad "matrix AdamW state: exp_avg_sq records for the block matrices, no Muon buffers"; fi

# 4. kill -9 between checkpoints, then resume
run trn --set steps=150 --set checkpoint_every=5 -o "$TMP/c"
expect_rc 0 "150-step run with checkpoints"
supkit train "$CFG" --set data_dir="$D" --set steps=150 --set checkpoint_every=5 --quiet -o "$TMP/k" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 400); do [[ -f "$TMP/k/checkpoint/state.json" ]] && break; sleep 0.05; done
sleep 0.3
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
if [[ -e "$TMP/k/result.json" ]]; then skip "kill -9 then resume" "the run finished before the kill"
else
	run supkit train --resume "$TMP/k" --quiet
	expect_rc 0 "resume after kill -9"
	expect_same_file "$TMP/c/model.safetensors" "$TMP/k/model.safetensors" "weights after kill -9 + resume bit-identical"
fi

# 4a. a checkpoint.old left by a kill during the last swap does not block the next checkpoint
run trn --set steps=20 --set checkpoint_every=5 -o "$TMP/c5"
run trn --set steps=20 --set checkpoint_every=5 --stop-after 7 -o "$TMP/c6"
mkdir -p "$TMP/c6/checkpoint.old" && echo stale >"$TMP/c6/checkpoint.old/params.safetensors"
run supkit train --resume "$TMP/c6" --quiet
expect_rc 0 "resume with a stale checkpoint.old beside the checkpoint"
expect_same_file "$TMP/c5/model.safetensors" "$TMP/c6/model.safetensors" "stale checkpoint.old: result bit-identical"

# 4b. a resume on a machine with another core count keeps the checkpoint's BLAS threads
OPENBLAS_NUM_THREADS=2 run trn --set steps=12 --set threads=0 -o "$TMP/t2"
OPENBLAS_NUM_THREADS=2 run trn --set steps=12 --set threads=0 --stop-after 5 -o "$TMP/t3"
OPENBLAS_NUM_THREADS=1 run supkit train --resume "$TMP/t3"
expect_rc 0 "resume under another thread count"
expect_err_contains "BLAS threads" "resume says it keeps the checkpoint's thread count"
expect_same_file "$TMP/t2/model.safetensors" "$TMP/t3/model.safetensors" "resume under another thread count bit-identical"

# 5. fp64 runs train and resume exactly too
run trn --set steps=6 --set dtype=fp64 -o "$TMP/f1"
expect_rc 0 "fp64 run"
run trn --set steps=6 --set dtype=fp64 --stop-after 3 -o "$TMP/f2"
run supkit train --resume "$TMP/f2" --quiet
expect_same_file "$TMP/f1/model.safetensors" "$TMP/f2/model.safetensors" "fp64 resume bit-identical"
# an fp64 run's model.safetensors holds its exact values: F64 throughout
st_dtypes() { # file: the dtypes of its header, sorted, unique
	local n
	n=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
	tail -c +9 "$1" | head -c "$n" | grep -oE '"dtype" *: *"[A-Z0-9]+"' | grep -oE '[A-Z0-9]+"$' | tr -d '"' | sort -u | tr '\n' ' '
}
d=$(st_dtypes "$TMP/f1/model.safetensors")
if [[ "$d" == "F64 " ]]; then ok "fp64 run: model.safetensors is F64 throughout"
else bad "fp64 run: model.safetensors is F64 throughout" "dtypes: $d"; fi
d=$(st_dtypes "$TMP/full/model.safetensors")
if [[ "$d" == "BF16 F32 " ]]; then ok "fp32 run: model.safetensors in the benchmark's BF16 and F32"
else bad "fp32 run: model.safetensors in the benchmark's BF16 and F32" "dtypes: $d"; fi

# 5b. the arithmetic keys: recorded, in force, fp64 runs exact whatever they say
word() { grep -o "\"$2\": *\"[a-z0-9_]*\"" "$1" | head -1 | sed 's/.*: *"//; s/"$//'; }
arith_check() { # run_dir logits polar_arithmetic label
	local l p
	l=$(word "$1/result.json" logits) p=$(word "$1/result.json" polar_arithmetic)
	if [[ "$l" == "$2" && "$p" == "$3" ]]; then ok "result.json: logits $2, polar_arithmetic $3 ($4)"
	else bad "result.json: logits $2, polar_arithmetic $3 ($4)" "logits '$l', polar_arithmetic '$p'"; fi
}
arith_check "$TMP/full" bf16 bf16_compiled "the defaults"
arith_check "$TMP/f1" fp64 fp64 "an fp64 run"
# precision: the CPU's GEMMs are fp32 (fp64 in fp64 runs), recorded so;
# autocast, which the CPU does not do, is refused before anything is written
[[ "$(word "$TMP/full/result.json" precision)" == fp32 && "$(word "$TMP/f1/result.json" precision)" == fp64 ]] &&
	grep -qx 'precision = auto' "$TMP/full/config.cfg" &&
	ok "result.json: precision fp32 (fp64 in an fp64 run); config.cfg records precision = auto" ||
	bad "result.json: precision fp32 (fp64 in an fp64 run)" \
		"'$(word "$TMP/full/result.json" precision)' '$(word "$TMP/f1/result.json" precision)'"
run trn --set precision=autocast --backend cpu -o "$TMP/ac"
expect_rc 2 "precision = autocast on the cpu backend: exit 2"
expect_err_contains "precision = autocast: the cpu backend multiplies in fp32" "precision = autocast on cpu: said"
[[ ! -e "$TMP/ac" ]] && ok "precision = autocast on cpu: no run folder" || bad "precision = autocast on cpu: no run folder"
if grep -qx 'logits = bf16' "$TMP/full/config.cfg" && grep -qx 'polar_arith = compiled' "$TMP/full/config.cfg"
then ok "config.cfg records logits and polar_arith"; else bad "config.cfg records logits and polar_arith"; fi
run trn --set steps=20 --set logits=fp32 --set polar_arith=eager -o "$TMP/old"
expect_rc 0 "a run with fp32 logits and eager polar"
arith_check "$TMP/old" fp32 bf16_eager "logits = fp32, polar_arith = eager"
if ! cmp -s "$TMP/old/model.safetensors" "$TMP/a/model.safetensors"; then ok "the arithmetic keys change the weights"
else bad "the arithmetic keys change the weights"; fi
run trn --set steps=6 --set dtype=fp64 --set logits=fp32 --set polar_arith=eager -o "$TMP/f3"
expect_rc 0 "fp64 run with other arithmetic keys"
st_data() { # file: its tensors' bytes (after the header, which names the config's SHA-256)
	local n
	n=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
	tail -c +$((9 + n)) "$1"
}
if [[ -s "$TMP/f3/model.safetensors" ]] && cmp -s <(st_data "$TMP/f1/model.safetensors") <(st_data "$TMP/f3/model.safetensors")
then ok "fp64 runs: logits and polar_arith change no weight"; else bad "fp64 runs: logits and polar_arith change no weight"; fi
arith_check "$TMP/f3" fp64 fp64 "an fp64 run, whatever the keys say"

# 5c. the summary line says what result.json says: no val_bpb when none was measured
run trn --set steps=3 --set eval_tokens=0 -o "$TMP/noeval"
expect_rc 0 "a run with eval_tokens = 0"
if grep -q '"val_bpb": *null' "$TMP/noeval/result.json" && [[ "$out" != *nan* && "$out" != *val_bpb* && "$out" == *heldout_bpb* ]]
then ok "eval_tokens = 0: val_bpb null in result.json and left out of the summary"
else bad "eval_tokens = 0: val_bpb null in result.json and left out of the summary" "$out"; fi
run trn --set steps=3 --set eval_tokens=0 --set heldout_tokens=0 --json -o "$TMP/noeval2"
if grep -q '"val_bpb": *null' <<<"$out" && grep -q '"heldout_bpb": *null' <<<"$out"; then ok "--json: BPBs not measured are null"
else bad "--json: BPBs not measured are null" "$out"; fi

# 6. fast-fail and refusals
run trn --set steps=5 --set max_loss=1 -o "$TMP/ff"
expect_rc 1 "loss above max_loss fails fast"
expect_err_contains "fast-fail" "fast-fail message"
run trn -o "$TMP/full"
expect_rc 2 "existing run folder refused"
expect_one_line_err "existing run folder: one line"
run supkit train "$CFG" --quiet -o "$TMP/nodata"
expect_rc 2 "config without data_dir refused"
printf 'depth = 2\nbogus_key = 1\n' >"$TMP/bad.cfg"
run supkit train "$TMP/bad.cfg" -o "$TMP/x"
expect_rc 2 "unknown config key refused"
expect_err_contains "bad.cfg:2" "error names file and line"
run trn --set data_dir="$TMP/none" -o "$TMP/x2"
expect_rc 2 "missing shards refused"
run trn --set vocab_size=1024 -o "$TMP/x3"
expect_rc 2 "vocab mismatch with the shards refused"

# 7. the run folder
# what a refused command must leave as it was: every path and every file's
# bytes (the lock file aside: taking the lock writes the taker's pid)
snap() { (cd "$1" && find . ! -name .lock | LC_ALL=C sort && find . -type f ! -name .lock -print0 |
	LC_ALL=C sort -z | xargs -0 -r sha256sum); }
refused() { # name rc text dir-before dir: rc, one line naming text, dir unchanged
	local after; after=$(snap "$5" 2>/dev/null)
	if [[ "$rc" == "$2" ]] && grep -qF -- "$3" <<<"$errout" && [[ $(grep -c '' <<<"$errout") == 1 ]] &&
		[[ "$4" == "$after" ]]; then ok "$1"
	else bad "$1" "exit $rc (want $2), stderr $(grep -c '' <<<"$errout") lines, wants '$3'; folder $([[ "$4" == "$after" ]] && echo unchanged || echo CHANGED)"; fi
}
# 7a. one trainer at a time: a second --resume (or --force) while one runs is
# refused before touching anything; kill -9 releases the lock
run trn --set steps=100000 --set checkpoint_every=5 --stop-after 0 -o "$TMP/lk"
supkit-train --resume "$TMP/lk" --quiet >/dev/null 2>&1 &
lpid=$!
for _ in $(seq 1 600); do [[ "$(cat "$TMP/lk/.lock" 2>/dev/null)" == "$lpid" ]] && break; sleep 0.05; done
for _ in $(seq 1 600); do grep -q '"step": *[1-9]' "$TMP/lk/checkpoint/state.json" 2>/dev/null && break; sleep 0.05; done
if [[ "$(cat "$TMP/lk/.lock" 2>/dev/null)" != "$lpid" ]]; then bad "a running trainer holds RUNDIR/.lock" "lock file: '$(cat "$TMP/lk/.lock" 2>/dev/null)'"
else
	ok "a running trainer holds RUNDIR/.lock, with its pid"
	run supkit train --resume "$TMP/lk" --quiet
	expect_rc 4 "a second --resume of a folder in use is refused"
	expect_err_contains "'$TMP/lk' is in use by process $lpid" "the refusal names the folder and the process"
	expect_one_line_err "folder in use: one line"
	run trn --force -o "$TMP/lk"
	expect_rc 4 "--force on a folder in use is refused"
	expect_err_contains "is in use by process $lpid" "--force refusal names the process"
	if grep -q '^steps = 100000$' "$TMP/lk/config.cfg"; then ok "--force on a folder in use leaves its config.cfg"
	else bad "--force on a folder in use leaves its config.cfg" "$(grep '^steps' "$TMP/lk/config.cfg")"; fi
fi
kill -9 "$lpid" 2>/dev/null; wait "$lpid" 2>/dev/null
run supkit train --resume "$TMP/lk" --stop-after 1 --quiet
expect_rc 0 "after kill -9 the folder is free again (the kernel released the lock)"

# 7b. --resume trusts nothing in the checkpoint: each damage refused with the
# file and the field, the folder untouched
run trn --set steps=20 --stop-after 8 -o "$TMP/v"
run trn --set steps=20 --stop-after 5 -o "$TMP/v5"
flipbit() { # file offset: xor 1 into one byte
	local b; b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $((b ^ 1)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
rehash() { # the checkpoint folder's state.json records its files' current SHA-256
	local f h
	for f in params.safetensors optim.bin loader.bin; do
		h=$(sha256sum "$1/$f" | cut -c1-64)
		sed -i "s/\"$f\": \"[0-9a-f]*\"/\"$f\": \"$h\"/" "$1/state.json"
	done
}
tamper() { # name rc text shell-code (run in the checkpoint folder of a copy of $TMP/v)
	local d="$TMP/v_$1" before
	rm -rf "$d"; cp -a "$TMP/v" "$d"
	(cd "$d/checkpoint" && eval "$4")
	before=$(snap "$d")
	run supkit train --resume "$d" --quiet
	refused "resume refuses $1" "$2" "$3" "$before" "$d"
}
tamper "a state.json step edited (5 beside step-8 files)" 2 "state.json': curve: 8 entries, but step is 5" \
	'sed -i "s/^  \"step\": 8,/  \"step\": 5,/" state.json'
tamper "a step-5 state.json beside step-8 files (hashes matching)" 2 \
	"params.safetensors': __metadata__ step '8', but the checkpoint's state says step 5" \
	'cp "$TMP/v5/checkpoint/state.json" . && rehash .'
tamper "one flipped bit in params.safetensors" 2 "params.safetensors': SHA-256" \
	'flipbit params.safetensors $(( $(stat -c %s params.safetensors) - 5 ))'
tamper "one flipped bit in optim.bin" 2 "optim.bin': SHA-256" 'flipbit optim.bin 100'
tamper "step = steps" 2 "state.json': step: 20 is out of range [0, 19]" \
	'sed -i "s/^  \"step\": 8,/  \"step\": 20,/" state.json'
tamper "blas_threads -1" 2 "state.json': blas_threads: -1 is out of range" \
	'sed -i "s/\"blas_threads\": [0-9]*/\"blas_threads\": -1/" state.json'
tamper "blas_threads 100000" 2 "state.json': blas_threads: 100000 is out of range" \
	'sed -i "s/\"blas_threads\": [0-9]*/\"blas_threads\": 100000/" state.json'
tamper "a loader epoch of 2^63" 2 "loader.bin': SHA-256" \
	'printf "\0\0\0\0\0\0\0\200" | dd of=loader.bin bs=1 seek=40 conv=notrunc status=none'
tamper "a loader epoch of 2^63 (hashes matching)" 2 "loader.bin': loader state: offset 40: epoch 9223372036854775808" \
	'printf "\0\0\0\0\0\0\0\200" | dd of=loader.bin bs=1 seek=40 conv=notrunc status=none && rehash .'
tamper "a loader batch count of another step (hashes matching)" 2 "loader.bin': the loader gave 14 batches, but step 8" \
	'printf "\16" | dd of=loader.bin bs=1 seek=56 conv=notrunc status=none && rehash .'
tamper "a checkpoint without file hashes (older supkit)" 2 "state.json': files: missing" \
	'sed -i "/^  \"files\": {/,/^  },/d" state.json'
tamper "a checkpoint file missing" 2 "cannot open '$TMP/v_a checkpoint file missing/checkpoint/optim.bin'" 'rm optim.bin'
run supkit train --resume "$TMP/v" --quiet
expect_rc 0 "the undamaged checkpoint resumes"

# 7c. every input is checked before the run folder is touched
before=$(snap "$TMP/full")
run trn --force --set init_from="$TMP/none.safetensors" -o "$TMP/full"
refused "--force with a missing init_from: refused, the old run kept" 2 "init_from: cannot open '$TMP/none.safetensors'" \
	"$before" "$TMP/full"
run trn --set init_from="$TMP/none.safetensors" -o "$TMP/if1"
expect_rc 2 "a missing init_from is bad input (2)"
expect_no_file "$TMP/if1" "a missing init_from: no run folder made"
run trn --set init_from="$TMP/full/model.safetensors" --set depth=3 -o "$TMP/if2"
expect_rc 2 "an init_from of another shape is refused"
expect_err_contains "model.safetensors': tensor" "the refusal names the file and the tensor"
expect_no_file "$TMP/if2" "an init_from of another shape: no run folder made"
run trn --force --set data_dir="$TMP/none" -o "$TMP/full"
refused "--force with missing shards: refused, the old run kept" 2 "holds no train_*.bin shards" "$before" "$TMP/full"
printf 'SKTOKBYT\1\0\0\0\12\0\0\0' >"$TMP/tb10.bin"
for _ in 1 2 3 4 5 6; do printf '\1\0\0\0'; done >>"$TMP/tb10.bin"
for _ in 1 2 3 4; do printf '\0\0\0\0'; done >>"$TMP/tb10.bin"
run trn --force --token-bytes "$TMP/tb10.bin" -o "$TMP/full"
refused "--force with a token_bytes of another vocabulary: refused, the old run kept" 2 \
	"'$TMP/tb10.bin': 10 entries, but vocab_size is 512" "$before" "$TMP/full"
head -c 16 "$D/token_bytes.bin" >"$TMP/tbff.bin"
for _ in $(seq 1 512); do printf '\377\377\377\377'; done >>"$TMP/tbff.bin"
run trn --token-bytes "$TMP/tbff.bin" -o "$TMP/tbff"
expect_rc 2 "token_bytes lengths of 0xFFFFFFFF are refused"
expect_err_contains "'$TMP/tbff.bin': offset 16: token 0 has length 4294967295" "the refusal names the file, offset and token"
expect_no_file "$TMP/tbff" "bad token_bytes: no run folder made"
run trn --set batch_rows=1048576 --set seq_len=1048576 -o "$TMP/huge"
expect_rc 4 "a run larger than the machine's memory is refused up front"
expect_err_contains "the run needs at least" "the refusal gives the figure"
expect_err_contains "available (" "the refusal gives the available memory"
expect_one_line_err "memory refusal: one line"
expect_no_file "$TMP/huge" "memory refusal: no run folder made"
SUPKIT_MEMORY_MIB=1 run trn -o "$TMP/m1"
expect_rc 4 "SUPKIT_MEMORY_MIB=1: the tiny run does not fit"
expect_err_contains "more than the 1.0 MiB available (SUPKIT_MEMORY_MIB)" "the refusal names SUPKIT_MEMORY_MIB"
expect_no_file "$TMP/m1" "SUPKIT_MEMORY_MIB refusal: no run folder made"
SUPKIT_MEMORY_MIB=lots run trn -o "$TMP/m2"
expect_rc 2 "a bad SUPKIT_MEMORY_MIB is refused"
expect_no_file "$TMP/m2" "bad SUPKIT_MEMORY_MIB: no run folder made"
# --force removes the replaced run's outputs (none beside the new config)
run trn --force --set steps=20 --stop-after 1 -o "$TMP/full"
expect_rc 0 "--force replaces a finished run"
for f in result.json model.safetensors optim.bin; do expect_no_file "$TMP/full/$f" "--force leaves no $f of the replaced run"; done
n=$(grep -c '' "$TMP/full/curve.jsonl")
if [[ "$n" == 1 ]]; then ok "--force: curve.jsonl is the new run's"; else bad "--force: curve.jsonl is the new run's" "$n lines"; fi

# 7d. temporaries left by a kill are removed on resume, finish and --force
stale() { mkdir -p "$1/checkpoint.tmp-AbC123" && echo x >"$1/checkpoint.tmp-AbC123/params.safetensors" &&
	echo x >"$1/config.cfg.tmp-x1Y2z3" && echo x >"$1/result.json.tmp-Q9w8E7"; }
stale_gone() { # dir name
	if [[ ! -e "$1/checkpoint.tmp-AbC123" && ! -e "$1/config.cfg.tmp-x1Y2z3" && ! -e "$1/result.json.tmp-Q9w8E7" ]]
	then ok "$2"; else bad "$2" "$(ls -A "$1" | tr '\n' ' ')"; fi
}
run trn --set steps=20 --stop-after 3 -o "$TMP/st"
stale "$TMP/st"
echo mine >"$TMP/st/notes.tmp-abcdef"
run supkit train --resume "$TMP/st" --stop-after 2 --quiet
expect_rc 0 "resume beside stale temporaries"
stale_gone "$TMP/st" "resume removes the stale temporaries"
if [[ -f "$TMP/st/notes.tmp-abcdef" ]]; then ok "a file that is not the trainer's stays"; else bad "a file that is not the trainer's stays"; fi
stale "$TMP/st"
run supkit train --resume "$TMP/st" --quiet
expect_rc 0 "resume to the end beside stale temporaries"
stale_gone "$TMP/st" "the finished run leaves no stale temporaries"
expect_same_file "$TMP/a/model.safetensors" "$TMP/st/model.safetensors" "stale temporaries: the result is still bit-identical"
stale "$TMP/st"
run trn --force --set steps=20 --stop-after 1 -o "$TMP/st"
stale_gone "$TMP/st" "--force removes the stale temporaries"

# 7e. configs with CR or CR LF line ends are read line by line
printf '# tiny with CR line ends\rdepth = 3\rmodel_dim = 64\rhead_dim = 32\r' >"$TMP/cr.cfg"
printf '# tiny with CR LF line ends\r\ndepth = 3\r\nmodel_dim = 64\r\nhead_dim = 32\r\n' >"$TMP/crlf.cfg"
for f in cr crlf; do
	run supkit train "$TMP/$f.cfg" --print-config
	if [[ "$rc" == 0 ]] && grep -q '^depth = 3$' <<<"$out" && grep -q '^model_dim = 64$' <<<"$out"; then ok "a $f config is read line by line"
	else bad "a $f config is read line by line" "exit $rc: $(grep '^depth\|^model_dim' <<<"$out" | tr '\n' ' ')"; fi
done

# 8. paper 002's model-side arms train a few steps at tiny size, their
# parameters in the checkpoint
for arm in exp64_stopped_exp_qk_only exp03_linear_qk_only exp07_presublayer_only exp05_linear_combined \
	exp17_natural_grad_geodesic exp41_untied_ngpt_stopped_exp exp19_head_temperature; do
	run trn --arm "$arm" --set steps=3 --set warmup_steps=0 -o "$TMP/arm_$arm"
	b=$(num "$TMP/arm_$arm/result.json" val_bpb)
	if [[ "$rc" == 0 ]] && grep -q "\"arm\": *\"$arm\"" "$TMP/arm_$arm/result.json" &&
		awk -v b="$b" 'BEGIN{exit !(b > 0 && b < 100)}' &&
		{ [[ $arm == exp07* ]] || grep -q '"q_tau"' "$TMP/arm_$arm/model.safetensors"; } &&
		{ [[ $arm == exp64* || $arm == exp03* ]] || grep -q '"sub_gains"' "$TMP/arm_$arm/model.safetensors"; }; then
		ok "arm $arm trains 3 steps (val BPB $b)"
	else bad "arm $arm trains 3 steps" "exit $rc, val BPB '$b': $errout"; fi
done

# ... and its LeRoPE comparators (learned RoPE log-frequencies rope_tau);
# supkit eval of a lone checkpoint infers rope_tau from the tensor's shape
for arm in exp31_lerope_shared64 exp21_lerope_2048; do
	run trn --arm "$arm" --set steps=3 --set warmup_steps=0 -o "$TMP/arm_$arm"
	b=$(num "$TMP/arm_$arm/result.json" val_bpb)
	if [[ "$rc" == 0 ]] && grep -q "\"arm\": *\"$arm\"" "$TMP/arm_$arm/result.json" &&
		awk -v b="$b" 'BEGIN{exit !(b > 0 && b < 100)}' &&
		grep -q '"rope_tau"' "$TMP/arm_$arm/model.safetensors" &&
		grep -q '"sub_gains"' "$TMP/arm_$arm/model.safetensors"; then
		ok "arm $arm trains 3 steps (val BPB $b)"
	else bad "arm $arm trains 3 steps" "exit $rc, val BPB '$b': $errout"; fi
done
# ... and Table 1's depth-6 runs, each with its run's seed and its form of the
# gains (exp28 unfused, the others weight-fused)
for arm in exp24_depth6_seed42 exp11_exp05_depth6_seed47 exp28_exact_unfused exp54_fused_homotopy_bieq \
	exp55_fused_homotopy_bieq; do
	case $arm in exp24* | exp54*) seed=42 ;; *) seed=47 ;; esac
	case $arm in exp28*) form=unfused ;; *) form=fused ;; esac
	run trn --arm "$arm" --set steps=3 --set warmup_steps=0 -o "$TMP/arm_$arm"
	b=$(num "$TMP/arm_$arm/result.json" val_bpb)
	if [[ "$rc" == 0 ]] && grep -q "\"arm\": *\"$arm\"" "$TMP/arm_$arm/result.json" &&
		awk -v b="$b" 'BEGIN{exit !(b > 0 && b < 100)}' &&
		grep -qx "seed = $seed" "$TMP/arm_$arm/config.cfg" &&
		grep -qx "sub_form = $form" "$TMP/arm_$arm/config.cfg" &&
		grep -q '"sub_gains"' "$TMP/arm_$arm/model.safetensors"; then
		ok "arm $arm trains 3 steps (seed $seed, sub_form = $form, val BPB $b)"
	else bad "arm $arm trains 3 steps" "exit $rc, val BPB '$b': $errout"; fi
done
cp "$TMP/arm_exp21_lerope_2048/model.safetensors" "$TMP/lone21.safetensors"
run supkit eval --print-config --data "$D" "$TMP/lone21.safetensors"
if [[ "$rc" == 0 ]] && grep -qx "rope_tau = head" <<<"$out" && grep -qx "sub_gains = 1" <<<"$out"; then
	ok "eval infers rope_tau = head from a lone exp21 checkpoint"
else bad "eval infers rope_tau = head" "exit $rc: $errout"; fi
run supkit eval -q --json --data "$D" --set seq_len=64 --set eval_tokens=2048 --set heldout_tokens=2048 \
	"$TMP/lone21.safetensors"
e=$(grep -A8 '"val"' <<<"$out" | grep -o '"bpb": *[-0-9.e+]*' | head -1 | sed 's/.*: *//')
b=$(num "$TMP/arm_exp21_lerope_2048/result.json" val_bpb)
if [[ "$rc" == 0 ]] && awk -v e="$e" -v b="$b" 'BEGIN{d = e - b; exit !(b > 0 && d * d <= 1e-12 * b * b)}'; then
	ok "eval of the lone exp21 checkpoint: the run's val BPB ($e)"
else bad "eval of the lone exp21 checkpoint" "exit $rc, BPB '$e' vs the run's '$b': $errout"; fi

run supkit train --help
expect_rc 0 "--help"
finish
